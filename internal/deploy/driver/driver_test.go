package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
)

// testDriver checks the Driver contract on d, in namespace ns (empty at
// the start).
func testDriver(t *testing.T, d Driver, ns string) {
	ctx := context.Background()
	t.Helper()

	if _, err := d.History(ctx, ns, "web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("History of nothing = %v, want ErrNotFound", err)
	}
	if _, err := d.Get(ctx, ns, "web", 1); !errors.Is(err, ErrNotFound) || !errors.Is(err, derrors.NotFound) {
		t.Fatalf("Get of nothing = %v, want ErrNotFound", err)
	}

	r1 := sample(ns, "web", 1)
	r1.Status = release.StatusPending
	if err := d.Create(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if r1.StorageVersion == "" {
		t.Error("Create left StorageVersion empty")
	}
	if err := d.Create(ctx, sample(ns, "web", 1)); !errors.Is(err, ErrExists) || !errors.Is(err, derrors.AlreadyExists) {
		t.Errorf("second Create of revision 1 = %v, want ErrExists", err)
	}
	got, err := d.Get(ctx, ns, "web", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != release.StatusPending || got.Description != r1.Description || !got.Updated.Equal(r1.Updated) ||
		got.Objects[0]["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"] != int64(6379) {
		t.Errorf("Get = %+v, want %+v", got, r1)
	}

	// A status update, then a stale one.
	stale := *got
	got.Status, got.Description = release.StatusDeployed, "Deploy complete"
	if err := d.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	stale.Status = release.StatusFailed
	if err := d.Update(ctx, &stale); !errors.Is(err, ErrConflict) || !errors.Is(err, derrors.Conflict) {
		t.Errorf("stale Update = %v, want ErrConflict", err)
	}
	// An update that changes the body.
	got.Objects = append(got.Objects, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}})
	if err := d.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if again, err := d.Get(ctx, ns, "web", 1); err != nil || again.Status != release.StatusDeployed || len(again.Objects) != 2 {
		t.Errorf("Get after Update = %+v, %v; want deployed with 2 objects", again, err)
	}
	if err := d.Update(ctx, sample(ns, "web", 9)); err == nil {
		t.Error("Update of a missing revision succeeded")
	}

	for rev := 2; rev <= 3; rev++ {
		if err := d.Create(ctx, sample(ns, "web", rev)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Create(ctx, sample(ns, "db", 1)); err != nil {
		t.Fatal(err)
	}
	hist, err := d.History(ctx, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if revs := revisions(hist); fmt.Sprint(revs) != "[1 2 3]" {
		t.Errorf("History revisions = %v, want [1 2 3]", revs)
	}
	list, err := d.List(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if s := summary(list); s != "[db:1 web:3]" {
		t.Errorf("List = %s, want [db:1 web:3]", s)
	}
	all, err := d.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range all {
		if r.Namespace == ns {
			found++
		}
	}
	if found != 2 {
		t.Errorf("List of all namespaces has %d deployments of %s, want 2", found, ns)
	}

	if err := d.Delete(ctx, ns, "web", 2); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, ns, "web", 2); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
	if hist, _ := d.History(ctx, ns, "web"); fmt.Sprint(revisions(hist)) != "[1 3]" {
		t.Errorf("History after Delete = %v, want [1 3]", revisions(hist))
	}

	// A lease: kept beside the record, renewed, and cleared by the final
	// write.
	lr := sample(ns, "leased", 1)
	lr.Status = release.StatusPending
	acquired := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lr.Lease = &release.Lease{Holder: release.Holder{ID: "1a2b", Host: "ci-7", PID: 42}, Operation: "deploy",
		Duration: 15 * time.Second, RenewPeriod: 5 * time.Second, Acquired: acquired, Renewed: acquired}
	if err := d.Create(ctx, lr); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(ctx, ns, "leased", 1); err != nil || got.Lease == nil || *got.Lease != *lr.Lease {
		t.Fatalf("Get of a leased record = %+v, %v; want the lease %+v", got, err, lr.Lease)
	}
	before := lr.StorageVersion
	lr.Lease.Renewals++
	lr.Lease.Renewed = acquired.Add(5 * time.Second)
	if err := d.Update(ctx, lr); err != nil {
		t.Fatal(err)
	}
	if lr.StorageVersion == before {
		t.Error("a renewal did not change the storage version")
	}
	if got, err := d.Get(ctx, ns, "leased", 1); err != nil || got.Lease == nil || got.Lease.Renewals != 1 || !got.Lease.Renewed.Equal(lr.Lease.Renewed) {
		t.Fatalf("Get after a renewal = %+v, %v", got, err)
	}
	lr.Lease, lr.Status = nil, release.StatusDeployed
	if err := d.Update(ctx, lr); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(ctx, ns, "leased", 1); err != nil || got.Lease != nil || got.Status != release.StatusDeployed {
		t.Fatalf("Get after the final write = %+v, %v; want no lease", got, err)
	}

	for _, bad := range []*release.Record{
		{Name: "Web", Namespace: ns, Revision: 1, Status: release.StatusPending},
		{Name: "web", Namespace: "", Revision: 1, Status: release.StatusPending},
		{Name: "web", Namespace: ns, Revision: 0, Status: release.StatusPending},
		{Name: "web", Namespace: ns, Revision: 4, Status: "stuck"},
	} {
		if err := d.Create(ctx, bad); !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("Create(%+v) = %v, want InvalidArgument", bad, err)
		}
	}
}

// testConcurrentCreate checks that of n concurrent creators of one
// revision exactly one wins and the others get ErrExists.
func testConcurrentCreate(t *testing.T, d Driver, ns string, n int, mk func(i int) *release.Record) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.Create(context.Background(), mk(i))
		}()
	}
	wg.Wait()
	won := oneWinner(t, "creator", errs, ErrExists)
	want := mk(won)
	got, err := d.Get(context.Background(), want.Namespace, want.Name, want.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != want.Description {
		t.Errorf("stored record is %q, want the winner's %q", got.Description, want.Description)
	}
}

