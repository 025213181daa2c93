package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// fiveTemplate renders five objects that are Current without a kubelet
// (a ConfigMap, a Secret, a Service, a ServiceAccount and a Role), named
// after the deployment; version is recorded in the ConfigMap.
func fiveTemplate(version string) string {
	obj := func(name, typ, body string) string {
		return "- name: " + name + "\n  type: " + typ + "\n  properties: {" + body + "}\n"
	}
	meta := `metadata: {name: "{{ env['deployment'] }}"}`
	return "resources:\n" +
		obj("cm", "ConfigMap", `apiVersion: v1, kind: ConfigMap, `+meta+`, data: {version: "`+version+`", n: "{{ properties.get('n', 0) }}"}`) +
		obj("secret", "Secret", `apiVersion: v1, kind: Secret, `+meta+`, stringData: {token: "t"}`) +
		obj("svc", "Service", `apiVersion: v1, kind: Service, `+meta+`, spec: {ports: [{port: 80}], selector: {app: "{{ env['deployment'] }}"}}`) +
		obj("sa", "ServiceAccount", `apiVersion: v1, kind: ServiceAccount, `+meta) +
		obj("role", "rbac.authorization.k8s.io/v1/Role", `apiVersion: rbac.authorization.k8s.io/v1, kind: Role, `+meta+`, rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]`)
}

// fiveKinds are the kinds fiveTemplate renders, as resource names.
var fiveKinds = []string{"configmaps", "secrets", "services", "serviceaccounts", "roles.rbac.authorization.k8s.io"}

// scale is a controller process over a registry directory with template
// five, and a namespace whose account "deployer" is a cluster admin (the
// template writes Roles, which RBAC lets only a holder of their rules do).
type scale struct {
	t    testing.TB
	env  *kubetest.Env
	c    client.Client
	dyn  *dynamic.DynamicClient
	ns   string
	dir  string
	bin  string
	proc *exec.Cmd
	logs *bytes.Buffer
	// metrics is the controller's /metrics address.
	metrics string
	// args are more flags of the controller.
	args []string
}

func newScale(t testing.TB, env *kubetest.Env) *scale {
	t.Helper()
	s := &scale{t: t, env: env, ns: env.Namespace(t), dir: t.TempDir()}
	s.writeVersion("1.0.0")
	bin := filepath.Join(t.TempDir(), "dm-controller")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s.bin = bin
	rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = -1, 0          // the test's own reads are not what is measured
	ctrllog.SetLogger(logr.Discard()) // the test's client logs nothing worth reading
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if s.c, err = client.New(rc, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if s.dyn, err = dynamic.NewForConfig(rc); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must(t, s.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "deployer"}}))
	must(t, s.c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-" + s.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: s.ns, Name: "deployer"}},
	}))
	t.Cleanup(func() { s.stop(syscall.SIGTERM) })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s *scale) writeVersion(v string) {
	d := filepath.Join(s.dir, "five", "v"+v)
	must(s.t, os.MkdirAll(d, 0o755))
	must(s.t, os.WriteFile(filepath.Join(d, "five.jinja"), []byte(fiveTemplate(v)), 0o644))
}

// start runs the controller process.
func (s *scale) start() {
	s.t.Helper()
	s.metrics = freeAddr(s.t)
	s.logs = &bytes.Buffer{}
	s.proc = exec.Command(s.bin, "--kubeconfig", s.env.Kubeconfig, "--registry-dir", "github.com/acme/t="+s.dir,
		"--default-registry", "github.com/acme/t", "--metrics-addr", s.metrics, "--health-addr", "0",
		"--default-service-account", "deployer", "--log-level", "warn")
	s.proc.Args = append(s.proc.Args, s.args...)
	s.proc.Stdout, s.proc.Stderr = s.logs, s.logs
	must(s.t, s.proc.Start())
}

// stop ends the controller process with sig and waits for it.
func (s *scale) stop(sig syscall.Signal) {
	if s.proc == nil {
		return
	}
	_ = s.proc.Process.Signal(sig)
	_ = s.proc.Wait()
	s.proc = nil
}

// create makes n instances inst-0 ... inst-(n-1) of five:v1.
func (s *scale) create(n int, interval time.Duration) {
	s.t.Helper()
	for i := range n {
		s.create1(fmt.Sprintf("inst-%d", i), interval)
	}
}

