// Command benchscale measures one registryd serving stack at 10,000,
// 100,000 and 1,000,000 template versions (`make bench-scale`): resident
// memory after indexing, index time, the persisted snapshot's size and
// GET /v1/resolve latency over HTTP. docs/scaling.md reports its figures.
//
// Each size runs in a process of its own (this program started again with
// -one), so that one size's memory does not count in the next. The
// registry is generated (genFS: the layout of indextest.Files, made on
// each read, so it takes no disk and no memory of its own) and served the
// way registryd serves a --registry-dir: api.OpenRegistry over
// fetch.Local, index.Registry.Refresh (which lists and hashes every file
// and builds the index), resolve.Resolver and server.New on a loopback
// port. The example tester (server.Run) and the expansion workers are not
// started: they are other processes or run after readiness, and their
// memory does not grow with the index.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/server"
)

const prefix = "github.com/scale/reg"

func main() {
	sizes := flag.String("sizes", "10000,100000,1000000", "template `versions` of each run, comma-separated")
	one := flag.Int("one", 0, "measure this many versions in this process (what each run does)")
	requests := flag.Int("requests", 2000, "resolve requests per size (bounded also by -duration)")
	duration := flag.Duration("duration", 30*time.Second, "longest resolve loop per size")
	versions := flag.Int("versions", 20, "versions per template")
	registries := flag.Int("registries", 1, "registries the versions are spread over (github.com/scale/reg0, reg1, …)")
	heap := flag.String("heap-profile", "", "write a heap profile after indexing to `file` (with -one)")
	flag.Parse()
	var err error
	if *one > 0 {
		err = measure(*one, *registries, *versions, *requests, *duration, *heap)
	} else {
		err = runAll(*sizes, *registries, *versions, *requests, *duration)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

// result is one size's measurement, as -one prints it.
type result struct {
	Registries    int     `json:"registries"`
	Versions      int     `json:"versions"`
	Templates     int     `json:"templates"`
	Files         int     `json:"files"`
	IndexSeconds  float64 `json:"index_seconds"`
	IndexCPU      float64 `json:"index_cpu_seconds"`
	BaseRSSMB     float64 `json:"base_rss_mb"`
	RSSMB         float64 `json:"rss_mb"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	HeapInuseMB   float64 `json:"heap_inuse_mb"`
	SnapshotMB    float64 `json:"snapshot_mb"`
	Requests      int     `json:"requests"`
	ResolveP50Ms  float64 `json:"resolve_p50_ms"`
	ResolveP99Ms  float64 `json:"resolve_p99_ms"`
	BytesPerVer   float64 `json:"rss_bytes_per_version"`
	TotalSeconds  float64 `json:"total_seconds"`
	ResolveErrors int     `json:"resolve_errors"`
}

// runAll measures each size in a process of its own and prints a table.
func runAll(sizes string, registries, versions, requests int, duration time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Println("| registries | versions | templates | files | index (CPU) | RSS after index (base) | peak RSS | heap in use | RSS/version | snapshot | resolve p50 | p99 | requests |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a positive number", s)
		}
		cmd := exec.Command(self, "-one", strconv.Itoa(n), "-registries", strconv.Itoa(registries), "-versions", strconv.Itoa(versions), "-requests", strconv.Itoa(requests), "-duration", duration.String())
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%d versions: %w", n, err)
		}
		var r result
		if err := json.Unmarshal(out, &r); err != nil {
			return fmt.Errorf("%d versions: %w: %s", n, err, out)
		}
		fmt.Printf("| %d | %d | %d | %d | %.1f s (%.1f s) | %.0f MB (%.0f MB) | %.0f MB | %.0f MB | %.0f B | %.1f MB | %.2f ms | %.2f ms | %d |\n",
			r.Registries, r.Versions, r.Templates, r.Files, r.IndexSeconds, r.IndexCPU, r.RSSMB, r.BaseRSSMB, r.PeakRSSMB, r.HeapInuseMB, r.BytesPerVer, r.SnapshotMB, r.ResolveP50Ms, r.ResolveP99Ms, r.Requests)
	}
	return nil
}

// measure indexes generated registries of n versions in all, serves them
// and prints a result as JSON.
func measure(n, registries, versions, requests int, duration time.Duration, heapFile string) error {
	start := time.Now()
	registries = max(1, registries)
	per := max(1, n/registries) // versions per registry
	collections := 4
	if per < collections*versions {
		collections = 1
	}
	versions = min(versions, per)
	templates := max(1, per/(collections*versions))
	g := &genFS{collections: collections, templates: templates, versions: versions}
	perReg := collections * templates * versions
	r := result{Registries: registries, Versions: registries * perReg, Templates: registries * collections * templates, Files: 3 * registries * perReg}
	runtime.GC()
	base := rss("VmRSS")

	cache, err := os.MkdirTemp("", "benchscale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	ctx := context.Background()
	regs := make([]*index.Registry, registries)
	name := func(i int) string {
		if registries == 1 {
			return prefix
		}
		return prefix + strconv.Itoa(i)
	}
	t0, cpu0 := time.Now(), cpuTime()
	for i := range regs {
		reg, err := api.OpenRegistry(api.RegistrySpec{Prefix: name(i), FS: g}, api.Setup{})
		if err != nil {
			return err
		}
		// Persist the snapshot in the registry's own directory, as
		// registryd's --cache-dir does.
		reg.CacheDir = filepath.Join(cache, "registries", strconv.Itoa(i))
		if err := reg.Refresh(ctx); err != nil {
			return fmt.Errorf("index %s: %w", name(i), err)
		}
		regs[i] = reg
	}
	r.IndexSeconds, r.IndexCPU = time.Since(t0).Seconds(), (cpuTime() - cpu0).Seconds()
	snaps, _ := filepath.Glob(filepath.Join(cache, "registries", "*", index.SnapshotFile))
	for _, s := range snaps {
		if st, err := os.Stat(s); err == nil {
			r.SnapshotMB += float64(st.Size()) / 1e6
		}
	}

	def, err := resolve.ParseRegistry(name(0))
	if err != nil {
		return err
	}
	handler := server.New(server.Options{Resolver: resolve.New(def, regs...)})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	baseURL := "http://" + l.Addr().String() + "/v1/resolve?ref="

	// Memory once the index is built and garbage is collected: what a
	// replica holds while it serves.
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.BaseRSSMB, r.RSSMB, r.PeakRSSMB, r.HeapInuseMB = base/1e6, rss("VmRSS")/1e6, rss("VmHWM")/1e6, float64(ms.HeapInuse)/1e6
	r.BytesPerVer = (rss("VmRSS") - base) / float64(r.Versions)
	if heapFile != "" {
		f, err := os.Create(heapFile)
		if err != nil {
			return err
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
		f.Close()
	}

	// Resolve latency: one client, requests one after another, random
	// templates and constraints of every kind (major, minor, exact).
	client := &http.Client{Timeout: 10 * time.Second}
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	var lat []time.Duration
	deadline := time.Now().Add(duration)
	for i := 0; i < requests && time.Now().Before(deadline); i++ {
		ref := fmt.Sprintf("t%d", rng.IntN(templates))
		if c := rng.IntN(collections); c > 0 {
			ref = fmt.Sprintf("col%d/%s", c, ref)
		}
		ref = name(rng.IntN(registries)) + "/" + ref
		v := versionName(rng.IntN(versions))
		switch i % 3 {
		case 0:
			ref += ":" + v[:strings.IndexByte(v, '.')]
		case 1:
			ref += ":" + v[:strings.LastIndexByte(v, '.')]
		default:
			ref += ":" + v
		}
		t := time.Now()
		resp, err := client.Get(baseURL + ref)
		if err != nil {
			return fmt.Errorf("resolve %s: %w", ref, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(t))
		if resp.StatusCode != http.StatusOK {
			r.ResolveErrors++
		}
	}
	if len(lat) == 0 {
		return errors.New("no resolve request ran")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	r.Requests, r.ResolveP50Ms, r.ResolveP99Ms = len(lat), pct(0.50), pct(0.99)
	if r.ResolveErrors > 0 {
		return fmt.Errorf("%d of %d resolves failed", r.ResolveErrors, len(lat))
	}
	r.TotalSeconds = time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// cpuTime is the process's user and system time so far: on a shared
// machine, wall time says as much about the neighbours as about the index.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss returns a field of /proc/self/status (VmRSS, VmHWM) in bytes.
func rss(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}
