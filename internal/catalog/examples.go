package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Example test statuses, as in api.ExampleStatus.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusPending = "pending"
)

// ExamplesOptions configure an Examples tester.
type ExamplesOptions struct {
	// Resolver holds the registries whose examples are tested. Required.
	Resolver *resolve.Resolver
	// Expander expands the examples (the in-process service, or a sandbox
	// of worker processes). Required.
	Expander api.Expander
	// Workers bounds the expansions running at once; zero means
	// GOMAXPROCS.
	Workers int
	// Timeout bounds one example's expansion; zero means 30 seconds.
	Timeout time.Duration
	// Poll is how often snapshots are checked for changes; zero means one
	// second. Kick checks at once.
	Poll time.Duration
	// RemoteSettle is how long the index of a GitHub registry must stay
	// unchanged before its new versions are tested; zero means one
	// minute, negative none. Testing reads every file of every new
	// version from GitHub (once: blobs are cached by content), so it waits
	// for bursts of pushes to settle and leaves the rate budget to serving
	// first. Local registries are tested at once.
	RemoteSettle time.Duration
	// Retry is how long a version waits to be tested again when its
	// files could not be read (rate limits, outages); zero means one
	// minute.
	Retry  time.Duration
	Logger *slog.Logger
	// Active, if set, reports whether this process tests examples now:
	// while it reports false, versions stay pending and their results come
	// from Import (registryd replicas test each version once, in the
	// replica that holds their Lease). Resume wakes the workers when it
	// turns true.
	Active func() bool
	// OnResult, if set, is called with every result this process tested,
	// so that it can be shared.
	OnResult func(registry, digest string, r ExampleResult)
}

// Examples expands every version's example.yaml in the background, after
// each index, and remembers the results by registry and content digest:
// a version whose files did not change is never tested again, and a
// refresh that changes one version tests that one. It also keeps each
// version's title (from its schema), which listings show without reading
// files.
type Examples struct {
	opts ExamplesOptions
	log  *slog.Logger
	wake chan struct{}
	work chan struct{}
	// gen counts changes of the results, so pages built from them can be
	// cached until the next change.
	gen atomic.Uint64
	// tested counts the versions this process tested.
	tested atomic.Int64

	mu      sync.Mutex
	results map[exampleKey]*ExampleResult
	queue   []exampleJob
	seen    map[string]*index.Snapshot // registry key -> snapshot last walked
	settle  map[string]settling        // remote registry key -> its newest snapshot, since when
	recent  []Change
	usedBy  map[string][]Use // template ref without version -> users
	dirty   bool             // usedBy needs rebuilding
	// imported are results from Import of versions no snapshot walked
	// yet.
	imported map[exampleKey]*ExampleResult
	// resultsPeak and importedPeak are the most entries the maps held
	// since they were last made (compact).
	resultsPeak, importedPeak int
}

// exampleKey keys a result: the registry's key (index.Registry.Key:
// registries of two namespaces may share a name) and the version's digest.
type exampleKey struct{ registry, digest string }

type settling struct {
	snap  *index.Snapshot
	since time.Time
}

type exampleJob struct {
	key     exampleKey
	g       *index.Registry
	version *index.Version
}

// ExampleResult is what is known of one version: its title and the test
// of its example.
type ExampleResult struct {
	// Ref is the version's canonical reference.
	Ref string
	// Title comes from the schema's info (or an OpenShift template's
	// metadata); empty when there is none.
	Title string
	// Status is StatusOK, StatusError or StatusPending; empty when the
	// version has no example.
	Status string
	// Error says why the example did not expand, with its layout path.
	Error string
	// Uses are the canonical references of the registry templates the
	// example expanded through, the template itself excluded.
	Uses []string
	// GCP says the example made Google Cloud resources (Deployment
	// Manager types), which dm deploys as Config Connector objects under
	// a --project.
	GCP    bool
	Tested time.Time
	// held: pending, but not queued until its GitHub registry's index
	// settles.
	held bool
}

// Use is one version whose example expands through a template.
type Use struct {
	// User is the canonical reference of the version whose example it is;
	// Used the version of the template it expanded through.
	User, Used string
	// Registry is the key of the user's registry (index.Registry.Key).
	Registry string
	// namespace is the user's registry's: its example resolved there.
	namespace string
}

