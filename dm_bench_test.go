package dm_test

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// BenchmarkDMExpandGitHub times `dm expand` of a GitHub registry's
// composite (registry-example's stacks/apps/guestbook, four languages) as
// a whole process, the way a user runs it: against a local GitHub API
// server, the listing cached from an earlier run. Sandboxed, the templates
// run in a worker process (target: at most 25 ms); --no-sandbox runs them
// in dm's own. The median is reported beside the mean.
func BenchmarkDMExpandGitHub(b *testing.B) {
	_, dm := buildBinaries(b)
	srv := githubtest.New(map[string]string{"acme/templates": githubtest.NewRepo(b, "registry-example")})
	defer srv.Close()
	home := b.TempDir()
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"sandboxed", nil},
		{"no-sandbox", []string{"--no-sandbox"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			args := append([]string{"--github-api", srv.URL, "expand"}, bc.args...)
			args = append(args, "github.com/acme/templates/apps/guestbook:v1")
			run := func() time.Duration {
				cmd := exec.Command(dm, args...)
				cmd.Env = append(os.Environ(), "HOME="+home, "DM_SERVER=")
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("dm %v: %v\n%s", args, err, out)
				}
				return time.Since(start)
			}
			run() // the listing goes into the cache
			var times []time.Duration
			for b.Loop() {
				times = append(times, run())
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
		})
	}
}
