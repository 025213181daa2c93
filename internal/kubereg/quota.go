package kubereg

import (
	"fmt"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/derrors"
)

// Reasons of the Ready condition of an object over a quota.
const (
	ReasonNamespaceQuota = "NamespaceQuotaExceeded"
	ReasonDaemonQuota    = "DaemonQuotaExceeded"
)

// Quota bounds are named by what they bound.
const (
	// BoundNamespaceRegistries is the Registries of one namespace
	// indexed (Options.MaxNamespaceRegistries).
	BoundNamespaceRegistries = "namespace-registries"
	// BoundNamespaceBytes is the index bytes of one namespace's
	// Registries (Options.MaxNamespaceBytes).
	BoundNamespaceBytes = "namespace-bytes"
	// BoundDaemonBytes is the index bytes of every registry registryd
	// serves (Options.MaxIndexBytes).
	BoundDaemonBytes = "daemon-bytes"
)

// A QuotaError says an object's registry is not indexed: its namespace or
// the daemon holds as much as registryd allows, counting the objects
// created before it. It wraps derrors.LimitExceeded.
type QuotaError struct {
	// Bound is BoundNamespaceRegistries, BoundNamespaceBytes or
	// BoundDaemonBytes.
	Bound string
	// Namespace is the object's, "" for a ClusterRegistry.
	Namespace string
	// Limit is the bound; Used what the older objects hold of it; Cost
	// what this one's listing would add (0 for the count).
	Limit, Used, Cost int64
}

// Error describes the bound, what holds it and the flag that sets it.
func (e *QuotaError) Error() string {
	switch e.Bound {
	case BoundNamespaceRegistries:
		return fmt.Sprintf("not indexed: namespace %s has %d Registries indexed, the most registryd indexes for one namespace (its --max-namespace-registries); the oldest are indexed first, and this one is when one of them goes", e.Namespace, e.Used)
	case BoundNamespaceBytes:
		return fmt.Sprintf("not indexed: its listing costs %s of index, and namespace %s's older Registries hold %s of the %s registryd indexes for one namespace (its --max-namespace-bytes); it is indexed when there is room", sizeOf(e.Cost), e.Namespace, sizeOf(e.Used), sizeOf(e.Limit))
	}
	return fmt.Sprintf("not indexed: its listing costs %s of index, and the registries registryd serves before it hold %s of the %s it indexes in all (its --max-index-bytes); it is indexed when there is room", sizeOf(e.Cost), sizeOf(e.Used), sizeOf(e.Limit))
}

// Unwrap returns derrors.LimitExceeded.
func (e *QuotaError) Unwrap() error { return derrors.LimitExceeded }

// Reason is the Ready condition's reason: NamespaceQuotaExceeded or
// DaemonQuotaExceeded.
func (e *QuotaError) Reason() string {
	if e.Bound == BoundDaemonBytes {
		return ReasonDaemonQuota
	}
	return ReasonNamespaceQuota
}

// sizeOf writes n bytes in binary units, as the flags take them.
func sizeOf(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	f, u := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, u = f/unit, s
	}
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", f), "0"), ".") + " " + u
}

// rank orders objects as objects() does: ClusterRegistries first, then by
// creation time, then by key (namespace and name). Of two objects, the
// later one is left out when both do not fit.
type rank struct {
	cluster bool
	created time.Time
	key     string
}

// before reports whether r comes before s.
func (r rank) before(s rank) bool {
	if r.cluster != s.cluster {
		return r.cluster
	}
	if c := r.created.Compare(s.created); c != 0 {
		return c < 0
	}
	return r.key < s.key
}

// charge is what an object's served registry holds: the cost of the
// listing it was admitted with (index.Cost).
type charge struct {
	rank      rank
	namespace string
	cost      int64
}

// measure is the cost of a listing refused for a quota: the object is not
// started again until it fits, or until its refresh interval has passed
// (its repository may have shrunk), or its spec changes.
type measure struct {
	uid   string
	gen   int64
	cost  int64
	until time.Time
}

// quotas are the bounds of Options and what holds them. Its methods are
// called with w.qmu held.
type quotas struct {
	nsRegistries      int
	nsBytes, allBytes int64
	// static is the cost of the registries of flags, which the daemon's
	// bound counts first.
	static   func() int64
	charges  map[string]charge  // object key -> what its registry holds
	measured map[string]measure // object key -> its refused listing
}

// fits reports whether an object of rank rk in namespace ns ("" for a
// ClusterRegistry) may hold cost, counting the charges of the objects
// before it.
func (q *quotas) fits(key string, rk rank, ns string, cost int64) *QuotaError {
	var nsUsed, allUsed int64
	if q.static != nil {
		allUsed = q.static()
	}
	for k, c := range q.charges {
		if k == key || !c.rank.before(rk) {
			continue
		}
		allUsed += c.cost
		if ns != "" && c.namespace == ns {
			nsUsed += c.cost
		}
	}
	if ns != "" && q.nsBytes > 0 && nsUsed+cost > q.nsBytes {
		return &QuotaError{Bound: BoundNamespaceBytes, Namespace: ns, Limit: q.nsBytes, Used: nsUsed, Cost: cost}
	}
	if q.allBytes > 0 && allUsed+cost > q.allBytes {
		return &QuotaError{Bound: BoundDaemonBytes, Namespace: ns, Limit: q.allBytes, Used: allUsed, Cost: cost}
	}
	return nil
}

// tally is the admission of the objects of one sync, oldest first: what
// the objects admitted so far hold.
type tally struct {
	q     *quotas
	count map[string]int
	ns    map[string]int64
	all   int64
}

func (q *quotas) tally() *tally {
	t := &tally{q: q, count: map[string]int{}, ns: map[string]int64{}}
	if q.static != nil {
		t.all = q.static()
	}
	return t
}

// admit admits an object of namespace ns whose listing costs cost (0 when
// not known yet: its listing is admitted by fits), unless a bound is
// full.
func (t *tally) admit(ns string, cost int64) *QuotaError {
	q := t.q
	if ns != "" && q.nsRegistries > 0 && t.count[ns] >= q.nsRegistries {
		return &QuotaError{Bound: BoundNamespaceRegistries, Namespace: ns, Limit: int64(q.nsRegistries), Used: int64(t.count[ns])}
	}
	if ns != "" && q.nsBytes > 0 && t.ns[ns]+cost > q.nsBytes {
		return &QuotaError{Bound: BoundNamespaceBytes, Namespace: ns, Limit: q.nsBytes, Used: t.ns[ns], Cost: cost}
	}
	if q.allBytes > 0 && t.all+cost > q.allBytes {
		return &QuotaError{Bound: BoundDaemonBytes, Namespace: ns, Limit: q.allBytes, Used: t.all, Cost: cost}
	}
	if ns != "" {
		t.count[ns]++
		t.ns[ns] += cost
	}
	t.all += cost
	return nil
}

// known returns the cost of object o's listing, if known: what its
// registry holds, else its refused listing's while that is valid.
func (q *quotas) known(o object, now time.Time) (int64, bool) {
	if c, ok := q.charges[o.key]; ok {
		return c.cost, true
	}
	if m, ok := q.measured[o.key]; ok {
		if m.uid == o.uid && m.gen == o.gen && now.Before(m.until) {
			return m.cost, true
		}
		delete(q.measured, o.key)
	}
	return 0, false
}

// problem is the object's problem for a quota error.
func quotaProblem(e *QuotaError) problem {
	return problem{stalled: false, reason: e.Reason(), message: e.Error()}
}