// ready counts the instances whose Ready is True for their generation,
// with resolved reference want when want is not "".
func (s *scale) ready(want string) (map[string]bool, int) {
	var l v1alpha1.TemplateInstanceList
	if err := s.c.List(context.Background(), &l, client.InNamespace(s.ns)); err != nil {
		return nil, 0
	}
	out := map[string]bool{}
	for _, ti := range l.Items {
		c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
		if c != nil && c.Status == metav1.ConditionTrue && ti.Status.ObservedGeneration == ti.Generation && (want == "" || ti.Status.Resolved == want) {
			out[ti.Name] = true
		}
	}
	return out, len(l.Items)
}

// waitReady waits until n instances are Ready (at want), up to d.
func (s *scale) waitReady(n int, want string, d time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		r, _ := s.ready(want)
		if len(r) == n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d of %d instances Ready after %v\n%s", len(r), n, d, s.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSIGKILLWhileReconciling kills the controller process with SIGKILL
// while it reconciles 100 instances, and restarts it: it converges, every
// instance Ready, each deployment with exactly one revision (no revision
// written twice), and no object that no instance rendered.
func TestSIGKILLWhileReconciling(t *testing.T) {
	if testing.Short() {
		t.Skip("reconciles 100 instances with a controller process")
	}
	const n = 100
	s := newScale(t, kubetest.Shared(t))
	s.args = []string{"--expand-workers", "1"} // a test's share of the machine
	s.start()
	s.create(n, 0)
	// Killed mid-way: some instances Ready, not all.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, _ := s.ready("")
		if len(r) >= 10 && len(r) < n {
			break
		}
		if len(r) == n || time.Now().After(deadline) {
			t.Fatalf("%d instances Ready: the kill would not land mid-way\n%s", len(r), s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop(syscall.SIGKILL)
	r, _ := s.ready("")
	t.Logf("killed with %d of %d instances Ready", len(r), n)
	s.start()
	s.waitReady(n, "", 3*time.Minute)

	ctx := context.Background()
	hist := driver.NewSecrets(s.dyn)
	for i := range n {
		name := fmt.Sprintf("inst-%d", i)
		recs, err := hist.History(ctx, s.ns, name)
		if err != nil {
			t.Fatalf("history of %s: %v", name, err)
		}
		if len(recs) != 1 || recs[0].Revision != 1 {
			revs := []int{}
			for _, r := range recs {
				revs = append(revs, r.Revision)
			}
			t.Errorf("%s has revisions %v, want exactly [1]", name, revs)
		}
	}
	// Every object dm labelled belongs to an instance, one of each kind.
	for _, kind := range fiveKinds {
		gvr := resourceOf(kind)
		l, err := s.dyn.Resource(gvr).Namespace(s.ns).List(ctx, metav1.ListOptions{LabelSelector: deploy.LabelManagedBy + "=" + deploy.ManagedBy})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, o := range l.Items {
			if strings.HasPrefix(o.GetName(), "dm.v1.") {
				continue // dm's history, checked above
			}
			if !instanceName(o, n) {
				t.Errorf("orphan %s %s (deployment %q)", kind, o.GetName(), o.GetLabels()[deploy.LabelDeployment])
			}
			seen[o.GetName()] = true
		}
		if len(seen) != n {
			t.Errorf("%d %s, want %d", len(seen), kind, n)
		}
	}
}

// instanceName reports whether o was rendered by one of inst-0 ... inst-(n-1).
func instanceName(o unstructured.Unstructured, n int) bool {
	d := o.GetLabels()[deploy.LabelDeployment]
	var i int
	if _, err := fmt.Sscanf(d, "inst-%d", &i); err != nil || i < 0 || i >= n || d != fmt.Sprintf("inst-%d", i) {
		return false
	}
	return o.GetName() == d
}

// resourceOf is the resource of one of fiveKinds.
func resourceOf(kind string) schema.GroupVersionResource {
	if res, group, ok := strings.Cut(kind, "."); ok {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: res}
	}
	return schema.GroupVersionResource{Version: "v1", Resource: kind}
}

// writeVerbs sums the apiserver's apiserver_request_total of writes
// (POST, PUT, PATCH, APPLY, DELETE) to the kinds instances touch, their
// subresources included.
func (s *scale) writeVerbs() int {
	s.t.Helper()
	resources := map[string]bool{"configmaps": true, "secrets": true, "services": true, "serviceaccounts": true, "roles": true, "templateinstances": true}
	total := 0
	for res, n := range s.writesByResource() {
		if r, _, _ := strings.Cut(res, "/"); resources[r] {
			total += n
		}
	}
	return total
}

// rss is the controller process's resident memory, from /proc.
func (s *scale) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.proc.Process.Pid))
	must(s.t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// p95 is the 95th percentile of ds.
func p95(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)*95+99)/100-1]
}

