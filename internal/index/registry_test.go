package index_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/index/indextest"
)

func fixture() fstest.MapFS {
	fsys := fstest.MapFS{}
	for p, c := range map[string]string{
		"registry.yaml":                  "collections:\n  apps: stacks/apps\n",
		"redis/v1/redis.jinja":           "resources: []",
		"redis/v1/example.yaml":          "resources: []",
		"common/web/v1.2.3/web.gotmpl":   "resources: []",
		"common/web/v1.2.3/example.yaml": "resources: []",
		"stacks/apps/gb/v1/gb.py":        "def GenerateConfig(ctx): return {}",
		"stacks/apps/gb/v1/example.yaml": "resources: []",
	} {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	return fsys
}

func githubRegistry(t *testing.T, srv *githubtest.Server, cacheDir string) *index.Registry {
	t.Helper()
	gh, err := fetch.NewGitHub(fetch.GitHubOptions{Owner: "acme", Repo: "templates", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &index.Registry{Name: "github.com/acme/templates", Source: fetch.NewCache(gh, cacheDir, 1<<20), CacheDir: cacheDir}
}

func TestRegistryGitHubRequests(t *testing.T) {
	repo := githubtest.NewRepoFS(t, fixture())
	srv := githubtest.New(map[string]string{"acme/templates": repo})
	defer srv.Close()
	cache := t.TempDir()
	reg := githubRegistry(t, srv, cache)
	ctx := context.Background()

	if err := reg.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests(); n > 3 {
		t.Errorf("cold index took %d GitHub requests, want at most 3", n)
	}
	if _, ok := reg.Snapshot().Template("apps", "gb"); !ok {
		t.Fatal("registry.yaml collection not indexed")
	}

	srv.ResetCounts()
	if err := reg.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n, n304 := srv.Requests(), srv.Responses(304); n != 1 || n304 != 1 {
		t.Errorf("unchanged refresh: %d requests, %d answered 304; want 1 and 1", n, n304)
	}

	// Faults keep the last good index.
	good := reg.Snapshot()
	srv.SetFaults(githubtest.Faults{Status5xx: 10})
	err := reg.Refresh(ctx)
	if !errors.Is(err, derrors.Unavailable) {
		t.Fatalf("refresh during an outage: %v", err)
	}
	if reg.Snapshot() != good {
		t.Fatal("a failed refresh replaced the index")
	}
	if st := reg.Status(); st.LastError == "" || st.RetryAt.IsZero() {
		t.Errorf("status after failure = %+v", st)
	}
	srv.SetFaults(githubtest.Faults{})

	// A new commit is picked up.
	githubtest.Commit(t, repo, map[string]string{"redis/v1.0.1/redis.jinja": "x", "redis/v1.0.1/example.yaml": "y"})
	if err := reg.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if tm, _ := reg.Snapshot().Template("", "redis"); len(tm.Versions) != 2 {
		t.Fatalf("new version not indexed: %+v", tm)
	}

	// A restart loads the persisted snapshot with GitHub gone.
	srv.Close()
	again := githubRegistry(t, srv, cache)
	if err := again.Load(); err != nil {
		t.Fatal(err)
	}
	if tm, _ := again.Snapshot().Template("", "redis"); tm == nil || len(tm.Versions) != 2 {
		t.Fatalf("restored snapshot lacks the new version: %+v", tm)
	}
	if !again.Status().FromCache {
		t.Error("status does not say the snapshot came from the cache")
	}
}

func TestRegistryLoadCorrupt(t *testing.T) {
	dir := t.TempDir()
	reg := &index.Registry{Name: "github.com/a/b", Source: fetch.NewLocal(fixture()), CacheDir: dir}
	if err := reg.Load(); !errors.Is(err, derrors.NotFound) {
		t.Fatalf("Load with nothing persisted: %v", err)
	}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, index.SnapshotFile))
	if len(matches) != 1 {
		t.Fatalf("persisted files: %v", matches)
	}
	b, _ := os.ReadFile(matches[0])
	os.WriteFile(matches[0], b[:len(b)/2], 0o644)
	fresh := &index.Registry{Name: "github.com/a/b", Source: fetch.NewLocal(fixture()), CacheDir: dir}
	if err := fresh.Load(); err == nil {
		t.Fatal("Load accepted a truncated snapshot")
	}
	if fresh.Snapshot() != nil {
		t.Fatal("a bad snapshot was installed")
	}
}

// BenchmarkLoad10k restores a persisted snapshot of 10,000 versions, the
// work a restarted registryd does before it is ready: the target is 200 ms.
func BenchmarkLoad10k(b *testing.B) {
	dir := b.TempDir()
	tree := indextest.Tree(indextest.Files(4, 250, 10))
	seed := &index.Registry{Name: "github.com/acme/t", Source: staticSource{tree}, CacheDir: dir}
	if err := seed.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := &index.Registry{Name: "github.com/acme/t", CacheDir: dir}
		if err := r.Load(); err != nil || r.Snapshot().Versions != 10000 {
			b.Fatal(err)
		}
	}
}

// staticSource serves one listing: a Source for benchmarks.
type staticSource struct{ t *fetch.Tree }

func (s staticSource) Tree(context.Context, *fetch.Tree) (*fetch.Tree, error) { return s.t, nil }
func (s staticSource) Blob(context.Context, string) ([]byte, error) {
	return nil, derrors.NotFound
}

