package index

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
)

// A Registry keeps the current Snapshot of one source fresh. Snapshots are
// immutable and swapped atomically: readers never lock, and a refresh that
// fails leaves the last good snapshot in place. With a cache directory, each
// good snapshot's input (the listing and registry.yaml) is persisted, so a
// restarted process serves at once without asking the source.
type Registry struct {
	// Name is the reference prefix the registry answers to, such as
	// github.com/acme/templates.
	Name string
	// Source is where the registry is read; Kind describes it ("github",
	// "local") and Location where it is, for display. Neither holds secrets.
	Source   fetch.Source
	Kind     string
	Location string
	// Namespace is the Kubernetes namespace the registry is confined to
	// (a namespaced Registry object's), "" for a registry visible
	// everywhere; Object is the name of that Registry object, which a
	// caller must be allowed to get to see the registry (package
	// resolve's Scope).
	Namespace, Object string
	// Identity names who reads what: the object, the source and the
	// credential the registry reads with. Registries of different
	// identities never share cached content, even when their listings
	// name the same blobs: a listing is only a claim, and a tenant can
	// list another's blob SHAs. "" means Name. See Version.Source.
	Identity string
	// CacheDir, if set, is the registry's own directory: its persisted
	// snapshot (the blob cache of its source lives beside it). No other
	// registry reads it.
	CacheDir string
	Logger   *slog.Logger
	// MaxEntries and MaxBytes bound what a listing may hold: its entries,
	// and the bytes of the files it lists. A listing over a bound is not
	// served (Refresh fails with a *BoundError). Zero means no bound.
	MaxEntries int
	MaxBytes   int64
	// RetryMin is Run's first wait after a failed refresh while there is
	// no index to serve: each failure in a row doubles it, up to the
	// refresh interval (Backoff). Zero means RetryUnready.
	RetryMin time.Duration
	// CachedBytes bounds the file content the registry's source keeps in
	// memory (its blob cache), for Cost; zero means none is kept.
	CachedBytes int64
	// Admit, if set, is asked whether the registry may hold a listing
	// within the bounds above before it is indexed (by a refresh or Load),
	// with the listing's Cost: an error refuses it, and the registry then
	// serves nothing, as over its own bounds. registryd's per-namespace
	// and daemon bounds answer it.
	Admit func(cost int64) error
	// Gate, if set, is asked for a slot before the source is listed by a
	// refresh; the slot is held until the listing is indexed or dropped
	// (a listing is held whole in memory until then), and given back by
	// calling release. An error (its context ended) fails the refresh.
	// registryd bounds the listings in flight per namespace and for the
	// daemon with it.
	Gate func(ctx context.Context) (release func(), err error)
	// OnIndex, if set, is called after every refresh attempt with the
	// registry's Key, the result ("ok", "unchanged", "error") and its
	// duration.
	OnIndex func(registry, result string, d time.Duration)
	// Verifier, if set, checks every version resolved from the registry
	// against the registry's signature policy before it is used (package
	// signature's Verifier); nil verifies nothing.
	Verifier Verifier

	snap      atomic.Pointer[Snapshot]
	refreshMu sync.Mutex
	// cost is the Cost of the current snapshot's listing.
	cost atomic.Int64

	mu     sync.Mutex
	status Status
	// lastErr is the last refresh's error, for its kind (LastErr).
	lastErr error
}

// A Verifier checks a version's signature before the version is used. It
// returns who signed it ("" for an unsigned version its policy lets
// through) or an error matching derrors.VerificationFailed that names the
// version and why.
type Verifier interface {
	VerifyVersion(ctx context.Context, g *Registry, t *Template, v *Version) (signer string, err error)
}

// Status describes the registry's freshness.
type Status struct {
	LastAttempt time.Time `json:"lastAttempt,omitzero"`
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	LastError   string    `json:"lastError,omitempty"`
	// RetryAt is when the source asked to be left alone until.
	RetryAt time.Time `json:"retryAt,omitzero"`
	// FromCache reports that the current snapshot was loaded from disk and
	// not yet confirmed by the source.
	FromCache bool `json:"fromCache,omitempty"`
}

// Snapshot returns the current snapshot, or nil before the first index.
func (r *Registry) Snapshot() *Snapshot { return r.snap.Load() }

// LastErr returns the error of the last refresh, nil when it succeeded:
// Status has its message, LastErr its kind (a *BoundError).
func (r *Registry) LastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Status returns the registry's freshness.
func (r *Registry) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *Registry) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// ID returns Identity, or Name when it is not set.
func (r *Registry) ID() string {
	if r.Identity != "" {
		return r.Identity
	}
	return r.Name
}

