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

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/rollout/policyctl"
)

// waveTemplate is template wave at version v: a ConfigMap that records
// the version, and with bad a Deployment, which never becomes Ready on an
// apiserver without a kubelet.
func waveTemplate(v string, bad bool) string {
	out := "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {version: \"" + v + "\"}}\n"
	if bad {
		out += `- name: web
  type: apps/v1/Deployment
  properties:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: "{{ env['deployment'] }}"}
    spec:
      replicas: 1
      selector: {matchLabels: {app: "{{ env['deployment'] }}"}}
      template:
        metadata: {labels: {app: "{{ env['deployment'] }}"}}
        spec: {containers: [{name: web, image: "example.com/web:` + v + `"}]}
`
	}
	return out
}

// proc is one dm-controller process.
type proc struct {
	cmd  *exec.Cmd
	logs *syncBuffer
}

// fleet is a controller binary, a registry directory with template wave,
// and instances of it in three namespaces, each with an account
// "deployer" that may write what wave renders.
type fleet struct {
	*scale
	nss   []string
	procs []*proc
	// leaseNS holds the leader election Lease: this test's own.
	leaseNS string
}

func newFleet(t testing.TB, env *kubetest.Env) *fleet {
	s := newScale(t, env)
	f := &fleet{scale: s, nss: []string{s.ns}, leaseNS: s.ns}
	ctx := context.Background()
	for range 2 {
		ns := env.Namespace(t)
		must(t, s.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}}))
		must(t, s.c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "deployer-" + ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
		}))
		f.nss = append(f.nss, ns)
	}
	t.Cleanup(func() {
		for _, p := range f.procs {
			f.kill(p, syscall.SIGKILL)
		}
	})
	return f
}

func (f *fleet) writeWave(v string, bad bool) {
	f.t.Helper()
	d := filepath.Join(f.dir, "wave", "v"+v)
	tmp := filepath.Join(f.dir, ".wave-"+v)
	must(f.t, os.MkdirAll(tmp, 0o755))
	must(f.t, os.MkdirAll(filepath.Dir(d), 0o755))
	must(f.t, os.WriteFile(filepath.Join(tmp, "wave.jinja"), []byte(waveTemplate(v, bad)), 0o644))
	// Renamed in whole: the watcher never lists a version without its file.
	must(f.t, os.Rename(tmp, d))
}

