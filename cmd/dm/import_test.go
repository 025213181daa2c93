package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	hchart "helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/expand/helm/helmtest"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	secretsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

func helmRecords(t *testing.T, dyn dynamic.Interface, ns, name string) []string {
	t.Helper()
	l, err := dyn.Resource(secretsGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range l.Items {
		names = append(names, s.GetName())
	}
	slices.Sort(names)
	return names
}

func managers(u *unstructured.Unstructured) []string {
	var m []string
	for _, f := range u.GetManagedFields() {
		m = append(m, f.Manager)
	}
	return m
}

// TestImportHelm installs and upgrades a chart with the helm CLI, imports
// the release, and checks that dm owns the objects without having
// recreated or changed the workload, and that the refusals are clear.
func TestImportHelm(t *testing.T) {
	env := kubetest.Start(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	kc, err := kube.New(ctx, kube.Config{Kubeconfig: env.Kubeconfig, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	dyn := kc.Dynamic()
	chart, err := filepath.Abs("../../internal/expand/helm/testdata/charts/basic")
	if err != nil {
		t.Fatal(err)
	}
	helmtest.Install(t, env.Kubeconfig, "install", "web", chart, "-n", ns, "--set", "replicaCount=3")
	helmtest.Install(t, env.Kubeconfig, "upgrade", "web", chart, "-n", ns, "--set", "replicaCount=3", "--set", "service.port=8080")
	helmtest.Install(t, env.Kubeconfig, "install", "other", chart, "-n", ns)

	before, err := dyn.Resource(deploymentsGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=web"})
	if err != nil || len(before.Items) != 1 {
		t.Fatalf("helm's Deployment: %v, %d found", err, len(before.Items))
	}
	dep := before.Items[0]

	dm := func(args ...string) result {
		return dmRun(t, nil, append([]string{"--kubeconfig", env.Kubeconfig, "-n", ns}, args...)...)
	}

	// A dry run records and changes nothing.
	if r := dm("import", "helm", "web", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "kind: Deployment") {
		t.Fatalf("dry run: code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := dm("get", "web"); r.code == 0 {
		t.Fatalf("a dry run recorded deployment web:\n%s", r.stdout)
	}

	if r := dm("import", "helm", "web"); r.code != 0 {
		t.Fatalf("import: code %d\n%s", r.code, r.stderr)
	}
	r := dm("get", "web", "-o", "json")
	if r.code != 0 {
		t.Fatalf("get: code %d\n%s", r.code, r.stderr)
	}
	var view struct {
		Revision  int    `json:"revision"`
		Status    string `json:"status"`
		Template  string `json:"template"`
		Resources []struct {
			Kind, Name string
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &view); err != nil {
		t.Fatalf("get -o json: %v\n%s", err, r.stdout)
	}
	var kinds []string
	for _, res := range view.Resources {
		kinds = append(kinds, res.Kind)
	}
	slices.Sort(kinds)
	if view.Revision != 1 || view.Status != "deployed" || view.Template != "helm:basic@1.2.3" || !slices.Equal(kinds, []string{"ConfigMap", "Deployment", "Service"}) {
		t.Errorf("dm get web = revision %d %s template %q kinds %v; want revision 1 deployed helm:basic@1.2.3 [ConfigMap Deployment Service]\n%s",
			view.Revision, view.Status, view.Template, kinds, r.stdout)
	}
	for _, res := range view.Resources {
		gvr := map[string]schema.GroupVersionResource{"Deployment": deploymentsGVR, "Service": {Version: "v1", Resource: "services"}, "ConfigMap": {Version: "v1", Resource: "configmaps"}}[res.Kind]
		u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, res.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m := managers(u); !slices.Contains(m, "dm") {
			t.Errorf("%s %s: managedFields managers %v, want dm among them", res.Kind, res.Name, m)
		}
		if u.GetLabels()["app.kubernetes.io/managed-by"] != "dm" || u.GetLabels()["dm.io/deployment"] != "web" {
			t.Errorf("%s %s: labels %v, want dm's", res.Kind, res.Name, u.GetLabels())
		}
		if res.Kind == "Service" {
			port, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
			if len(port) != 1 || port[0].(map[string]any)["port"] != int64(8080) {
				t.Errorf("Service ports %v: want the upgraded revision's 8080", port)
			}
		}
	}
	after, err := dyn.Resource(deploymentsGVR).Namespace(ns).Get(ctx, dep.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Kubernetes bumps a Deployment's generation when its annotations
	// change (they are copied to ReplicaSets), so dm's annotations do; what
	// must not change is the object (uid) and its spec, whose pod template
	// decides whether pods are replaced.
	if after.GetUID() != dep.GetUID() || !reflect.DeepEqual(after.Object["spec"], dep.Object["spec"]) {
		a, _ := json.MarshalIndent(after.Object["spec"], "", " ")
		b, _ := json.MarshalIndent(dep.Object["spec"], "", " ")
		t.Errorf("Deployment uid %s after import, was %s; spec\n%s\nwas\n%s", after.GetUID(), dep.GetUID(), a, b)
	}
	if r := dm("history", "web", "-o", "json"); !strings.Contains(r.stdout, "Imported from helm release web revision 2") {
		t.Errorf("history: %s%s", r.stdout, r.stderr)
	}
	rec := dm("manifest", "web")
	if rec.code != 0 || !strings.Contains(rec.stdout, "replicas: 3") {
		t.Errorf("manifest: code %d\n%s%s", rec.code, rec.stdout, rec.stderr)
	}
	// Helm's record stays without --delete-helm-record.
	if got := helmRecords(t, dyn, ns, "web"); len(got) != 2 {
		t.Errorf("Helm records of web after import: %v, want both revisions kept", got)
	}

	refusals := []struct {
		name string
		args []string
		want string
	}{
		{"no release", []string{"import", "helm", "nope"}, "no Helm 3 release nope in namespace " + ns},
		{"imported already", []string{"import", "helm", "web"}, "deployment web exists in namespace " + ns},
		// dm links no helm engine of its own: it renders the recorded chart
		// in dm-helm, which this test does not install.
		{"update without input", []string{"update", "web", "--properties", "replicaCount=4"}, "rendered by the dm-helm program, which is not installed"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := dm(tc.args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("dm %s: code %d, stderr %q; want an error containing %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
			}
		})
	}

	t.Run("not deployed", func(t *testing.T) {
		// A failed revision 2 of a release, in Helm's own record format.
		writeHelmRecord(t, dyn, ns, &hrelease.Release{
			Name: "broken", Namespace: ns, Version: 2,
			Info:     &hrelease.Info{Status: hrelease.StatusFailed},
			Chart:    &hchart.Chart{Metadata: &hchart.Metadata{Name: "basic", Version: "0.1.0"}},
			Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n",
		})
		r := dm("import", "helm", "broken")
		if want := "revision 2 is failed, not deployed"; r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("code %d, stderr %q; want %q", r.code, r.stderr, want)
		}
	})

	t.Run("forbidden namespace", func(t *testing.T) {
		// A user who may do anything in ns but only read elsewhere
		// imports a release with an object in elsewhere: refused, naming
		// it, before anything changes.
		elsewhere := env.Namespace(t)
		dir := t.TempDir()
		files := map[string]string{
			"Chart.yaml":               "apiVersion: v2\nname: spread\nversion: 0.1.0\n",
			"templates/here.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: here\n",
			"templates/elsewhere.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: there\n  namespace: " + elsewhere + "\n",
		}
		for name, body := range files {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		helmtest.Install(t, env.Kubeconfig, "install", "spread", dir, "-n", ns)
		grant(t, dyn, ns, kubetest.LimitedUser, "*")
		grant(t, dyn, elsewhere, kubetest.LimitedUser, "get", "list", "watch")
		r := dmRun(t, nil, "--kubeconfig", env.LimitedKubeconfig, "-n", ns, "import", "helm", "spread")
		if r.code == 0 || !strings.Contains(r.stderr, "forbidden") || !strings.Contains(r.stderr, elsewhere) {
			t.Errorf("import as a user without rights in %s: code %d, stderr %q; want a forbidden error naming it", elsewhere, r.code, r.stderr)
		}
		if r := dm("get", "spread"); r.code == 0 {
			t.Errorf("a refused import recorded deployment spread:\n%s", r.stdout)
		}
		here, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Get(ctx, "here", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m := managers(here); slices.Contains(m, "dm") {
			t.Errorf("a refused import applied ConfigMap here (managers %v)", m)
		}
	})

	t.Run("delete helm record", func(t *testing.T) {
		if r := dm("import", "helm", "other", "--delete-helm-record"); r.code != 0 {
			t.Fatalf("import: code %d\n%s", r.code, r.stderr)
		}
		if got := helmRecords(t, dyn, ns, "other"); len(got) != 0 {
			t.Errorf("Helm records of other after --delete-helm-record: %v", got)
		}
		if got := helmRecords(t, dyn, ns, "web"); len(got) != 2 {
			t.Errorf("Helm records of web: %v; only other's were to go", got)
		}
	})

	t.Run("update with a new input", func(t *testing.T) {
		// An imported deployment updated with a configuration: revision 2,
		// and the chart's objects the configuration lacks are pruned.
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(cfg, []byte("resources:\n- name: settings\n  type: v1/ConfigMap\n  properties:\n    metadata: {name: settings}\n    data: {a: b}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := dm("update", "other", cfg); r.code != 0 {
			t.Fatalf("update: code %d\n%s", r.code, r.stderr)
		}
		r := dm("get", "other", "-o", "json")
		if !strings.Contains(r.stdout, `"revision": 2`) || !strings.Contains(r.stdout, `"name": "settings"`) || strings.Contains(r.stdout, "other-basic") {
			t.Errorf("get after update:\n%s%s", r.stdout, r.stderr)
		}
		if _, err := dyn.Resource(deploymentsGVR).Namespace(ns).Get(ctx, "other-basic", metav1.GetOptions{}); err == nil {
			t.Errorf("Deployment other-basic still exists after an update without it")
		}
	})
}

// writeHelmRecord stores rel as Helm's Secrets driver does.
func writeHelmRecord(t *testing.T, dyn dynamic.Interface, ns string, rel *hrelease.Release) {
	t.Helper()
	js, err := json.Marshal(rel)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(js)
	zw.Close()
	body := base64.StdEncoding.EncodeToString(gz.Bytes())
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": map[string]any{
			"name":   "sh.helm.release.v1." + rel.Name + ".v2",
			"labels": map[string]any{"owner": "helm", "name": rel.Name, "version": "2", "status": rel.Info.Status.String()},
		},
		"data": map[string]any{"release": base64.StdEncoding.EncodeToString([]byte(body))},
	}}
	if _, err := dyn.Resource(secretsGVR).Namespace(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grant lets user do verbs to anything in namespace ns.
func grant(t *testing.T, dyn dynamic.Interface, ns, user string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": "all"},
		"rules":    []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": toAny(verbs)}},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "all"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "all"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
	for _, o := range []struct {
		res string
		u   *unstructured.Unstructured
	}{{"roles", role}, {"rolebindings", binding}} {
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: o.res}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, o.u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
