package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
)

// TestOCIRegistry: dm-controller reads templates from an OCI registry
// (--registry-oci) and applies an instance of one, as it does a
// directory's.
func TestOCIRegistry(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	deployer(t, env, ns)
	reg := ocitest.New(t, ocitest.Options{})
	p := ocitest.NewPusher(t, reg.URL+"/acme/t")
	tmpl := "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {from: oci}}\n"
	ocitest.PushFS(t, p, fstest.MapFS{"cm/v1.0.0/cm.jinja": {Data: []byte(tmpl)}, "cm/v1.0.0/example.yaml": {Data: []byte("resources: []\n")}})

	logs, stop := startController(t, env, "--registry-oci", "github.com/acme/t="+reg.URL+"/acme/t", "--plain-http")
	ti := map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance",
		"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"template": "cm:v1"}}
	if code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodPost, "/apis/dm.io/v1alpha1/namespaces/"+ns+"/templateinstances", ti); err != nil || code/100 != 2 {
		t.Fatalf("creating the instance: %d %s %v", code, body, err)
	}
	waitLogged(t, logs, "the instance's ConfigMap", func() bool {
		code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/x", nil)
		if err != nil || code != http.StatusOK {
			return false
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		return json.Unmarshal(body, &cm) == nil && cm.Data["from"] == "oci"
	})
	stop()
}

// startController runs dm-controller against env with args (its
// registries) until stop, and waits until it is ready (its CRDs
// installed). stop fails the test if the controller did.
func startController(t *testing.T, env *kubetest.Env, args ...string) (logs *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs = &syncBuffer{}
	done := make(chan error, 1)
	health := freeAddr(t)
	go func() {
		done <- run(ctx, append([]string{"--kubeconfig", env.Kubeconfig, "--health-addr", health, "--metrics-addr", "0", "--expand-workers", "1", "--default-service-account", "deployer"}, args...),
			logs, logs, func(string) string { return "" })
	}()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("dm-controller: %v\n%s", err, logs.String())
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	})
	waitLogged(t, logs, "/readyz 200", func() bool {
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return logs, stop
}