// BenchmarkController measures issue 14's numbers against the test
// apiserver with the controller as a process (make bench-controller): 100
// instances of a five-object template created at once (p95 create ->
// Ready), an edited object of each restored (p95), a new patch version
// reaching all 100, the writes of an idle resync of the 100, and the
// controller's RSS with DM_BENCH_INSTANCES (default 1,000) instances.
func BenchmarkController(b *testing.B) {
	const n = 100
	total := 1000
	if v := os.Getenv("DM_BENCH_INSTANCES"); v != "" {
		fmt.Sscanf(v, "%d", &total)
	}
	const resync = 30 * time.Second
	// Each number is printed when measured: the whole run takes minutes.
	say := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "bench-controller: "+format+"\n", args...)
	}
	for range b.N {
		s := newScale(b, kubetest.Start(b))
		s.start()
		ctx := context.Background()

		// 1. 100 instances created at once: create -> Ready.
		created := map[string]time.Time{}
		start := time.Now()
		for i := range n {
			name := fmt.Sprintf("inst-%d", i)
			s.create1(name, resync)
			created[name] = time.Now()
		}
		readyAt := map[string]time.Time{}
		s.poll(2*time.Minute, func() bool {
			r, _ := s.ready("")
			now := time.Now()
			for name := range r {
				if _, ok := readyAt[name]; !ok {
					readyAt[name] = now
				}
			}
			return len(readyAt) == n
		})
		var lat []time.Duration
		for name, at := range readyAt {
			lat = append(lat, at.Sub(created[name]))
		}
		b.ReportMetric(p95(lat).Seconds(), "create-ready-p95-s")
		say("100 instances Ready %v after the first create; p95 create->Ready %v", time.Since(start).Round(time.Millisecond), p95(lat))

		// 2. Drift: one instance's ConfigMap edited at a time, 20 of
		// them; p95 until each is restored.
		lat = lat[:0]
		for i := range 20 {
			name := fmt.Sprintf("inst-%d", i*5)
			cm := &corev1.ConfigMap{}
			must(b, s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, cm))
			cm.Data["version"] = "edited"
			must(b, s.c.Update(ctx, cm))
			edited := time.Now()
			s.poll(time.Minute, func() bool {
				got := &corev1.ConfigMap{}
				return s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, got) == nil && got.Data["version"] == "1.0.0"
			})
			lat = append(lat, time.Since(edited))
		}
		b.ReportMetric(p95(lat).Seconds(), "drift-restore-p95-s")
		say("p95 edited object restored %v (20 edits, one at a time)", p95(lat))
		s.waitReady(n, "", time.Minute)

		// 3. A new patch version on disk reaches all 100.
		written := time.Now()
		s.writeVersion("1.0.1")
		s.waitReady(n, "github.com/acme/t/five:v1.0.1", 2*time.Minute)
		rollout := time.Since(written)
		b.ReportMetric(rollout.Seconds(), "patch-rollout-s")
		say("v1.0.1 on all 100 instances %v after it was written (the directory watch's debounce included)", rollout)

		// 4. An idle resync (spec.interval 30s) writes nothing.
		before := s.writeVerbs()
		time.Sleep(resync + 10*time.Second)
		writes := s.writeVerbs() - before
		b.ReportMetric(float64(writes), "idle-resync-writes")
		say("idle resync of 100 instances: %d writes (POST/PUT/PATCH/APPLY/DELETE)", writes)

		// 5. RSS with many instances.
		for i := n; i < total; i++ {
			s.create1(fmt.Sprintf("inst-%d", i), 0)
		}
		s.waitReady(total, "", 15*time.Minute)
		rss := s.rss()
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
		say("controller RSS with %d instances: %.1f MiB", total, float64(rss)/(1<<20))
		s.stop(syscall.SIGTERM)
	}
}

// create1 makes instance name of five:v1.
func (s *scale) create1(name string, interval time.Duration) {
	s.t.Helper()
	ti := &v1alpha1.TemplateInstance{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec: v1alpha1.TemplateInstanceSpec{Template: "five:v1"}}
	if interval > 0 {
		ti.Spec.Interval = &metav1.Duration{Duration: interval}
	}
	// The CRDs are installed by the controller at start.
	deadline := time.Now().Add(time.Minute)
	for {
		err := s.c.Create(context.Background(), ti)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("creating %s: %v\n%s", name, err, s.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// poll calls done every 100ms until it returns true, failing after d.
func (s *scale) poll(d time.Duration, done func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for !done() {
		if time.Now().After(deadline) {
			s.t.Fatalf("not done after %v\n%s", d, s.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