func TestRegistryRun(t *testing.T) {
	reg := &index.Registry{Name: "github.com/a/b", Source: fetch.NewLocal(fixture())}
	called := false
	// Interval zero: one refresh, then Run returns.
	reg.Run(context.Background(), 0, func() { called = true })
	if !called || reg.Snapshot() == nil {
		t.Fatalf("first called %v, snapshot %v", called, reg.Snapshot())
	}
	// A cancelled context ends a periodic Run after its first refresh.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		reg.Run(ctx, time.Hour, cancel)
		close(done)
	}()
	<-done
}

// TestJitter: refresh intervals are spread by up to a tenth either way.
func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 5, time.Second, 5 * time.Minute} {
		seen := map[time.Duration]bool{}
		for range 100 {
			j := index.Jitter(d)
			if j < d-d/10 || j > d+d/10 {
				t.Fatalf("Jitter(%s) = %s, outside ±10%%", d, j)
			}
			seen[j] = true
		}
		if d >= time.Second && len(seen) < 10 {
			t.Errorf("Jitter(%s) took %d values in 100 draws: not spread", d, len(seen))
		}
	}
}

// TestRegistryBounds: a listing over a bound is not served (Refresh fails
// with a *BoundError and the snapshot goes), and a persisted snapshot is
// loaded only by the registry of the identity that wrote it.
func TestRegistryBounds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	reg := &index.Registry{Name: "github.com/a/b", Identity: "one", Source: fetch.NewLocal(fixture()), CacheDir: dir}
	if err := reg.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	n := len(reg.Snapshot().Tree.Entries)
	other := &index.Registry{Name: "github.com/a/b", Identity: "two", Source: fetch.NewLocal(fixture()), CacheDir: dir}
	if err := other.Load(); err == nil || !strings.Contains(err.Error(), "written by another registry") {
		t.Errorf("another identity loaded the snapshot: %v", err)
	}
	same := &index.Registry{Name: "github.com/a/b", Identity: "one", Source: fetch.NewLocal(fixture()), CacheDir: dir}
	if err := same.Load(); err != nil {
		t.Errorf("the same identity: %v", err)
	}
	for _, tt := range []struct {
		entries int
		bytes   int64
		bound   string
	}{{n - 1, 0, "entries"}, {0, 10, "bytes"}} {
		reg.MaxEntries, reg.MaxBytes = tt.entries, tt.bytes
		reg.Install(nil)
		_ = reg.Load() // the persisted snapshot is over the bound too
		err := reg.Refresh(ctx)
		var b *index.BoundError
		if !errors.As(err, &b) || b.Bound != tt.bound || reg.Snapshot() != nil || !errors.As(reg.LastErr(), &b) {
			t.Errorf("bound %s: %v, snapshot %v", tt.bound, err, reg.Snapshot() != nil)
		}
		if _, err := os.Stat(filepath.Join(dir, index.SnapshotFile)); !os.IsNotExist(err) {
			t.Errorf("bound %s: the snapshot over the bound is still persisted (%v)", tt.bound, err)
		}
	}
}

// TestBackoff: a registry with no index retries from its first wait,
// doubling with each failure in a row, up to its interval.
func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		fails           int
		first, interval time.Duration
		want            time.Duration
	}{
		{1, time.Minute, time.Hour, time.Minute},
		{2, time.Minute, time.Hour, 2 * time.Minute},
		{4, time.Minute, time.Hour, 8 * time.Minute},
		{7, time.Minute, time.Hour, time.Hour},
		{1000, time.Minute, time.Hour, time.Hour},
		{1, 0, time.Hour, index.RetryUnready},
		{3, 0, time.Hour, 4 * index.RetryUnready},
		{1, time.Minute, 20 * time.Second, 20 * time.Second}, // the interval is shorter
		{30, time.Minute, 0, time.Hour},                      // indexed once: an hour at most
		{0, time.Minute, time.Hour, time.Minute},
	} {
		if got := index.Backoff(tt.fails, tt.first, tt.interval); got != tt.want {
			t.Errorf("Backoff(%d, %s, %s) = %s, want %s", tt.fails, tt.first, tt.interval, got, tt.want)
		}
	}
}

// failingSource fails every listing, counting them.
type failingSource struct{ n atomic.Int64 }

func (s *failingSource) Tree(context.Context, *fetch.Tree) (*fetch.Tree, error) {
	s.n.Add(1)
	return nil, errors.New("connection refused")
}
func (s *failingSource) Blob(context.Context, string) ([]byte, error) { return nil, derrors.NotFound }

// TestRegistryRunBacksOff: Run retries a registry whose source keeps
// failing with waits that double, not every RetryMin: in 20 RetryMins it
// tries at most 6 times (1, 2, 4, 8 RetryMins apart: a bound on how often,
// which a loaded machine only lowers), where a fixed wait would have
// tried 20 times.
func TestRegistryRunBacksOff(t *testing.T) {
	const first = 25 * time.Millisecond
	src := &failingSource{}
	reg := &index.Registry{Name: "github.com/a/b", Source: src, RetryMin: first}
	ctx, cancel := context.WithTimeout(context.Background(), 20*first)
	defer cancel()
	reg.Run(ctx, time.Hour, nil)
	if n := src.n.Load(); n > 6 || n < 1 {
		t.Errorf("%d listings in %s with RetryMin %s, want at most 6 (backing off)", n, 20*first, first)
	}
}
