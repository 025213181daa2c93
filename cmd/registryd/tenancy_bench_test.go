package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/index/indextest"
)

// BenchmarkTenancy measures issue 28's numbers (make bench-tenancy) with
// one registryd under its template's rights against the test apiserver:
// its RSS with 50 Registries of 1,000 versions each (target under 200
// MiB), and GET /v1/resolve of a namespace's registry with a bearer token
// (reviewed by the apiserver once, then from the cache) against the same
// resolve of a ClusterRegistry without one, under wrk -t2 -c32 in turns
// (target: the authorized one within 1.1x of the anonymous one's cost).
func BenchmarkTenancy(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Fatal("wrk is not installed (apt-get install wrk)")
	}
	env, c := startCluster(b)
	ctx := context.Background()
	ns := env.Namespace(b)
	token := tenantAdmin(b, env, c, ns)
	// 1,000 versions: 100 templates of 10 patches, served as 50
	// repositories (one git repository on disk; each object is a
	// registry of its own, indexed and kept on its own).
	files := map[string]string{}
	for tpl := range 100 {
		for patch := range 10 {
			files[fmt.Sprintf("t%03d/v1.0.%d/t%03d.jinja", tpl, patch, tpl)] = "resources: []\n"
		}
	}
	repo := githubtest.NewRepoFS(b, mapFS(b, files))
	repos := map[string]string{"acme/shared": repo}
	const registries = 50
	for i := range registries {
		repos[fmt.Sprintf("acme/r%02d", i)] = repo
	}
	gh := githubtest.New(repos)
	defer gh.Close()
	args := replicaArgs(b, registrydAccount(b, env.Kubeconfig, c, system), gh.URL, "--example-settle", "0")
	// TENANCY_PROFILES=DIR keeps CPU profiles of registryd under the last
	// pair's loads in DIR (cpu-anonymous.pb.gz, cpu-authorized.pb.gz).
	profiles, pprofAddr, args := profiling(b, args)
	r := startReplica(b, args...)
	objs := []client.Object{&v1alpha1.ClusterRegistry{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: "shared", Branch: "main"}}}}
	for i := range registries {
		objs = append(objs, &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%02d", i)},
			Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: fmt.Sprintf("r%02d", i), Branch: "main"}}})
	}
	for _, o := range objs {
		must(b, c.Create(ctx, o))
	}
	waitForf(b, 5*time.Minute, func() string { return "every registry Ready" }, func() bool {
		for _, o := range objs {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return false
			}
			var conds []metav1.Condition
			switch o := o.(type) {
			case *v1alpha1.Registry:
				conds = o.Status.Conditions
			case *v1alpha1.ClusterRegistry:
				conds = o.Status.Conditions
			}
			if !apimeta.IsStatusConditionTrue(conds, v1alpha1.ConditionReady) {
				return false
			}
		}
		return true
	})
	time.Sleep(10 * time.Second) // let the indexing's garbage go
	indexed := rssMiB(b, r.cmd.Process.Pid)
	b.ReportMetric(indexed, "RSS-MiB")

	anon := r.url + "/v1/resolve?ref=github.com/acme/shared/t042:v1.0"
	authd := r.url + "/v1/resolve?ref=github.com/acme/r07/t042:v1.0&namespace=" + ns
	auth := "Authorization: Bearer " + token
	pid := r.cmd.Process.Pid
	// rps runs wrk on url and returns its requests per second and
	// registryd's CPU time per request meanwhile (from /proc): the cost
	// to registryd, which wrk's own work on the same cores does not skew.
	// With a profile name (and TENANCY_PROFILES), it keeps registryd's CPU
	// profile of the run.
	duration := envOr("DURATION", "10s")
	rps := func(profile, url string, header ...string) (float64, float64) {
		args := []string{"-t2", "-c32", "-d" + duration}
		for _, h := range header {
			args = append(args, "-H", h)
		}
		var saved chan struct{}
		if profile != "" && pprofAddr != "" {
			saved = make(chan struct{})
			go func(name string) {
				defer close(saved)
				d, _ := time.ParseDuration(duration)
				// Not Fatal: this is not the benchmark's goroutine.
				if err := saveProfile("http://"+pprofAddr+fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(d.Seconds())-2)), filepath.Join(profiles, "cpu-"+name+".pb.gz")); err != nil {
					b.Errorf("CPU profile %s: %v", name, err)
				}
			}(profile)
		}
		cpu0 := cpuSeconds(b, pid)
		out, err := exec.Command("wrk", append(args, url)...).CombinedOutput()
		cpu := cpuSeconds(b, pid) - cpu0
		if saved != nil {
			<-saved
		}
		if err != nil {
			b.Fatalf("wrk: %v\n%s", err, out)
		}
		if !bytes.Contains(out, []byte("Requests/sec")) || bytes.Contains(out, []byte("Non-2xx")) {
			b.Fatalf("wrk %s: %s", url, out)
		}
		var perSec, total float64
		for _, line := range strings.Split(string(out), "\n") {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "Requests/sec:"); ok {
				perSec, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
			if f := strings.Fields(line); len(f) > 2 && f[1] == "requests" {
				total, _ = strconv.ParseFloat(f[0], 64)
			}
		}
		return perSec, cpu / total * 1e6
	}
	// Warm both (the token's reviews, the answers), then pairs in turns,
	// each pair's order swapped, so that drift on the machine hits both
	// alike; each pair gives a ratio, and the median of them is reported.
	rps("", anon)
	rps("", authd, auth)
	pairs := 5
	if v, err := strconv.Atoi(os.Getenv("PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	// Beside each pair, the anonymous resolve carrying a header as long
	// as the token's, which registryd does not read: what carrying the
	// kilobyte over HTTP costs (net/http reads, checks and copies every
	// header), apart from what authorizing it costs.
	padded := "X-Padding: " + strings.Repeat("x", len(token)+len("Bearer "))
	var cpuX, padX, rateX, anonCPU, authCPU, padCPU []float64
	for i := range pairs {
		var a, ac, t, tc float64
		// The last pair's profiles are kept.
		anonProfile, authProfile := "", ""
		if i == pairs-1 {
			anonProfile, authProfile = "anonymous", "authorized"
		}
		if i%2 == 0 {
			a, ac = rps(anonProfile, anon)
			t, tc = rps(authProfile, authd, auth)
		} else {
			t, tc = rps(authProfile, authd, auth)
			a, ac = rps(anonProfile, anon)
		}
		_, pc := rps("", anon, padded)
		cpuX, padX, rateX = append(cpuX, tc/ac), append(padX, tc/pc), append(rateX, a/t)
		anonCPU, authCPU, padCPU = append(anonCPU, ac), append(authCPU, tc), append(padCPU, pc)
		b.Logf("pair %d: anonymous %.0f req/s, %.1f µs of CPU; authorized %.0f req/s, %.1f µs; anonymous with a header of the token's length %.1f µs", i+1, a, ac, t, tc, pc)
	}
	b.ReportMetric(median(cpuX), "authorized-cpu-x")
	b.ReportMetric(median(padX), "authorized-vs-padded-cpu-x")
	b.ReportMetric(median(rateX), "authorized-throughput-x")
	b.Logf("registryd's CPU per request, medians of %d pairs: anonymous %.1f µs, authorized %.1f µs, ratio %.3fx (pairs: %.3f; target 1.1x); anonymous with a header of the token's length %.1f µs, authorized against it %.3fx (pairs: %.3f); throughput ratio under wrk on the same cores %.3fx; RSS with %d registries of 1,000 versions: %.0f MiB after indexing, %.0f MiB after the load (target 200)",
		pairs, median(anonCPU), median(authCPU), median(cpuX), cpuX, median(padCPU), median(padX), padX, median(rateX), registries, indexed, rssMiB(b, pid))
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// cpuSeconds reads the user and system CPU time of a process from /proc.
func cpuSeconds(t testing.TB, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(t, err)
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th fields, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

// rssMiB reads a process's resident set from /proc.
func rssMiB(t testing.TB, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			must(t, err)
			return kb / 1024
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// rssParts reads a process's anonymous and file-backed resident memory
// from /proc, in MiB.
func rssParts(t testing.TB, pid int) (anon, file float64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		for name, dst := range map[string]*float64{"RssAnon:": &anon, "RssFile:": &file} {
			if v, ok := strings.CutPrefix(line, name); ok {
				kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				must(t, err)
				*dst = kb / 1024
			}
		}
	}
	return anon, file
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// BenchmarkTenancyMemory measures what a Registry's memory costs and
// whether it returns (make bench-tenancy): one registryd under its
// template's rights against the test apiserver, six Registries whose
// trees list 99,000 entries each (under --max-tree-entries 100000; two
// in each of three namespaces), registryd's RSS read from
// /proc before, once all six are Ready, and after all six are deleted
// (target: within 20% of where it started).
func BenchmarkTenancyMemory(b *testing.B) {
	env, c := startCluster(b)
	ctx := context.Background()
	// A directory, not a fstest.MapFS, which walks 50,000 files in
	// quadratic time.
	src := b.TempDir()
	must(b, indextest.WriteFiles(src, bigTree(330, 150, 0)))
	repo := githubtest.NewRepo(b, src)
	const registries = 6
	repos := map[string]string{}
	for i := range registries {
		repos[fmt.Sprintf("acme/big%d", i)] = repo
	}
	gh := githubtest.New(repos)
	defer gh.Close()
	args := replicaArgs(b, registrydAccount(b, env.Kubeconfig, c, system), gh.URL,
		"--example-settle", "0", "--max-tree-entries", "100000", "--max-registry-bytes", "256MiB")
	// TENANCY_PROFILES=DIR keeps heap profiles of registryd, indexed and
	// after the deletes, in DIR (go tool pprof -sample_index=inuse_space).
	profiles, pprofAddr, args := profiling(b, args)
	r := startReplica(b, args...)
	r.token = env.AdminToken // /metrics is guarded
	pid := r.cmd.Process.Pid
	namespaces := []string{env.Namespace(b), env.Namespace(b), env.Namespace(b)}
	time.Sleep(10 * time.Second) // registryd settled: its informers listed, its workers started
	start := rssMiB(b, pid)
	startAnon, startFile := rssParts(b, pid)
	b.Logf("at start, MiB: %s", runtimeMemory(r))
	var objs []*v1alpha1.Registry
	for i := range registries {
		o := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[i%len(namespaces)], Name: fmt.Sprintf("big%d", i)},
			Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: fmt.Sprintf("big%d", i), Branch: "main"}}}
		must(b, c.Create(ctx, o))
		objs = append(objs, o)
	}
	peak := start
	waitForf(b, 10*time.Minute, func() string { return "every big registry Ready" }, func() bool {
		if m := rssMiB(b, pid); m > peak {
			peak = m
			if m > 400 {
				// The last collection's view at the peak so far.
				saveHeapProfile(b, pprofAddr, profiles, "peak", false)
			}
		}
		for _, o := range objs {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil || !apimeta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady) {
				return false
			}
		}
		return true
	})
	// The examples walked and their results stored, the indexing's
	// garbage collected; the peak may come in this time.
	for settled := time.Now().Add(10 * time.Second); time.Now().Before(settled); time.Sleep(250 * time.Millisecond) {
		peak = max(peak, rssMiB(b, pid))
	}
	indexed := rssMiB(b, pid)
	saveHeapProfile(b, pprofAddr, profiles, "indexed", true)
	// The live heap is about half the next collection's goal (GOGC=100).
	liveIndexed := r.metric("go_memstats_next_gc_bytes") / 2 / (1 << 20)
	for _, o := range objs {
		must(b, c.Delete(ctx, o))
	}
	// RSS returns as fast as registryd gives it back: wait until it is
	// within 20% of the start, for at most two and a half minutes.
	deleted := time.Now()
	var after float64
	for time.Since(deleted) < 150*time.Second {
		time.Sleep(5 * time.Second)
		if after = rssMiB(b, pid); after <= start*1.2 {
			break
		}
	}
	liveAfter := r.metric("go_memstats_next_gc_bytes") / 2 / (1 << 20)
	// What stays beside the heap: the runtime's own structures, sized by
	// the largest heap it had (spans are never given back), and the
	// program's pages read from its file.
	var runtimeMiB float64
	for _, m := range []string{"go_memstats_mspan_sys_bytes", "go_memstats_mcache_sys_bytes", "go_memstats_buck_hash_sys_bytes", "go_memstats_gc_sys_bytes", "go_memstats_other_sys_bytes"} {
		runtimeMiB += r.metric(m) / (1 << 20)
	}
	anon, file := rssParts(b, pid)
	saveHeapProfile(b, pprofAddr, profiles, "deleted", true)
	b.Logf("after the deletes, MiB: %s", runtimeMemory(r))
	b.Logf("after the deletes: RssAnon %.0f MiB, RssFile %.0f MiB (at start: %.0f and %.0f); heap in use %.0f MiB; the runtime's structures %.0f MiB",
		anon, file, startAnon, startFile, r.metric("go_memstats_heap_inuse_bytes")/(1<<20), runtimeMiB)
	b.ReportMetric(start, "RSS-start-MiB")
	b.ReportMetric(indexed, "RSS-indexed-MiB")
	b.ReportMetric(after, "RSS-deleted-MiB")
	b.ReportMetric(after/start, "deleted/start")
	b.Logf("registryd's RSS: %.0f MiB at start, %.0f MiB with %d registries of 99,000 entries indexed (peak %.0f; live heap about %.0f MiB), %.0f MiB %s after they were deleted (live heap about %.0f MiB): %.2fx of the start (target 1.2x)",
		start, indexed, registries, peak, liveIndexed, after, time.Since(deleted).Round(time.Second), liveAfter, after/start)
}

