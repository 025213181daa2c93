package api

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Backend answers the read side of the API. *Service answers in-process,
// *Client from a running registryd; dm's commands work with either.
//
// The registry argument of the reference-taking calls is the default
// registry for short references ("" for the backend's own default); that of
// the listing calls selects what to list ("" for everything).
type Backend interface {
	Registries(ctx context.Context) (*RegistryList, error)
	Templates(ctx context.Context, q TemplateQuery) (*TemplateList, error)
	Versions(ctx context.Context, ref, registry string) (*Template, error)
	Template(ctx context.Context, ref, registry string) (*TemplateVersion, error)
	Resolve(ctx context.Context, ref, registry string) (*Resolution, error)
	Search(ctx context.Context, q, registry string) (*SearchResults, error)
	Expand(ctx context.Context, req *ExpandRequest) (*ExpandResult, error)
	// ReadFile reads the file at path of the version ref resolves to.
	ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error)
}

// TemplateQuery selects templates to list.
type TemplateQuery struct {
	// Registry is [host/]owner/repo[/collection]; "" lists every registry.
	Registry string
	// Collection, if set, overrides the collection of Registry; use "/"
	// for the root collection.
	Collection string
	// Q is a regular expression matched against the template's name and
	// "collection/name"; "" matches everything.
	Q string
}

// Service answers the API from a resolver's registries, in-process.
type Service struct {
	resolver *resolve.Resolver
	expander *expand.Expander
	// metas caches search metadata by version digest.
	metas *lru.Cache[string, *VersionMeta]
	// searchIdx holds the search index of recent snapshots.
	searchIdx *lru.Cache[*index.Snapshot, *searchIndex]
	// lints caches the findings of languages' own lint rules by digest.
	lints *lru.Cache[string, []index.Finding]
}

// NewService returns a Service over r. Its expander, configured by eo
// (limits, AllowURLs; the resolver is r), keeps compiled templates across
// calls.
func NewService(r *resolve.Resolver, eo expand.Options) *Service {
	eo.Resolver = r
	metas, _ := lru.New[string, *VersionMeta](metaCacheEntries) // fails only for size <= 0
	searchIdx, _ := lru.New[*index.Snapshot, *searchIndex](64)
	lints, _ := lru.New[string, []index.Finding](lintCacheEntries)
	return &Service{resolver: r, expander: expand.New(eo), metas: metas, searchIdx: searchIdx, lints: lints}
}

// metaCacheEntries bounds the search metadata cache: one entry per
// template's latest version, so a registry of 10,000 versions fits.
const metaCacheEntries = 16384

// Relisted runs op and, when it failed because a local directory changed
// after it was listed (a file deleted or edited while registryd serves),
// lists r's local registries again and runs op once more, so the answer
// comes from the directory as it is now and is never a 500.
func Relisted[T any](ctx context.Context, r *resolve.Resolver, op func() (T, error)) (T, error) {
	v, err := op()
	if r == nil || !errors.Is(err, fetch.ErrChanged) {
		return v, err
	}
	for _, g := range r.Registries() {
		if g.Kind == KindLocal || g.Kind == KindEmbedded {
			if rerr := g.Refresh(ctx); rerr != nil {
				return v, err
			}
		}
	}
	return op()
}

// Resolver returns the resolver the service answers from.
func (s *Service) Resolver() *resolve.Resolver { return s.resolver }

var _ Backend = (*Service)(nil)

// RegistryInfo describes g; def is the default registry.
func RegistryInfo(g *index.Registry, def resolve.Registry) Registry {
	st := g.Status()
	r := Registry{
		Name:        g.Name,
		Kind:        g.Kind,
		Location:    g.Location,
		Default:     !def.IsZero() && def.Prefix() == g.Name,
		LastAttempt: st.LastAttempt,
		LastSuccess: st.LastSuccess,
		LastError:   st.LastError,
		RetryAt:     st.RetryAt,
	}
	snap := g.Snapshot()
	switch {
	case snap == nil && st.LastError != "":
		r.Status = StatusError
	case snap == nil:
		r.Status = StatusIndexing
	case st.LastError != "":
		r.Status = StatusStale
	case st.FromCache:
		r.Status = StatusCached
	default:
		r.Status = StatusOK
	}
	if snap != nil {
		r.Ready = true
		r.Built = snap.Built
		if snap.Tree != nil {
			r.Version = snap.Tree.Version
		}
		r.Collections = len(snap.Collections)
		r.Templates = snap.Templates
		r.Versions = snap.Versions
		r.FindingCount = len(snap.Findings)
		r.ErrorCount = snap.Errors()
	}
	return r
}