// Key names the registry uniquely among those a process serves: Name for
// a registry visible everywhere, NAMESPACE/Name for a namespaced one
// (names have three slash-separated parts, so the two never collide).
func (r *Registry) Key() string { return Key(r.Namespace, r.Name) }

// Key is Registry.Key of a registry named name in namespace ns.
func Key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// Blob returns a file's content by its SHA.
func (r *Registry) Blob(ctx context.Context, sha string) ([]byte, error) {
	return r.Source.Blob(ctx, sha)
}

// Refresh asks the source for its current listing and, if it changed,
// builds and installs a new snapshot. Concurrent calls are serialised, so a
// caller that returns has seen a refresh that started after it called.
func (r *Registry) Refresh(ctx context.Context) error { return r.RefreshAt(ctx, "") }

// RefreshAt is Refresh at commit, a commit a push named: a source that
// lists commits (fetch.CommitLister) lists that one instead of asking
// for the branch head. "" is Refresh.
func (r *Registry) RefreshAt(ctx context.Context, commit string) error {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	start := time.Now()
	result, err := r.refresh(ctx, commit)
	d := time.Since(start)
	r.mu.Lock()
	r.status.LastAttempt = start
	r.lastErr = err
	if err != nil {
		r.status.LastError = err.Error()
		var re interface{ RetryAfter() time.Duration }
		if errors.As(err, &re) {
			r.status.RetryAt = start.Add(re.RetryAfter())
		}
	} else {
		r.status.LastError = ""
		r.status.LastSuccess = start.Add(d)
		r.status.RetryAt = time.Time{}
		r.status.FromCache = false
	}
	r.mu.Unlock()
	if r.OnIndex != nil {
		r.OnIndex(r.Key(), result, d)
	}
	log := r.logger().With("registry", r.Name, "result", result, "duration", d)
	if err != nil {
		if r.Snapshot() != nil {
			log.Warn("refresh failed; serving the last good index", "err", err)
		} else {
			log.Error("index failed", "err", err)
		}
	} else {
		log.Info("refreshed")
	}
	return err
}

func (r *Registry) refresh(ctx context.Context, commit string) (string, error) {
	var prev *fetch.Tree
	if s := r.Snapshot(); s != nil {
		prev = s.Tree
	}
	if r.Gate != nil {
		release, err := r.Gate(ctx)
		if err != nil {
			return "error", fmt.Errorf("refreshing %s: waiting for a listing slot: %w", r.Name, err)
		}
		defer release()
	}
	var tree *fetch.Tree
	var err error
	if cl, ok := r.Source.(fetch.CommitLister); ok && commit != "" {
		tree, err = cl.TreeAt(ctx, commit, prev)
	} else {
		tree, err = r.Source.Tree(ctx, prev)
	}
	if errors.Is(err, derrors.NotModified) {
		return "unchanged", nil
	}
	if err != nil {
		return "error", fmt.Errorf("refreshing %s: %w", r.Name, err)
	}
	var meta []byte
	for _, e := range tree.Entries {
		if e.Path == MetadataFile {
			if meta, err = r.Source.Blob(ctx, e.SHA); err != nil {
				return "error", fmt.Errorf("refreshing %s: reading %s: %w", r.Name, MetadataFile, err)
			}
			break
		}
	}
	cost, err := r.admit(tree)
	if err != nil {
		// Over a bound the registry is not served at all: a partial index
		// would resolve references to versions it could not read.
		r.drop()
		r.unpersist()
		return "error", fmt.Errorf("refreshing %s: %w", r.Name, err)
	}
	s := Build(r.Name, tree, meta)
	s.setSource(r.ID())
	if err := r.persist(s); err != nil {
		// Serving the new index matters more than caching it.
		r.logger().Warn("cannot persist snapshot", "registry", r.Name, "err", err)
	}
	r.install(s, cost)
	return "ok", nil
}

// EntryBytes is what one entry of a listing costs in memory once indexed,
// for Cost: the entry itself, its share of its version and template, and
// what the examples' results (in memory and in their ConfigMaps'
// informer) and the search index keep of its version (measured with
// registries of 99,000 tree entries, one file per version, the costliest
// layout: 1.5 KiB; docs/benchmarks.md).
const EntryBytes = 1536

// Cost estimates the memory an index of t holds: EntryBytes per entry,
// and the bytes of its files up to cached, the bound of the content kept
// in memory.
func Cost(t *fetch.Tree, cached int64) int64 {
	var files int64
	for _, e := range t.Entries {
		files += max(e.Size, 0)
	}
	return int64(len(t.Entries))*EntryBytes + min(files, max(cached, 0))
}