// Change is a version that appeared in an index.
type Change struct {
	// Registry is the key of the version's registry.
	Registry string
	Ref      string
	// Seen is when this process first listed it; Committed, when known,
	// when its directory last changed in its registry's history (the
	// commit's time; a local directory's newest file otherwise).
	Seen, Committed time.Time
	// Initial: listed by its registry's first index, where Seen says
	// nothing of when it changed.
	Initial    bool
	Prerelease bool
	dir        string
}

// When is the time the change is listed by: its commit's, else when it
// was seen (unknown, zero, for a version of a first index).
func (c Change) When() time.Time {
	if !c.Committed.IsZero() || c.Initial {
		return c.Committed
	}
	return c.Seen
}

// dateJob is what a walk found new in one registry, to be dated (Dater)
// before it is listed among the recent changes.
type dateJob struct {
	g       *index.Registry
	tree    *fetch.Tree
	changes []Change
	// remote: the registry's source spends a request per directory
	// dated.
	remote bool
}

// maxRecent bounds the list of recent changes.
const maxRecent = 20

// NewExamples returns a tester; Run starts it.
func NewExamples(opts ExamplesOptions) *Examples {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.RemoteSettle == 0 {
		opts.RemoteSettle = time.Minute
	}
	if opts.Retry <= 0 {
		opts.Retry = time.Minute
	}
	e := &Examples{
		opts:    opts,
		log:     opts.Logger,
		wake:    make(chan struct{}, 1),
		work:    make(chan struct{}, 1),
		results: map[exampleKey]*ExampleResult{},
		seen:    map[string]*index.Snapshot{},
		settle:  map[string]settling{},

		imported: map[exampleKey]*ExampleResult{},
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	return e
}

// Kick asks Run to look for new snapshots now.
func (e *Examples) Kick() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run tests examples until ctx ends: it watches the registries' snapshots
// and feeds the versions not tested yet to a bounded pool of workers. It
// never delays serving: results are "pending" until done.
func (e *Examples) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range e.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.worker(ctx)
		}()
	}
	t := time.NewTicker(e.opts.Poll)
	defer t.Stop()
	for {
		if jobs := e.walk(); len(jobs) > 0 {
			e.addRecent(ctx, jobs)
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		case <-e.wake:
		}
	}
}

// walk queues the versions of changed snapshots that have no result yet
// and forgets the results of versions no snapshot holds any more. It
// returns the new versions to list as recent changes once dated.
func (e *Examples) walk() (jobs []dateJob) {
	e.mu.Lock()
	defer e.mu.Unlock()
	// One set of registries for the whole walk: what it keeps and what it
	// forgets agree, whatever is added or removed meanwhile (the next walk
	// sees that).
	regs := e.opts.Resolver.Registries()
	served := make(map[string]bool, len(regs))
	for _, g := range regs {
		served[g.Key()] = true
	}
	changed := false
	// A registry no longer served is a change too: what was kept of it
	// goes below.
	for key := range e.seen {
		if !served[key] {
			changed = true
		}
	}
	for _, g := range regs {
		// One key string per registry, not one per version: every
		// result's key shares it.
		gk := g.Key()
		snap := g.Snapshot()
		if snap == nil || e.seen[gk] == snap {
			continue
		}
		ready := true
		if g.Kind == api.KindGitHub && e.opts.RemoteSettle > 0 {
			st := e.settle[gk]
			switch {
			case st.snap != snap:
				// A new snapshot: its new versions are pending from now
				// on, tested once it has settled.
				e.settle[gk] = settling{snap, time.Now()}
				ready = false
			case time.Since(st.since) < e.opts.RemoteSettle:
				continue
			}
		}
		first := e.seen[gk] == nil
		if ready {
			e.seen[gk] = snap
		}
		changed = true
		now := time.Now()
		job := dateJob{g: g, tree: snap.Tree, remote: g.Kind == api.KindGitHub}
		for _, t := range snap.AllTemplates() {
			// On a registry's first index every version is new: list each
			// template's highest stable version only (its highest
			// pre-release when it has no other).
			listed := len(t.Versions) - 1
			for i := listed; i >= 0; i-- {
				if !t.Versions[i].Prerelease() {
					listed = i
					break
				}
			}
			for i, v := range t.Versions {
				key := exampleKey{gk, v.Digest}
				r, ok := e.results[key]
				if ok && !r.held {
					continue
				}
				if imp, found := e.imported[key]; !ok && found {
					// Tested by another replica before this one saw it.
					imp.Ref = v.Ref
					e.results[key] = imp
					delete(e.imported, key)
					continue
				}
				if !ok {
					r = &ExampleResult{Ref: v.Ref}
					if v.Example != "" && v.Problem == "" {
						r.Status = StatusPending
					}
					e.results[key] = r
				}
				r.held = !ready
				if !ready {
					continue
				}
				e.queue = append(e.queue, exampleJob{key: key, g: g, version: v})
				if !first || i == listed {
					job.changes = append(job.changes, Change{Registry: gk, Ref: v.Ref, Seen: now, Initial: first, Prerelease: v.Prerelease(), dir: v.Path})
				}
			}
		}
		if len(job.changes) > 0 {
			jobs = append(jobs, job)
		}
	}
	if !changed {
		return jobs
	}
	live := map[exampleKey]bool{}
	for _, g := range regs {
		if snap := g.Snapshot(); snap != nil {
			gk := g.Key()
			for _, t := range snap.AllTemplates() {
				for _, v := range t.Versions {
					k := exampleKey{gk, v.Digest}
					live[k] = true
				}
			}
		}
	}
	// A registry no longer served leaves nothing behind.
	for key := range e.seen {
		if !served[key] {
			delete(e.seen, key)
		}
	}
	for key := range e.settle {
		if !served[key] {
			delete(e.settle, key)
		}
	}
	e.recent = slices.DeleteFunc(e.recent, func(c Change) bool { return !served[c.Registry] })
	e.requeue()
	for k := range e.results {
		if !live[k] {
			delete(e.results, k)
		}
	}
	e.compact()

	e.dirty = true
	e.gen.Add(1)
	select {
	case e.work <- struct{}{}:
	default:
	}
	return jobs
}