// Registries lists the configured registries.
func (s *Service) Registries(ctx context.Context) (*RegistryList, error) {
	def := s.resolver.Default
	out := &RegistryList{Registries: []Registry{}}
	if !def.IsZero() {
		out.Default = def.String()
	}
	for _, g := range s.resolver.Registries() {
		out.Registries = append(out.Registries, RegistryInfo(g, def))
	}
	return out, nil
}

// Registry describes one registry with its lint findings.
func (s *Service) Registry(ctx context.Context, name string) (*Registry, error) {
	g, err := s.registry(name)
	if err != nil {
		return nil, err
	}
	r := RegistryInfo(g, s.resolver.Default)
	if snap := g.Snapshot(); snap != nil {
		r.Findings = Findings(snap.Findings)
	}
	return &r, nil
}

// Refresh refreshes one registry now and describes it after the refresh.
// A failed refresh returns the error; the registry keeps its last good
// index.
func (s *Service) Refresh(ctx context.Context, name string) (*Registry, error) {
	g, err := s.registry(name)
	if err != nil {
		return nil, err
	}
	if err := g.Refresh(ctx); err != nil {
		return nil, err
	}
	r := RegistryInfo(g, s.resolver.Default)
	return &r, nil
}

// registry finds a registry by name, [host/]owner/repo.
func (s *Service) registry(name string) (*index.Registry, error) {
	if g, ok := s.resolver.Registry(name); ok {
		return g, nil
	}
	sel, err := resolve.ParseRegistry(name)
	if err == nil && sel.Collection == "" {
		if g, ok := s.resolver.Registry(sel.Prefix()); ok {
			return g, nil
		}
	}
	return nil, fmt.Errorf("registry %q is not configured (configured: %s): %w", name, strings.Join(s.names(), ", "), derrors.NotFound)
}

func (s *Service) names() []string {
	var names []string
	for _, g := range s.resolver.Registries() {
		names = append(names, g.Name)
	}
	return names
}

// selection is what a listing call covers: one registry (and perhaps one
// collection) or all.
type selection struct {
	regs       []*index.Registry
	collection string
	hasColl    bool
}

func (s *Service) selectRegistries(registry, collection string) (selection, error) {
	var sel selection
	if registry == "" {
		sel.regs = s.resolver.Registries()
	} else {
		g, err := resolve.ParseRegistry(registry)
		if err != nil {
			return sel, err
		}
		reg, err := s.registry(g.Prefix())
		if err != nil {
			return sel, err
		}
		sel.regs = []*index.Registry{reg}
		if g.Collection != "" {
			sel.collection, sel.hasColl = g.Collection, true
		}
	}
	switch collection {
	case "":
	case "/":
		sel.collection, sel.hasColl = "", true
	default:
		sel.collection, sel.hasColl = collection, true
	}
	return sel, nil
}

// Collections lists the collections of one registry, or of all when
// registry is "".
func (s *Service) Collections(ctx context.Context, registry string) (*CollectionList, error) {
	sel, err := s.selectRegistries(registry, "")
	if err != nil {
		return nil, err
	}
	out := &CollectionList{Collections: []Collection{}}
	for _, g := range sel.regs {
		snap := g.Snapshot()
		if snap == nil {
			continue
		}
		for _, n := range snap.CollectionNames() {
			c := snap.Collections[n]
			if sel.hasColl && n != sel.collection {
				continue
			}
			out.Collections = append(out.Collections, Collection{Registry: g.Name, Name: n, Path: c.Path, Mapped: c.Mapped, Templates: len(c.Templates)})
		}
	}
	return out, nil
}

// TemplateInfo describes a template of registry and its versions.
func TemplateInfo(registry string, t *index.Template) Template {
	out := Template{
		Registry:   registry,
		Collection: t.Collection,
		Name:       t.Name,
		Path:       t.Path,
		Ref:        index.RefString(registry, t.Collection, t.Name, ""),
		Versions:   make([]VersionInfo, 0, len(t.Versions)),
	}
	for _, v := range t.Versions {
		out.Versions = append(out.Versions, versionInfo(v))
		if !v.Prerelease() && v.Problem == "" {
			out.Latest = v.Semver
		}
	}
	return out
}

