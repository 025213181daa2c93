// Package sandbox runs expansions in worker processes, so that a hostile
// template cannot take the process that serves them down.
//
// A Pool keeps a few workers: the same binary re-executed in worker mode
// (IsWorker, ServeWorker), talking over its stdin and stdout. Each worker
// runs under the kernel's limits (an address-space limit, a CPU-time
// budget per job, Landlock with no file system and no network access where
// the kernel has it) and asks the parent for every reference resolution and
// file read: the parent owns the index, the blob cache and the resolver. A
// worker that exceeds a limit, dies or passes a deadline is killed and
// replaced; the job gets an error naming the limit and the template that
// was running, and every other job carries on. Workers are reused, so their
// compiled-template caches stay warm, and replaced after MaxJobs jobs or
// MaxBytes bytes of traffic.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Defaults of Options fields left zero.
const (
	DefaultMaxMemory      = 512 << 20
	DefaultMaxResultBytes = 32 << 20
	DefaultMaxJobs        = 1000
	DefaultMaxBytes       = 1 << 30
	// DefaultGrace is how long past a deadline the parent waits for the
	// worker's own error before it kills the worker.
	DefaultGrace = time.Second
	// DefaultMaxLookups bounds the lookups of one expansion: each is a
	// request to the apiserver.
	DefaultMaxLookups = 256
	// DefaultMaxLookupBytes bounds one lookup's answer (a list of every
	// Secret of a namespace can be large).
	DefaultMaxLookupBytes = 8 << 20
)

// Options configure a Pool. Zero fields take the defaults above.
type Options struct {
	// Resolver answers the workers' resolutions and file reads. Nil allows
	// configurations without registry references only.
	Resolver *resolve.Resolver
	// Expand holds the engine's limits and AllowURLs; its Resolver,
	// Logger and OnTemplate are the pool's own. Its Engines stay in this
	// process: workers forward their templates here.
	Expand expand.Options
	// Workers is the number of worker processes, and so of expansions
	// running at once; zero means 2.
	Workers int
	// MaxMemory is each worker's memory limit in bytes (address space
	// beyond what the Go runtime reserves at start).
	MaxMemory uint64
	// MaxResultBytes bounds one answer from a worker (the expansion as
	// JSON).
	MaxResultBytes int
	// MaxJobs and MaxBytes bound a worker's life: after that many jobs or
	// bytes of requests and answers it is replaced.
	MaxJobs  int
	MaxBytes int64
	// Grace is how long past a deadline the parent waits before it kills
	// the worker.
	Grace time.Duration
	// MaxLookups bounds the lookups (Helm's lookup, answered with the
	// request's Cluster) of one expansion, and MaxLookupBytes one
	// lookup's answer, as JSON.
	MaxLookups     int
	MaxLookupBytes int
	// Command starts a worker: the program and its arguments. Nil runs
	// this executable (os.Executable) without arguments; it must call
	// IsWorker and ServeWorker first thing in main.
	Command []string
	// Logger receives the workers' stderr and their lifecycle; nil
	// discards them.
	Logger *slog.Logger
	// OnExit, if set, is called when a worker is retired, with the
	// reason: one of the Exit constants.
	OnExit func(reason string)
}

// Reasons a worker is retired, for Options.OnExit.
const (
	ExitRecycled   = "recycled"    // its job or byte budget, a large heap or an abandoned render
	ExitMemory     = "memory"      // out of its memory limit
	ExitTimeout    = "timeout"     // past Timeout or TotalTimeout: killed
	ExitCPU        = "cpu"         // out of its CPU-time budget
	ExitAnswerSize = "answer_size" // an answer over MaxResultBytes
	ExitCanceled   = "canceled"    // the caller gave up
	ExitCrashed    = "crashed"     // died otherwise, or broke the protocol
)

