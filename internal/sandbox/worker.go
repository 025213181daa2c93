package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/openshift"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/resolve"
)

// envWorker marks a process started as a worker; its value is the
// worker's configuration as JSON.
const envWorker = "DM_EXPAND_WORKER"

// IsWorker reports whether this process was started as an expansion
// worker. A binary that runs a Pool calls it first thing in main (and a
// test binary in TestMain) and then ServeWorker.
func IsWorker() bool { return os.Getenv(envWorker) != "" }

// workerConfig is what the parent tells a worker at start.
type workerConfig struct {
	MaxMemory      uint64 `json:"max_memory"`
	MaxResultBytes int    `json:"max_result_bytes"`
	// Expand holds the engine's limits; its functions and interfaces
	// do not travel.
	Expand expand.Options `json:"expand"`
	// Forward names the engines the parent attached: the worker forwards
	// their templates to it.
	Forward []string `json:"forward,omitempty"`
	// ForwardCharts: the parent downloads charts (Expand.Charts).
	ForwardCharts bool `json:"forward_charts,omitempty"`
}

// A worker that reaches its CPU-time limit exits with exitCPU after
// writing cpuLimitMessage.
const (
	exitCPU         = 3
	cpuLimitMessage = "expand worker: CPU time limit (RLIMIT_CPU) reached"
)

// maxCachedResolutions bounds the resolutions a worker (and the parent,
// for it) keeps between jobs.
const maxCachedResolutions = 10000

// maxJobBytes bounds a job frame: the request body limit and then some.
const maxJobBytes = 64 << 20

