package kubereg

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/server"
)

// TestRank: objects are admitted in the order objects() lists them:
// ClusterRegistries, then by creation time, then by namespace and name.
func TestRank(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ranks := []rank{
		{cluster: true, created: t0.Add(time.Hour), key: "ClusterRegistry/z"},
		{created: t0, key: "Registry/a/x"},
		{created: t0, key: "Registry/b/x"},
		{created: t0.Add(time.Second), key: "Registry/a/a"},
	}
	for i := range ranks {
		for j := range ranks {
			if got := ranks[i].before(ranks[j]); got != (i < j) {
				t.Errorf("%+v before %+v = %v", ranks[i], ranks[j], got)
			}
		}
	}
}

// TestTally: oldest first, each object is admitted while its namespace's
// and the daemon's bounds have room; ClusterRegistries count toward the
// daemon's bound only.
func TestTally(t *testing.T) {
	q := &quotas{nsRegistries: 2, nsBytes: 100, allBytes: 250, static: func() int64 { return 10 }}
	steps := []struct {
		ns    string
		cost  int64
		bound string
	}{
		{"", 120, ""},                      // a ClusterRegistry: no namespace bound
		{"a", 60, ""},                      // a: 60
		{"a", 50, BoundNamespaceBytes},     // a would hold 110
		{"a", 0, ""},                       // not listed yet: counted, costs nothing yet
		{"a", 1, BoundNamespaceRegistries}, // a's third
		{"b", 70, BoundDaemonBytes},        // 10+120+60+70 > 250
		{"b", 60, ""},                      // 250
		{"", 1, BoundDaemonBytes},
	}
	tl := q.tally()
	for i, s := range steps {
		err := tl.admit(s.ns, s.cost)
		switch {
		case s.bound == "" && err != nil:
			t.Errorf("step %d (%s, %d): %v", i, s.ns, s.cost, err)
		case s.bound != "" && (err == nil || err.Bound != s.bound):
			t.Errorf("step %d (%s, %d): %v, want bound %s", i, s.ns, s.cost, err, s.bound)
		}
	}
	// What each error says: the bound, the flag, the reason.
	for _, tt := range []struct {
		e              QuotaError
		reason, phrase string
	}{
		{QuotaError{Bound: BoundNamespaceRegistries, Namespace: "a", Limit: 2, Used: 2}, ReasonNamespaceQuota, "--max-namespace-registries"},
		{QuotaError{Bound: BoundNamespaceBytes, Namespace: "a", Limit: 1 << 30, Used: 900 << 20, Cost: 200 << 20}, ReasonNamespaceQuota, "costs 200 MiB of index, and namespace a's older Registries hold 900 MiB of the 1 GiB registryd indexes for one namespace (its --max-namespace-bytes)"},
		{QuotaError{Bound: BoundDaemonBytes, Limit: 4 << 30, Used: 3 << 30, Cost: 1536 << 20}, ReasonDaemonQuota, "costs 1.5 GiB of index, and the registries registryd serves before it hold 3 GiB of the 4 GiB it indexes in all (its --max-index-bytes)"},
	} {
		if tt.e.Reason() != tt.reason || !strings.Contains(tt.e.Error(), tt.phrase) {
			t.Errorf("%+v: reason %s, %q; want %s and %q", tt.e, tt.e.Reason(), tt.e.Error(), tt.reason, tt.phrase)
		}
	}
}

// quotaEnv is a watcher synced by hand over stores the test fills, with a
// real server and registries read from a GitHub test server.
type quotaEnv struct {
	t           *testing.T
	ctx         context.Context
	w           *Watcher
	srv         *server.Server
	metrics     *server.Metrics
	regs, cregs toolscache.Store
	gh          *githubtest.Server
	t0          time.Time
	released    atomic.Int32
}

// repoFiles are the files of a registry of n templates of one file of
// size bytes each: its cost is n*(index.EntryBytes+size).
func repoFiles(n, size int) fstest.MapFS {
	m := fstest.MapFS{}
	for i := range n {
		m[fmt.Sprintf("t%02d/v1.0.0/t%02d.jinja", i, i)] = &fstest.MapFile{Data: []byte(strings.Repeat("#", size-1) + "\n")}
	}
	return m
}