func (o *Options) setDefaults() {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.MaxJobs <= 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.MaxLookups <= 0 {
		o.MaxLookups = DefaultMaxLookups
	}
	if o.MaxLookupBytes <= 0 {
		o.MaxLookupBytes = DefaultMaxLookupBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Expand.Timeout <= 0 {
		o.Expand.Timeout = expand.DefaultTimeout
	}
	if o.Expand.TotalTimeout <= 0 {
		o.Expand.TotalTimeout = expand.DefaultTotalTimeout
	}
}

// Pool runs expansions in worker processes. It is safe for concurrent use;
// each worker runs one job at a time.
type Pool struct {
	opts  Options
	cfg   []byte // the workers' configuration, JSON
	slots chan *proc
	// warnOnce logs the limits the kernel could not apply once.
	warnOnce sync.Once

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close
	live   map[*proc]bool
	// snaps are the registries' index snapshots when gen was last
	// counted up.
	snaps []*index.Snapshot
	gen   uint64
}

var _ api.Expander = (*Pool)(nil)

// New returns a pool; workers start on first use.
func New(opts Options) (*Pool, error) {
	opts.setDefaults()
	if opts.Command == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: finding this executable: %w", err)
		}
		opts.Command = []string{exe}
	}
	cfg, err := json.Marshal(workerConfig{MaxMemory: opts.MaxMemory, MaxResultBytes: opts.MaxResultBytes, Expand: opts.Expand, Forward: forwardNames(opts.Expand.Engines), ForwardCharts: opts.Expand.Charts != nil})
	if err != nil {
		return nil, err
	}
	p := &Pool{opts: opts, cfg: cfg, slots: make(chan *proc, opts.Workers), done: make(chan struct{}), live: map[*proc]bool{}}
	for range opts.Workers {
		p.slots <- nil
	}
	return p, nil
}

// Workers returns the number of worker processes: at most that many jobs
// run at once, the others wait for one.
func (p *Pool) Workers() int { return p.opts.Workers }

