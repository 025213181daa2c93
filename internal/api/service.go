package api

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/dmhq/dm/internal/expand/schema"

	"github.com/dmhq/dm/internal/expand/openshift"

	"github.com/dmhq/dm/internal/expand"

	"github.com/dmhq/dm/internal/derrors"
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
}

// NewService returns a Service over r. Its expander, configured by eo
// (limits, AllowURLs; the resolver is r), keeps compiled templates across
// calls.
func NewService(r *resolve.Resolver, eo expand.Options) *Service {
	eo.Resolver = r
	return &Service{resolver: r, expander: expand.New(eo)}
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
	res, err := s.resolve(ctx, ref, registry)
	if err != nil {
		return nil, err
	}
	out := &TemplateVersion{Resolution: ResolutionOf(res), Findings: Findings(res.Version.Findings), ExampleFile: res.Example}
	out.Versions = TemplateInfo(res.Ref.Registry(), res.Template).Versions
	if res.Schema != "" {
		b, err := res.ReadFile(ctx, res.Schema)
		if err != nil {
			return nil, err
		}
		out.SchemaContent = string(b)
		if err := describeSchema(out, b, res.Schema); err != nil {
			out.SchemaError = err.Error()
		}
	}
	if res.Schema == "" && res.Language == index.OpenShift {
		// An OpenShift template's parameters are its properties.
		b, err := res.ReadFile(ctx, res.Version.Template)
		if err != nil {
			return nil, err
		}
		describeParameters(out, b)
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

// describeParameters fills a template version's title, description and
// properties from an OpenShift template's metadata and parameters.
func describeParameters(out *TemplateVersion, src []byte) {
	t, err := openshift.Parse(src)
	if err != nil {
		out.SchemaError = err.Error()
		return
	}
	if out.Title == "" {
		if n, ok := t.Metadata["name"].(string); ok {
			out.Title = n
		}
	}
	if ann, ok := t.Metadata["annotations"].(map[string]any); ok && out.Description == "" {
		out.Description, _ = ann["description"].(string)
	}
	for _, p := range t.Parameters {
		prop := Property{Name: p.Name, Type: p.Type, Description: p.Description, Required: p.Required}
		if prop.Type == "" {
			prop.Type = "string"
		}
		switch {
		case p.Value != "":
			prop.Default = p.Value
		case p.Generate != "":
			prop.Default = "generated: " + p.From
		}
		if p.DisplayName != "" && prop.Description == "" {
			prop.Description = p.DisplayName
		}
		out.Properties = append(out.Properties, prop)
		if p.Required {
			out.Required = append(out.Required, p.Name)
		}
	}
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

// Search match kinds, best first.
const (
	matchName       = "name"
	matchCollection = "collection"
	matchPath       = "path"
)

// Search finds templates whose name, collection or file paths contain q,
// case-insensitively; every word of q must match. Results are ordered by
// how well they match (name before collection before path), then by
// reference.
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
		for _, t := range snap.AllTemplates() {
			if sel.hasColl && t.Collection != sel.collection {
				continue
			}
			score, kind := matchTemplate(t, words)
			if kind == "" {
				continue
			}
			info := TemplateInfo(g.Name, t)
			r := SearchResult{Ref: info.Ref, Registry: g.Name, Collection: t.Collection, Template: t.Name, Latest: info.Latest, Match: kind, Versions: make([]string, 0, len(t.Versions))}
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

// matchTemplate scores a template against every word: the worst match of
// any word decides. 0 is an exact name, 1 a name part, 2 the collection,
// 3 a file path.
func matchTemplate(t *index.Template, words []string) (int, string) {
	name, coll := strings.ToLower(t.Name), strings.ToLower(t.Collection)
	worst := 0
	for _, w := range words {
		score := -1
		switch {
		case name == w:
			score = 0
		case strings.Contains(name, w):
			score = 1
		case strings.Contains(coll, w):
			score = 2
		case pathsContain(t, w):
			score = 3
		}
		if score < 0 {
			return 0, ""
		}
		worst = max(worst, score)
	}
	return worst, [...]string{matchName, matchName, matchCollection, matchPath}[worst]
}

func pathsContain(t *index.Template, w string) bool {
	if strings.Contains(strings.ToLower(t.Path), w) {
		return true
	}
	for _, v := range t.Versions {
		for _, f := range v.Files {
			if strings.Contains(strings.ToLower(f.Path), w) {
				return true
			}
		}
	}
	return false
}
