package deploy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
)

// The lease's rules, on driver.Memory (the same semantics as the Secrets;
// e2e_test.go races real dms on a real apiserver).

// leased returns a pending revision held by a holder of another process.
func leased(rev int, d time.Duration, acquired time.Time) *release.Record {
	r := record("ns", "app", rev, release.StatusPending)
	r.Lease = &release.Lease{
		Holder:    release.Holder{ID: "0badc0de", Host: "ci-7", PID: 4242},
		Operation: "deploy", Duration: d, RenewPeriod: d / 3, Acquired: acquired, Renewed: acquired,
	}
	return r
}

// renewer renews r's lease every period, as a live holder does, until
// stop is called; finish, if set, then writes the holder's final record.
func renewer(t *testing.T, m driver.Driver, r *release.Record, period time.Duration) (stop func(finish bool)) {
	t.Helper()
	done := make(chan bool)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case finish := <-done:
				if finish {
					r.Status, r.Lease = release.StatusDeployed, nil
					if err := m.Update(context.Background(), r); err != nil {
						t.Errorf("the holder's final write: %v", err)
					}
				}
				return
			case <-tick.C:
			}
			r.Lease.Renewals++
			// The holder's clock is an hour behind: it must not matter.
			r.Lease.Renewed = r.Lease.Renewed.Add(-time.Hour)
			if err := m.Update(context.Background(), r); err != nil {
				t.Errorf("renewing: %v", err)
				return
			}
		}
	}()
	return func(finish bool) { done <- finish; wg.Wait() }
}

