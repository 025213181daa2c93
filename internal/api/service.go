package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
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
	// TemplateInputs describes a version as Template does, perhaps
	// without the findings of its language's own lint rules: what asking
	// for a template's inputs reads (its language and schema).
	TemplateInputs(ctx context.Context, ref, registry string) (*TemplateVersion, error)
	Resolve(ctx context.Context, ref, registry string) (*Resolution, error)
	Search(ctx context.Context, q, registry string) (*SearchResults, error)
	Expand(ctx context.Context, req *ExpandRequest) (*ExpandResult, error)
	// ReadFile reads the file at path of the version ref resolves to.
	ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error)
}

// Service answers the API from a resolver's registries, in-process:
// listings (listing.go), descriptions and files of versions (describe.go),
// search (search.go) and expansion (expand.go).
type Service struct {
	resolver *resolve.Resolver
	expander *expand.Expander
	search   *searcher
	// lints caches the findings of languages' own lint rules by version.
	lints *lru.Cache[contentKey, []index.Finding]
}

// contentKey keys what is cached of a version's content: the identity of
// the registry that listed it (Version.Source: another registry's listing
// may name the same hashes), its digest and its directory.
type contentKey struct{ source, digest, path string }

func contentKeyOf(v *index.Version) contentKey { return contentKey{v.Source, v.Digest, v.Path} }

// Forget drops what the service caches of the content of the registry of
// identity id (index.Registry.ID), no longer served: search metadata and
// indexes, lint findings and the expander's files and compiled templates.
func (s *Service) Forget(id string) {
	for _, k := range s.lints.Keys() {
		if k.source == id {
			s.lints.Remove(k)
		}
	}
	s.search.forget(id)
	s.expander.Forget(id)
}

// NewService returns a Service over r. Its expander, configured by eo
// (limits, AllowURLs; the resolver is r), keeps compiled templates across
// calls.
func NewService(r *resolve.Resolver, eo expand.Options) *Service {
	eo.Resolver = r
	lints, _ := lru.New[contentKey, []index.Finding](lintCacheEntries) // fails only for size <= 0
	return &Service{resolver: r, expander: expand.New(eo), search: newSearcher(), lints: lints}
}

// Relisted runs op and, when it failed because a local directory changed
// after it was listed (a file deleted or edited while registryd serves),
// lists r's local registries again and runs op once more, so the answer
// comes from the directory as it is now and is never a 500.
func Relisted[T any](ctx context.Context, r *resolve.Resolver, op func() (T, error)) (T, error) {
	v, err := op()
	if r == nil || !errors.Is(err, fetch.ErrChanged) {
		return v, err
	}
	for _, g := range r.Visible(ctx) {
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

// registry finds a registry that ctx's caller may see by name,
// [host/]owner/repo.
func (s *Service) registry(ctx context.Context, name string) (*index.Registry, error) {
	if g, ok := s.resolver.Registry(ctx, name); ok {
		return g, nil
	}
	sel, err := resolve.ParseRegistry(name)
	if err == nil && sel.Collection == "" {
		if g, ok := s.resolver.Registry(ctx, sel.Prefix()); ok {
			return g, nil
		}
	}
	return nil, fmt.Errorf("registry %q is not configured (configured: %s): %w", name, strings.Join(s.names(ctx), ", "), derrors.NotFound)
}

// names lists the registries ctx's caller may see.
func (s *Service) names(ctx context.Context) []string {
	var names []string
	for _, g := range s.resolver.Visible(ctx) {
		names = append(names, g.Name)
	}
	return names
}

// defaultFor returns the default registry for short references: registry
// when given, else the resolver's.
func (s *Service) defaultFor(registry string) (resolve.Registry, error) {
	if registry == "" {
		return s.resolver.Default, nil
	}
	return resolve.ParseRegistry(registry)
}

// DefaultRegistryFor is the default registry for short references:
// registry when given, else the resolver's.
func (s *Service) DefaultRegistryFor(registry string) (resolve.Registry, error) {
	return s.defaultFor(registry)
}

func (s *Service) resolve(ctx context.Context, ref, registry string) (*resolve.Resolution, error) {
	def, err := s.defaultFor(registry)
	if err != nil {
		return nil, err
	}
	return s.resolver.ResolveIn(ctx, ref, def)
}
