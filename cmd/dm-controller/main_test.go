package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/server"
)

// TestMain lets the test binary serve as the expansion worker, as the
// dm-controller binary does: the pool re-executes os.Executable.
func TestMain(m *testing.M) {
	if sandbox.IsWorker() {
		sandbox.ServeWorker(engines()...)
	}
	kubetest.Main(m)
}

func TestUsageErrors(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", kc}, "give either --server or --registry-dir/--github"},
		{[]string{"--kubeconfig", kc, "--server", "http://127.0.0.1:1", "--registry-dir", "github.com/a/b=."}, "give either --server"},
		{[]string{"--registry-dir", "nonsense"}, "PREFIX=DIR"},
		{[]string{"--log-level", "loud", "--server", "http://x"}, "--log-level"},
		{[]string{"extra"}, "unknown command"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), tt.args, &stderr, &stderr, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dm-controller %v: %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The interface contract: with a kubeconfig and a registry directory,
// dm-controller installs its CRDs, answers /readyz 200 once its caches
// have synced, and stops cleanly when told to (SIGTERM cancels ctx).
func TestReadyzAndShutdown(t *testing.T) {
	env := kubetest.Shared(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cm", "v1.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cm", "v1.0.0", "cm.jinja"), []byte("resources: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	health, metrics := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"--kubeconfig", env.Kubeconfig, "--registry-dir", "github.com/acme/t=" + dir,
			"--default-registry", "github.com/acme/t", "--health-addr", health, "--metrics-addr", metrics, "--expand-workers", "1"},
			&stderr, &stderr, func(string) string { return "" })
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://" + health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("dm-controller exited: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 after 90s (last: %v)\n%s", err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, crd := range []string{"templateinstances.dm.io", "templatedefinitions.dm.io"} {
		code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd, nil)
		if err != nil || code != http.StatusOK {
			t.Errorf("CRD %s: %d %s %v", crd, code, body, err)
		}
	}
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`dm_controller_instances{condition="Ready"}`, "workqueue_depth{", "controller_runtime_reconcile_total"} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("/metrics (%s) has no %s", resp.Status, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("dm-controller after SIGTERM: %v\n%s", err, stderr.String())
	}
}

