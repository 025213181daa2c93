package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/controller/crds"
	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// installRolloutCRDs installs the two roll-out policy CRDs and waits
// until the apiserver serves them.
func installRolloutCRDs(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := context.Background()
	all, err := crds.Controller()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if !strings.Contains(c.Name, "rolloutpolicies") {
			continue
		}
		c.APIVersion, c.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", c)
		if err != nil || code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("creating CRD %s: %d %s %v", c.Name, code, body, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, path := range []string{"/apis/dm.io/v1alpha1/templaterolloutpolicies", "/apis/dm.io/v1alpha1/rolloutpolicies"} {
		for {
			code, _, err := env.Do(ctx, env.AdminToken, http.MethodGet, path, nil)
			if err == nil && code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not served after a minute: %d %v", path, code, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// rolloutPolicy creates a policy (a namespace's when ns is not "") and
// writes its status: v1.2.5 rolling out, its first wave soaking.
func rolloutPolicy(t *testing.T, env *kubetest.Env, ns, name string) {
	t.Helper()
	ctx := context.Background()
	kind, path := "TemplateRolloutPolicy", "/apis/dm.io/v1alpha1/templaterolloutpolicies"
	if ns != "" {
		kind, path = "RolloutPolicy", "/apis/dm.io/v1alpha1/namespaces/"+ns+"/rolloutpolicies"
	}
	obj := map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": kind, "metadata": map[string]any{"name": name},
		"spec": map[string]any{"template": "web:v1.2", "waves": []any{
			map[string]any{"name": "canary", "percent": 10, "soakTime": "1m"},
			map[string]any{"name": "rest"},
		}}}
	code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, path, obj)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("creating %s: %d %s %v", name, code, body, err)
	}
	var cur map[string]any
	if err := json.Unmarshal(body, &cur); err != nil {
		t.Fatal(err)
	}
	cur["status"] = map[string]any{"version": "v1.2.5", "previous": "v1.2.4", "waves": []any{
		map[string]any{"name": "canary", "state": "Soaking", "instances": []any{"a/web-1"}, "startedAt": "2026-01-01T00:00:00Z", "readyAt": "2026-01-01T00:00:10Z"},
		map[string]any{"name": "rest", "state": "Pending", "instances": []any{"a/web-2", "b/web-3"}},
	}, "waveStates": "Soaking,Pending"}
	code, body, err = env.Do(ctx, env.AdminToken, http.MethodPut, path+"/"+name+"/status", cur)
	if err != nil || code != http.StatusOK {
		t.Fatalf("writing the status of %s: %d %s %v", name, code, body, err)
	}
}

func TestRolloutCommand(t *testing.T) {
	env := kubetest.Shared(t)
	installRolloutCRDs(t, env)
	ns := env.Namespace(t)
	cluster := "web-" + ns
	rolloutPolicy(t, env, "", cluster)
	rolloutPolicy(t, env, ns, "mine")
	// kubectl get shows the patch rolling out, the waves' states and
	// whether promotion is paused.
	if env.Kubectl == "" {
		t.Fatal("kubectl is not in .testenv/bin: make testenv builds it (make test does)")
	}
	out, err := exec.Command(env.Kubectl, "--kubeconfig", env.Kubeconfig, "get", "templaterolloutpolicies", cluster).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	for _, w := range []string{"VERSION", "WAVES", "PAUSED", "v1.2.5", "Soaking,Pending", "false"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("kubectl get lacks %q:\n%s", w, out)
		}
	}
	kc := []string{"--kubeconfig", env.Kubeconfig}
	dm := func(args ...string) result { return dmRun(t, nil, append(kc, args...)...) }

	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"cluster status", []string{"rollout", "status", cluster}, 0, []string{"TemplateRolloutPolicy " + cluster, "v1.2.5 (from v1.2.4)", "canary", "Soaking", "a/web-1", "rest", "Pending", "a/web-2 b/web-3"}},
		{"namespaced status", []string{"rollout", "status", "mine", "-n", ns}, 0, []string{"RolloutPolicy " + ns + "/mine", "Soaking"}},
		{"json", []string{"rollout", "status", "mine", "-n", ns, "-o", "json"}, 0, []string{`"version": "v1.2.5"`, `"state": "Pending"`}},
		{"cluster one named with -n", []string{"rollout", "status", cluster, "-n", ns}, 1, []string{"RolloutPolicy " + ns + "/" + cluster + " not found", "without -n"}},
		{"namespaced one named without -n", []string{"rollout", "status", "mine"}, 1, []string{"TemplateRolloutPolicy mine not found", "with -n"}},
		{"no policy", []string{"rollout", "status"}, 2, []string{"POLICY"}},
		{"no subcommand", []string{"rollout"}, 2, []string{"status, pause, resume or abort"}},
		{"pause", []string{"rollout", "pause", cluster}, 0, []string{"paused"}},
		{"paused shows", []string{"rollout", "status", cluster}, 0, []string{"Paused:    yes"}},
		{"resume", []string{"rollout", "resume", cluster}, 0, []string{"resumed"}},
		{"abort", []string{"rollout", "abort", "mine", "-n", ns}, 0, []string{"v1.2.5 aborted; 1 instances go back to v1.2.4"}},
		{"aborted shows", []string{"rollout", "status", "mine", "-n", ns}, 0, []string{"Failed:    v1.2.5", "RolledBack", "Halted"}},
		{"abort again", []string{"rollout", "abort", "mine", "-n", ns}, 1, []string{"no roll-out in progress"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := dm(tt.args...)
			out := r.stdout + r.stderr
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", r.code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// Paused and resumed: spec.paused false again.
	r := dm("rollout", "status", cluster, "-o", "json")
	if !strings.Contains(r.stdout, `"paused": false`) {
		t.Errorf("after resume:\n%s", r.stdout)
	}
}
