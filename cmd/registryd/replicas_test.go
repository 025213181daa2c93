package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/crds"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/kubereg"
)

// replica is a registryd process of the replica tests.
type replica struct {
	url string
	cmd *exec.Cmd
	log *syncBuffer
	// token, if set, is sent as the bearer token of the test's requests
	// (/metrics needs one; a namespace's registries too), and ns, if set,
	// names the namespace whose registries they ask for.
	token, ns string
	// args are the flags it runs with, for restart.
	args []string

	mu sync.Mutex
	// restarts are the spans of log written while the apiserver was away
	// or starting: before its RBAC caches sync, a starting apiserver
	// refuses requests that its roles allow.
	restarts [][2]int
}

// apiserverAway marks the log from now until the returned function is
// called as written while the apiserver was stopped or starting.
func (r *replica) apiserverAway() (back func()) {
	from := len(r.log.String())
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.restarts = append(r.restarts, [2]int{from, len(r.log.String())})
	}
}

// refused reports whether the apiserver refused the replica a request
// outside a restart.
func (r *replica) refused() bool {
	log := r.log.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	at := 0
	for _, span := range r.restarts {
		b.WriteString(log[at:span[0]])
		at = span[1]
	}
	b.WriteString(log[at:])
	return strings.Contains(b.String(), "forbidden")
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startReplica runs the test binary as registryd with args until the test
// ends, and waits until it answers /healthz.
func startReplica(t testing.TB, args ...string) *replica {
	t.Helper()
	return startReplicaAt(t, freeAddr(t), args...)
}

// restart stops the replica as a rolling update does (SIGTERM) and starts
// it again at the same address with the same flags, so the same cache
// directory; the new process keeps the token and namespace of the tests'
// requests.
func (r *replica) restart(t testing.TB) *replica {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
	n := startReplicaAt(t, strings.TrimPrefix(r.url, "http://"), r.args...)
	n.token, n.ns = r.token, r.ns
	return n
}

// startReplicaAt is startReplica listening on addr.
func startReplicaAt(t testing.TB, addr string, args ...string) *replica {
	t.Helper()
	r := &replica{url: "http://" + addr, log: &syncBuffer{}, args: args}
	r.cmd = exec.Command(os.Args[0], append([]string{"--addr", addr}, args...)...)
	r.cmd.Env = append(os.Environ(), asRegistryd+"=1", "GITHUB_TOKEN=", "REGISTRYD_WEBHOOK_SECRET=")
	r.cmd.Stderr, r.cmd.Stdout = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = r.cmd.Process.Kill()
		}
		// registryd runs with its template's rights (registrydAccount):
		// a request they do not allow is a gap in the template's RBAC.
		if r.refused() {
			t.Errorf("the apiserver refused registryd %s a request: registry-example's registryd:v1 grants too little", addr)
		}
		if t.Failed() {
			t.Logf("registryd %s log:\n%s", addr, r.log)
		}
	})
	waitFor(t, 60*time.Second, "registryd "+addr+" to answer /healthz", func() bool {
		resp, err := http.Get(r.url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return r
}

// system is registryd's own namespace in the cluster tests.
const system = "dm-system"

// startCluster starts the test apiserver for a test of registryd in a
// cluster (skipped with -short) and returns it, a client of it with the
// CRDs installed, and registryd's namespace system created.
func startCluster(t testing.TB) (*kubetest.Env, client.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the apiserver")
	}
	env := kubetest.Start(t)
	c := kubeClient(t, env)
	if err := env.CreateNamespace(context.Background(), system); err != nil {
		t.Fatal(err)
	}
	return env, c
}

// replicaArgs are the flags of a registryd with --watch-registries
// against the cluster of kubeconfig (registrydAccount's: registryd holds
// only its template's rights), in namespace system, with the GitHub API
// at ghURL, and extra flags.
func replicaArgs(t testing.TB, kubeconfig, ghURL string, extra ...string) []string {
	return append([]string{"--watch-registries", "--kubeconfig", kubeconfig, "--namespace", system,
		"--github-api", ghURL, "--refresh", "1h", "--cache-dir", t.TempDir(), "--no-sandbox"}, extra...)
}

// startReplicas runs three registryd processes with replicaArgs.
func startReplicas(t testing.TB, kubeconfig, ghURL string, extra ...string) []*replica {
	t.Helper()
	var rs []*replica
	for range 3 {
		rs = append(rs, startReplica(t, replicaArgs(t, kubeconfig, ghURL, extra...)...))
	}
	return rs
}

// createClusterRegistry serves acme/tpl's main branch to every replica.
func createClusterRegistry(t testing.TB, c client.Client) {
	t.Helper()
	creg := &v1alpha1.ClusterRegistry{ObjectMeta: metav1.ObjectMeta{Name: "tpl"},
		Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: "tpl", Branch: "main"}}}
	if err := c.Create(context.Background(), creg); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 50 milliseconds until it holds, failing the