func versionInfo(v *index.Version) VersionInfo {
	return VersionInfo{
		Name:       v.Name,
		Version:    v.Semver,
		Ref:        v.Ref,
		Digest:     v.Digest,
		Language:   string(v.Language),
		Prerelease: v.Prerelease(),
		Problem:    v.Problem,
	}
}

// Templates lists templates with their versions.
func (s *Service) Templates(ctx context.Context, q TemplateQuery) (*TemplateList, error) {
	sel, err := s.selectRegistries(q.Registry, q.Collection)
	if err != nil {
		return nil, err
	}
	var re *regexp.Regexp
	if q.Q != "" {
		if re, err = regexp.Compile(q.Q); err != nil {
			return nil, fmt.Errorf("template pattern %q: %v: %w", q.Q, err, derrors.InvalidArgument)
		}
	}
	out := &TemplateList{Templates: []Template{}}
	for _, g := range sel.regs {
		snap := g.Snapshot()
		if snap == nil {
			continue
		}
		if sel.hasColl {
			if _, ok := snap.Collections[sel.collection]; !ok {
				return nil, fmt.Errorf("%s has no collection %q: %w", g.Name, sel.collection, derrors.NotFound)
			}
		}
		for _, t := range snap.AllTemplates() {
			if sel.hasColl && t.Collection != sel.collection {
				continue
			}
			if re != nil && !re.MatchString(t.Name) && !re.MatchString(Qualified(t.Collection, t.Name)) {
				continue
			}
			out.Templates = append(out.Templates, TemplateInfo(g.Name, t))
		}
	}
	return out, nil
}

// Qualified names a template within its registry: collection/name, or
// name in the root collection.
func Qualified(collection, name string) string {
	if collection == "" {
		return name
	}
	return collection + "/" + name
}

// defaultFor returns the default registry for short references: registry
// when given, else the resolver's.
func (s *Service) defaultFor(registry string) (resolve.Registry, error) {
	if registry == "" {
		return s.resolver.Default, nil
	}
	return resolve.ParseRegistry(registry)
}

// Versions returns a template and its versions; ref names the template
// without a version, fully or short.
func (s *Service) Versions(ctx context.Context, ref, registry string) (*Template, error) {
	def, err := s.defaultFor(registry)
	if err != nil {
		return nil, err
	}
	r, err := resolve.Parse(ref)
	if err != nil {
		return nil, err
	}
	if r.Version != "" || r.Digest != "" {
		return nil, fmt.Errorf("%q: name a template without a version or digest: %w", ref, derrors.InvalidArgument)
	}
	g, t, _, err := s.resolver.Template(r, def)
	if err != nil {
		return nil, err
	}
	out := TemplateInfo(g.Name, t)
	return &out, nil
}

// Resolve resolves ref, short references against registry ("" for the
// default registry).
func (s *Service) Resolve(ctx context.Context, ref, registry string) (*Resolution, error) {
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	out := ResolutionOf(res)
	return &out, nil
}

func (s *Service) resolve(ctx context.Context, ref, registry string) (*resolve.Resolution, error) {
	def, err := s.defaultFor(registry)
	if err != nil {
		return nil, err
	}
	return s.resolver.ResolveIn(ctx, ref, def)
}

// ResolutionOf converts a resolution to its wire form.
func ResolutionOf(res *resolve.Resolution) Resolution {
	v := res.Version
	return Resolution{
		Resolved:     res.Resolved(),
		Requested:    res.Requested,
		Registry:     res.Ref.Registry(),
		Collection:   res.Ref.Collection,
		Template:     res.Ref.Template,
		Version:      v.Semver,
		Digest:       v.Digest,
		Path:         v.Path,
		Files:        Files(v.Files),
		TemplateFile: v.Template,
		Language:     string(v.Language),
		Schema:       v.Schema,
		Example:      v.Example,
		Note:         res.Note,
	}
}

// Files converts a version's file entries.
func Files(entries []fetch.Entry) []File {
	out := make([]File, len(entries))
	for i, e := range entries {
		out[i] = File{Path: e.Path, Size: e.Size, SHA: e.SHA}
	}
	return out
}

// Findings converts lint findings to their wire form.
func Findings(fs []index.Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = Finding{Path: f.Path, Severity: string(f.Severity), Message: f.Message}
	}
	return out
}

// Template resolves ref and describes the version: schema, example, lint
// findings and the template's other versions.
func (s *Service) Template(ctx context.Context, ref, registry string) (*TemplateVersion, error) {
	return Relisted(ctx, s.resolver, func() (*TemplateVersion, error) { return s.template(ctx, ref, registry) })
}

