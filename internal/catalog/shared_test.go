package catalog

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/index/indextest"
	"github.com/dmhq/dm/internal/resolve"
)

// TestSharedTester: a tester that is not Active tests nothing and serves
// imported results; once Active it tests only what was not imported, and
// reports each result through OnResult.
func TestSharedTester(t *testing.T) {
	dir := t.TempDir()
	if err := indextest.WriteFiles(dir, indextest.Files(1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	reg, err := api.OpenRegistry(api.RegistrySpec{Prefix: "github.com/a/reg", Dir: dir}, api.Setup{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry("github.com/a/reg")
	svc := api.NewService(resolve.New(def, reg), expand.Options{})
	var active atomic.Bool
	var mu sync.Mutex
	reported := map[string]bool{}
	ex := NewExamples(ExamplesOptions{Resolver: svc.Resolver(), Expander: svc, Poll: 10 * time.Millisecond,
		Active: active.Load,
		OnResult: func(registry, digest string, r ExampleResult) {
			mu.Lock()
			defer mu.Unlock()
			reported[digest] = true
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ex.Run(ctx)
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 30s for %s (%+v)", what, ex.Counts())
			}
		}
	}
	snap := reg.Snapshot()
	var digests []string
	for _, tm := range snap.AllTemplates() {
		for _, v := range tm.Versions {
			digests = append(digests, v.Digest)
		}
	}
	if len(digests) != 4 {
		t.Fatalf("%d versions, want 4", len(digests))
	}
	wait("the versions to be pending", func() bool { return ex.Counts().Pending == 4 })
	// Another replica tested two of them.
	for _, d := range digests[:2] {
		ex.Import("github.com/a/reg", d, ExampleResult{Status: StatusError, Error: "from elsewhere", Tested: time.Now()})
	}
	if c := ex.Counts(); c.Error != 2 || c.Pending != 2 || ex.TestsRun() != 0 {
		t.Fatalf("inactive, after imports: %+v, %d tested", c, ex.TestsRun())
	}
	active.Store(true)
	ex.Resume()
	wait("the other two to be tested", func() bool { return ex.Counts().Pending == 0 })
	if c := ex.Counts(); c.Error != 2 || c.OK != 2 || ex.TestsRun() != 2 {
		t.Errorf("after testing: %+v, %d tested; want the 2 imported kept and 2 tested", c, ex.TestsRun())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range digests[2:] {
		if !reported[d] {
			t.Errorf("the result of %s was not reported", d)
		}
	}
	if len(reported) != 2 {
		t.Errorf("%d results reported, want 2", len(reported))
	}
}
