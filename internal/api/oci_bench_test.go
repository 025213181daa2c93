package api_test

import (
	"context"
	"testing"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// sources are the example registry served by the GitHub test server and
// by an OCI registry on loopback, with their request counts.
type sources struct {
	gh     *githubtest.Server
	reg    *ocitest.Registry
	ghSpec api.RegistrySpec
	oci    api.RegistrySpec
}

func exampleSources(b *testing.B) *sources {
	b.Helper()
	s := &sources{}
	s.gh = githubtest.New(map[string]string{"acme/templates": githubtest.NewRepoFS(b, dm.ExampleRegistry())})
	b.Cleanup(s.gh.Close)
	s.reg = ocitest.New(b, ocitest.Options{})
	p, err := oci.NewPusher(oci.Options{URL: s.reg.URL + "/acme/templates", PlainHTTP: true, Keychain: oci.DockerKeychain(b.TempDir())})
	if err != nil {
		b.Fatal(err)
	}
	ocitest.PushFS(b, p, dm.ExampleRegistry())
	s.ghSpec = api.RegistrySpec{Prefix: "github.com/acme/templates", GitHub: &api.GitHubSpec{Owner: "acme", Repo: "templates", APIURL: s.gh.URL}}
	s.oci = api.RegistrySpec{Prefix: "github.com/acme/templates", OCI: &api.OCISpec{URL: s.reg.URL + "/acme/templates", PlainHTTP: true, DockerConfig: []byte("{}")}}
	return s
}

// open opens and indexes spec's registry with a cache directory of its
// own, and returns a resolver over it.
func open(b *testing.B, spec api.RegistrySpec, cacheDir string) (*index.Registry, *resolve.Resolver) {
	b.Helper()
	g, err := api.OpenRegistry(spec, api.Setup{CacheDir: cacheDir, Checker: &sigstore.Checker{}})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	def, _ := resolve.ParseRegistry(spec.Prefix)
	return g, resolve.New(def, g)
}

// resolveRead resolves redis:v1 and reads its template file: what a
// resolve and an expansion's first read cost.
func resolveRead(b *testing.B, r *resolve.Resolver) {
	res, err := r.Resolve(context.Background(), "redis:v1")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := res.ReadFile(context.Background(), res.Version.Template); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRegistrySources compares an OCI registry with a GitHub
// registry of the same templates (the example registry): a cold index and
// resolve (a new process without a cache), an unchanged refresh, and a
// warm resolve and read, with the requests each costs.
func BenchmarkRegistrySources(b *testing.B) {
	s := exampleSources(b)
	requests := func(kind string) int {
		if kind == "oci" {
			_, n := s.reg.Requests()
			return n
		}
		return s.gh.Requests()
	}
	reset := func(kind string) {
		if kind == "oci" {
			s.reg.Reset()
		} else {
			s.gh.ResetCounts()
		}
	}
	for _, kind := range []string{"github", "oci"} {
		spec := s.ghSpec
		if kind == "oci" {
			spec = s.oci
		}
		b.Run(kind+"/cold", func(b *testing.B) {
			reset(kind)
			for b.Loop() {
				_, r := open(b, spec, "")
				resolveRead(b, r)
			}
			b.ReportMetric(float64(requests(kind))/float64(b.N), "requests/op")
		})
		b.Run(kind+"/unchanged-refresh", func(b *testing.B) {
			g, _ := open(b, spec, b.TempDir())
			reset(kind)
			for b.Loop() {
				if err := g.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(requests(kind))/float64(b.N), "requests/op")
		})
		b.Run(kind+"/warm", func(b *testing.B) {
			_, r := open(b, spec, b.TempDir())
			resolveRead(b, r) // the file is cached from here on
			reset(kind)
			for b.Loop() {
				resolveRead(b, r)
			}
			b.ReportMetric(float64(requests(kind))/float64(b.N), "requests/op")
		})
	}
}