// addRecent dates what walk found new (Dater: local directories always;
// a GitHub registry, a request per directory, on its first index only,
// where the time it was seen says nothing) and lists it among the recent
// changes, newest first.
func (e *Examples) addRecent(ctx context.Context, jobs []dateJob) {
	for _, j := range jobs {
		if !j.remote || j.changes[0].Initial {
			dirs := make([]string, len(j.changes))
			for i, c := range j.changes {
				dirs[i] = c.dir
			}
			dates, err := fetch.DatesOf(ctx, j.g.Source, j.tree, dirs)
			if err != nil {
				e.log.Warn("dating new versions", "registry", j.g.Name, "err", err)
			}
			for i := range j.changes {
				j.changes[i].Committed = dates[j.changes[i].dir]
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, j := range jobs {
		if _, ok := e.opts.Resolver.ByKey(j.g.Key()); !ok {
			continue
		}
		e.recent = append(e.recent, j.changes...)
	}
	// Newest first; what cannot be dated last, in the order seen.
	slices.SortStableFunc(e.recent, func(a, b Change) int { return b.When().Compare(a.When()) })
	if len(e.recent) > maxRecent {
		e.recent = slices.Clone(e.recent[:maxRecent])
	}
	e.gen.Add(1)
}

func (e *Examples) next() (exampleJob, bool) {
	if e.opts.Active != nil && !e.opts.Active() {
		return exampleJob{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var j exampleJob
	for {
		if len(e.queue) == 0 {
			return exampleJob{}, false
		}
		j = e.queue[0]
		e.queue[0] = exampleJob{}
		e.queue = e.queue[1:]
		if len(e.queue) == 0 {
			// The emptied array would stay as long as the slice does.
			e.queue = nil
		}
		// A result imported while the job waited is not tested again,
		// nor a version no snapshot holds any more.
		if r, ok := e.results[j.key]; ok && r.Tested.IsZero() {
			break
		}
	}
	if len(e.queue) > 0 {
		// Let another worker go on.
		select {
		case e.work <- struct{}{}:
		default:
		}
	}
	return j, true
}

func (e *Examples) worker(ctx context.Context) {
	for {
		j, ok := e.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-e.work:
				continue
			}
		}
		r := e.test(ctx, j)
		if ctx.Err() != nil {
			return
		}
		e.tested.Add(1)
		if r == nil {
			// The files could not be read now: try again later.
			time.AfterFunc(e.opts.Retry, func() {
				e.mu.Lock()
				if _, live := e.results[j.key]; live {
					e.queue = append(e.queue, j)
					e.requeue()
				}
				e.mu.Unlock()
				select {
				case e.work <- struct{}{}:
				default:
				}
			})
			continue
		}
		e.mu.Lock()
		if _, live := e.results[j.key]; live {
			e.results[j.key] = r
			e.dirty = true
			e.gen.Add(1)
		}
		e.mu.Unlock()
		if e.opts.OnResult != nil {
			e.opts.OnResult(j.key.registry, j.key.digest, *r)
		}
	}
}

// Resume wakes the workers, for when Active turns true.
func (e *Examples) Resume() {
	select {
	case e.work <- struct{}{}:
	default:
	}
}

// Import installs a result another process tested of the version with
// digest in registry, unless this process has tested it: it is then not
// tested here.
func (e *Examples) Import(registry, digest string, r ExampleResult) {
	if r.Tested.IsZero() {
		return
	}
	key := exampleKey{registry, digest}
	e.mu.Lock()
	defer e.mu.Unlock()
	cur, ok := e.results[key]
	switch {
	case !ok:
		if len(e.imported) < maxImported {
			e.imported[key] = &r
		}
		return
	case !cur.Tested.IsZero():
		return
	}
	r.Ref, r.held = cur.Ref, false
	e.results[key] = &r
	e.dirty = true
	e.gen.Add(1)
}

// Holds reports whether the tester has a tested result of the version
// with digest in registry, its own or imported: Import would keep it.
func (e *Examples) Holds(registry, digest string) bool {
	key := exampleKey{registry, digest}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.results[key]; ok {
		return !r.Tested.IsZero()
	}
	_, ok := e.imported[key]
	return ok
}

// Forget drops every result kept of the registry of key, served no more:
// replicas call it when the stored results of a deleted registry go.
func (e *Examples) Forget(registry string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	of := func(k exampleKey, _ *ExampleResult) bool { return k.registry == registry }
	maps.DeleteFunc(e.imported, of)
	n := len(e.results)
	maps.DeleteFunc(e.results, of)
	e.dirty = e.dirty || len(e.results) != n
	e.compact()
}

// compact copies the result maps anew once they hold less than half of
// what they held at most: Go's maps keep the room of deleted entries, and
// a deleted registry's results would keep theirs for good.
func (e *Examples) compact() {
	e.results = shrink(e.results, &e.resultsPeak)
	e.imported = shrink(e.imported, &e.importedPeak)
}

// shrink returns m, or a copy sized for its entries once it holds fewer
// than half the most it held since it was made (*peak, kept up to date):
// a Go map keeps the room of its deleted entries.
func shrink[K comparable, V any](m map[K]V, peak *int) map[K]V {
	n := len(m)
	if n < *peak/2 {
		*peak = n
		return copyMap(m)
	}
	*peak = max(*peak, n)
	return m
}

// copyMap returns a map of m's entries sized for them (maps.Clone keeps
// m's room).
func copyMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Drop forgets g, a registry no longer served: its queued tests go (a job
// refers to the registry and its snapshot) and, unless another registry
// of its key serves in its place, its results, as the next walk would.
func (e *Examples) Drop(g *index.Registry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requeue()
	key := g.Key()
	if _, ok := e.opts.Resolver.ByKey(key); ok {
		return
	}
	delete(e.seen, key)
	delete(e.settle, key)
	maps.DeleteFunc(e.results, func(k exampleKey, _ *ExampleResult) bool { return k.registry == key })
	e.compact()
	e.recent = slices.DeleteFunc(e.recent, func(c Change) bool { return c.Registry == key })
	e.dirty = true
	e.gen.Add(1)
}

// requeue drops the queued jobs of registries no longer served, which
// refer to the registry and its snapshot, and moves those of a registry
// opened anew under the same key (a rotated token) to the new one, which
// reads the same content. e.mu is held.
func (e *Examples) requeue() {
	e.queue = slices.DeleteFunc(e.queue, func(j exampleJob) bool {
		_, ok := e.opts.Resolver.ByKey(j.key.registry)
		return !ok
	})
	for i, j := range e.queue {
		if g, _ := e.opts.Resolver.ByKey(j.key.registry); g != j.g {
			e.queue[i].g = g
		}
	}
	if cap(e.queue) > 2*len(e.queue)+64 {
		e.queue = slices.Clip(slices.Clone(e.queue))
	}
}

// maxImported bounds the results imported ahead of their snapshots.
const maxImported = 1 << 20

// TestsRun counts the versions this process tested since it started.
func (e *Examples) TestsRun() int64 { return e.tested.Load() }

// test reads the version's title and expands its example. It returns nil
// when the source is unavailable (rate limits, outages), to be tried again.
func (e *Examples) test(ctx context.Context, j exampleJob) (r *ExampleResult) {
	v := j.version
	r = &ExampleResult{Ref: v.Ref, Tested: time.Now()}
	defer func() {
		// Other people's templates must not take registryd down, whatever
		// an engine does with them.
		if p := recover(); p != nil {
			e.log.Error("panic testing an example", "version", v.Ref, "panic", p)
			r = &ExampleResult{Ref: v.Ref, Tested: time.Now(), Status: StatusError, Error: fmt.Sprintf("internal error expanding %s: %v", v.Example, p)}
		}
	}()
	read := func(rel string) ([]byte, error) {
		f, ok := v.File(rel)
		if !ok {
			return nil, fmt.Errorf("%s: no file %s: %w", v.Path, rel, derrors.NotFound)
		}
		return j.g.Blob(ctx, f.SHA)
	}
	if d := api.Describer(string(v.Language), v.Schema); d != nil {
		if desc, err := d.Describe(ctx, v.Template, read); err == nil {
			r.Title = desc.Title
		}
	} else if v.Schema != "" {
		if b, err := read(v.Schema); err == nil {
			if sc, err := schema.Parse(b, v.Schema); err == nil {
				r.Title = strings.TrimSpace(sc.Info.Title)
			}
		}
	}
	if v.Example == "" || v.Problem != "" {
		return r
	}
	b, err := read(v.Example)
	if errors.Is(err, derrors.Unavailable) {
		return nil
	}
	if err != nil {
		r.Status, r.Error = StatusError, fmt.Sprintf("reading %s: %v", v.Example, err)
		return r
	}
	req := &api.ExpandRequest{
		Config:     string(b),
		ConfigName: v.Path + "/" + v.Example,
		Deployment: "example",
		Registry:   j.g.Name,
	}
	// A namespace's templates are tested as that namespace sees them:
	// its own registries, and those visible everywhere.
	if j.g.Namespace != "" {
		ctx = resolve.WithScope(ctx, resolve.Trusted(j.g.Namespace))
	}
	// The example's imports (the template beside it, its schema and what
	// that imports) are sent along as dm sends a configuration's, read from
	// the version's files. A document that is not a configuration is left
	// to the expander to report.
	if cfg, err := expand.ParseConfig(b, v.Example); err == nil {
		files, err := expand.ReadVersionImports(cfg, v.Example, read)
		if errors.Is(err, derrors.Unavailable) {
			return nil
		}
		if err != nil {
			r.Status, r.Error = StatusError, fmt.Sprintf("%s/%v", v.Path, err)
			return r
		}
		req.Imports = make(map[string]string, len(files))
		for p, c := range files {
			req.Imports[p] = string(c)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	res, err := e.opts.Expander.Expand(tctx, req)
	if err == nil {
		err = tctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("expansion took longer than %s", e.opts.Timeout)
	}
	if errors.Is(err, derrors.Unavailable) {
		return nil
	}
	if err != nil {
		r.Status, r.Error = StatusError, err.Error()
		return r
	}
	r.Status = StatusOK
	for _, res := range res.Config.Resources {
		if gcp.IsGCPType(res.Type) {
			r.GCP = true
			break
		}
	}
	self, _, _ := strings.Cut(v.Ref, ":")
	for _, ref := range res.References {
		// Other versions of the template itself are not uses.
		if base, _, _ := strings.Cut(ref.Resolved, ":"); base != self {
			r.Uses = append(r.Uses, ref.Resolved)
		}
	}
	return r
}

// Result returns what is known of the version with digest in the
// registry of key registry (index.Registry.Key).
func (e *Examples) Result(registry, digest string) (ExampleResult, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.results[exampleKey{registry, digest}]
	if !ok {
		return ExampleResult{}, false
	}
	return *r, true
}

// Generation changes whenever a result does.
func (e *Examples) Generation() uint64 { return e.gen.Load() }

// ByRef returns what is known of the version with canonical reference
// ref (github.com/acme/templates/redis:v1.0.2) in the registry of key
// registry, as its snapshot now lists it. The snapshot is the index: a map
// of references kept beside it would cost as much again per version.
func (e *Examples) ByRef(registry, ref string) (ExampleResult, bool) {
	g, ok := e.opts.Resolver.ByKey(registry)
	if !ok {
		return ExampleResult{}, false
	}
	snap := g.Snapshot()
	if snap == nil {
		return ExampleResult{}, false
	}
	v, ok := snap.VersionByRef(ref)
	if !ok {
		return ExampleResult{}, false
	}
	return e.Result(registry, v.Digest)
}

// Status returns the example status of a version for the JSON API, or
// nil when the version has no example or is not known yet.
func (e *Examples) Status(registry, digest string) *api.ExampleStatus {
	r, ok := e.Result(registry, digest)
	if !ok || r.Status == "" {
		return nil
	}
	return &api.ExampleStatus{Status: r.Status, Error: r.Error, Uses: r.Uses}
}

// Of returns the example status of v for GET /v1/template: the test of
// its example, pending until it is done; nil when v has no example.
func (e *Examples) Of(v *api.TemplateVersion) *api.ExampleStatus {
	if v.ExampleFile == "" {
		return nil
	}
	if st := e.Status(index.Key(v.Namespace, v.Registry), v.Digest); st != nil {
		return st
	}
	// Not seen yet: the tester has not walked this index.
	return &api.ExampleStatus{Status: StatusPending}
}

// UsedBy returns the versions whose examples expand through any version of
// the template base names (a reference without version) of the registry
// of namespace ns ("" for one visible everywhere), sorted; visible says
// which registries' versions the caller may see, by key. A namespace's
// examples resolve in that namespace: only they can use a template of its
// registries.
func (e *Examples) UsedBy(ns, base string, visible func(key string) bool) []Use {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dirty || e.usedBy == nil {
		e.usedBy = map[string][]Use{}
		for k, r := range e.results {
			for _, u := range r.Uses {
				b, _, _ := strings.Cut(u, ":")
				e.usedBy[b] = append(e.usedBy[b], Use{User: r.Ref, Used: u, Registry: k.registry, namespace: keyNamespace(k.registry)})
			}
		}
		for _, us := range e.usedBy {
			slices.SortFunc(us, func(a, b Use) int { return strings.Compare(a.User, b.User) })
		}
		e.dirty = false
	}
	var out []Use
	for _, u := range e.usedBy[base] {
		if visible(u.Registry) && (ns == "" || u.namespace == ns) {
			out = append(out, u)
		}
	}
	return out
}

// keyNamespace returns the namespace of a registry key: the first of four
// parts (index.Registry.Key), "" for a registry visible everywhere.
func keyNamespace(key string) string {
	if strings.Count(key, "/") == 3 {
		ns, _, _ := strings.Cut(key, "/")
		return ns
	}
	return ""
}

// Recent returns the latest versions that appeared of the registries
// visible says the caller may see, newest first (Change.When).
func (e *Examples) Recent(visible func(key string) bool) []Change {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Change
	for _, c := range e.recent {
		if visible(c.Registry) {
			out = append(out, c)
		}
	}
	return out
}

// ExampleCounts counts versions by example status.
type ExampleCounts struct{ OK, Error, Pending int }

// Counts counts the versions with examples of every registry by status.
func (e *Examples) Counts() ExampleCounts {
	return e.count(func(string) bool { return true })
}

// CountsIn counts by status the versions with examples of the registries
// visible says the caller may see, by key.
func (e *Examples) CountsIn(visible func(key string) bool) ExampleCounts {
	return e.count(visible)
}

// CountsFor counts by status the versions with examples of the registry
// of key registry.
func (e *Examples) CountsFor(registry string) ExampleCounts {
	return e.count(func(k string) bool { return k == registry })
}

func (e *Examples) count(visible func(key string) bool) ExampleCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	var c ExampleCounts
	for k, r := range e.results {
		if !visible(k.registry) {
			continue
		}
		switch r.Status {
		case StatusOK:
			c.OK++
		case StatusError:
			c.Error++
		case StatusPending:
			c.Pending++
		}
	}
	return c
}
