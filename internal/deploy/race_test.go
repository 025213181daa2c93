package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
)

// Racing actions on one deployment against the real apiserver: never two
// appliers at once, never a failed revision of a dm that was alive,
// exactly one winner or each in turn. The process-level races (dm killed
// with SIGKILL mid-apply) are in the repository's lease_contract_test.go.

// applyLog records, per racer, when it sent objects to the cluster and
// which revision it recorded.
type applyLog struct {
	mu  sync.Mutex
	w   map[string][2]time.Time // racer -> first start, last end
	rev map[string]int
}

// done notes the revision a racer's action recorded.
func (l *applyLog) done(who string, res *deploy.Result) {
	if res == nil || res.Record == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rev == nil {
		l.rev = map[string]int{}
	}
	l.rev[who] = res.Record.Revision
}

func (l *applyLog) add(who string, start, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		l.w = map[string][2]time.Time{}
	}
	w, ok := l.w[who]
	if !ok {
		w[0] = start
	}
	w[1] = end
	l.w[who] = w
}

// overlap returns the first two racers whose apply windows overlap, or
// whose revisions are not in the order they applied.
func (l *applyLog) overlap() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	type win struct {
		who        string
		start, end time.Time
	}
	var ws []win
	for who, w := range l.w {
		ws = append(ws, win{who, w[0], w[1]})
	}
	slices.SortFunc(ws, func(a, b win) int { return a.start.Compare(b.start) })
	for i := 1; i < len(ws); i++ {
		if ws[i].start.Before(ws[i-1].end) {
			return fmt.Sprintf("%s applied from %s to %s, %s from %s", ws[i-1].who, ws[i-1].start.Format(time.StampMicro),
				ws[i-1].end.Format(time.StampMicro), ws[i].who, ws[i].start.Format(time.StampMicro))
		}
		if a, b := l.rev[ws[i-1].who], l.rev[ws[i].who]; a != 0 && b != 0 && a >= b {
			return fmt.Sprintf("%s applied revision %d before %s applied revision %d", ws[i-1].who, a, ws[i].who, b)
		}
	}
	return ""
}

// recording is a cluster that logs when it applies or deletes objects.
type recording struct {
	deploy.Cluster
	who string
	log *applyLog
}

func (r recording) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts kube.ApplyOptions) ([]kube.Applied, error) {
	start := time.Now()
	defer func() { r.log.add(r.who, start, time.Now()) }()
	return r.Cluster.Apply(ctx, objs, opts)
}

func (r recording) Delete(ctx context.Context, refs []kube.ObjectRef, opts kube.DeleteOptions) error {
	start := time.Now()
	defer func() { r.log.add(r.who, start, time.Now()) }()
	return r.Cluster.Delete(ctx, refs, opts)
}

// raceLease is the racers' lease: short, so that the tests are quick, and
// long enough that a loaded machine does not make a live racer look dead.
var raceLease = deploy.LeaseOptions{Duration: 5 * time.Second, RenewPeriod: time.Second}

// racers returns n configurations, each with its own field manager
// (dm-0, dm-1, ...) so that the objects' managedFields say which applied
// last. The kube clients are made once per test.
func (f *fixture) racers(n int) []*kube.Client {
	f.t.Helper()
	var out []*kube.Client
	for i := range n {
		kc, err := kube.New(context.Background(), kube.Config{Kubeconfig: f.env.Kubeconfig, Namespace: f.ns, FieldManager: fmt.Sprintf("dm-%d", i)})
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, kc)
	}
	return out
}

// racer is a configuration applying through kc, logging to log as who.
func (f *fixture) racer(kc *kube.Client, who string, log *applyLog) *deploy.Config {
	return &deploy.Config{
		Cluster: recording{Cluster: kc, who: who, log: log}, History: driver.NewSecrets(kc.Dynamic()),
		Expander: f.c.Expander, Log: f.log, DMVersion: "test", Lease: raceLease,
	}
}

// writerConfig is n ConfigMaps of deployment name whose data says who
// wrote them.
func writerConfig(name string, n int, writer string) deploy.Source {
	var b strings.Builder
	b.WriteString("resources:\n")
	for i := range n {
		fmt.Fprintf(&b, "- {name: %s-cm%d, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {writer: %s}}}\n", name, i, writer)
	}
	return configSource(b.String(), nil)
}