// test after max: a bound on a hang, not a timed assertion.
func waitFor(t testing.TB, max time.Duration, what string, cond func() bool) {
	t.Helper()
	waitForf(t, max, func() string { return what }, cond)
}

// waitForf is waitFor whose what is written when it fails, to say what
// was seen then.
func waitForf(t testing.TB, max time.Duration, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(max)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", max, what())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The metrics of registryd's example tests.
const (
	examplesOK      = `registryd_example_tests{status="ok"}`
	examplesPending = `registryd_example_tests{status="pending"}`
	examplesRun     = "registryd_example_tests_run_total"
)

// waitTested waits, at most max for each, until every replica of rs
// serves n tested examples and none pending.
func waitTested(t testing.TB, rs []*replica, n float64, max time.Duration) {
	t.Helper()
	for i, r := range rs {
		waitForf(t, max, func() string {
			var runs []string
			for _, r := range rs {
				runs = append(runs, fmt.Sprint(r.metric(examplesRun)))
			}
			return fmt.Sprintf("replica %d to serve %v tested examples and none pending (it serves %v, %v pending; tests run by each replica: %s)",
				i, n, r.metric(examplesOK), r.metric(examplesPending), strings.Join(runs, " "))
		}, func() bool {
			return r.metric(examplesOK) == n && r.metric(examplesPending) == 0
		})
	}
}

// resolved returns what ref resolves to on r, or the error status.
func (r *replica) resolved(ref string) string {
	resp, err := r.get("/v1/resolve?ref=" + ref)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Sprintf("status %d", resp.StatusCode)
	}
	var res api.Resolution
	if err := json.Unmarshal(b, &res); err != nil {
		return err.Error()
	}
	return res.Resolved
}

// get sends GET path with the replica's token and namespace, if set.
func (r *replica) get(path string) (*http.Response, error) { return r.getAs(path, r.token, r.ns) }

// getAs sends GET path as a caller: with token as the bearer token and
// naming namespace ns, each if not "".
func (r *replica) getAs(path, token, ns string) (*http.Response, error) {
	if ns != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "namespace=" + ns
	}
	req, err := http.NewRequest(http.MethodGet, r.url+path, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "text/html,application/json")
	return http.DefaultClient.Do(req)
}