// ServeWorker runs this process as a worker: it applies the kernel limits,
// then serves jobs on stdin/stdout until stdin closes, and exits. It does
// not return. engines are the attached languages' engines the worker
// renders (expand.Options.Engines): a program passes the ones it attaches
// in-process, since a worker re-executes the same binary and engines do
// not travel in the worker's JSON configuration.
func ServeWorker(engines ...engine.Engine) {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(os.Getenv(envWorker)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "expand worker: bad configuration: %v\n", err)
		os.Exit(2)
	}
	watchCPU()
	// The slot is mapped before the limits: the address-space limit
	// counts from what is mapped at that point.
	sl, err := openSlot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "expand worker: %v\n", err)
		os.Exit(2)
	}
	h := applyLimits(cfg.MaxMemory)
	h.PID = os.Getpid()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Expand.Engines = engines
	w := newWorker(cfg, os.Stdin, os.Stdout, sl, log)
	if err := w.send(kindHello, h); err != nil {
		os.Exit(1)
	}
	if err := w.serve(); err != nil {
		fmt.Fprintf(os.Stderr, "expand worker: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// worker is the worker side: one expander, jobs one at a time.
type worker struct {
	cfg workerConfig
	in  io.Reader
	mu  sync.Mutex // guards out and the call/reply exchange
	out *bufio.Writer
	x   *expand.Expander
	// def is the current job's default registry.
	def resolve.Registry
	// resolved caches resolutions, by default registry and reference,
	// for the index generation gen: a warm worker asks nothing.
	resolved map[string]*resolve.Resolution
	gen      uint64
	scope    string
	// prefetched holds files sent with resolutions, by
	// index.Version.CacheKey, until the expander reads them.
	prefetched map[string]map[string][]byte
	// baseGoroutines is the count between jobs; more after a job means a
	// render was abandoned and may still run.
	baseGoroutines int
	// job counts the jobs, guarded by mu: a lookup made for one job is
	// refused once another runs (a render it abandoned may still call).
	job uint64
}

// newWorker returns a worker serving in and out; sl, if not nil, is where
// it records the invocation running.
func newWorker(cfg workerConfig, in io.Reader, out io.Writer, sl *slot, log *slog.Logger) *worker {
	w := &worker{cfg: cfg, in: bufio.NewReaderSize(in, 64<<10), out: bufio.NewWriterSize(out, 64<<10)}
	o := cfg.Expand
	o.Resolver = (*remoteResolver)(w)
	o.Logger = log
	if sl != nil {
		// Recorded at once, in memory the parent keeps: a worker that dies
		// of a template still names it.
		o.OnTemplate = sl.record
	}
	// An engine the worker's program attaches itself (registryd links
	// Helm's) renders here, under the worker's limits; only the others go
	// to the parent (dm's dm-helm proxy, which a worker cannot start).
	own := make(map[string]bool, len(o.Engines))
	for _, e := range o.Engines {
		own[e.Name()] = true
	}
	for _, name := range cfg.Forward {
		if !own[name] {
			o.Engines = append(o.Engines, &forwarded{w: w, name: name})
		}
	}
	if cfg.ForwardCharts {
		o.Charts = &forwardedCharts{w: w}
	}
	w.x = expand.New(o)
	return w
}

func (w *worker) send(kind byte, v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return writeFrame(w.out, kind, v)
}

func (w *worker) serve() error {
	w.baseGoroutines = runtime.NumGoroutine()
	for {
		kind, body, err := readFrame(w.in, maxJobBytes)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading a job: %w", err)
		}
		if kind != kindJob {
			return fmt.Errorf("frame %q where a job was expected", kind)
		}
		d, result := w.run(body)
		if err := w.finish(d, result); err != nil {
			return fmt.Errorf("answering: %w", err)
		}
	}
}

// finish sends a job's done frame.
func (w *worker) finish(d *done, result []byte) error {
	body, err := encodeDone(d, result)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return writeRaw(w.out, kindDone, body)
}

// run runs one job, and returns its end and its result as JSON.
func (w *worker) run(body []byte) (*done, []byte) {
	var j job
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&j); err != nil {
		return &done{Err: toWire(fmt.Errorf("decoding the job: %v: %w", err, derrors.InvalidArgument))}, nil
	}
	setCPULimit(w.cfg.Expand.TotalTimeout)
	w.mu.Lock()
	w.job++
	jobID := w.job
	w.mu.Unlock()
	defer func() {
		// Ended: what the job's renders ask from now on is refused.
		w.mu.Lock()
		w.job++
		w.mu.Unlock()
	}()
	if j.Expand != nil && j.Expand.Cluster != nil {
		// The cluster's capabilities came with the job; its lookups go
		// to the parent, which holds the credentials.
		j.Expand.Cluster.Lookup = &forwardedLookup{w: w, job: jobID}
	}
	var (
		out any
		err error
	)
	ctx := context.Background()
	if j.Gen != w.gen || j.Scope != w.scope || len(w.resolved) > maxCachedResolutions {
		w.resolved, w.gen, w.scope = map[string]*resolve.Resolution{}, j.Gen, j.Scope
	}
	// Files sent for a version whose bundle was cached already are not
	// read; they go with the job.
	defer clear(w.prefetched)
	switch {
	case j.Expand != nil:
		w.def = resolve.Registry{}
		if j.Default != "" {
			w.def, _ = resolve.ParseRegistry(j.Default)
		}
		out, err = w.expand(ctx, j.Expand)
	case j.Process != nil:
		out, err = openshift.ProcessRequest(j.Process)
	default:
		err = fmt.Errorf("empty job: %w", derrors.InvalidArgument)
	}
	var result []byte
	if err == nil {
		result, err = json.Marshal(out)
		if err == nil && len(result) > w.cfg.MaxResultBytes {
			n := len(result)
			result = nil
			err = &expand.LimitError{Field: "MaxResultBytes", Limit: formatBytes(uint64(w.cfg.MaxResultBytes)), What: fmt.Sprintf("the answer is %d bytes", n)}
		}
	}
	d := &done{Err: toWire(err)}
	d.Recycle = runtime.NumGoroutine() > w.baseGoroutines || w.cfg.MaxMemory > 0 && mappedBytes() > w.cfg.MaxMemory/3
	return d, result
}

func (w *worker) expand(ctx context.Context, req *expand.Request) (*expand.Result, error) {
	// JSON numbers decode as json.Number; the engine wants int64 and
	// float64, as from YAML.
	req.Properties, _ = value.Numbers(req.Properties).(map[string]any)
	return w.x.Expand(ctx, *req)
}

