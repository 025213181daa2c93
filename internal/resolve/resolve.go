package resolve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/mod/semver"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
)

// Resolution is a reference resolved to one version directory.
type Resolution struct {
	// Ref is the canonical reference: full, with the concrete version.
	Ref Ref
	// Requested is the reference as given.
	Requested string
	// Registry holds the version; its Blob reads the files.
	Registry *index.Registry
	// Version is the version directory: files, template file, schema,
	// example and digest.
	*index.Version
	// Template is the version's template.
	Template *index.Template
	// Note explains a choice the caller did not spell out, such as the
	// version picked for a reference without one.
	Note string
	// Signer is who signed the version, as its registry's Verifier
	// verified it; "" when the registry verifies nothing or the version
	// is unsigned and its policy lets it through.
	Signer string
}

// Resolved returns the canonical reference as a string.
func (r *Resolution) Resolved() string { return r.Version.Ref }

// Resolver resolves references against a set of registries. The set may
// change while it serves (registryd's registries from cluster objects):
// readers load an immutable set, writers replace it.
//
// A registry is visible everywhere or confined to one namespace
// (index.Registry.Namespace): a namespaced registry resolves only for a
// caller whose Scope (in the context) names its namespace and allows it.
// A prefix means at most one registry visible everywhere and at most one
// per namespace; one visible everywhere is found first, so a namespace's
// registry never changes what a reference to it means.
type Resolver struct {
	set atomic.Pointer[registrySet]
	mu  sync.Mutex // serialises Put and Remove
	// gen counts changes of the set, for what is cached of it.
	gen atomic.Uint64
	// Default is where short references resolve.
	Default Registry
}

// registrySet is one immutable set of registries, by key and by parts.
type registrySet struct {
	byKey map[string]*index.Registry
	// global are the registries visible everywhere; namespaced those of
	// each namespace.
	global     view
	namespaced map[string]view
}

// view is the registries of one namespace, or of none, by reference parts.
type view map[regKey]*index.Registry

func newSet(regs []*index.Registry) *registrySet {
	s := &registrySet{byKey: make(map[string]*index.Registry, len(regs)), global: view{}, namespaced: map[string]view{}}
	for _, g := range regs {
		s.byKey[g.Key()] = g
		p := strings.SplitN(g.Name, "/", 4)
		if len(p) != 3 {
			continue
		}
		v := s.global
		if g.Namespace != "" {
			if v = s.namespaced[g.Namespace]; v == nil {
				v = view{}
				s.namespaced[g.Namespace] = v
			}
		}
		v[regKey{p[0], p[1], p[2]}] = g
	}
	return s
}

// New returns a Resolver over regs, resolving short references against def.
func New(def Registry, regs ...*index.Registry) *Resolver {
	r := &Resolver{Default: def}
	r.set.Store(newSet(regs))
	return r
}

// Put adds g, or replaces the registry of the same key (index.Registry.Key),
// and returns the one it replaced, if any.
func (r *Resolver) Put(g *index.Registry) *index.Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.set.Load().byKey
	old := cur[g.Key()]
	regs := make([]*index.Registry, 0, len(cur)+1)
	for k, h := range cur {
		if k != g.Key() {
			regs = append(regs, h)
		}
	}
	r.set.Store(newSet(append(regs, g)))
	r.gen.Add(1)
	return old
}

// Remove takes g out of the set, if it is there (another registry of the
// same key is left alone), and reports whether it was.
func (r *Resolver) Remove(g *index.Registry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.set.Load().byKey
	if cur[g.Key()] != g {
		return false
	}
	regs := make([]*index.Registry, 0, len(cur))
	for k, h := range cur {
		if k != g.Key() {
			regs = append(regs, h)
		}
	}
	r.set.Store(newSet(regs))
	r.gen.Add(1)
	return true
}

// Generation counts the changes of the set of registries (not of their
// indexes): what is cached of a registry since removed is dropped when it
// moves.
func (r *Resolver) Generation() uint64 { return r.gen.Load() }

// regKey indexes registries by reference parts, sparing the hot path a
// string concatenation.
type regKey struct{ host, owner, repo string }