// ready returns /readyz's status and body.
func (r *replica) ready() (int, string) {
	resp, err := http.Get(r.url + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// push posts a push event for acme/tpl's main, signed with secret.
func (r *replica) push(t testing.TB, secret, after string) (int, string) {
	t.Helper()
	body := []byte(`{"ref":"refs/heads/main","after":"` + after + `","repository":{"full_name":"acme/tpl","default_branch":"main"}}`)
	req, _ := http.NewRequest("POST", r.url+"/v1/webhooks/github", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "d-"+after)
	req.Header.Set("X-Hub-Signature-256", hookSignature(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hookSignature computes X-Hub-Signature-256 as GitHub does.
func hookSignature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// kubeClient returns a client of the test apiserver with the CRDs
// installed.
func kubeClient(t testing.TB, env *kubetest.Env) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := kubereg.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{apiextensionsv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, crd := range all {
		if err := c.Create(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "the CRDs to be served", func() bool {
		return c.List(ctx, &v1alpha1.RegistryList{}) == nil && c.List(ctx, &v1alpha1.ClusterRegistryList{}) == nil
	})
	return c
}

// TestReplicas runs three registryd processes with --watch-registries
// against a real apiserver and the GitHub test server: a Registry created
// is served by all three, with its token and webhook secret from Secrets;
// one signed push to one replica makes the new version resolve on all
// three; the Lease holder writes status; a rotated token takes effect; an
// edited prefix moves the registry; a suspended one ignores pushes; a
// deleted one is served no more; with the apiserver stopped every replica
// keeps resolving and says so in /readyz, which stays 200.
func TestReplicas(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	const hookSecret = "hook-secret-271"
	ns := env.Namespace(t)

	repo := githubtest.NewRepoFS(t, mapFS(t, fixture))
	gh := githubtest.New(map[string]string{"acme/tpl": repo})
	defer gh.Close()
	gh.RequireToken("token-1")

	secretReader(t, c, ns, system, "github")
	rs := startReplicas(t, registrydAccount(t, env.Kubeconfig, c, system), gh.URL, "--lease-duration", "4s")
	for _, r := range rs {
		r.token, r.ns = env.AdminToken, ns
	}
	for i, r := range rs {
		if code, body := r.ready(); code != 200 {
			t.Fatalf("replica %d /readyz without registries: %d %s", i, code, body)
		}
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"},
		StringData: map[string]string{"token": "token-1", "webhook": hookSecret}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	reg := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tpl"}, Spec: v1alpha1.RegistrySpec{
		GitHub:           v1alpha1.RegistryGitHub{Owner: "acme", Repo: "tpl", Branch: "main"},
		TokenSecretRef:   &v1alpha1.SecretKeyReference{Name: "github", Key: "token"},
		WebhookSecretRef: &v1alpha1.SecretKeyReference{Name: "github", Key: "webhook"},
	}}
	if err := c.Create(ctx, reg); err != nil {
		t.Fatal(err)
	}
	allResolve := func(what, ref, want string) {
		t.Helper()
		for i, r := range rs {
			waitFor(t, 30*time.Second, fmt.Sprintf("%s: replica %d to resolve %s to %s (last: %s)", what, i, ref, want, r.resolved(ref)), func() bool {
				return r.resolved(ref) == want
			})
		}
	}
	allResolve("created", "github.com/acme/tpl/redis:v1.0", "github.com/acme/tpl/redis:v1.0.3")

	t.Run("status", func(t *testing.T) {
		waitFor(t, 30*time.Second, "the Lease holder to write Ready status", func() bool {
			got := &v1alpha1.Registry{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(reg), got); err != nil {
				return false
			}
			st := got.Status
			return apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady) && st.Commit == githubtest.Head(t, repo) &&
				st.Prefix == "github.com/acme/tpl" && st.Templates == 2 && st.Versions == 5 && st.LastSuccessTime != nil
		})
	})

	t.Run("push to one replica reaches all", func(t *testing.T) {
		head := githubtest.Commit(t, repo, map[string]string{"redis/v1.0.9/redis.jinja": "kind: d\n"})
		gh.ResetCounts()
		if code, body := rs[1].push(t, hookSecret, head); code != 202 || !strings.Contains(body, "refresh scheduled") {
			t.Fatalf("push: %d %s", code, body)
		}
		allResolve("pushed", "github.com/acme/tpl/redis:v1.0", "github.com/acme/tpl/redis:v1.0.9")
		// The receiver reads the head and its tree; the two others only the
		// tree of the commit it recorded.
		if n, c := gh.Requests(), gh.RequestsTo("commit"); n > 4 || c != 1 {
			t.Errorf("one push to 3 replicas: %d GitHub requests (%d head reads), want at most 4 (1)", n, c)
		}
		// The commit is recorded in registryd's own ConfigMap, by the
		// object's uid: registryd changes nothing of the Registry.
		got := &v1alpha1.Registry{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(reg), got); err != nil {
			t.Fatal(err)
		}
		pushes := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: system, Name: "registryd-pushes"}, pushes); err != nil {
			t.Fatal(err)
		}
		if a := pushes.Data[string(got.UID)]; a != head {
			t.Errorf("registryd-pushes records %q for the Registry, want %s (%v)", a, head, pushes.Data)
		}
		if len(got.Annotations) != 0 {
			t.Errorf("registryd wrote annotations on the Registry: %v", got.Annotations)
		}
	})

	// updateRegistry changes reg's spec, read again on a conflict: the
	// replicas write its status meanwhile.
	updateRegistry := func(t *testing.T, change func(*v1alpha1.Registry)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := &v1alpha1.Registry{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(reg), got); err != nil {
				return err
			}
			change(got)
			return c.Update(ctx, got)
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("rotated token", func(t *testing.T) {
		gh.RequireToken("token-2")
		// The rotated token opens the registry anew, which refreshes at
		// once: the new commit is read only with the new token.
		githubtest.Commit(t, repo, map[string]string{"redis/v1.0.10/redis.jinja": "kind: e\n"})
		got := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), got); err != nil {
			t.Fatal(err)
		}
		got.StringData = map[string]string{"token": "token-2"}
		if err := c.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		allResolve("token rotated", "github.com/acme/tpl/redis:v1.0", "github.com/acme/tpl/redis:v1.0.10")
	})

	t.Run("edited prefix", func(t *testing.T) {
		updateRegistry(t, func(r *v1alpha1.Registry) { r.Spec.Prefix = "github.com/acme/renamed" })
		allResolve("renamed", "github.com/acme/renamed/redis:v1.0", "github.com/acme/renamed/redis:v1.0.10")
		allResolve("renamed", "github.com/acme/tpl/redis:v1.0", "status 404")
	})

	t.Run("suspended", func(t *testing.T) {
		updateRegistry(t, func(r *v1alpha1.Registry) { r.Spec.Suspend = true })
		waitFor(t, 30*time.Second, "the suspended registry's webhook to be dropped", func() bool {
			code, _ := rs[0].push(t, hookSecret, fmt.Sprint("s", time.Now().UnixNano()))
			return code == 404
		})
		allResolve("suspended", "github.com/acme/renamed/redis:v1.0", "github.com/acme/renamed/redis:v1.0.10")
	})

	t.Run("apiserver stopped", func(t *testing.T) {
		var back []func()
		for _, r := range rs {
			back = append(back, r.apiserverAway())
		}
		if err := env.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			waitFor(t, 60*time.Second, fmt.Sprintf("replica %d to note the unreachable apiserver", i), func() bool {
				code, body := r.ready()
				return code == 200 && strings.Contains(body, "apiserver unreachable")
			})
			if got := r.resolved("github.com/acme/renamed/redis:v1.0"); got != "github.com/acme/renamed/redis:v1.0.10" {
				t.Errorf("replica %d without the apiserver resolves %s", i, got)
			}
		}
		if err := env.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		for _, b := range back {
			b() // the apiserver is ready (its /readyz waits for its caches)
		}
		for i, r := range rs {
			waitFor(t, 60*time.Second, fmt.Sprintf("replica %d to see the apiserver back", i), func() bool {
				_, body := r.ready()
				return !strings.Contains(body, "apiserver unreachable")
			})
		}
	})

	t.Run("deleted", func(t *testing.T) {
		if err := c.Delete(ctx, &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tpl"}}); err != nil {
			t.Fatal(err)
		}
		allResolve("deleted", "github.com/acme/renamed/redis:v1.0", "status 404")
	})
}