// Warm starts every worker now, so the first requests do not wait for
// process start.
func (p *Pool) Warm(ctx context.Context) error {
	var got []*proc
	defer func() {
		for _, w := range got {
			p.slots <- w
		}
	}()
	for range p.opts.Workers {
		select {
		case w := <-p.slots:
			got = append(got, w)
			if w == nil {
				nw, err := p.start()
				if err != nil {
					return err
				}
				got[len(got)-1] = nw
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close stops every worker. Jobs running are killed.
func (p *Pool) Close() error {
	p.mu.Lock()
	if !p.closed {
		close(p.done)
	}
	p.closed = true
	live := p.live
	p.live = map[*proc]bool{}
	p.mu.Unlock()
	for w := range live {
		w.kill()
	}
	return nil
}

// Expand expands a configuration or a reference in a worker.
func (p *Pool) Expand(ctx context.Context, req *api.ExpandRequest) (*api.ExpandResult, error) {
	raw, err := p.ExpandJSON(ctx, req)
	if err != nil {
		return nil, err
	}
	return api.DecodeExpandResult(raw)
}

// ExpandJSON is Expand with the answer as the worker wrote it, JSON of an
// api.ExpandResult: registryd passes it on without decoding it, so an
// answer costs its size in memory and no more.
func (p *Pool) ExpandJSON(ctx context.Context, req *api.ExpandRequest) (json.RawMessage, error) {
	r, err := req.EngineRequest()
	if err != nil {
		return nil, err
	}
	j := &job{Expand: &r}
	if p.opts.Resolver != nil && !p.opts.Resolver.Default.IsZero() {
		j.Default = p.opts.Resolver.Default.String()
	}
	if !p.opts.Expand.Registry.IsZero() {
		j.Default = p.opts.Expand.Registry.String()
	}
	// A local registry changed since it was listed: list it again and
	// run the job once more, as in-process (api.Relisted).
	return api.Relisted(ctx, p.opts.Resolver, func() (json.RawMessage, error) {
		j.Gen, j.Scope = p.generation(), resolve.ScopeKey(ctx)
		return p.run(ctx, j)
	})
}

// ProcessTemplate processes an OpenShift Template (JSON or YAML, values set
// in its parameters) in a worker and returns the processed Template as
// JSON, as POST /processedTemplates answers.
func (p *Pool) ProcessTemplate(ctx context.Context, body []byte) (json.RawMessage, error) {
	// The generation keeps the worker's resolutions: a Template job needs
	// none, and the next expansion should find them.
	return p.run(ctx, &job{Process: body, Gen: p.generation(), Scope: resolve.ScopeKey(ctx)})
}

// run runs a job on a worker, starting or replacing workers as needed.
func (p *Pool) run(ctx context.Context, j *job) (json.RawMessage, error) {
	var w *proc
	select {
	case w = <-p.slots:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for an expansion worker: %w", ctx.Err())
	}
	keep := false
	defer func() {
		if !keep && w != nil {
			p.retire(w)
			w = nil
		}
		p.slots <- w
	}()
	if w == nil {
		var err error
		if w, err = p.start(); err != nil {
			return nil, err
		}
	}
	raw, keepWorker, err := w.do(ctx, p, j)
	keep = keepWorker && w.jobs < p.opts.MaxJobs && w.bytes < p.opts.MaxBytes
	return raw, err
}

// generation counts changes of the registries' indexes: workers keep
// resolutions only within one generation.
func (p *Pool) generation() uint64 {
	if p.opts.Resolver == nil {
		return 0
	}
	regs := p.opts.Resolver.Registries()
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := len(regs) != len(p.snaps)
	if changed {
		p.snaps = make([]*index.Snapshot, len(regs))
	}
	for i, g := range regs {
		if s := g.Snapshot(); s != p.snaps[i] {
			p.snaps[i], changed = s, true
		}
	}
	if changed {
		p.gen++
	}
	return p.gen
}

// retire kills a worker and forgets it.
func (p *Pool) retire(w *proc) {
	w.kill()
	if p.opts.OnExit != nil {
		why := w.why
		if why == "" {
			why = ExitRecycled
		}
		p.opts.OnExit(why)
	}
	p.mu.Lock()
	delete(p.live, w)
	p.mu.Unlock()
}

// answer serves one call of a worker.
func (p *Pool) answer(ctx context.Context, st *jobState, c *call) *reply {
	if c.Op == "render" && c.Render != nil {
		return p.render(ctx, c.Render)
	}
	if c.Op == "chart" && c.Chart != nil {
		return p.fetchChart(ctx, c.Chart)
	}
	if c.Op == "lookup" && c.Lookup != nil {
		return p.lookup(ctx, st, c.Lookup)
	}
	r := p.opts.Resolver
	if r == nil {
		return &reply{Err: toWire(fmt.Errorf("no registry is configured: %w", derrors.NotFound))}
	}
	switch c.Op {
	case "resolve":
		def := resolve.Registry{}
		if c.Registry != "" {
			var err error
			if def, err = resolve.ParseRegistry(c.Registry); err != nil {
				return &reply{Err: toWire(err)}
			}
		}
		rs, err := r.ResolveIn(ctx, c.Ref, def)
		if err != nil {
			return &reply{Err: toWire(err)}
		}
		st.resolved[rs.Resolved()] = rs
		rep := &reply{Resolution: &wireResolution{Ref: rs.Ref.String(), Requested: rs.Requested, Note: rs.Note, Version: stripFindings(rs.Version)}}
		if !st.sent[rs.Version.CacheKey()] {
			rep.Files = prefetch(ctx, rs)
			if len(st.sent) >= maxCachedResolutions {
				clear(st.sent)
			}
			st.sent[rs.Version.CacheKey()] = true
		}
		return rep
	case "read":
		rs, ok := st.resolved[c.Resolved]
		if !ok {
			return &reply{Err: toWire(fmt.Errorf("read of %s, which this expansion did not resolve: %w", c.Resolved, derrors.InvalidArgument))}
		}
		b, err := rs.ReadFile(ctx, c.Name)
		if err != nil {
			return &reply{Err: toWire(err)}
		}
		return &reply{Data: b}
	}
	return &reply{Err: toWire(fmt.Errorf("unknown call %q: %w", c.Op, derrors.InvalidArgument))}
}

// maxPrefetch bounds the files sent along with a resolution.
const maxPrefetch = 4 << 20

// prefetch reads a version's files to send with its resolution, or none if
// they are large or a read fails (the worker then asks file by file and
// gets the error).
func prefetch(ctx context.Context, rs *resolve.Resolution) map[string][]byte {
	total := int64(0)
	for _, f := range rs.Version.Files {
		total += f.Size
	}
	if total > maxPrefetch {
		return nil
	}
	files := make(map[string][]byte, len(rs.Version.Files))
	for _, f := range rs.Version.Files {
		b, err := rs.ReadFile(ctx, f.Path)
		if err != nil {
			return nil
		}
		files[f.Path] = b
	}
	return files
}

// jobState is what the parent remembers during one job.
type jobState struct {
	// resolved holds the worker's resolutions in this index generation
	// by canonical reference; a worker reads files only of versions it
	// resolved.
	resolved map[string]*resolve.Resolution
	// sent holds the digests of the versions whose files the worker was
	// sent.
	sent    map[string]bool
	started time.Time
	// slot is the worker's; base its sequence number when the job began.
	slot *slot
	base uint64
	// lookup answers the job's lookups (job.lookup), nil when it renders
	// offline; lookups counts them.
	lookup  engine.Lookup
	lookups int
}

// errWorker is wrapped by errors about the worker rather than the
// template (it could not start, or broke the protocol).
var errWorker = errors.New("expansion worker failed")