// Registries returns every registry, whoever may see it, sorted by key:
// for what the process does with all of them (indexing, metrics). What
// answers a caller uses Visible.
func (r *Resolver) Registries() []*index.Registry {
	cur := r.set.Load().byKey
	out := make([]*index.Registry, 0, len(cur))
	for _, g := range cur {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Visible returns the registries ctx's caller may see, sorted by name.
func (r *Resolver) Visible(ctx context.Context) []*index.Registry {
	set := r.set.Load()
	out := make([]*index.Registry, 0, len(set.global))
	for _, g := range set.global {
		out = append(out, g)
	}
	if sc := ScopeFrom(ctx); sc != nil && sc.Namespace != "" {
		for k, g := range set.namespaced[sc.Namespace] {
			if _, shadowed := set.global[k]; !shadowed && sc.allows(ctx, g) {
				out = append(out, g)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ByKey returns the registry of a key (index.Registry.Key), whoever may
// see it: for the process's own bookkeeping (webhooks, refreshes).
func (r *Resolver) ByKey(key string) (*index.Registry, bool) {
	g, ok := r.set.Load().byKey[key]
	return g, ok
}

// Registry returns the registry with the given reference prefix that
// ctx's caller may see.
func (r *Resolver) Registry(ctx context.Context, name string) (*index.Registry, bool) {
	p := strings.SplitN(name, "/", 4)
	if len(p) != 3 {
		return nil, false
	}
	return r.find(ctx, regKey{p[0], p[1], p[2]})
}

// find returns the registry of k that ctx's caller may see: the one
// visible everywhere, else its namespace's.
func (r *Resolver) find(ctx context.Context, k regKey) (*index.Registry, bool) {
	set := r.set.Load()
	if g, ok := set.global[k]; ok {
		return g, true
	}
	sc := ScopeFrom(ctx)
	if sc == nil || sc.Namespace == "" {
		return nil, false
	}
	g, ok := set.namespaced[sc.Namespace][k]
	if !ok || !sc.allows(ctx, g) {
		return nil, false
	}
	return g, true
}

// Resolve parses s and resolves it against the default registry.
func (r *Resolver) Resolve(ctx context.Context, s string) (*Resolution, error) {
	return r.ResolveIn(ctx, s, r.Default)
}

// ResolveIn parses s and resolves it, short references against def. A
// template's own references resolve with def set to the template's
// registry, so a template means the same thing whoever expands it.
func (r *Resolver) ResolveIn(ctx context.Context, s string, def Registry) (*Resolution, error) {
	ref, err := Parse(s)
	if err != nil {
		return nil, err
	}
	res, err := r.ResolveRef(ctx, ref, def)
	if err != nil {
		return nil, err
	}
	res.Requested = s
	return res, nil
}

// Qualify fills a short reference's registry (and collection) from def.
func Qualify(ref Ref, def Registry) (Ref, error) {
	if ref.Full() {
		return ref, nil
	}
	if def.IsZero() {
		return ref, fmt.Errorf("reference %q is short and no default registry is set (use --registry or a full reference): %w", ref, derrors.InvalidArgument)
	}
	ref.Host, ref.Owner, ref.Repo = def.Host, def.Owner, def.Repo
	if ref.Collection == "" {
		ref.Collection = def.Collection
	}
	return ref, nil
}

// Template finds the template a reference names, whatever its version:
// the registry holding it, the template and the qualified reference.
func (r *Resolver) Template(ctx context.Context, ref Ref, def Registry) (*index.Registry, *index.Template, Ref, error) {
	reg, t, err := r.lookup(ctx, &ref, def)
	return reg, t, ref, err
}

// lookup qualifies *ref in place and finds its template; the hot path
// spares itself copies of the reference.
func (r *Resolver) lookup(ctx context.Context, ref *Ref, def Registry) (*index.Registry, *index.Template, error) {
	q, err := Qualify(*ref, def)
	if err != nil {
		return nil, nil, err
	}
	reg, ok := r.find(ctx, regKey{q.Host, q.Owner, q.Repo})
	if !ok {
		// Only what the caller may see is named: a namespace's registry
		// it may not read answers as one that does not exist.
		names := r.names(ctx)
		msg := fmt.Sprintf("%s: registry %s is not configured (configured: %s)", q, q.Registry(), strings.Join(names, ", "))
		if near := NearRegistries(q, names); len(near) > 0 {
			return nil, nil, derrors.Errorf(derrors.NotFound, "%s; did you mean %s?", msg, strings.Join(near, " or "))
		}
		return nil, nil, fmt.Errorf("%s: %w", msg, derrors.NotFound)
	}
	snap := reg.Snapshot()
	if snap == nil {
		return nil, nil, fmt.Errorf("%s: registry %s has no index yet: %w", q, reg.Name, derrors.Unavailable)
	}
	t, ok := snap.Template(q.Collection, q.Template)
	if !ok {
		return nil, nil, notFoundTemplate(snap, q)
	}
	*ref = q
	return reg, t, nil
}

// ResolveRef resolves a parsed reference.
func (r *Resolver) ResolveRef(ctx context.Context, ref Ref, def Registry) (*Resolution, error) {
	reg, t, err := r.lookup(ctx, &ref, def)
	if err != nil {
		return nil, err
	}
	v, note, err := choose(t, ref)
	if err != nil {
		return nil, err
	}
	if v.Problem != "" {
		return nil, fmt.Errorf("%s: version directory %s is unusable: %s: %w", ref, v.Path, v.Problem, derrors.NotFound)
	}
	canon := ref
	canon.Version = v.Semver
	canon.Digest = ""
	res := &Resolution{Ref: canon, Registry: reg, Version: v, Template: t, Note: note}
	// A version that fails its registry's policy is refused, not passed
	// over for an older one: silently resolving redis:v1 to a lower
	// version would roll back what a reference means without a word.
	if reg.Verifier != nil {
		signer, err := reg.Verifier.VerifyVersion(ctx, reg, t, v)
		if err != nil {
			return nil, err
		}
		res.Signer = signer
	}
	return res, nil
}

// NearRegistries returns ref as it would read under each of registries
// (reference prefixes) whose name is near ref's registry (derrors.Near):
// github.com/acme/templatez/redis:v1 -> github.com/acme/templates/redis:v1.
func NearRegistries(ref Ref, registries []string) []string {
	// OWNER/REPO of the registries of ref's host: a third of the letters
	// of a whole prefix would let through names that only share a host.
	byName := map[string]Registry{}
	var names []string
	for _, name := range registries {
		g, err := ParseRegistry(name)
		if err != nil || g.Host != ref.Host {
			continue
		}
		byName[g.Owner+"/"+g.Repo] = g
		names = append(names, g.Owner+"/"+g.Repo)
	}
	var out []string
	for _, name := range derrors.Near(ref.Owner+"/"+ref.Repo, names) {
		alt := byName[name]
		r := ref
		r.Host, r.Owner, r.Repo = alt.Host, alt.Owner, alt.Repo
		out = append(out, r.String())
	}
	return out
}

// names lists the names of the registries ctx's caller may see.
func (r *Resolver) names(ctx context.Context) []string {
	var names []string
	for _, g := range r.Visible(ctx) {
		names = append(names, g.Name)
	}
	return names
}

func notFoundTemplate(snap *index.Snapshot, ref Ref) error {
	where := "the root collection"
	if ref.Collection != "" {
		where = fmt.Sprintf("collection %q", ref.Collection)
		if _, ok := snap.Collections[ref.Collection]; !ok {
			msg := fmt.Sprintf("%s: %s has no collection %q (collections: %s)", ref, snap.Registry, ref.Collection, quoteList(snap.CollectionNames()))
			var near []string
			for _, c := range derrors.Near(ref.Collection, snap.CollectionNames()) {
				alt := ref
				alt.Collection = c
				near = append(near, alt.String())
			}
			if len(near) > 0 {
				return derrors.Errorf(derrors.NotFound, "%s; did you mean %s?", msg, strings.Join(near, " or "))
			}
			return fmt.Errorf("%s: %w", msg, derrors.NotFound)
		}
	}
	var elsewhere []string
	for _, c := range snap.CollectionNames() {
		if _, ok := snap.Collections[c].Templates[ref.Template]; ok {
			alt := ref
			alt.Host, alt.Collection = ref.Host, c
			elsewhere = append(elsewhere, alt.String())
		}
	}
	msg := fmt.Sprintf("%s: no template %q in %s of %s", ref, ref.Template, where, snap.Registry)
	if len(elsewhere) == 0 {
		// A typo or another case: the nearest names of the same collection.
		if c, ok := snap.Collections[ref.Collection]; ok {
			for _, name := range derrors.Near(ref.Template, slices.Collect(maps.Keys(c.Templates))) {
				alt := ref
				alt.Template = name
				elsewhere = append(elsewhere, alt.String())
			}
		}
	}
	if len(elsewhere) > 0 {
		return derrors.Errorf(derrors.NotFound, "%s; did you mean %s?", msg, strings.Join(elsewhere, " or "))
	}
	return fmt.Errorf("%s: %w", msg, derrors.NotFound)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		if n == "" {
			n = "(root)"
		}
		q[i] = n
	}
	return strings.Join(q, ", ")
}

// choose applies the resolution rules to a template's versions.
func choose(t *index.Template, ref Ref) (*index.Version, string, error) {
	vs := t.Versions
	want, _ := index.ParseSemver(ref.Version) // Parse checked it
	allowed := func(v *index.Version) bool {
		switch {
		case ref.Version == "":
			// Without a version, only a digest pin reaches pre-releases.
			return ref.Digest != "" || v.Num.Pre == ""
		case want.Pre != "":
			return v.Num == want
		default:
			return v.Num.Pre == "" && v.Num.Major == want.Major && v.Num.Minor == want.Minor && v.Num.Patch >= want.Patch
		}
	}
	// Versions are sorted ascending: the first allowed from the top wins.
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		if !allowed(v) || ref.Digest != "" && v.Digest != ref.Digest {
			continue
		}
		if i > 0 && vs[i-1].Semver == v.Semver {
			return nil, "", derrors.Errorf(derrors.Ambiguous, "%s: version directories %s and %s of %s both hold %s; fix the registry (dm lint)", ref, vs[i-1].Name, v.Name, t.Path, v.Semver)
		}
		note := ""
		if ref.Version == "" && ref.Digest == "" {
			note = "no version given: chose " + v.Semver + ", the highest stable version"
		}
		return v, note, nil
	}
	return nil, "", notFoundVersion(t, ref, allowed)
}

func notFoundVersion(t *index.Template, ref Ref, allowed func(*index.Version) bool) error {
	var avail []string
	for _, v := range t.Versions {
		avail = append(avail, v.Semver)
	}
	what := ref.Version
	switch {
	case ref.Digest != "" && ref.Version == "":
		what = "no version with digest " + ref.Digest
	case ref.Digest != "":
		what = fmt.Sprintf("no version allowed by %s has digest %s", ref.Version, ref.Digest)
	case ref.Version == "":
		what = "no stable version"
	default:
		what = ref.Version + " not found"
	}
	msg := fmt.Sprintf("%s: %s; available: %s", ref, what, strings.Join(avail, ", "))
	if ref.Digest != "" {
		for _, v := range t.Versions {
			if allowed(v) {
				continue
			}
			if v.Digest == ref.Digest {
				alt := ref
				alt.Version = v.Semver
				msg += "; that digest is " + alt.String()
			}
		}
	} else if s := suggest(t, ref); s != "" {
		msg += "; try " + s
	}
	return derrors.Errorf(derrors.NotFound, "%s", msg)
}

// suggest proposes the reference that would work: the highest stable
// version of the same major, else the highest stable version.
func suggest(t *index.Template, ref Ref) string {
	var best *index.Version
	major := ""
	if ref.Version != "" {
		major = semver.Major(ref.Version)
	}
	for _, v := range t.Versions {
		if v.Prerelease() || v.Problem != "" {
			continue
		}
		if major != "" && semver.Major(v.Semver) == major {
			best = v
		}
	}
	if best == nil {
		for _, v := range t.Versions {
			if !v.Prerelease() && v.Problem == "" {
				best = v
			}
		}
	}
	if best == nil {
		return ""
	}
	alt := ref
	alt.Version = semver.MajorMinor(best.Semver)
	return alt.String()
}

func canonicalVersion(v string) string {
	if c := semver.Canonical(v); c != "" {
		return c
	}
	return v
}

// ReadFile returns the content of a file of the resolved version directory,
// name relative to it.
func (r *Resolution) ReadFile(ctx context.Context, name string) ([]byte, error) {
	e, ok := r.Version.File(name)
	if !ok {
		return nil, fmt.Errorf("%s: no file %q in %s: %w", r.Resolved(), name, r.Version.Path, derrors.NotFound)
	}
	b, err := r.Registry.Blob(ctx, e.SHA)
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", r.Resolved(), name, err)
	}
	return b, nil
}

// DefaultRegistry returns Default; it lets a Resolver stand behind an
// interface (expand.Resolver) that a sandboxed worker implements remotely.
func (r *Resolver) DefaultRegistry() Registry { return r.Default }

// ReadFile reads a file of a resolution made by r: rs.ReadFile.
func (r *Resolver) ReadFile(ctx context.Context, rs *Resolution, name string) ([]byte, error) {
	return rs.ReadFile(ctx, name)
}