// waitLogged polls ok every 100 milliseconds until it holds, failing the
// test with what and the controller's logs after 90 seconds: a bound on a
// hang, not a timed assertion.
func waitLogged(t *testing.T, logs *syncBuffer, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 90s\n%s", what, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for the controller's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Two controllers with --leader-elect: only the Lease holder reconciles;
// when it stops (SIGTERM releases the Lease), the other takes over.
func TestLeaderElection(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cm", "v1.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl := "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {n: \"{{ properties.get('n', 0) }}\"}}\n"
	if err := os.WriteFile(filepath.Join(dir, "cm", "v1.0.0", "cm.jinja"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deployer(t, env, ns)
	start := func(health string) (*syncBuffer, context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		logs := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"--kubeconfig", env.Kubeconfig, "--registry-dir", "github.com/acme/t=" + dir,
				"--health-addr", health, "--metrics-addr", "0", "--expand-workers", "1", "--leader-elect",
				"--default-service-account", "deployer", "--log-level", "debug"},
				logs, logs, func(string) string { return "" })
		}()
		return logs, cancel, done
	}
	logsA, stopA, doneA := start(freeAddr(t))
	defer stopA()
	waitLog := func(logs *syncBuffer, want string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !strings.Contains(logs.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log after 90s:\n%s", want, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	holder := func() string {
		code, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/dm-controller.dm.io", nil)
		if err != nil || code != http.StatusOK {
			return ""
		}
		var l struct {
			Spec struct {
				HolderIdentity string `json:"holderIdentity"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(body, &l)
		return l.Spec.HolderIdentity
	}
	waitHolder := func(not string) string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			if h := holder(); h != "" && h != not {
				return h
			}
			if time.Now().After(deadline) {
				t.Fatalf("no new Lease holder after 90s (was %q); first controller's log:\n%s", not, logsA.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := waitHolder("")
	logsB, stopB, doneB := start(freeAddr(t))
	defer stopB()

	apply := func(n int) {
		t.Helper()
		ti := map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance",
			"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"template": "cm:v1", "properties": map[string]any{"n": n}}}
		method, path := http.MethodPost, "/apis/dm.io/v1alpha1/namespaces/"+ns+"/templateinstances"
		if n > 1 {
			// A merge patch is not what Do sends; replace the spec instead.
			code, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, path+"/x", nil)
			if err != nil || code != http.StatusOK {
				t.Fatalf("GET: %d %s %v", code, body, err)
			}
			var cur map[string]any
			if err := json.Unmarshal(body, &cur); err != nil {
				t.Fatal(err)
			}
			cur["spec"] = ti["spec"]
			ti, method, path = cur, http.MethodPut, path+"/x"
		}
		if code, body, err := env.Do(ctx, env.AdminToken, method, path, ti); err != nil || code/100 != 2 {
			t.Fatalf("%s %s: %d %s %v", method, path, code, body, err)
		}
	}
	apply(1)
	applied := "msg=applied instance=" + ns + "/x"
	waitLog(logsA, applied)
	if strings.Contains(logsB.String(), applied) {
		t.Fatalf("the standby reconciled:\n%s", logsB.String())
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("leader after SIGTERM: %v", err)
	}
	waitHolder(first)
	apply(2)
	waitLog(logsB, applied)
	stopB()
	if err := <-doneB; err != nil {
		t.Fatalf("second leader after SIGTERM: %v", err)
	}
}

// startWithServer runs dm-controller with --server url, applying as
// ServiceAccount deployer; stop ends it and waits.
func startWithServer(t *testing.T, env *kubetest.Env, url string) (logs *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs = &syncBuffer{}
	go func() {
		done <- run(ctx, []string{"--kubeconfig", env.Kubeconfig, "--server", url,
			"--health-addr", "0", "--metrics-addr", "0", "--default-service-account", "deployer"},
			logs, logs, func(string) string { return "" })
	}()
	return logs, func() {
		cancel()
		<-done
	}
}

// deployer makes ServiceAccount deployer in ns, allowed to manage
// ConfigMaps and dm's history Secrets: the account instances apply as.
func deployer(t *testing.T, env *kubetest.Env, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []struct{ path, body string }{
		{"/api/v1/namespaces/" + ns + "/serviceaccounts", `{"metadata":{"name":"deployer"}}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles", `{"metadata":{"name":"cm"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["*"]},{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list","create","patch","delete"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings", `{"metadata":{"name":"cm"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm"},"subjects":[{"kind":"ServiceAccount","name":"deployer","namespace":"` + ns + `"}]}`},
	} {
		var v any
		if err := json.Unmarshal([]byte(obj.body), &v); err != nil {
			t.Fatal(err)
		}
		if code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, obj.path, v); err != nil || code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s %v", obj.path, code, body, err)
		}
	}
}

// writeCM writes version v of template cm into the registry directory dir:
// one ConfigMap, named after the deployment, that records the version.
func writeCM(t *testing.T, dir, v string) {
	t.Helper()
	d := filepath.Join(dir, "cm", "v"+v)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl := "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {version: \"" + v + "\"}}\n"
	if err := os.WriteFile(filepath.Join(d, "cm.jinja"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With --server, a new patch version that registryd indexes reaches the
// instances resolving through it at once, by the long poll on registryd's
// GET /v1/index/changes, not at their interval (10m): registryd runs in
// the test on loopback, over a directory it watches.
func TestServerIndexChangeRollsOut(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	deployer(t, env, ns)
	dir := t.TempDir()
	writeCM(t, dir, "1.0.0")
	const prefix = "github.com/acme/t"
	reg, err := api.OpenRegistry(api.RegistrySpec{Prefix: prefix, Dir: dir}, api.Setup{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := resolve.ParseRegistry(prefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	first := api.KeepIndexed(ctx, &wg, reg, time.Hour, nil) // the directory is watched
	<-first
	rd := httptest.NewServer(server.New(server.Options{Resolver: resolve.New(def, reg)}))
	defer rd.Close()

	logs, stop := startWithServer(t, env, rd.URL)
	defer stop()
	ti := map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance",
		"metadata": map[string]any{"name": "follow"}, "spec": map[string]any{"template": "cm:v1"}}
	path := "/apis/dm.io/v1alpha1/namespaces/" + ns + "/templateinstances"
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitLogged(t, logs, what, ok)
	}
	waitFor("instance created (the controller installs the CRDs)", func() bool {
		code, _, err := env.Do(ctx, env.AdminToken, http.MethodPost, path, ti)
		return err == nil && code == http.StatusCreated
	})
	version := func(want string) func() bool {
		return func() bool {
			code, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/follow", nil)
			return err == nil && code == http.StatusOK && strings.Contains(string(body), `"version":"`+want+`"`)
		}
	}
	waitFor("ConfigMap follow at 1.0.0", version("1.0.0"))
	// The reconciles the instance's own first writes queued end first, so
	// that only the index change can bring the new version.
	time.Sleep(5 * time.Second)
	writeCM(t, dir, "1.0.1")
	waitFor("ConfigMap follow rolled out to 1.0.1", version("1.0.1"))
}

// With --server and the registryd unreachable, an instance is Reconciling
// (retried, nothing applied), not Stalled: it needs time, not a human.
func TestRegistryUnreachable(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	deployer(t, env, ns)
	logs, stop := startWithServer(t, env, "http://"+freeAddr(t)) // nothing listens there
	defer stop()
	ti := map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance",
		"metadata": map[string]any{"name": "far"}, "spec": map[string]any{"template": "cm:v1"}}
	path := "/apis/dm.io/v1alpha1/namespaces/" + ns + "/templateinstances"
	deadline := time.Now().Add(90 * time.Second)
	for { // the CRDs are installed by the controller
		code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodPost, path, ti)
		if err == nil && code == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("POST %s: %d %s %v\n%s", path, code, body, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		_, body, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, path+"/far", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Status struct {
				Conditions []struct{ Type, Status, Reason, Message string } `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		conds := map[string]string{}
		for _, c := range got.Status.Conditions {
			conds[c.Type] = c.Status + " " + c.Message
		}
		if strings.HasPrefix(conds["Reconciling"], "True") {
			if _, stalled := conds["Stalled"]; stalled || !strings.HasPrefix(conds["Ready"], "False") || !strings.Contains(conds["Reconciling"], "retrying") {
				t.Errorf("conditions %v; want Reconciling (retrying) and Ready False, not Stalled", conds)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Reconciling condition after 90s: %v\n%s", conds, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// With --github, the controller indexes the repository itself (through the
// GitHub test server over a real git repository) and refreshes it every
// --refresh with a conditional request: a new patch version pushed to the
// repository rolls out to the instances that follow its MAJOR.MINOR, their
// status.resolved and their objects in the cluster, without any change to
// the instance.
func TestGitHubPushRollsOut(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	deployer(t, env, ns)
	cm := func(v string) string {
		return "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {version: \"" + v + "\"}}\n"
	}
	repo := githubtest.NewRepoFS(t, fstest.MapFS{"cm/v1.0.0/cm.jinja": {Data: []byte(cm("1.0.0"))}})
	gh := githubtest.New(map[string]string{"acme/tpl": repo})
	defer gh.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		done <- run(ctx, []string{"--kubeconfig", env.Kubeconfig, "--github", "acme/tpl", "--github-api", gh.URL, "--refresh", "1s",
			"--health-addr", "0", "--metrics-addr", "0", "--expand-workers", "1", "--default-service-account", "deployer"},
			logs, logs, func(string) string { return "" })
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dm-controller: %v", err)
		}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitLogged(t, logs, what, ok)
	}
	ti := map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance",
		"metadata": map[string]any{"name": "gh"}, "spec": map[string]any{"template": "cm:v1.0"}}
	path := "/apis/dm.io/v1alpha1/namespaces/" + ns + "/templateinstances"
	waitFor("instance created (the controller installs the CRDs)", func() bool {
		code, _, err := env.Do(ctx, env.AdminToken, http.MethodPost, path, ti)
		return err == nil && code == http.StatusCreated
	})
	rolledOut := func(v string) func() bool {
		return func() bool {
			code, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/gh", nil)
			if err != nil || code != http.StatusOK || !strings.Contains(string(body), `"version":"`+v+`"`) {
				return false
			}
			code, body, err = env.Do(ctx, env.AdminToken, http.MethodGet, path+"/gh", nil)
			if err != nil || code != http.StatusOK {
				return false
			}
			var got struct {
				Status struct {
					Resolved   string                                  `json:"resolved"`
					Conditions []struct{ Type, Status, Reason string } `json:"conditions"`
				} `json:"status"`
			}
			if json.Unmarshal(body, &got) != nil || got.Status.Resolved != "github.com/acme/tpl/cm:v"+v {
				return false
			}
			for _, c := range got.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" {
					return true
				}
			}
			return false
		}
	}
	waitFor("instance Ready at 1.0.0, ConfigMap gh at 1.0.0", rolledOut("1.0.0"))
	// Unchanged refreshes are conditional: answered 304, no tree read.
	waitFor("a conditional refresh answered 304", func() bool { return gh.Responses(http.StatusNotModified) > 0 })
	githubtest.Commit(t, repo, map[string]string{"cm/v1.0.1/cm.jinja": cm("1.0.1")})
	waitFor("instance Ready at 1.0.1, ConfigMap gh rolled out to 1.0.1", rolledOut("1.0.1"))
}
