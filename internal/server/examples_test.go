package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// TestExamplesPendingGitHub: a GitHub registry's examples are tested once
// its index has settled (a minute); until then GET /v1/template says
// pending and registryd_example_tests{status="pending"} counts them.
func TestExamplesPendingGitHub(t *testing.T) {
	_, _, reg := githubFixture(t)
	m := NewMetrics()
	def, _ := resolve.ParseRegistry(prefix)
	s := New(Options{Resolver: resolve.New(def, reg), Metrics: m})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e := &env{srv: s, http: hs, reg: reg, metrics: m}
	// Before the tester has seen the index, the version's example is
	// pending too.
	if _, body := e.do(t, "GET", "/v1/template?ref=redis:v1.0", nil); !bytes.Contains(body, []byte(`"example":{"status":"pending"}`)) {
		t.Errorf("/v1/template before the first walk: %s", body)
	}
	go s.Run(t.Context())
	deadline := time.Now().Add(10 * time.Second)
	for s.Examples().Counts().Pending == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no example pending within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := 0
	for _, tm := range reg.Snapshot().AllTemplates() {
		for _, v := range tm.Versions {
			if v.Example != "" && v.Problem == "" {
				want++
			}
		}
	}
	if _, body := e.do(t, "GET", "/v1/template?ref=redis:v1.0", nil); !bytes.Contains(body, []byte(`"example":{"status":"pending"}`)) {
		t.Errorf("/v1/template: %s", body)
	}
	_, body := e.do(t, "GET", "/metrics", nil)
	for _, w := range []string{fmt.Sprintf(`registryd_example_tests{status="pending"} %d`, want), `registryd_example_tests{status="ok"} 0`} {
		if !bytes.Contains(body, []byte(w)) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
}

// githubFixture serves the fixture from the GitHub test server as the
// registry acme/tpl tracking main, indexed once; repo is the git
// repository served.
func githubFixture(t *testing.T) (gh *githubtest.Server, repo string, reg *index.Registry) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, content := range fixture {
		fsys[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	repo = githubtest.NewRepoFS(t, fsys)
	gh = githubtest.New(map[string]string{"acme/tpl": repo})
	t.Cleanup(gh.Close)
	reg, err := api.OpenRegistry(api.RegistrySpec{Prefix: prefix, GitHub: &api.GitHubSpec{Owner: "acme", Repo: "tpl", Branch: "main", APIURL: gh.URL}}, api.Setup{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return gh, repo, reg
}