// metric reads one sample of r's /metrics: name with its labels as
// printed ("registryd_example_tests{status=\"ok\"}"); -1 when absent.
func (r *replica) metric(name string) float64 {
	resp, err := r.get("/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// TestReplicaExamples: three replicas test each version's example once,
// in the Lease holder, and all serve the results (stored in ConfigMaps);
// the tester killed with SIGKILL, another takes the Lease and tests what
// is new, nothing twice (counted with registryd_example_tests_run_total).
func TestReplicaExamples(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	const hookSecret = "hook-secret-577"
	repo := githubtest.NewRepoFS(t, mapFS(t, fixture))
	gh := githubtest.New(map[string]string{"acme/tpl": repo})
	defer gh.Close()

	rs := startReplicas(t, registrydAccount(t, env.Kubeconfig, c, system), gh.URL, "--lease-duration", "3s", "--example-settle", "0", "--webhook-secret", hookSecret)
	for _, r := range rs {
		r.token = env.AdminToken // /metrics is guarded
	}
	createClusterRegistry(t, c)
	waitTested(t, rs, 5, time.Minute)
	var tester *replica
	total := 0.0
	for _, r := range rs {
		n := r.metric(examplesRun)
		total += n
		if n > 0 {
			tester = r
		}
	}
	if total != 5 || tester == nil {
		t.Fatalf("examples tested %v times across the replicas, want 5 (once per version)", total)
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(system), client.HasLabels{"dm.io/registryd-examples"}); err != nil || len(cms.Items) == 0 {
		t.Fatalf("no result ConfigMaps (%v)", err)
	}

	// The tester dies without a word; a push adds three versions.
	if err := tester.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var rest []*replica
	for _, r := range rs {
		if r != tester {
			rest = append(rest, r)
		}
	}
	head := githubtest.Commit(t, repo, map[string]string{
		"redis/v1.2.0/redis.jinja": "kind: x\n", "redis/v1.2.0/example.yaml": "resources: []\n",
		"redis/v1.2.1/redis.jinja": "kind: y\n", "redis/v1.2.1/example.yaml": "resources: []\n",
		"redis/v1.2.2/redis.jinja": "kind: z\n", "redis/v1.2.2/example.yaml": "resources: []\n",
	})
	if code, body := rest[0].push(t, hookSecret, head); code != 202 {
		t.Fatalf("push: %d %s", code, body)
	}
	waitTested(t, rest, 8, time.Minute)
	if n := rest[0].metric(examplesRun) + rest[1].metric(examplesRun); n != 3 {
		t.Errorf("the survivors tested %v examples, want 3: the new versions, once", n)
	}
}