// Cost returns the Cost of the current snapshot's listing, 0 without one.
func (r *Registry) Cost() int64 { return r.cost.Load() }

// admit checks t against r's bounds and asks Admit, returning t's Cost.
func (r *Registry) admit(t *fetch.Tree) (int64, error) {
	if err := r.checkBounds(t); err != nil {
		return 0, err
	}
	cost := Cost(t, r.CachedBytes)
	if r.Admit != nil {
		if err := r.Admit(cost); err != nil {
			return 0, err
		}
	}
	return cost, nil
}

// install makes s, whose listing costs cost, the current snapshot.
func (r *Registry) install(s *Snapshot, cost int64) {
	r.cost.Store(cost)
	r.snap.Store(s)
}

// drop serves nothing any more.
func (r *Registry) drop() {
	r.snap.Store(nil)
	r.cost.Store(0)
}

// BoundError is fetch.BoundError: a listing over a registry's bounds.
type BoundError = fetch.BoundError

// checkBounds refuses a listing over r's bounds.
func (r *Registry) checkBounds(t *fetch.Tree) error {
	if r.MaxEntries > 0 && len(t.Entries) > r.MaxEntries {
		return &BoundError{Bound: "entries", Limit: int64(r.MaxEntries), Got: int64(len(t.Entries))}
	}
	if r.MaxBytes > 0 {
		var n int64
		for _, e := range t.Entries {
			n += max(e.Size, 0)
		}
		if n > r.MaxBytes {
			return &BoundError{Bound: "bytes", Limit: r.MaxBytes, Got: n}
		}
	}
	return nil
}

// Install makes s the current snapshot, as a refresh would, if Admit
// admits it.
func (r *Registry) Install(s *Snapshot) error {
	if s == nil {
		r.drop()
		return nil
	}
	cost, err := r.admit(s.Tree)
	if err != nil {
		return err
	}
	r.install(s, cost)
	return nil
}

// SnapshotFile is the name of a registry's persisted snapshot in its
// CacheDir.
const SnapshotFile = "snapshot.idx"

func (r *Registry) snapshotPath() string {
	return filepath.Join(r.CacheDir, SnapshotFile)
}

// unpersist removes the persisted snapshot, if any.
func (r *Registry) unpersist() {
	if r.CacheDir != "" {
		_ = os.Remove(r.snapshotPath())
	}
}

// snapshot file format: a JSON header line, then "path\tsha\tsize" lines;
// plain text is quick to parse and easy to inspect.
type snapshotHeader struct {
	Registry string `json:"registry"`
	// Identity is the registry's: a snapshot is loaded only by the
	// registry that wrote it.
	Identity string `json:"identity"`
	Version  string `json:"version"`
	ETag     string `json:"etag,omitempty"`
	Metadata []byte `json:"metadata,omitempty"`
	Entries  int    `json:"entries"`
}

func (r *Registry) persist(s *Snapshot) error {
	if r.CacheDir == "" {
		return nil
	}
	var buf bytes.Buffer
	h, _ := json.Marshal(snapshotHeader{Registry: s.Registry, Identity: r.ID(), Version: s.Tree.Version, ETag: s.Tree.ETag, Metadata: s.Metadata, Entries: len(s.Tree.Entries)})
	// Sized at once: grown by doubling, a large listing's file cost up
	// to three times its size while written.
	n := len(h) + 1
	for _, e := range s.Tree.Entries {
		n += len(e.Path) + len(e.SHA) + 3 + decimalDigits(e.Size)
	}
	buf.Grow(n)
	buf.Write(h)
	buf.WriteByte('\n')
	for _, e := range s.Tree.Entries {
		buf.WriteString(e.Path)
		buf.WriteByte('\t')
		buf.WriteString(e.SHA)
		buf.WriteByte('\t')
		buf.WriteString(strconv.FormatInt(e.Size, 10))
		buf.WriteByte('\n')
	}
	return fetch.WriteFileAtomic(r.snapshotPath(), buf.Bytes())
}

// decimalDigits is the length of strconv.FormatInt(n, 10).
func decimalDigits(n int64) int {
	d := 1
	if n < 0 {
		d++ // the sign; -n may overflow, so count on n itself
	}
	for n <= -10 || n >= 10 {
		n /= 10
		d++
	}
	return d
}