// checkRace checks what racers left of deployment name: no revision
// pending, held or interrupted, and none failed; the racers' apply windows
// apart, in the order of the revisions they recorded; and every object as
// the last revision applied it, its data owned by that revision's field
// manager alone.
func (f *fixture) checkRace(name string, log *applyLog, managers map[string]string) {
	f.t.Helper()
	if o := log.overlap(); o != "" {
		f.t.Errorf("%s: two appliers at once: %s", name, o)
	}
	hist := f.history(name)
	for i, r := range hist {
		if r.Status == release.StatusPending || r.Status == release.StatusFailed || r.Lease != nil {
			f.t.Errorf("%s: history %s: revision %d is %s (%s), lease %+v", name, statuses(hist), r.Revision, r.Status, r.Description, r.Lease)
		}
		if i > 0 && r.Created.Before(hist[i-1].Created) {
			f.t.Errorf("%s: revision %d was recorded before revision %d", name, r.Revision, hist[i-1].Revision)
		}
	}
	last := hist[len(hist)-1]
	if last.Status != release.StatusDeployed {
		f.t.Fatalf("%s: history %s does not end deployed", name, statuses(hist))
	}
	for _, o := range last.Objects {
		want := &unstructured.Unstructured{Object: o}
		writer, _, _ := unstructured.NestedString(o, "data", "writer")
		live, err := f.kc.Get(context.Background(), kube.RefOf(want))
		if err != nil {
			f.t.Fatal(err)
		}
		got, _, _ := unstructured.NestedString(live.Object, "data", "writer")
		if got != writer {
			f.t.Errorf("%s: %s has writer %q, the last revision %q", name, want.GetName(), got, writer)
		}
		var owners []string
		for _, m := range live.GetManagedFields() {
			if m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:writer"`) {
				owners = append(owners, m.Manager)
			}
		}
		if m := managers[writer]; m != "" && !slices.Equal(owners, []string{m}) {
			f.t.Errorf("%s: %s's data is owned by %v, want %s alone (revision %d's)", name, want.GetName(), owners, m, last.Revision)
		}
	}
}

// inProgressOr tells whether err is a loser's clear error: another
// operation in progress, or what the winner made of the deployment.
func inProgressOr(err error, also string) bool {
	return errors.Is(err, deploy.ErrInProgress) || strings.Contains(err.Error(), also)
}

// batches runs n races, batch at a time.
func batches(t *testing.T, n, batch int, race func(i int)) {
	for start := 0; start < n; start += batch {
		var wg sync.WaitGroup
		for i := start; i < min(n, start+batch); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				race(i)
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

// TestRacingDeploys starts 50 pairs of deploys of one name together: of
// the pairs without --upgrade exactly one wins and the other says the
// deployment exists; with --upgrade both deploy, one after the other.
func TestRacingDeploys(t *testing.T) {
	f := newFixture(t)
	kcs := f.racers(2)
	managers := map[string]string{}
	for i := range 50 {
		for j := range 2 {
			managers[fmt.Sprintf("p%d-%d", i, j)] = fmt.Sprintf("dm-%d", j)
		}
	}
	batches(t, 50, 10, func(i int) {
		name := fmt.Sprintf("pair-%d", i)
		upgrade := i%2 == 1
		log := &applyLog{}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for j, kc := range kcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprintf("p%d-%d", i, j)
				c := f.racer(kc, who, log)
				var res *deploy.Result
				res, errs[j] = c.Deploy(context.Background(), deploy.DeployOptions{Name: name, Upgrade: upgrade, Source: writerConfig(name, 4, who),
					ApplyOptions: deploy.ApplyOptions{ForceConflicts: true, WaitForLock: time.Minute}})
				log.done(who, res)
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case upgrade:
				t.Errorf("%s: deploy --upgrade: %v", name, err)
			case !inProgressOr(err, "dm update "+name):
				t.Errorf("%s: the loser's error is not clear: %v", name, err)
			}
		}
		if want := map[bool]int{false: 1, true: 2}[upgrade]; won != want {
			t.Errorf("%s: %d won, want %d: %v", name, won, want, errs)
		}
		if hist := f.history(name); len(hist) != won {
			t.Errorf("%s: history %s after %d successful deploys", name, statuses(hist), won)
		}
		f.checkRace(name, log, managers)
	})
}