func (s *Service) template(ctx context.Context, ref, registry string) (*TemplateVersion, error) {
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	out := &TemplateVersion{Resolution: ResolutionOf(res), Findings: Findings(res.Version.Findings), ExampleFile: res.Example}
	out.Findings = append(out.Findings, Findings(s.languageFindings(ctx, res))...)
	out.Versions = TemplateInfo(res.Ref.Registry(), res.Template).Versions
	d := Describer(string(res.Language), res.Schema)
	if res.Schema != "" {
		b, err := res.ReadFile(ctx, res.Schema)
		if err != nil {
			return nil, err
		}
		out.SchemaContent = string(b)
		if d == nil {
			if err := describeSchema(out, b, res.Schema); err != nil {
				out.SchemaError = err.Error()
			}
		}
	}
	if d != nil {
		read, readErr := readsFailing(func(name string) ([]byte, error) { return res.ReadFile(ctx, name) })
		desc, err := d.Describe(ctx, res.Version.Template, read)
		if *readErr != nil {
			return nil, *readErr
		}
		fromDescription(out, desc, err)
	}
	if res.Example != "" {
		b, err := res.ReadFile(ctx, res.Example)
		if err != nil {
			return nil, err
		}
		out.ExampleContent = string(b)
	}
	return out, nil
}

// Describer returns the engine.Describer that describes a version of
// language whose schema file is schema, nil when its DM schema does: a
// DM schema (file.schema) is the description of any template that has
// one, and otherwise a language with a describer (an OpenShift
// Template's parameters, a Helm chart's values) describes its own.
func Describer(language, schema string) engine.Describer {
	if strings.HasSuffix(schema, index.SchemaSuffix) {
		return nil
	}
	return expand.DescriberFor(language)
}

// readsFailing wraps read to keep its last failure other than a missing
// file: a describer's error says what is wrong with the template, but a
// file that could not be read (an outage) fails the request instead.
func readsFailing(read func(string) ([]byte, error)) (func(string) ([]byte, error), *error) {
	var failed error
	return func(name string) ([]byte, error) {
		b, err := read(name)
		if err != nil && !errors.Is(err, derrors.NotFound) {
			failed = err
		}
		return b, err
	}, &failed
}

// fromDescription fills a template version's title, description and
// properties from a describer's answer; err, if not nil, is why the
// template could not describe itself.
func fromDescription(out *TemplateVersion, d *engine.Description, err error) {
	if err != nil {
		out.SchemaError = err.Error()
	}
	if d == nil {
		return
	}
	if out.Title == "" {
		out.Title = d.Title
	}
	if out.Description == "" {
		out.Description = d.Description
	}
	for _, p := range d.Properties {
		out.Properties = append(out.Properties, Property{Name: p.Name, Type: p.Type, Default: p.Default, Description: p.Description, Required: p.Required})
	}
	out.Required = append(out.Required, d.Required...)
}

// describeSchema fills a template version's title, description and
// properties from its schema, compiled as expansion compiles it, so
// describe shows what expansion enforces (DM's int as integer, properties
// in the file's order) and a schema that does not compile is reported.
func describeSchema(out *TemplateVersion, b []byte, file string) error {
	sc, err := schema.Parse(b, file)
	if err != nil {
		return err
	}
	out.Title = strings.TrimSpace(sc.Info.Title)
	out.Description = strings.TrimSpace(sc.Info.Description)
	out.Required = sc.Required
	for _, d := range sc.PropertyDocs() {
		out.Properties = append(out.Properties, Property{Name: d.Name, Type: d.Type, Default: d.Default, Description: strings.TrimSpace(d.Description), Required: d.Required})
	}
	return nil
}

// FileContent is one file of a resolved version.
type FileContent struct {
	// Resolved is the canonical reference of the version.
	Resolved string
	File     File
	Content  []byte
}

// File resolves ref and reads the file at path, relative to the version
// directory.
func (s *Service) File(ctx context.Context, ref, registry, path string) (*FileContent, error) {
	return Relisted(ctx, s.resolver, func() (*FileContent, error) { return s.file(ctx, ref, registry, path) })
}

