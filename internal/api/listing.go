package api

import (
	"context"
	"fmt"
	"regexp"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

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

// RegistryInfo describes g; def is the default registry.
func RegistryInfo(g *index.Registry, def resolve.Registry) Registry {
	st := g.Status()
	r := Registry{
		Name:        g.Name,
		Kind:        g.Kind,
		Location:    g.Location,
		Default:     !def.IsZero() && def.Prefix() == g.Name,
		Namespace:   g.Namespace,
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
	for _, g := range s.resolver.Visible(ctx) {
		out.Registries = append(out.Registries, RegistryInfo(g, def))
	}
	return out, nil
}

// Registry describes one registry with its lint findings.
func (s *Service) Registry(ctx context.Context, name string) (*Registry, error) {
	g, err := s.registry(ctx, name)
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
	g, err := s.registry(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := g.Refresh(ctx); err != nil {
		return nil, err
	}
	r := RegistryInfo(g, s.resolver.Default)
	return &r, nil
}

// selection is what a listing call covers: one registry (and perhaps one
// collection) or all.
type selection struct {
	regs       []*index.Registry
	collection string
	hasColl    bool
}

func (s *Service) selectRegistries(ctx context.Context, registry, collection string) (selection, error) {
	var sel selection
	if registry == "" {
		sel.regs = s.resolver.Visible(ctx)
	} else {
		g, err := resolve.ParseRegistry(registry)
		if err != nil {
			return sel, err
		}
		reg, err := s.registry(ctx, g.Prefix())
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
	sel, err := s.selectRegistries(ctx, registry, "")
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
		// A mirror copies the file: read as the version's files are.
		SignatureFile: v.Signature != nil,
	}
}

// Templates lists templates with their versions.
func (s *Service) Templates(ctx context.Context, q TemplateQuery) (*TemplateList, error) {
	sel, err := s.selectRegistries(ctx, q.Registry, q.Collection)
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
	g, t, _, err := s.resolver.Template(ctx, r, def)
	if err != nil {
		return nil, err
	}
	out := TemplateInfo(g.Name, t)
	return &out, nil
}
