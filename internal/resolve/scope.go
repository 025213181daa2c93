package resolve

import (
	"context"
	"encoding/hex"

	"github.com/dmhq/dm/internal/index"
)

// A Scope is who asks, as far as the registries it may see: those visible
// everywhere (flags, the configuration file, ClusterRegistries), and the
// namespaced registries of Namespace that Allow lets it read. A context
// without a Scope is an anonymous caller's: it sees only the registries
// visible everywhere, so a path that drops the context fails closed.
type Scope struct {
	// Namespace is the namespace whose registries the caller asks for;
	// "" asks for none.
	Namespace string
	// Allow reports whether the caller may read g, a registry of
	// Namespace (registryd asks the apiserver whether the caller may get
	// the Registry object). Nil allows none.
	Allow func(ctx context.Context, g *index.Registry) bool
	// Who identifies the caller for what is cached by who asks (an
	// expansion worker's resolutions), with Namespace: two Scopes of one
	// namespace and Who see the same registries. registryd uses a hash of
	// the caller's token.
	Who [16]byte
}

// allows reports whether s lets its caller read g.
func (s *Scope) allows(ctx context.Context, g *index.Registry) bool {
	if g.Namespace == "" {
		return true
	}
	return s != nil && g.Namespace == s.Namespace && s.Allow != nil && s.Allow(ctx, g)
}

type scopeKey struct{}

// WithScope returns ctx carrying s.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, &s)
}

// ScopeFrom returns the Scope ctx carries, or nil for an anonymous caller.
func ScopeFrom(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// ScopeKey returns who ctx's caller is, for what is cached by who asks:
// its Scope's namespace and Who, "" for an anonymous caller. It is made
// only when asked for (expansions), not on every resolve.
func ScopeKey(ctx context.Context) string {
	if s := ScopeFrom(ctx); s != nil && s.Namespace != "" {
		return s.Namespace + "\x00" + hex.EncodeToString(s.Who[:])
	}
	return ""
}

// Trusted returns a Scope that sees every registry of namespace ns: the
// namespace's own view, for what registryd does on a namespace's behalf
// (testing its templates' examples).
func Trusted(ns string) Scope {
	// Its Who is no token's hash.
	return Scope{Namespace: ns, Who: [16]byte{'t', 'r', 'u', 's', 't', 'e', 'd'}, Allow: func(context.Context, *index.Registry) bool { return true }}
}

// Visible reports whether ctx's caller may read g.
func Visible(ctx context.Context, g *index.Registry) bool {
	return ScopeFrom(ctx).allows(ctx, g)
}
