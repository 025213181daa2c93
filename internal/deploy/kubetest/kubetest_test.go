package kubetest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestEnv(t *testing.T) {
	env := Shared(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	code, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/readyz", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /readyz = %d %s, %v", code, body, err)
	}

	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"},
		"data":     map[string]any{"k": "v"},
	}
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	if code, body, err := env.Do(ctx, env.LimitedToken, http.MethodGet, path, nil); err != nil || code != http.StatusForbidden {
		t.Errorf("limited user: GET %s = %d %s, %v; want 403", path, code, body, err)
	} else if !strings.Contains(string(body), `cannot list resource \"configmaps\"`) {
		t.Errorf("limited user: forbidden body %s does not name the verb and resource", body)
	}
	if code, body, err := env.Do(ctx, env.LimitedToken, http.MethodPost, path, cm); err != nil || code != http.StatusForbidden {
		t.Errorf("limited user: POST %s = %d %s, %v; want 403", path, code, body, err)
	}
	if code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, path, cm); err != nil || code != http.StatusCreated {
		t.Fatalf("admin: POST %s = %d %s, %v; want 201", path, code, body, err)
	}

	for _, f := range []string{env.Kubeconfig, env.LimitedKubeconfig} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "server: "+env.Server) || !strings.Contains(string(data), "certificate-authority-data: ") {
			t.Errorf("%s lacks the server or its CA:\n%s", f, data)
		}
	}
}

// TestSharedStartsStopped checks that Shared starts the apiserver again
// when an earlier test stopped it and did not start it.
func TestSharedStartsStopped(t *testing.T) {
	env := Shared(t)
	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if again := Shared(t); again != env {
		t.Fatal("Shared returned another Env")
	}
	if code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, "/readyz", nil); err != nil || code != http.StatusOK {
		t.Fatalf("GET /readyz after Shared = %d %s, %v", code, body, err)
	}
}

// TestRestart checks that an apiserver stopped and started again serves
// what was stored before, on the same address. It restarts the shared
// apiserver: no test of this package runs in parallel.
func TestRestart(t *testing.T) {
	env := Shared(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "kept"}}
	if code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", cm); err != nil || code != http.StatusCreated {
		t.Fatalf("POST = %d %s, %v", code, body, err)
	}
	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/readyz", nil); err == nil {
		t.Error("the apiserver answers after StopAPIServer")
	}
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/kept", nil); err != nil || code != http.StatusOK {
		t.Fatalf("GET after restart = %d %s, %v", code, body, err)
	}
	env.Restart(t)
}

// TestClose checks that Close stops the processes and removes the
// directory.
func TestClose(t *testing.T) {
	skipShort(t)
	bins, err := FindBinaries()
	if err != nil {
		fail(t, err)
	}
	env, err := Launch(context.Background(), Options{Binaries: bins, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir, api, etcd := env.Dir, env.api, env.etcd
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Close: %v", dir, err)
	}
	for _, p := range []int{api.Process.Pid, etcd.Process.Pid} {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(p))); err == nil {
			t.Errorf("process %d still runs after Close", p)
		}
	}
	if err := env.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestLaunchPortTaken checks that an apiserver that cannot bind its port