func newQuotaEnv(t *testing.T, opts Options) *quotaEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gh := githubtest.New(map[string]string{
		"acme/small": githubtest.NewRepoFS(t, repoFiles(2, 100)),
		"acme/big":   githubtest.NewRepoFS(t, repoFiles(8, 100)),
	})
	t.Cleanup(gh.Close)
	metrics := server.NewMetrics()
	resolver := resolve.New(resolve.Registry{})
	opts.Config = &rest.Config{Host: "http://127.0.0.1:1"}
	opts.Namespace = "dm-system"
	opts.Resolver = resolver
	opts.GitHubAPI = gh.URL
	opts.Refresh = time.Hour
	opts.Setup = api.Setup{CacheDir: t.TempDir(), Hooks: api.Hooks{OnIndex: metrics.ObserveIndex, GitHubRequest: metrics.GitHubRequestFunc, CacheLookup: metrics.CacheLookupFunc}}
	opts.ReleaseBytes, opts.ReleaseAfter = 1, 10*time.Millisecond
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &quotaEnv{t: t, ctx: ctx, w: w, metrics: metrics, gh: gh, t0: time.Now().Add(-time.Hour),
		regs: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), cregs: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)}
	w.release.free = func() { e.released.Add(1) }
	e.srv = server.New(server.Options{Resolver: resolver, Metrics: metrics})
	w.srv = e.srv
	return e
}

// add stores a Registry (ns != "") or ClusterRegistry of repo, created at
// the minute age after the test's start.
func (e *quotaEnv) add(ns, name, repo string, age int) {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("uid-%s-%s", ns, name)), Generation: 1,
		CreationTimestamp: metav1.NewTime(e.t0.Add(time.Duration(age) * time.Minute))}
	spec := v1alpha1.RegistrySpec{Prefix: "github.com/acme/" + name, GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: repo, Branch: "main"}}
	var err error
	if ns == "" {
		err = e.cregs.Add(&v1alpha1.ClusterRegistry{ObjectMeta: meta, Spec: spec})
	} else {
		err = e.regs.Add(&v1alpha1.Registry{ObjectMeta: meta, Spec: spec})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *quotaEnv) remove(ns, name string) {
	store, key := e.regs, ns+"/"+name
	if ns == "" {
		store, key = e.cregs, name
	}
	o, ok, _ := store.GetByKey(key)
	if !ok {
		e.t.Fatalf("no object %s", key)
	}
	if err := store.Delete(o); err != nil {
		e.t.Fatal(err)
	}
}

// ready returns the Ready condition of object key as the watcher would
// write it.
func (e *quotaEnv) ready(key string) *metav1.Condition {
	for _, o := range objects(e.regs, e.cregs) {
		if o.key == key {
			st := e.w.status(o)
			return apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		}
	}
	return nil
}