// run starts a controller process, electing a leader with the others.
func (f *fleet) run(args ...string) *proc {
	f.t.Helper()
	p := &proc{logs: &syncBuffer{}}
	p.cmd = exec.Command(f.bin, append([]string{"--kubeconfig", f.env.Kubeconfig, "--registry-dir", "github.com/acme/t=" + f.dir,
		"--default-registry", "github.com/acme/t", "--metrics-addr", "0", "--health-addr", "0",
		"--default-service-account", "deployer", "--log-level", "info", "--expand-workers", "1",
		"--leader-elect", "--leader-elect-namespace", f.leaseNS}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	must(f.t, p.cmd.Start())
	f.procs = append(f.procs, p)
	return p
}

// kill ends p with sig and waits for it.
func (f *fleet) kill(p *proc, sig syscall.Signal) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	_ = p.cmd.Wait()
}

// logs is every process's log, for a failure.
func (f *fleet) logsAll() string {
	var b bytes.Buffer
	for i, p := range f.procs {
		fmt.Fprintf(&b, "--- controller %d:\n%s\n", i, tail(p.logs.String(), 60))
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// instance makes a TemplateInstance, retrying while the controller
// installs its CRDs.
func (f *fleet) instance(ns, name, template string, labels map[string]string, policy v1alpha1.UpdatePolicy) {
	f.t.Helper()
	ti := &v1alpha1.TemplateInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: v1alpha1.TemplateInstanceSpec{Template: template, UpdatePolicy: policy}}
	f.create(ti)
}

func (f *fleet) create(o client.Object) {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f.c.Create(context.Background(), o)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("creating %s: %v\n%s", o.GetName(), err, f.logsAll())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// instances lists the wave instances of the three namespaces.
func (f *fleet) instances() map[string]*v1alpha1.TemplateInstance {
	out := map[string]*v1alpha1.TemplateInstance{}
	for _, ns := range f.nss {
		var l v1alpha1.TemplateInstanceList
		if err := f.c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			continue
		}
		for i := range l.Items {
			ti := &l.Items[i]
			out[ti.Namespace+"/"+ti.Name] = ti
		}
	}
	return out
}

func (f *fleet) policy(name string) *v1alpha1.TemplateRolloutPolicy {
	p := &v1alpha1.TemplateRolloutPolicy{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		return nil
	}
	return p
}

// until polls check every 200ms for up to d; check returns "" when done,
// else what it waits for.
func (f *fleet) until(d time.Duration, check func() string) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("after %v: %s\n%s", d, why, f.logsAll())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const waveBase = "github.com/acme/t/wave:"

// readyAt reports whether ti is Ready on version v for its generation.
func readyAt(ti *v1alpha1.TemplateInstance, v string) bool {
	c := meta.FindStatusCondition(ti.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && ti.Status.ObservedGeneration == ti.Generation && ti.Status.Resolved == waveBase+v
}

func states(p *v1alpha1.TemplateRolloutPolicy) string {
	var s []string
	for _, w := range p.Status.Waves {
		s = append(s, string(w.State))
	}
	return strings.Join(s, ",")
}

// waveOf names the wave of key in p's status, -1 for none.
func waveOf(p *v1alpha1.TemplateRolloutPolicy, key string) int {
	for i, w := range p.Status.Waves {
		if slices.Contains(w.Instances, key) {
			return i
		}
	}
	return -1
}

// watchOrder checks, at each poll, that no instance runs version v ahead
// of its wave: every wave before it is Promoted. The instances are read
// before the policy, whose waves only go forward.
func (f *fleet) watchOrder(pname, v string) func() string {
	return func() string {
		tis := f.instances()
		p := f.policy(pname)
		if p == nil || p.Status.Version != v {
			return ""
		}
		for key, ti := range tis {
			if ti.Status.Resolved != waveBase+v {
				continue
			}
			w := waveOf(p, key)
			if w < 0 {
				return key + " runs " + v + " but no wave lists it"
			}
			for j := range w {
				if p.Status.Waves[j].State != v1alpha1.WavePromoted {
					return fmt.Sprintf("%s (wave %s) runs %s while wave %s is %s", key, p.Status.Waves[w].Name, v, p.Status.Waves[j].Name, p.Status.Waves[j].State)
				}
			}
		}
		return ""
	}
}

// versions lists the versions of ns/name's revisions, in order.
func (f *fleet) versions(ns, name string) []string {
	f.t.Helper()
	recs, err := driver.NewSecrets(f.dyn).History(context.Background(), ns, name)
	must(f.t, err)
	var out []string
	for _, r := range recs {
		out = append(out, versionOfRecord(r))
	}
	return out
}

func versionOfRecord(r *release.Record) string {
	for _, ref := range r.References {
		if ref.Ref == r.Input.Ref {
			return ref.Version
		}
	}
	return ""
}

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func pct(p int32) *int32 { return &p }

// TestRolloutWaves rolls patches of template wave out to 20 instances in
// three namespaces, through three waves, with the dm-controller binary:
// a good patch goes wave by wave, each soaked; a patch whose Deployment
// never becomes Ready fails in the first wave and is rolled back there,
// the later waves untouched; a newer good patch then rolls out while an
// instance is added, the leader fails over (SIGTERM: its standby takes
// over) and the next leader is killed (SIGKILL) and started again, and no
// instance moves twice. Manual and digest-pinned instances never move.
func TestRolloutWaves(t *testing.T) {
	if testing.Short() {
		t.Skip("rolls three patches out through three waves with controller processes")
	}
	f := newFleet(t, kubetest.Shared(t))
	f.writeWave("1.0.0", false)
	a := f.run()
	b := f.run() // the standby
	const soak = 3 * time.Second
	pname := "wave-" + f.ns
	pol := &v1alpha1.TemplateRolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: pname}, Spec: v1alpha1.RolloutPolicySpec{
		Template: "wave:v1.0",
		Waves: []v1alpha1.Wave{
			{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, SoakTime: dur(soak), Deadline: dur(20 * time.Second)},
			{Name: "half", Percent: pct(40), SoakTime: dur(soak), Deadline: dur(40 * time.Second)},
			{Name: "rest", SoakTime: dur(soak), Deadline: dur(40 * time.Second)},
		},
		FailurePolicy: v1alpha1.FailureRollback,
	}}
	f.create(pol)
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), pol) })
	f.until(time.Minute, func() string {
		if p := f.policy(pname); p == nil || p.Status.Version != "v1.0.0" {
			return "the policy found no v1.0.0"
		}
		return ""
	})
	var covered []string
	canaries := 0
	for i := range 20 {
		ns := f.nss[i%3]
		var labels map[string]string
		if i%7 == 0 {
			labels = map[string]string{"tier": "canary"}
			canaries++
		}
		name := fmt.Sprintf("app-%02d", i)
		f.instance(ns, name, "wave:v1.0", labels, "")
		covered = append(covered, ns+"/"+name)
	}
	f.instance(f.nss[1], "manual", "wave:v1.0", nil, v1alpha1.UpdateManual)
	all := func(v string, keys []string) func() string {
		return func() string {
			tis := f.instances()
			n := 0
			for _, k := range keys {
				if ti := tis[k]; ti != nil && readyAt(ti, v) {
					n++
				}
			}
			if n != len(keys) {
				return fmt.Sprintf("%d of %d instances Ready on %s", n, len(keys), v)
			}
			return ""
		}
	}
	f.until(2*time.Minute, all("v1.0.0", append(slices.Clone(covered), f.nss[1]+"/manual")))
	// Pinned by digest, labelled as a canary: never moved either.
	digest := f.instances()[covered[0]].Status.Digest
	if digest == "" {
		t.Fatal("no digest in the status")
	}
	f.instance(f.nss[2], "pinned", "wave:v1.0@"+digest, map[string]string{"tier": "canary"}, "")
	untouched := []string{f.nss[1] + "/manual", f.nss[2] + "/pinned"}
	f.until(time.Minute, all("v1.0.0", untouched))

	// 1. A good patch: wave by wave, each soaked before the next.
	f.writeWave("1.0.1", false)
	order := f.watchOrder(pname, "v1.0.1")
	f.until(3*time.Minute, func() string {
		if why := order(); why != "" {
			t.Fatal(why + "\n" + f.logsAll())
		}
		p := f.policy(pname)
		if p.Status.Version != "v1.0.1" || states(p) != "Promoted,Promoted,Promoted" {
			return "v1.0.1 rolling out: " + states(p)
		}
		return all("v1.0.1", covered)()
	})
	p := f.policy(pname)
	if got := len(p.Status.Waves[0].Instances); got != canaries {
		t.Errorf("canary wave has %d instances, want the %d labelled", got, canaries)
	}
	if got := len(p.Status.Waves[1].Instances); got != 8 {
		t.Errorf("half wave has %d instances, want 40%% of 20", got)
	}
	for i := 1; i < len(p.Status.Waves); i++ {
		prev, w := p.Status.Waves[i-1], p.Status.Waves[i]
		if prev.ReadyAt == nil || w.StartedAt == nil || w.StartedAt.Sub(prev.ReadyAt.Time) < soak {
			t.Errorf("wave %s started at %v, wave %s Ready at %v: not soaked %v", w.Name, w.StartedAt, prev.Name, prev.ReadyAt, soak)
		}
	}

	// 2. A bad patch: its Deployment never becomes Ready; the canary wave
	// fails at its deadline and goes back to v1.0.1; nobody else takes it.
	f.writeWave("1.0.2", true)
	order = f.watchOrder(pname, "v1.0.2")
	f.until(2*time.Minute, func() string {
		if why := order(); why != "" {
			t.Fatal(why + "\n" + f.logsAll())
		}
		p := f.policy(pname)
		if p.Status.Version != "v1.0.2" || states(p) != "RolledBack,Halted,Halted" {
			return "v1.0.2: " + states(p)
		}
		return ""
	})
	p = f.policy(pname)
	if !slices.Contains(p.Status.FailedVersions, "v1.0.2") {
		t.Errorf("failedVersions %v lack v1.0.2", p.Status.FailedVersions)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "not Ready") {
		t.Errorf("Stalled %+v, want True naming the unready instances", c)
	}
	canaryKeys := p.Status.Waves[0].Instances
	f.until(time.Minute, all("v1.0.1", covered))
	for _, k := range covered {
		ns, name, _ := strings.Cut(k, "/")
		vs := f.versions(ns, name)
		took := slices.Contains(vs, "v1.0.2")
		if took != slices.Contains(canaryKeys, k) {
			t.Errorf("%s revisions %v: took v1.0.2 %v, in the canary wave %v", k, vs, took, slices.Contains(canaryKeys, k))
		}
	}
	f.expectEvents(pname, "WaveFailed", "WaveRolledBack")

	// 3. A newer good patch rolls out; an instance is added meanwhile,
	// the leader fails over and then is killed.
	f.writeWave("1.0.3", false)
	order = f.watchOrder(pname, "v1.0.3")
	step := func(want func(*v1alpha1.TemplateRolloutPolicy) bool, what string) {
		t.Helper()
		f.until(2*time.Minute, func() string {
			if why := order(); why != "" {
				t.Fatal(why + "\n" + f.logsAll())
			}
			if p := f.policy(pname); !want(p) {
				return what + ": " + p.Status.Version + " " + states(p)
			}
			return ""
		})
	}
	step(func(p *v1alpha1.TemplateRolloutPolicy) bool {
		return p.Status.Version == "v1.0.3" && len(p.Status.Waves) == 3 && p.Status.Waves[0].State == v1alpha1.WaveSoaking
	}, "canary soaking")
	f.instance(f.nss[1], "late", "wave:v1.0", nil, "")
	covered = append(covered, f.nss[1]+"/late")
	// Failover: the leader ends (SIGTERM gives its Lease up); the standby
	// goes on from the policy's status.
	f.kill(a, syscall.SIGTERM)
	step(func(p *v1alpha1.TemplateRolloutPolicy) bool {
		return p.Status.Waves[1].State == v1alpha1.WaveProgressing || p.Status.Waves[1].State == v1alpha1.WaveSoaking
	}, "half going after the failover")
	// Killed mid-wave: started again, it waits for the Lease to expire and
	// resumes.
	f.kill(b, syscall.SIGKILL)
	f.run()
	f.until(3*time.Minute, func() string {
		if why := order(); why != "" {
			t.Fatal(why + "\n" + f.logsAll())
		}
		p := f.policy(pname)
		if states(p) != "Promoted,Promoted,Promoted" {
			return "v1.0.3 rolling out: " + states(p)
		}
		return all("v1.0.3", covered)()
	})
	p = f.policy(pname)
	if waveOf(p, f.nss[1]+"/late") < 0 {
		t.Errorf("the instance added mid-roll-out is in no wave: %+v", p.Status.Waves)
	}
	for _, k := range covered {
		ns, name, _ := strings.Cut(k, "/")
		vs := f.versions(ns, name)
		n := 0
		for _, v := range vs {
			if v == "v1.0.3" {
				n++
			}
		}
		if n != 1 || vs[len(vs)-1] != "v1.0.3" {
			t.Errorf("%s revisions %v: want v1.0.3 taken once, last", k, vs)
		}
	}
	// Untouched by every roll-out.
	tis := f.instances()
	for _, k := range untouched {
		if ti := tis[k]; ti == nil || ti.Status.Resolved != waveBase+"v1.0.0" {
			t.Errorf("%s resolved %v, want v1.0.0 kept", k, ti.Status.Resolved)
		}
		ns, name, _ := strings.Cut(k, "/")
		for _, v := range f.versions(ns, name) {
			if v != "v1.0.0" {
				t.Errorf("%s has a revision of %s, want v1.0.0 only", k, v)
			}
		}
	}
	f.expectEvents(pname, "RolloutStarted", "WaveStarted", "WavePromoted", "RolloutSucceeded")

	// 4. Paused, a new patch starts no wave; resumed, its canary goes;
	// aborted (dm rollout abort), the canary goes back to v1.0.3.
	ref := policyctl.Ref{Name: pname}
	must(t, policyctl.SetPaused(context.Background(), f.dyn, ref, true))
	f.writeWave("1.0.4", false)
	f.until(time.Minute, func() string {
		if p := f.policy(pname); p.Status.Version != "v1.0.4" || states(p) != "Pending,Pending,Pending" {
			return "v1.0.4 paused: " + p.Status.Version + " " + states(p)
		}
		return ""
	})
	for k, ti := range f.instances() {
		if ti.Status.Resolved == waveBase+"v1.0.4" {
			t.Errorf("%s took v1.0.4 while the policy was paused", k)
		}
	}
	must(t, policyctl.SetPaused(context.Background(), f.dyn, ref, false))
	f.until(time.Minute, func() string {
		p := f.policy(pname)
		canary := p.Status.Waves[0].Instances
		if len(canary) == 0 || p.Status.Waves[0].State != v1alpha1.WaveSoaking {
			return "v1.0.4 canary: " + states(p)
		}
		return all("v1.0.4", canary)()
	})
	_, moved, err := policyctl.Abort(context.Background(), f.dyn, ref)
	must(t, err)
	if len(moved) != canaries {
		t.Errorf("abort moved %d instances back, want the %d canaries", len(moved), canaries)
	}
	f.until(time.Minute, all("v1.0.3", covered))
	if p := f.policy(pname); states(p) != "RolledBack,Halted,Halted" || !slices.Contains(p.Status.FailedVersions, "v1.0.4") {
		t.Errorf("after abort: %s, failed %v", states(p), p.Status.FailedVersions)
	}
}

// expectEvents waits until the policy has events of each reason.
func (f *fleet) expectEvents(pname string, reasons ...string) {
	f.t.Helper()
	f.until(30*time.Second, func() string {
		var l corev1.EventList
		if err := f.c.List(context.Background(), &l, client.InNamespace("default")); err != nil {
			return err.Error()
		}
		seen := map[string]bool{}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "TemplateRolloutPolicy" && e.InvolvedObject.Name == pname {
				seen[e.Reason] = true
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return "no event " + r + " on the policy"
			}
		}
		return ""
	})
}
