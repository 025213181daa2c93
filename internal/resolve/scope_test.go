package resolve_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// TestScope: a namespace's registry resolves only for a caller whose
// scope names the namespace and allows it; a registry visible everywhere
// is found first, whoever asks; errors name only what the caller may see.
func TestScope(t *testing.T) {
	namespaced := func(ns, object, name, text string) *index.Registry {
		g := registry(name, map[string]string{"cm/v1.0.0/cm.jinja": text})
		g.Namespace, g.Object = ns, object
		return g
	}
	everywhere := registry("github.com/acme/shared", map[string]string{"cm/v1.0.0/cm.jinja": "shared"})
	teamA := namespaced("team-a", "private", "github.com/acme/private", "a")
	teamB := namespaced("team-b", "private", "github.com/acme/private", "b")
	// A namespace's registry of a prefix visible everywhere is never
	// found (registryd refuses such objects; the resolver holds even so).
	shadow := namespaced("team-b", "shadow", "github.com/acme/shared", "shadow")
	r := resolve.New(resolve.Registry{}, everywhere, teamA, teamB, shadow)

	allowAll := func(ns string) context.Context { return resolve.WithScope(context.Background(), resolve.Trusted(ns)) }
	denyAll := resolve.WithScope(context.Background(), resolve.Scope{Namespace: "team-a", Who: [16]byte{1},
		Allow: func(context.Context, *index.Registry) bool { return false }})
	onlyObject := func(name string) context.Context {
		return resolve.WithScope(context.Background(), resolve.Scope{Namespace: "team-a", Who: [16]byte{2},
			Allow: func(_ context.Context, g *index.Registry) bool { return g.Object == name }})
	}
	tests := []struct {
		name string
		ctx  context.Context
		ref  string
		want *index.Registry // nil: not found
	}{
		{"anonymous, everywhere", context.Background(), "github.com/acme/shared/cm:v1", everywhere},
		{"anonymous, a namespace's", context.Background(), "github.com/acme/private/cm:v1", nil},
		{"team-a", allowAll("team-a"), "github.com/acme/private/cm:v1", teamA},
		{"team-b, the same prefix", allowAll("team-b"), "github.com/acme/private/cm:v1", teamB},
		{"team-b, a prefix visible everywhere", allowAll("team-b"), "github.com/acme/shared/cm:v1", everywhere},
		{"team-c", allowAll("team-c"), "github.com/acme/private/cm:v1", nil},
		{"team-a, not allowed", denyAll, "github.com/acme/private/cm:v1", nil},
		{"team-a, allowed that object", onlyObject("private"), "github.com/acme/private/cm:v1", teamA},
		{"team-a, allowed another object", onlyObject("other"), "github.com/acme/private/cm:v1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Resolve(tt.ctx, tt.ref)
			if tt.want == nil {
				if !errors.Is(err, derrors.NotFound) {
					t.Fatalf("resolved %v, %v; want not found", res, err)
				}
				// The error lists what the caller may see, never a
				// namespace's registry it may not.
				_, listed, _ := strings.Cut(err.Error(), "configured:")
				if strings.Contains(err.Error(), "team-") || strings.Contains(listed, "acme/private") {
					t.Errorf("error names what the caller may not see: %v", err)
				}
				return
			}
			if err != nil || res.Registry != tt.want {
				t.Fatalf("resolved %v in %v, %v; want %s of %q", res, res.Registry, err, tt.want.Name, tt.want.Namespace)
			}
		})
	}
	// Listings: what each caller may see.
	names := func(ctx context.Context) string {
		var out []string
		for _, g := range r.Visible(ctx) {
			out = append(out, g.Key())
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		ctx  context.Context
		want string
	}{
		{context.Background(), "github.com/acme/shared"},
		{allowAll("team-a"), "team-a/github.com/acme/private github.com/acme/shared"},
		{allowAll("team-b"), "team-b/github.com/acme/private github.com/acme/shared"},
		{denyAll, "github.com/acme/shared"},
	} {
		if got := names(tt.ctx); got != tt.want {
			t.Errorf("Visible = %q, want %q", got, tt.want)
		}
	}
	if len(r.Registries()) != 4 {
		t.Errorf("Registries has %d, want all 4", len(r.Registries()))
	}
	// Keys tell namespaces' registries apart; Remove takes one out.
	if g, ok := r.ByKey("team-b/github.com/acme/private"); !ok || g != teamB {
		t.Errorf("ByKey: %v %v", g, ok)
	}
	gen := r.Generation()
	if !r.Remove(teamB) || r.Generation() == gen {
		t.Error("Remove of team-b's registry")
	}
	if _, err := r.Resolve(allowAll("team-b"), "github.com/acme/private/cm:v1"); !errors.Is(err, derrors.NotFound) {
		t.Errorf("team-b after its registry went: %v", err)
	}
	if res, err := r.Resolve(allowAll("team-a"), "github.com/acme/private/cm:v1"); err != nil || res.Registry != teamA {
		t.Errorf("team-a after team-b's registry went: %v %v", res, err)
	}
}