// TestRacingDeployUpdateRollback starts, 20 times, a deploy --upgrade, an
// update and a rollback of one deployment together: each applies in turn.
func TestRacingDeployUpdateRollback(t *testing.T) {
	f := newFixture(t)
	kcs := f.racers(3)
	ctx := context.Background()
	// A rollback applies another revision's objects: which manager owns
	// them is not known from the writer.
	managers := map[string]string{}
	batches(t, 20, 4, func(i int) {
		name := fmt.Sprintf("tri-%d", i)
		for _, w := range []string{"first", "second"} {
			if _, err := f.racer(kcs[0], "setup", &applyLog{}).Deploy(ctx, deploy.DeployOptions{Name: name, Upgrade: true,
				Source: writerConfig(name, 3, fmt.Sprintf("t%d-%s", i, w)), ApplyOptions: deploy.ApplyOptions{ForceConflicts: true}}); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
		}
		log := &applyLog{}
		opts := deploy.ApplyOptions{ForceConflicts: true, WaitForLock: time.Minute}
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for j, kc := range kcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := []string{"deploy", "update", "rollback"}[j]
				c := f.racer(kc, who, log)
				var res *deploy.Result
				switch j {
				case 0:
					res, errs[j] = c.Deploy(ctx, deploy.DeployOptions{Name: name, Upgrade: true, Source: writerConfig(name, 3, fmt.Sprintf("t%d-deploy", i)), ApplyOptions: opts})
				case 1:
					res, errs[j] = c.Update(ctx, deploy.UpdateOptions{Name: name, Source: writerConfig(name, 3, fmt.Sprintf("t%d-update", i)), ApplyOptions: opts})
				case 2:
					res, errs[j] = c.Rollback(ctx, name, 0, opts)
				}
				log.done(who, res)
			}()
		}
		wg.Wait()
		for j, err := range errs {
			if err != nil {
				t.Errorf("%s: %s: %v", name, []string{"deploy", "update", "rollback"}[j], err)
			}
		}
		if hist := f.history(name); len(hist) != 5 {
			t.Errorf("%s: history %s, want 5 revisions", name, statuses(hist))
		}
		f.checkRace(name, log, managers)
	})
}

// TestRacingDeleteUpdate starts a delete and an update of one deployment
// together, 10 times: the delete goes first (and the update finds nothing)
// or second (and deletes what the update applied); either way nothing is
// left, and they never run at once.
func TestRacingDeleteUpdate(t *testing.T) {
	f := newFixture(t)
	kcs := f.racers(2)
	ctx := context.Background()
	batches(t, 10, 5, func(i int) {
		name := fmt.Sprintf("gone-%d", i)
		if _, err := f.racer(kcs[0], "setup", &applyLog{}).Deploy(ctx, deploy.DeployOptions{Name: name, Source: writerConfig(name, 3, "first"),
			ApplyOptions: deploy.ApplyOptions{ForceConflicts: true}}); err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		log := &applyLog{}
		var derr, uerr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, derr = f.racer(kcs[0], "delete", log).Delete(ctx, name, deploy.DeleteOptions{WaitForLock: time.Minute})
		}()
		go func() {
			defer wg.Done()
			_, uerr = f.racer(kcs[1], "update", log).Update(ctx, deploy.UpdateOptions{Name: name, Source: writerConfig(name, 3, "second"),
				ApplyOptions: deploy.ApplyOptions{ForceConflicts: true, WaitForLock: time.Minute}})
		}()
		wg.Wait()
		if derr != nil {
			t.Errorf("%s: delete: %v", name, derr)
		}
		if uerr != nil && !errors.Is(uerr, derrors.NotFound) {
			t.Errorf("%s: update: %v", name, uerr)
		}
		if o := log.overlap(); o != "" {
			t.Errorf("%s: two at once: %s", name, o)
		}
		if _, err := f.c.Revisions(ctx, name); !errors.Is(err, derrors.NotFound) {
			t.Errorf("%s: history left after the delete: %v", name, err)
		}
		if left := f.labelled(name, "configmaps"); len(left) != 0 {
			t.Errorf("%s: objects left after the delete: %v", name, left)
		}
	})
}

// TestLeaseTakenStopsHolder: a dm whose lease another took over (here by
// hand, as a dm that saw no renewal would) stops applying at once, says
// so, and writes nothing over the taker's record.
func TestLeaseTakenStopsHolder(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.racer(f.racers(1)[0], "holder", &applyLog{})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := c.Deploy(ctx, deploy.DeployOptions{Name: "taken", Source: configSource(`resources:
- {name: taken-a, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {a: b}}}
- {name: taken-b, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap, data: {never: "$(ref.taken-a.data.missing)"}}}
`, nil), ApplyOptions: deploy.ApplyOptions{Timeout: 2 * time.Minute}})
		done <- err
	}()
	var rec *release.Record
	for {
		hist, err := f.c.Revisions(ctx, "taken")
		if err == nil && hist[0].Lease != nil {
			rec = hist[0]
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("the deploy held no revision within a minute: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec.Status, rec.Description, rec.Lease = release.StatusFailed, "interrupted: taken over by the test", nil
	if err := f.c.History.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the holder went on applying after its lease was taken")
	}
	if !errors.Is(err, deploy.ErrInProgress) || !strings.Contains(err.Error(), "another dm took over "+f.ns+"/taken revision 1") ||
		!strings.Contains(err.Error(), "taken over by the test") {
		t.Errorf("err = %v", err)
	}
	// Within a renewal or two, not at the 2-minute timeout.
	if took := time.Since(taken); took > 30*time.Second {
		t.Errorf("stopped %s after the lease was taken", took)
	}
	if hist := f.history("taken"); hist[0].Description != "interrupted: taken over by the test" {
		t.Errorf("the taker's record was overwritten: %s %q", hist[0].Status, hist[0].Description)
	}
}