// settle syncs, as the watcher's loop does when woken, until every
// condition of want (object key -> reason) holds.
func (e *quotaEnv) settle(want map[string]string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e.w.sync(e.ctx, e.regs, e.cregs)
		ok := true
		var got []string
		for key, reason := range want {
			c := e.ready(key)
			if c == nil || c.Reason != reason {
				ok = false
			}
			if c != nil {
				got = append(got, fmt.Sprintf("%s: %s %q", key, c.Reason, c.Message))
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("want %v; have:\n%s", want, strings.Join(got, "\n"))
		}
		select {
		case <-e.w.kick:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cost is what a registry of the test's repo costs.
func cost(repo string) int64 {
	n := map[string]int64{"small": 2, "big": 8}[repo]
	return n * (index.EntryBytes + 100)
}

// TestNamespaceQuotas: a namespace's Registries beyond its count or its
// bytes are not indexed, the newest first, and say which bound and flag;
// when an older one goes, the newer is indexed; another namespace, and a
// ClusterRegistry, are not held back by the namespace's bounds.
func TestNamespaceQuotas(t *testing.T) {
	e := newQuotaEnv(t, Options{MaxNamespaceRegistries: 2, MaxNamespaceBytes: cost("big") + cost("small") - 1})
	e.add("a", "one", "small", 1)
	e.add("a", "two", "small", 2)
	e.add("a", "three", "small", 3)
	e.add("b", "one", "small", 4) // another namespace: its own count
	e.settle(map[string]string{"Registry/a/one": "Indexed", "Registry/a/two": "Indexed", "Registry/a/three": ReasonNamespaceQuota, "Registry/b/one": "Indexed"})
	if c := e.ready("Registry/a/three"); !strings.Contains(c.Message, "--max-namespace-registries") {
		t.Errorf("count: %q", c.Message)
	}
	if _, ok := e.w.opts.Resolver.ByKey("a/github.com/acme/three"); ok {
		t.Error("a registry over its namespace's count is served")
	}
	// Room frees up: the oldest left out is indexed.
	e.remove("a", "one")
	e.settle(map[string]string{"Registry/a/two": "Indexed", "Registry/a/three": "Indexed"})

	// Bytes: a big registry beside a small one is over a's bound; it is
	// the newest, so it is the one left out, after its listing.
	e.remove("a", "three")
	e.add("a", "big", "big", 10)
	e.settle(map[string]string{"Registry/a/two": "Indexed", "Registry/a/big": ReasonNamespaceQuota})
	if c := e.ready("Registry/a/big"); !strings.Contains(c.Message, "--max-namespace-bytes") || !strings.Contains(c.Message, "namespace a's older Registries hold") {
		t.Errorf("bytes: %q", c.Message)
	}
	// Parked: it is not listed again while it does not fit.
	e.gh.ResetCounts()
	for range 5 {
		e.w.sync(e.ctx, e.regs, e.cregs)
	}
	if n := e.gh.RequestsTo("tree"); n != 0 {
		t.Errorf("a registry over its namespace's bound was listed %d times more", n)
	}
	e.remove("a", "two")
	e.settle(map[string]string{"Registry/a/big": "Indexed"})
	// An older registry listed after a newer one takes its place: the
	// newer goes.
	e.add("a", "older", "small", 0)
	e.settle(map[string]string{"Registry/a/older": "Indexed", "Registry/a/big": ReasonNamespaceQuota})
	if _, ok := e.w.opts.Resolver.ByKey("a/github.com/acme/big"); ok {
		t.Error("the newer registry is still served over its namespace's bound")
	}
	e.remove("a", "older")
	e.settle(map[string]string{"Registry/a/big": "Indexed"})

	// A ClusterRegistry is not bound by a namespace's bounds.
	e.add("", "platform", "big", 20)
	e.add("", "platform2", "big", 21)
	e.add("", "platform3", "big", 22)
	e.settle(map[string]string{"ClusterRegistry/platform": "Indexed", "ClusterRegistry/platform2": "Indexed", "ClusterRegistry/platform3": "Indexed", "Registry/a/big": "Indexed"})
}

// TestDaemonQuota: the daemon's bound counts the flags' registries and
// ClusterRegistries before any namespace's Registries; the newest
// Registry over it is left out, naming --max-index-bytes.
func TestDaemonQuota(t *testing.T) {
	e := newQuotaEnv(t, Options{MaxIndexBytes: cost("big") + 2*cost("small")})
	e.add("a", "old", "small", 0)
	e.add("b", "newer", "small", 1)
	e.add("", "platform", "big", 5) // created last, admitted first
	e.settle(map[string]string{"ClusterRegistry/platform": "Indexed", "Registry/a/old": "Indexed", "Registry/b/newer": "Indexed"})
	e.add("c", "newest", "small", 6)
	e.settle(map[string]string{"Registry/c/newest": ReasonDaemonQuota, "Registry/a/old": "Indexed", "Registry/b/newer": "Indexed"})
	if c := e.ready("Registry/c/newest"); !strings.Contains(c.Message, "--max-index-bytes") {
		t.Errorf("daemon: %q", c.Message)
	}
	e.remove("", "platform")
	e.settle(map[string]string{"Registry/c/newest": "Indexed"})
}

// TestForgetOnDelete: a deleted object's registry leaves nothing in the
// server (its metrics series) and its memory is given back.
func TestForgetOnDelete(t *testing.T) {
	e := newQuotaEnv(t, Options{})
	e.add("a", "x", "big", 0)
	e.add("b", "x", "big", 1)
	e.settle(map[string]string{"Registry/a/x": "Indexed", "Registry/b/x": "Indexed"})
	for _, key := range []string{"a/github.com/acme/x", "b/github.com/acme/x"} {
		if n := e.metrics.Series(key); n == 0 {
			t.Fatalf("%s has no series", key)
		}
	}
	e.remove("a", "x")
	e.w.sync(e.ctx, e.regs, e.cregs)
	if n := e.metrics.Series("a/github.com/acme/x"); n != 0 {
		t.Errorf("the deleted registry a/x keeps %d series", n)
	}
	if n := e.metrics.Series("b/github.com/acme/x"); n == 0 {
		t.Error("b/x lost its series when a/x, of the same prefix, was deleted")
	}
	waitUntil(t, func() bool { return e.released.Load() >= 1 })
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReleaser: memory is returned once registries holding enough are
// stopped, after a pause, and once more later; a delete while that
// follow-up waits is released sooner, with a follow-up of its own.
func TestReleaser(t *testing.T) {
	var n atomic.Int32
	r := newReleaser(20*time.Millisecond, 100, slog.New(slog.DiscardHandler))
	r.free = func() { n.Add(1) }
	r.freed(50)
	time.Sleep(60 * time.Millisecond)
	if n.Load() != 0 {
		t.Fatal("released for less than its bound")
	}
	r.freed(50)
	r.freed(500) // coalesced with the first
	waitUntil(t, func() bool { return n.Load() == 1 })
	r.mu.Lock()
	again := r.again
	r.mu.Unlock()
	if !again {
		t.Fatal("no follow-up after a release")
	}
	r.freed(100) // during the follow-up's wait
	waitUntil(t, func() bool { return n.Load() == 3 })
	time.Sleep(3 * followUp * 20 * time.Millisecond)
	if got := n.Load(); got != 3 {
		t.Errorf("%d releases, want 3: two deletes, one follow-up each, the first replaced", got)
	}
}