// bigTree returns the files of a registry of templates templates of
// versions versions each, every version of its template file and extra
// files more: templates*(1+versions*(2+extra)) tree entries, counting
// the directories as GitHub lists them. Each version's template differs
// (so does its directory's tree); the extra files are alike.
func bigTree(templates, versions, extra int) map[string]string {
	files := map[string]string{}
	for t := range templates {
		for v := range versions {
			dir := fmt.Sprintf("t%04d/v1.0.%d", t, v)
			files[fmt.Sprintf("%s/t%04d.jinja", dir, t)] = fmt.Sprintf("resources: []\n# t%04d v1.0.%d\n", t, v)
			for x := range extra {
				files[fmt.Sprintf("%s/doc%02d.txt", dir, x)] = "x\n"
			}
		}
	}
	return files
}

// runtimeMemory reads the Go runtime's memory figures from registryd's
// metrics, in MiB, on one line: a benchmark's log is cut after a few.
func runtimeMemory(r *replica) string {
	var parts []string
	for _, m := range []string{"heap_alloc", "heap_inuse", "stack_sys", "mspan_sys", "mcache_sys", "buck_hash_sys", "gc_sys", "other_sys"} {
		parts = append(parts, fmt.Sprintf("%s %.1f", m, r.metric("go_memstats_"+m+"_bytes")/(1<<20)))
	}
	return strings.Join(parts, ", ")
}

// saveHeapProfile keeps registryd's heap profile, after a collection if
// gc, as DIR/heap-NAME.pb.gz; nothing without an address.
func saveHeapProfile(tb testing.TB, addr, dir, name string, gc bool) {
	if addr == "" {
		return
	}
	u := "http://" + addr + "/debug/pprof/heap"
	if gc {
		u += "?gc=1"
	}
	must(tb, saveProfile(u, filepath.Join(dir, "heap-"+name+".pb.gz")))
}

// profiling returns the directory TENANCY_PROFILES names, "" for none,
// and when there is one an address for registryd's --pprof-addr, added
// to its args.
func profiling(tb testing.TB, args []string) (dir, addr string, withPprof []string) {
	dir = os.Getenv("TENANCY_PROFILES")
	if dir == "" {
		return "", "", args
	}
	addr = freeAddr(tb)
	return dir, addr, append(args, "--pprof-addr", addr)
}

// saveProfile keeps the profile at URL u in the file named file.
func saveProfile(u, file string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}
