package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/index/indextest"
	"github.com/dmhq/dm/internal/resolve"
)

// benchCatalog serves a synthetic registry of 10,000 template versions
// (4 collections x 250 templates x 10 versions) with every example tested.
func benchCatalog(b *testing.B) (http.Handler, *Examples, time.Duration) {
	b.Helper()
	dir := b.TempDir()
	if err := indextest.WriteFiles(dir, indextest.Files(4, 250, 10)); err != nil {
		b.Fatal(err)
	}
	reg, err := api.OpenRegistry(api.RegistrySpec{Prefix: "github.com/bench/reg", Dir: dir}, api.Setup{})
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	def, _ := resolve.ParseRegistry("github.com/bench/reg")
	svc := api.NewService(resolve.New(def, reg), expand.Options{})
	ex := NewExamples(ExamplesOptions{Resolver: svc.Resolver(), Expander: svc, Poll: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	start := time.Now()
	go ex.Run(ctx)
	for {
		c := ex.Counts()
		if c.Pending == 0 && c.OK+c.Error == 10000 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	tested := time.Since(start)
	c := New(Options{Service: svc, Examples: ex})
	r := chi.NewRouter()
	c.Mount(r)
	return r, ex, tested
}

// BenchmarkPages measures the server time of the catalog's pages with
// 10,000 template versions loaded, and reports the 50th and 95th
// percentiles (target: p95 at most 10 ms).
func BenchmarkPages(b *testing.B) {
	h, _, tested := benchCatalog(b)
	b.Logf("examples of 10,000 versions tested in %s", tested.Round(time.Millisecond))
	pages := []struct{ name, path string }{
		{"home", "/"},
		{"template", "/t/col2/t17:v1.1"},
		{"template-latest", "/t/t42"},
		{"search", "/search?q=t17"},
		{"search-broad", "/search?q=t1"},
		{"registry", "/r/github.com/bench/reg"},
		{"registry-page-5", "/r/github.com/bench/reg?page=5"},
		{"diff", "/t/col1/t5:v1.1/diff?from=v1.0.0"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			// Warm the caches once, as any page served before.
			serve(b, h, p.path)
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				serve(b, h, p.path)
				times = append(times, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

func serve(b *testing.B, h http.Handler, path string) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code != 200 {
		b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
	}
}

// BenchmarkExamplesCold measures testing the examples of 10,000 versions
// after a cold index (in the background: serving never waits for it).
func BenchmarkExamplesCold(b *testing.B) {
	for b.Loop() {
		_, _, tested := benchCatalog(b)
		b.ReportMetric(tested.Seconds(), "s-to-test-10k")
	}
}
