package kubereg

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/server"
)

// BenchmarkResolve: GET /v1/resolve in-process, of a registry visible
// everywhere without a token against a namespace's with a JWT-sized token
// reviewed once (the Authorizer's caches warm): what authorization adds to
// the hot path. make bench-tenancy measures the same over HTTP.
func BenchmarkResolve(b *testing.B) {
	ctx := context.Background()
	reg := func(g *index.Registry) *index.Registry {
		g.Source = fetch.NewLocal(fstest.MapFS{"t/v1.0.0/t.jinja": {Data: []byte("resources: []\n")}})
		if err := g.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
		return g
	}
	shared := reg(&index.Registry{Name: "github.com/acme/shared"})
	private := reg(&index.Registry{Name: "github.com/acme/private", Namespace: "team-a", Object: "private"})
	rv := &reviewer{}
	a := newAuthorizer(rv.client(), AuthorizerOptions{})
	s := server.New(server.Options{Resolver: resolve.New(resolve.Registry{}, shared, private), Authorizer: a})
	// A service account token is a JWT of about a kilobyte.
	token := "alice"
	jwt := "alice." + strings.Repeat("x", 1000)
	for _, c := range []struct {
		name, target, token string
	}{
		{"anonymous", "/v1/resolve?ref=github.com/acme/shared/t:v1", ""},
		{"authorized", "/v1/resolve?ref=github.com/acme/private/t:v1&namespace=team-a", token},
		{"authorized-jwt-size", "/v1/resolve?ref=github.com/acme/private/t:v1&namespace=team-a", jwt},
	} {
		req := httptest.NewRequest(http.MethodGet, c.target, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