func (s *Service) file(ctx context.Context, ref, registry, path string) (*FileContent, error) {
	if path == "" {
		return nil, fmt.Errorf("no file path given: %w", derrors.InvalidArgument)
	}
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	e, ok := res.Version.File(path)
	if !ok {
		return nil, fmt.Errorf("%s: no file %q in %s: %w", res.Resolved(), path, res.Version.Path, derrors.NotFound)
	}
	b, err := res.ReadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	return &FileContent{Resolved: res.Resolved(), File: File{Path: e.Path, Size: e.Size, SHA: e.SHA}, Content: b}, nil
}

// ReadFile is File's content alone, for Backend.
func (s *Service) ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error) {
	f, err := s.File(ctx, ref, registry, path)
	if err != nil {
		return nil, err
	}
	return f.Content, nil
}

// Search match kinds, best first: what a word of the query matched.
const (
	matchName        = "name"
	matchTitle       = "title"
	matchCollection  = "collection"
	matchTag         = "tag"
	matchProperty    = "property"
	matchDescription = "description"
	matchPath        = "path"
)

// Search finds templates matching every word of q, case-insensitively:
// in the name, the collection, the title, tags, property names and
// description of the latest version's schema (an OpenShift template's
// metadata and parameters), or a file path. Results are ranked by the
// worst-matching word: exact name, name prefix, name part, title,
// collection, tag, property, description, path; then by reference.
func (s *Service) Search(ctx context.Context, q, registry string) (*SearchResults, error) {
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 0 {
		return nil, fmt.Errorf("empty search: %w", derrors.InvalidArgument)
	}
	sel, err := s.selectRegistries(registry, "")
	if err != nil {
		return nil, err
	}
	type scored struct {
		r     SearchResult
		score int
	}
	var hits []scored
	for _, g := range sel.regs {
		snap := g.Snapshot()
		if snap == nil {
			continue
		}
		ix := s.searchIndex(snap)
		for i := range ix.entries {
			e := &ix.entries[i]
			t := e.t
			if sel.hasColl && t.Collection != sel.collection {
				continue
			}
			meta := e.meta.Load()
			if meta == nil {
				meta = s.searchMeta(ctx, g, e.latest)
				if meta.read {
					e.meta.Store(meta)
				}
			}
			score, kind := e.match(meta, words)
			if kind == "" {
				continue
			}
			info := TemplateInfo(g.Name, t)
			r := SearchResult{Ref: info.Ref, Registry: g.Name, Collection: t.Collection, Template: t.Name, Latest: info.Latest, Match: kind,
				Title: meta.Title, Description: meta.Description, Versions: make([]string, 0, len(t.Versions))}
			for _, v := range t.Versions {
				r.Versions = append(r.Versions, v.Semver)
			}
			hits = append(hits, scored{r, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score < hits[j].score
		}
		return hits[i].r.Ref < hits[j].r.Ref
	})
	out := &SearchResults{Results: make([]SearchResult, len(hits))}
	for i, h := range hits {
		out.Results[i] = h.r
	}
	return out, nil
}

// VersionMeta is what a version says of itself beyond its name: the
// title, description, tags and property names of its schema, or of an
// OpenShift template's metadata and parameters.
type VersionMeta struct {
	Title, Description string
	Tags               []string
	Properties         []string
	// lower holds the fields lower-cased for matching:
	// title, description, tags..., properties...
	lower []string
	// read reports that the version's files were read (not a passing
	// fault), so the result may be kept.
	read bool
}

// searchMeta returns the metadata of version v, cached by content
// digest, so a version's schema is read once however often it is searched.
func (s *Service) searchMeta(ctx context.Context, g *index.Registry, v *index.Version) *VersionMeta {
	if v == nil {
		return &VersionMeta{read: true}
	}
	if m, ok := s.metas.Get(v.Digest); ok {
		return m
	}
	m, err := readMeta(ctx, g, v)
	if err != nil {
		return m // not cached: a passing fault is retried next time
	}
	m.read = true
	s.metas.Add(v.Digest, m)
	return m
}

// searchIndex is what Search matches in one snapshot, lower-cased once:
// a query then costs string comparisons, not allocations.
type searchIndex struct {
	entries []searchEntry
}

// searchEntry is one template of a searchIndex.
type searchEntry struct {
	t          *index.Template
	latest     *index.Version // the highest stable version, else the highest
	name, coll string
	paths      string // every file path of every version, "\n"-separated
	meta       atomic.Pointer[VersionMeta]
}

// searchIndex returns snap's search index, building it on first use.
func (s *Service) searchIndex(snap *index.Snapshot) *searchIndex {
	if ix, ok := s.searchIdx.Get(snap); ok {
		return ix
	}
	all := snap.AllTemplates()
	ix := &searchIndex{entries: make([]searchEntry, len(all))}
	for i, t := range all {
		e := &ix.entries[i]
		e.t, e.name, e.coll = t, strings.ToLower(t.Name), strings.ToLower(t.Collection)
		seen := map[string]bool{}
		var b strings.Builder
		b.WriteString(strings.ToLower(t.Path))
		for _, v := range t.Versions {
			for _, f := range v.Files {
				if !seen[f.Path] {
					seen[f.Path] = true
					b.WriteByte('\n')
					b.WriteString(strings.ToLower(f.Path))
				}
			}
		}
		e.paths = b.String()
		for j := len(t.Versions) - 1; j >= 0; j-- {
			if e.latest == nil || !t.Versions[j].Prerelease() {
				e.latest = t.Versions[j]
				if !e.latest.Prerelease() {
					break
				}
			}
		}
	}
	s.searchIdx.Add(snap, ix)
	return ix
}

// readMeta reads a version's schema (or OpenShift template) for its
// metadata.
func readMeta(ctx context.Context, g *index.Registry, v *index.Version) (*VersionMeta, error) {
	var tv TemplateVersion
	m := &VersionMeta{}
	read := func(name string) ([]byte, error) {
		e, ok := v.File(name)
		if !ok {
			return nil, fmt.Errorf("no file %q: %w", name, derrors.NotFound)
		}
		return g.Blob(ctx, e.SHA)
	}
	if d := Describer(string(v.Language), v.Schema); d != nil {
		read, readErr := readsFailing(read)
		desc, err := d.Describe(ctx, v.Template, read)
		if *readErr != nil {
			return m, *readErr
		}
		fromDescription(&tv, desc, err)
		if desc != nil {
			m.Tags = desc.Tags
		}
	} else if v.Schema != "" {
		b, err := read(v.Schema)
		if err != nil {
			return m, err
		}
		describeSchema(&tv, b, v.Schema) // a broken schema still has a name
		m.Tags = schemaTags(b)
	}
	m.Title, m.Description = tv.Title, tv.Description
	m.lower = append(m.lower, strings.ToLower(m.Title), strings.ToLower(m.Description))
	for _, tag := range m.Tags {
		m.lower = append(m.lower, strings.ToLower(tag))
	}
	for _, p := range tv.Properties {
		m.Properties = append(m.Properties, p.Name)
		m.lower = append(m.lower, strings.ToLower(p.Name))
	}
	return m, nil
}

// schemaTags reads info.tags of a schema: a list of strings, or one
// comma-separated string.
func schemaTags(b []byte) []string {
	var doc struct {
		Info struct {
			Tags any `json:"tags"`
		} `json:"info"`
	}
	if yaml.Unmarshal(b, &doc) != nil {
		return nil
	}
	return tagList(doc.Info.Tags)
}

func tagList(v any) []string {
	var tags []string
	switch v := v.(type) {
	case string:
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				tags = append(tags, t)
			}
		}
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok && s != "" {
				tags = append(tags, s)
			}
		}
	}
	return tags
}

// match scores a template against every word: the worst match of any
// word decides (see Search for the order).
func (e *searchEntry) match(meta *VersionMeta, words []string) (int, string) {
	nTags := len(meta.Tags)
	inMeta := func(w string, from, to int) bool {
		for _, f := range meta.lower[min(from, len(meta.lower)):min(to, len(meta.lower))] {
			if strings.Contains(f, w) {
				return true
			}
		}
		return false
	}
	worst := 0
	for _, w := range words {
		score := -1
		switch {
		case e.name == w:
			score = 0
		case strings.HasPrefix(e.name, w):
			score = 1
		case strings.Contains(e.name, w):
			score = 2
		case inMeta(w, 0, 1):
			score = 3
		case strings.Contains(e.coll, w):
			score = 4
		case inMeta(w, 2, 2+nTags):
			score = 5
		case inMeta(w, 2+nTags, len(meta.lower)):
			score = 6
		case inMeta(w, 1, 2):
			score = 7
		case strings.Contains(e.paths, w):
			score = 8
		}
		if score < 0 {
			return 0, ""
		}
		worst = max(worst, score)
	}
	return worst, [...]string{matchName, matchName, matchName, matchTitle, matchCollection, matchTag, matchProperty, matchDescription, matchPath}[worst]
}