// mappedBytes is the memory the Go runtime has mapped, read without
// stopping the world. The runtime keeps its address space once it has
// grown, and the address-space limit counts it (with the collector's
// headroom, a live heap of half the limit can meet it): a worker that
// mapped more than a third of its limit is replaced, or the next,
// innocent job would meet the limit.
func mappedBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// remoteResolver is the worker's expand.Resolver: every resolution and
// file read is a call to the parent, which owns the index and the blobs.
type remoteResolver worker

var _ expand.Resolver = (*remoteResolver)(nil)

// call sends c and waits for the reply.
func (r *remoteResolver) call(c call) (*reply, error) { return r.callFor(0, c) }

// callFor is call for job (0: whichever runs): a call of a job that has
// ended is refused, not answered for the next.
func (r *remoteResolver) callFor(job uint64, c call) (*reply, error) {
	w := (*worker)(r)
	w.mu.Lock()
	defer w.mu.Unlock()
	if job != 0 && job != w.job {
		return nil, fmt.Errorf("%s call of a job that has ended", c.Op)
	}
	if err := writeFrame(w.out, kindCall, c); err != nil {
		return nil, fmt.Errorf("asking registryd: %w", err)
	}
	kind, body, err := readFrame(w.in, maxJobBytes)
	if err != nil {
		return nil, fmt.Errorf("reading registryd's reply: %w", err)
	}
	if kind != kindReply {
		return nil, fmt.Errorf("frame %q where a reply was expected", kind)
	}
	var rep reply
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, fmt.Errorf("decoding registryd's reply: %w", err)
	}
	if rep.Err != nil {
		return nil, rep.Err.err()
	}
	return &rep, nil
}

func (r *remoteResolver) ResolveIn(ctx context.Context, ref string, def resolve.Registry) (*resolve.Resolution, error) {
	c := call{Op: "resolve", Ref: ref}
	if !def.IsZero() {
		c.Registry = def.String()
	}
	key := c.Registry + "\x00" + ref
	if rs, ok := r.resolved[key]; ok {
		return rs, nil
	}
	rep, err := r.call(c)
	if err != nil {
		return nil, err
	}
	wr := rep.Resolution
	if wr == nil || wr.Version == nil {
		return nil, fmt.Errorf("resolving %q: empty reply: %w", ref, derrors.Unavailable)
	}
	canon, err := resolve.Parse(wr.Ref)
	if err != nil {
		return nil, fmt.Errorf("resolving %q: %w", ref, err)
	}
	rs := &resolve.Resolution{Ref: canon, Requested: wr.Requested, Note: wr.Note, Version: wr.Version}
	if rep.Files != nil {
		if r.prefetched == nil {
			r.prefetched = map[string]map[string][]byte{}
		}
		r.prefetched[wr.Version.CacheKey()] = rep.Files
	}
	if r.resolved != nil {
		r.resolved[key] = rs
	}
	return rs, nil
}

func (r *remoteResolver) ReadFile(ctx context.Context, rs *resolve.Resolution, name string) ([]byte, error) {
	if files, ok := r.prefetched[rs.Version.CacheKey()]; ok {
		if b, ok := files[name]; ok {
			delete(files, name)
			if len(files) == 0 {
				delete(r.prefetched, rs.Version.CacheKey())
			}
			return b, nil
		}
	}
	rep, err := r.call(call{Op: "read", Resolved: rs.Resolved(), Name: name})
	if err != nil {
		return nil, err
	}
	return rep.Data, nil
}

func (r *remoteResolver) DefaultRegistry() resolve.Registry { return r.def }

// formatBytes writes a byte count in the largest binary unit it fills.
func formatBytes(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ParseBytes parses a size such as 512MiB, 512Mi, 512M (binary units all),
// 1GiB or a plain number of bytes.
func ParseBytes(s string) (uint64, error) {
	num := strings.TrimRightFunc(s, unicode.IsLetter)
	unit := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(s[len(num):]), "B"), "I")
	n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 64)
	shift, ok := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[unit]
	if err != nil || !ok || n == 0 || n > 1<<(63-shift) {
		return 0, fmt.Errorf("size %q: want a positive number of bytes with an optional unit, such as 512MiB or 1GiB: %w", s, derrors.InvalidArgument)
	}
	return n << shift, nil
}