// Load installs the persisted snapshot, if there is one, without asking the
// source. It returns derrors.NotFound when there is none.
func (r *Registry) Load() error {
	if r.CacheDir == "" {
		return fmt.Errorf("no cache directory: %w", derrors.NotFound)
	}
	b, err := os.ReadFile(r.snapshotPath())
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no persisted snapshot of %s: %w", r.Name, derrors.NotFound)
	}
	if err != nil {
		return fmt.Errorf("loading snapshot of %s: %w", r.Name, err)
	}
	tree, meta, err := parseSnapshot(b, r.Name, r.ID())
	if err != nil {
		return fmt.Errorf("loading snapshot of %s from %s: %w", r.Name, r.snapshotPath(), err)
	}
	cost, err := r.admit(tree)
	if err != nil {
		return fmt.Errorf("loading snapshot of %s: %w", r.Name, err)
	}
	s := Build(r.Name, tree, meta)
	s.setSource(r.ID())
	r.install(s, cost)
	r.mu.Lock()
	r.status.FromCache = true
	r.mu.Unlock()
	return nil
}

func parseSnapshot(b []byte, name, identity string) (*fetch.Tree, []byte, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	if !sc.Scan() {
		return nil, nil, errors.New("empty file")
	}
	var h snapshotHeader
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	if h.Registry != name {
		return nil, nil, fmt.Errorf("snapshot is of %q", h.Registry)
	}
	if h.Identity != identity {
		return nil, nil, errors.New("snapshot was written by another registry (another object, source or credential)")
	}
	t := &fetch.Tree{Version: h.Version, ETag: h.ETag, Entries: make([]fetch.Entry, 0, h.Entries)}
	line := 1
	for sc.Scan() {
		line++
		p, rest, ok1 := strings.Cut(sc.Text(), "\t")
		sha, size, ok2 := strings.Cut(rest, "\t")
		n, err := strconv.ParseInt(size, 10, 64)
		if !ok1 || !ok2 || err != nil {
			return nil, nil, fmt.Errorf("line %d: malformed entry", line)
		}
		t.Entries = append(t.Entries, fetch.Entry{Path: p, SHA: sha, Size: n})
	}
	if len(t.Entries) != h.Entries {
		return nil, nil, fmt.Errorf("truncated: %d of %d entries", len(t.Entries), h.Entries)
	}
	return t, h.Metadata, sc.Err()
}

// Jitter spreads d by up to a tenth either way, so that registries
// started together do not refresh in step.
func Jitter(d time.Duration) time.Duration {
	if d < 10 {
		return d
	}
	return d - d/10 + rand.N(d/5+1)
}

// RetryUnready is Registry.RetryMin's default: how soon Run first tries
// again after a failure while the registry has no index at all.
const RetryUnready = 15 * time.Second

// maxRetry bounds Backoff for a registry indexed once (no interval).
const maxRetry = time.Hour

// Backoff is how long Run waits after the fails-th failure in a row of a
// registry that has no index: first (RetryUnready when zero), doubled with
// each failure, up to interval (an hour for a registry indexed once).
// Retrying a broken registry every few seconds would spend the rate limit
// its source shares with every other registry, for an answer that rarely
// changes that fast.
func Backoff(fails int, first, interval time.Duration) time.Duration {
	if first <= 0 {
		first = RetryUnready
	}
	ceil := interval
	if ceil <= 0 {
		ceil = maxRetry
	}
	d := min(first, ceil)
	for i := 1; i < fails && d < ceil; i++ {
		d *= 2
	}
	return min(d, ceil)
}

// Run refreshes the registry now, calls first (if not nil) when that
// refresh is done, then refreshes every interval until ctx ends: later when
// the source asked to be left alone (rate limits, outages), sooner while
// there is no index to serve, backing off from RetryMin with each failure
// in a row (Backoff; a success starts again from RetryMin). Waits are
// spread by Jitter. A zero interval refreshes until there is an index,
// then stops.
func (r *Registry) Run(ctx context.Context, interval time.Duration, first func()) {
	err := r.Refresh(ctx)
	if first != nil {
		first()
	}
	fails := 0
	for {
		if err != nil {
			fails++
		} else {
			fails = 0
		}
		wait := Jitter(interval)
		// A registry over a bound (its own, or Admit's) waits its
		// interval: retrying sooner would only spend the source's rate
		// limit on the same refusal.
		if r.Snapshot() == nil && !errors.Is(r.LastErr(), derrors.LimitExceeded) {
			wait = Jitter(Backoff(fails, r.RetryMin, interval))
		}
		if wait <= 0 {
			return
		}
		if retry := time.Until(r.Status().RetryAt); retry > wait {
			wait = retry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err = r.Refresh(ctx)
	}
}