// A live holder is waited for, whatever its clock says, and its revision
// is not touched; the waiter goes on once it is done.
func TestLiveLeaseWaitedFor(t *testing.T) {
	// The holder's clock is a day behind this one's: its lease "expired"
	// long ago by that clock.
	r := leased(1, 300*time.Millisecond, time.Now().Add(-24*time.Hour))
	c, m, log := memConfig(t, r)
	stop := renewer(t, m, r, 50*time.Millisecond)
	go func() {
		time.Sleep(time.Second) // three lease durations
		stop(true)
	}()
	start := time.Now()
	hist, err := c.lockHistory(context.Background(), "ns", "app", lock{until: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("returned after %s, before the holder finished", waited)
	}
	if len(hist) != 1 || hist[0].Status != release.StatusDeployed || hist[0].Lease != nil {
		t.Errorf("history %s, want the holder's revision deployed", statusesOf(hist))
	}
	if !strings.Contains(log.String(), "held by dm pid 4242 on host ci-7 (lease 0badc0de)") {
		t.Errorf("the wait was not said, naming the holder: %q", log.String())
	}
}

// A wait that runs out on a live holder fails naming it, and changes
// nothing.
func TestLiveLeaseInProgress(t *testing.T) {
	r := leased(2, 2*time.Second, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	r.Lease.Renewals = 12
	c, m, _ := memConfig(t, record("ns", "app", 1, release.StatusDeployed), r)
	stop := renewer(t, m, r, 100*time.Millisecond)
	defer stop(false)
	_, err := c.lockHistory(context.Background(), "ns", "app", lock{until: time.Now().Add(300 * time.Millisecond)})
	if !errors.Is(err, derrors.Conflict) {
		t.Fatalf("err = %v, want a conflict", err)
	}
	for _, want := range []string{"another operation (deploy) is in progress on deployment ns/app", "dm pid 4242 on host ci-7 (lease 0badc0de) holds revision 2", "since 2026-05-01T10:00:00Z by its clock", "--wait-for-lock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	if got, _ := m.Get(context.Background(), "ns", "app", 2); got.Status != release.StatusPending || got.Lease == nil {
		t.Errorf("the live revision was changed: %s %+v", got.Status, got.Lease)
	}
}

// A lease nobody renews is taken over once this process has seen no
// renewal for its duration, not sooner, even when the holder's clock
// says it was renewed in the future; the revision names the holder.
func TestExpiredLeaseTakenOver(t *testing.T) {
	const d = 400 * time.Millisecond
	r := leased(2, d, time.Now().Add(24*time.Hour))
	c, m, log := memConfig(t, record("ns", "app", 1, release.StatusDeployed), r)
	start := time.Now()
	// No wait for a live holder: a silent one is watched for its lease
	// duration all the same.
	hist, err := c.lockHistory(context.Background(), "ns", "app", lock{until: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < d {
		t.Errorf("taken over after %s, before its lease of %s expired", waited, d)
	}
	got, err := m.Get(context.Background(), "ns", "app", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != release.StatusFailed || got.Lease != nil || !strings.HasPrefix(got.Description, interruptedDescription) ||
		!strings.Contains(got.Description, "dm pid 4242 on host ci-7 (lease 0badc0de), deploy") {
		t.Errorf("revision 2: %s %q, lease %+v", got.Status, got.Description, got.Lease)
	}
	if statusesOf(hist) != "1:deployed 2:failed" {
		t.Errorf("history %s", statusesOf(hist))
	}
	if !strings.Contains(log.String(), "stopped renewing its lease") {
		t.Errorf("log %q", log.String())
	}
	if n := nextRevision(hist); n != 3 {
		t.Errorf("next revision %d", n)
	}
}

// A deleting record whose holder died keeps its status (the next dm
// delete finishes it) and loses the lease.
func TestExpiredDeleteLease(t *testing.T) {
	r := leased(1, 100*time.Millisecond, time.Now())
	r.Status, r.Lease.Operation = release.StatusDeleting, "delete"
	c, _, _ := memConfig(t, r)
	hist, err := c.lockHistory(context.Background(), "ns", "app", lock{until: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].Status != release.StatusDeleting || hist[0].Lease != nil {
		t.Errorf("history %s, lease %+v", statusesOf(hist), hist[0].Lease)
	}
}

func statusesOf(hist []*release.Record) string {
	var s []string
	for _, r := range hist {
		s = append(s, strings.Join([]string{string(rune('0' + r.Revision)), string(r.Status)}, ":"))
	}
	return strings.Join(s, " ")
}

// flaky is a Memory whose Updates can be made to fail or to be answered
// after they were written (lost answers).
type flaky struct {
	*driver.Memory
	fail atomic.Bool
	// lose makes the next renewal's answer an error although it was
	// written, as after a timeout.
	lose atomic.Bool
}

func (f *flaky) Update(ctx context.Context, r *release.Record) error {
	if f.fail.Load() {
		return errors.New("connection refused")
	}
	v := r.StorageVersion
	err := f.Memory.Update(ctx, r)
	if err == nil && r.Lease != nil && f.lose.CompareAndSwap(true, false) {
		r.StorageVersion = v
		return context.DeadlineExceeded
	}
	return err
}

// holding takes a lease on a new pending revision as apply does.
func holding(t *testing.T, c *Config, d time.Duration) (*release.Record, context.Context, *hold) {
	t.Helper()
	c.Lease = LeaseOptions{Duration: d, RenewPeriod: d / 10}
	rec := record("ns", "app", 1, release.StatusPending)
	rec.Lease = c.newLease("deploy", "")
	if err := c.History.Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	ctx, h, err := c.holdLease(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	return rec, ctx, h
}

// The holder renews while it applies, a lost answer included, and its
// final write wins over the renewals.
func TestHoldRenewsAndFinishes(t *testing.T) {
	f := &flaky{Memory: driver.NewMemory()}
	c := &Config{History: f, Namespace: "ns"}
	rec, ctx, h := holding(t, c, time.Second)
	time.Sleep(250 * time.Millisecond)
	f.lose.Store(true)
	time.Sleep(250 * time.Millisecond)
	got, err := f.Get(context.Background(), "ns", "app", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lease == nil || got.Lease.Renewals < 3 {
		t.Fatalf("lease after half a second of renewals every 100ms: %+v", got.Lease)
	}
	if ctx.Err() != nil {
		t.Fatalf("the action was stopped: %v", context.Cause(ctx))
	}
	rec.Status = release.StatusDeployed
	if err := h.finish(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	got, _ = f.Get(context.Background(), "ns", "app", 1)
	if got.Status != release.StatusDeployed || got.Lease != nil {
		t.Errorf("after the final write: %s, lease %+v", got.Status, got.Lease)
	}
}

// A holder whose lease another dm took over stops at once and says so;
// its final write changes nothing.
func TestHoldLost(t *testing.T) {
	m := driver.NewMemory()
	c := &Config{History: m, Namespace: "ns"}
	rec, ctx, h := holding(t, c, time.Second)
	other := &Config{History: m, Namespace: "ns"}
	taken, _ := m.Get(context.Background(), "ns", "app", 1)
	if err := other.takeOver(context.Background(), taken, time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder went on applying")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, errLeaseLost) || !strings.Contains(cause.Error(), "another dm took over ns/app revision 1") {
		t.Errorf("cause %v", cause)
	}
	rec.Status = release.StatusDeployed
	if err := h.finish(context.Background(), rec); !errors.Is(err, errLeaseLost) {
		t.Errorf("finish = %v, want the lost lease", err)
	}
	if got, _ := m.Get(context.Background(), "ns", "app", 1); got.Status != release.StatusFailed {
		t.Errorf("the taker's record was overwritten: %s", got.Status)
	}
}

// A holder that cannot renew stops applying before anyone may take over.
func TestHoldCannotRenew(t *testing.T) {
	f := &flaky{Memory: driver.NewMemory()}
	c := &Config{History: f, Namespace: "ns"}
	_, ctx, h := holding(t, c, 500*time.Millisecond)
	start := time.Now()
	f.fail.Store(true)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder went on applying without a lease")
	}
	if took := time.Since(start); took >= 500*time.Millisecond {
		t.Errorf("stopped after %s, not before the lease's 500ms", took)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, derrors.Unavailable) || !strings.Contains(cause.Error(), "could not renew its lease") {
		t.Errorf("cause %v", cause)
	}
	h.release()
}

func TestLeaseOptions(t *testing.T) {
	for _, tc := range []struct {
		o           LeaseOptions
		d, renewing time.Duration
	}{
		{LeaseOptions{}, 15 * time.Second, 5 * time.Second},
		{LeaseOptions{Duration: 3 * time.Second}, 3 * time.Second, time.Second},
		{LeaseOptions{Duration: time.Second, RenewPeriod: 900 * time.Millisecond}, time.Second, 500 * time.Millisecond},
		{LeaseOptions{Duration: time.Hour}, maxLeaseDuration, maxLeaseDuration / 3},
	} {
		if d, r := tc.o.duration(), tc.o.renewPeriod(); d != tc.d || r != tc.renewing {
			t.Errorf("%+v: %s, %s; want %s, %s", tc.o, d, r, tc.d, tc.renewing)
		}
	}
	if w := waitForLock(0); w != DefaultWaitForLock {
		t.Errorf("default wait %s", w)
	}
	if w := waitForLock(-1); w != 0 {
		t.Errorf("no wait: %s", w)
	}
}
