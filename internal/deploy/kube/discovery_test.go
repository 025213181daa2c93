package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// legacyServer serves the legacy (non-aggregated) discovery documents of a
// server with ConfigMaps and Deployments, counting requests.
func legacyServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	docs := map[string]string{
		"/api":  `{"kind":"APIVersions","versions":["v1"]}`,
		"/apis": `{"kind":"APIGroupList","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[
			{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","patch"],"shortNames":["cm"]},
			{"name":"configmaps/status","namespaced":true,"kind":"ConfigMap","verbs":["get"]},
			{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get","list"],"shortNames":["ns"]}]}`,
		"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
			{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get","list"],"shortNames":["deploy"]}]}`,
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, doc)
	}))
	t.Cleanup(hs.Close)
	return hs, &n
}

func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: fromctx}}]
current-context: x
`, server)
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLegacyDiscoveryAndDiskCache(t *testing.T) {
	hs, requests := legacyServer(t)
	kc := kubeconfig(t, hs.URL)
	cache := t.TempDir()
	ctx := context.Background()
	c, err := New(ctx, Config{Kubeconfig: kc, DiscoveryCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace() != "fromctx" {
		t.Errorf("Namespace() = %q, want the context's", c.Namespace())
	}
	objs := objectsOf(t, "ConfigMap/v1/cm", "Deployment/apps/v1/web", "Namespace/v1/ns")
	if err := c.Prepare(ctx, objs); err != nil {
		t.Fatal(err)
	}
	if objs[0].GetNamespace() != "fromctx" || objs[1].GetNamespace() != "fromctx" || objs[2].GetNamespace() != "" {
		t.Errorf("namespaces %q %q %q", objs[0].GetNamespace(), objs[1].GetNamespace(), objs[2].GetNamespace())
	}
	m, err := c.mapping(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err != nil || m.Resource.Resource != "deployments" {
		t.Errorf("RESTMapping(Deployment) = %v, %v", m, err)
	}
	for _, arg := range []string{"cm", "configmaps", "configmap", "ConfigMap", "ConfigMap.v1", "deploy", "deployments.apps", "Deployment.v1.apps"} {
		d, _ := c.discover(ctx)
		if _, err := d.mappingFor(arg); err != nil {
			t.Errorf("mappingFor(%q): %v", arg, err)
		}
	}
	if got := requests.Load(); got != 4 {
		t.Errorf("cold discovery made %d requests, want 4 (legacy: /api, /apis and one per group version)", got)
	}
	if _, err := os.Stat(cacheFile(cache, hs.URL)); err != nil {
		t.Fatalf("no cache file: %v", err)
	}

	// A second client reads the cache: no requests for kinds it knows.
	requests.Store(0)
	c2, err := New(ctx, Config{Kubeconfig: kc, DiscoveryCache: cache, Namespace: "explicit"})
	if err != nil {
		t.Fatal(err)
	}
	objs = objectsOf(t, "ConfigMap/v1/cm")
	if err := c2.Prepare(ctx, objs); err != nil || objs[0].GetNamespace() != "explicit" {
		t.Fatalf("Prepare from the cache: %v, namespace %q", err, objs[0].GetNamespace())
	}
	if got := requests.Load(); got != 0 {
		t.Errorf("discovery from the disk cache made %d requests", got)
	}
	// A kind the cache does not know reads discovery again, once.
	err = c2.Prepare(ctx, objectsOf(t, "Widget/example.com/v1/w"))
	if err == nil || !strings.Contains(err.Error(), `Widget.example.com w: the cluster does not serve kind "Widget"`) {
		t.Errorf("Prepare of an unknown kind: %v", err)
	}
	if got := requests.Load(); got != 4 {
		t.Errorf("a miss made %d requests, want one discovery (4)", got)
	}
}

// objectsOf builds bare objects from "Kind/[group/]version/name".
func objectsOf(t *testing.T, specs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, s := range specs {
		parts := strings.Split(s, "/")
		o := &unstructured.Unstructured{Object: map[string]any{}}
		o.SetKind(parts[0])
		o.SetAPIVersion(strings.Join(parts[1:len(parts)-1], "/"))
		o.SetName(parts[len(parts)-1])
		out = append(out, o)
	}
	return out
}

func TestStaleDiskCacheReadOnceByConcurrentMisses(t *testing.T) {
	hs, requests := legacyServer(t)
	kc := kubeconfig(t, hs.URL)
	cache := t.TempDir()
	// A cache written before Deployments existed.
	stale := `[{"version":"v1","resource":"configmaps","kind":"ConfigMap","namespaced":true}]`
	if err := os.WriteFile(cacheFile(cache, hs.URL), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(context.Background(), Config{Kubeconfig: kc, DiscoveryCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	errs := make([]error, 16)
	parallel(16, indexes(16), func(i int) { _, errs[i] = c.mapping(context.Background(), gvk) })
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := requests.Load(); got != 4 {
		t.Errorf("16 concurrent misses made %d requests, want one discovery (4)", got)
	}
}

func TestNewWithoutKubeconfig(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("KUBECONFIG", none)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := New(context.Background(), Config{})
	want := "no cluster configured: $KUBECONFIG: " + none + " does not exist; pass --kubeconfig FILE or set $KUBECONFIG to a kubeconfig file"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("New with $KUBECONFIG naming no file: %v\nwant %q", err, want)
	}
	t.Setenv("KUBECONFIG", "")
	_, err = New(context.Background(), Config{})
	// client-go reads $HOME once, when it starts.
	want = "no cluster configured: ~/.kube/config: " + clientcmd.RecommendedHomeFile + " "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New without a kubeconfig: %v\nwant %q", err, want)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	_, err = New(context.Background(), Config{Kubeconfig: missing})
	if want := "--kubeconfig " + missing + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("New with a missing --kubeconfig: %v, want %q", err, want)
	}
}