// testConcurrentUpdate checks that of n concurrent updaters of one read of
// a record exactly one wins and the others get ErrConflict.
func testConcurrentUpdate(t *testing.T, d Driver, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	base := sample(ns, "upd", 1)
	base.Status = release.StatusPending
	if err := d.Create(ctx, base); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := *base
			r.Status, r.Description = release.StatusDeployed, fmt.Sprint("updater ", i)
			if i%2 == 1 { // and some replace the body
				r.Objects = append(slices.Clone(r.Objects), map[string]any{"kind": "ConfigMap", "n": int64(i)})
			}
			errs[i] = d.Update(ctx, &r)
		}()
	}
	wg.Wait()
	won := oneWinner(t, "updater", errs, ErrConflict)
	got, err := d.Get(ctx, ns, "upd", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != fmt.Sprint("updater ", won) || len(got.Objects) != 1+won%2 {
		t.Errorf("stored record is %q with %d objects, want updater %d's", got.Description, len(got.Objects), won)
	}
}

// oneWinner checks that exactly one of the racers' errs is nil and the
// others are lost, and returns the winner.
func oneWinner(t *testing.T, racer string, errs []error, lost error) int {
	t.Helper()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("%ss %d and %d both won", racer, won, i)
		case err == nil:
			won = i
		case !errors.Is(err, lost):
			t.Errorf("%s %d: %v, want %v", racer, i, err, lost)
		}
	}
	if won < 0 {
		t.Fatalf("no %s won", racer)
	}
	return won
}

func revisions(rs []*release.Record) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.Revision)
	}
	return out
}

func summary(rs []*release.Record) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s:%d", r.Name, r.Revision))
	}
	return fmt.Sprint(out)
}

func TestMemory(t *testing.T) {
	testDriver(t, NewMemory(), "ns")
}

func TestMemoryZeroValue(t *testing.T) {
	var m Memory
	if _, err := m.List(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	testDriver(t, &m, "other")
}

func TestMemoryConcurrentCreate(t *testing.T) {
	testConcurrentCreate(t, NewMemory(), "ns", 16, func(i int) *release.Record {
		r := sample("ns", "web", 1)
		r.Description = fmt.Sprint("creator ", i)
		return r
	})
}

func TestMemoryConcurrentUpdate(t *testing.T) {
	testConcurrentUpdate(t, NewMemory(), "ns", 16)
}

func TestMemoryIsolation(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	r := sample("ns", "web", 1)
	if err := m.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Properties["replicas"] = int64(99) // the caller's copy, not the store's
	got, _ := m.Get(ctx, "ns", "web", 1)
	got.Objects[0]["kind"] = "Changed"
	again, _ := m.Get(ctx, "ns", "web", 1)
	if again.Properties["replicas"] != int64(3) || again.Objects[0]["kind"] != "Service" {
		t.Errorf("the store shares memory with its callers: %+v", again)
	}
}

func TestPrune(t *testing.T) {
	const (
		P = release.StatusPending
		D = release.StatusDeployed
		F = release.StatusFailed
		S = release.StatusSuperseded
	)
	for _, tc := range []struct {
		name     string
		statuses []release.Status // of revisions 1, 2, ...
		max      int
		want     string
	}{
		{"under max", []release.Status{S, D}, 10, "[1 2]"},
		{"no limit", []release.Status{S, S, S, D}, 0, "[1 2 3 4]"},
		{"oldest go", []release.Status{S, S, S, S, D}, 2, "[4 5]"},
		{"keeps the deployed one", []release.Status{S, D, F, F, F}, 2, "[2 5]"},
		{"keeps the latest", []release.Status{S, D, F, F, P}, 1, "[2 5]"},
		{"max one", []release.Status{S, S, D}, 1, "[3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m := NewMemory()
			for i, st := range tc.statuses {
				r := sample("ns", "web", i+1)
				r.Status = st
				if err := m.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if err := Prune(ctx, m, "ns", "web", tc.max); err != nil {
				t.Fatal(err)
			}
			hist, _ := m.History(ctx, "ns", "web")
			if got := fmt.Sprint(revisions(hist)); got != tc.want {
				t.Errorf("after Prune: %s, want %s", got, tc.want)
			}
		})
	}
	if err := Prune(context.Background(), NewMemory(), "ns", "none", 3); err != nil {
		t.Errorf("Prune of no history = %v", err)
	}
}