// fails Launch with its log, leaving nothing behind.
func TestLaunchPortTaken(t *testing.T) {
	skipShort(t)
	bins, err := FindBinaries()
	if err != nil {
		fail(t, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	parent := t.TempDir()
	_, err = Launch(context.Background(), Options{Binaries: bins, Dir: parent, Port: l.Addr().(*net.TCPAddr).Port})
	if err == nil {
		t.Fatal("Launch succeeded on a port in use")
	}
	if !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("error does not say the apiserver exited, with its log: %v", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("Launch left %v behind", left)
	}
}

// TestRemoveStale checks that Launch's sweep removes the directory of a
// process that is gone and keeps those of live processes and of unknown
// owners.
func TestRemoveStale(t *testing.T) {
	parent := t.TempDir()
	mk := func(name, owner string) string {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	// A pid above the kernel's maximum (4194304) never runs.
	gone := mk(dirPrefix+"gone", "99999999")
	live := mk(dirPrefix+"live", strconv.Itoa(os.Getpid()))
	unknown := mk(dirPrefix+"unknown", "")
	other := mk("other", "99999999")
	removeStale(parent)
	for dir, want := range map[string]bool{gone: false, live: true, unknown: true, other: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists = %v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}

func TestFindBinariesMissing(t *testing.T) {
	t.Setenv("DM_KUBE_BIN", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err := FindBinaries()
	if err == nil {
		t.Fatal("FindBinaries found kube-apiserver in an empty directory")
	}
	if !strings.Contains(err.Error(), "kube-apiserver not found") || !strings.Contains(err.Error(), "$DM_KUBE_BIN") {
		t.Errorf("error %q does not say what is missing and why", err)
	}
}

func TestDNSLabel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"TestEnv", 56, "testenv"},
		{"TestDeploy/CRD_and_CR", 56, "testdeploy-crd-and-cr"},
		{"9lives", 56, "t9lives"},
		{"___", 56, "t"},
		{"Test" + strings.Repeat("x", 100), 10, "testxxxxxx"},
		{"ab/cd", 3, "ab"},
	} {
		if got := dnsLabel(tc.in, tc.max); got != tc.want {
			t.Errorf("dnsLabel(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// With kube-controller-manager, a namespace gets its default
// ServiceAccount, the garbage collector deletes what an object owned, a
// Deployment gets its ReplicaSet, and a deleted namespace is emptied and
// goes away: what dm's tests need of it, which the build of `make testenv`
// (hack/kube/trimkcm) must keep.
func TestControllerManager(t *testing.T) {
	env := StartWith(t, Options{ControllerManager: true})
	ctx := context.Background()
	if err := env.CreateNamespace(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	post := func(path string, obj map[string]any) map[string]any {
		t.Helper()
		code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, path, obj)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("POST %s = %d %s, %v", path, code, body, err)
		}
		var created map[string]any
		if err := json.Unmarshal(body, &created); err != nil {
			t.Fatal(err)
		}
		return created
	}
	get := func(path string) (int, []byte) {
		code, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, path, nil)
		if err != nil {
			return 0, nil
		}
		return code, body
	}
	owner := post("/api/v1/namespaces/doomed/configmaps", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}})
	uid := owner["metadata"].(map[string]any)["uid"]
	post("/api/v1/namespaces/doomed/configmaps", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name":            "dependent",
		"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": uid}},
	}})
	post("/apis/apps/v1/namespaces/doomed/deployments", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}},
			},
		},
	})
	waitFor(t, "the default ServiceAccount of namespace doomed", func() bool {
		code, _ := get("/api/v1/namespaces/doomed/serviceaccounts/default")
		return code == http.StatusOK
	})
	waitFor(t, "a ReplicaSet of Deployment web", func() bool {
		code, body := get("/apis/apps/v1/namespaces/doomed/replicasets")
		return code == http.StatusOK && strings.Contains(string(body), `"kind":"Deployment","name":"web"`)
	})
	if code, body, err := env.Do(ctx, env.AdminToken, http.MethodDelete, "/api/v1/namespaces/doomed/configmaps/c", nil); err != nil || code != http.StatusOK {
		t.Fatalf("DELETE ConfigMap c = %d %s, %v", code, body, err)
	}
	waitFor(t, "ConfigMap dependent deleted with its owner", func() bool {
		code, _ := get("/api/v1/namespaces/doomed/configmaps/dependent")
		return code == http.StatusNotFound
	})
	if code, body, err := env.Do(ctx, env.AdminToken, http.MethodDelete, "/api/v1/namespaces/doomed", nil); err != nil || code != http.StatusOK {
		t.Fatalf("DELETE namespace = %d %s, %v", code, body, err)
	}
	waitFor(t, "namespace doomed deleted", func() bool {
		code, _, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/api/v1/namespaces/doomed", nil)
		return err == nil && code == http.StatusNotFound
	})
}

// waitFor polls ok for up to a minute.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOtherEtcdOnPort: an etcd that answers on an Env's client URL under
// another name than the one the Env started (another test process's,
// which took the port first) is not taken for the Env's own: it is a
// taken port, which Launch retries with new ports.
func TestOtherEtcdOnPort(t *testing.T) {
	env := Shared(t)
	if err := env.checkEtcdName(t.Context(), env.etcdName); err != nil {
		t.Fatalf("the Env's own etcd: %v", err)
	}
	other := &Env{etcdURL: env.etcdURL, EtcdLog: "etcd.log"}
	err := other.checkEtcdName(t.Context(), "kubetest-another")
	if !errors.Is(err, errOtherEtcd) || !portTaken(err, "") {
		t.Errorf("another etcd on the port: %v, want errOtherEtcd, a taken port", err)
	}
}
