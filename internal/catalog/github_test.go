package catalog

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// kiosk is a template whose example imports the template file beside it,
// the layout the registry conventions prescribe, and which expands
// through the registry's redis.
var kiosk = map[string]string{
	"shop/kiosk/v1.0.9/kiosk.jinja": `resources:
- name: {{ env['name'] }}-screen
  type: v1/ConfigMap
  properties:
    data: {greeting: {{ properties['greeting'] }}}
- name: {{ env['name'] }}-cache
  type: redis:v1.0
`,
	"shop/kiosk/v1.0.9/kiosk.jinja.schema": `info: {title: Kiosk}
required: [greeting]
properties:
  greeting: {type: string, default: hello}
`,
	"shop/kiosk/v1.0.9/example.yaml": `imports:
- path: kiosk.jinja
resources:
- name: lobby
  type: kiosk.jinja
`,
	// An import that is not in the version directory.
	"shop/stall/v1.0.0/stall.jinja":  "resources: []\n",
	"shop/stall/v1.0.0/example.yaml": "imports:\n- path: ../../kiosk/v1.0.9/kiosk.jinja\nresources: []\n",
}

// githubEnv serves registry-example and kiosk from the GitHub test
// server, over a real git repository.
func githubEnv(t *testing.T, settle time.Duration) *testEnv {
	t.Helper()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(dm.ExampleRegistry(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dm.ExampleRegistry(), p)
		fsys[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range kiosk {
		fsys[p] = &fstest.MapFile{Data: []byte(c), Mode: 0o644}
	}
	gh := githubtest.New(map[string]string{"acme/templates": githubtest.NewRepoFS(t, fsys)})
	t.Cleanup(gh.Close)
	spec := api.RegistrySpec{Prefix: dm.ExampleRegistryPrefix, GitHub: &api.GitHubSpec{Owner: "acme", Repo: "templates", Branch: "main", APIURL: gh.URL}}
	return serveRegistry(t, spec, settle)
}

// TestExamplesGitHub: the examples of a GitHub registry are tested, an
// example that imports its template included, and feed the catalog's
// status, Uses and Used by.
func TestExamplesGitHub(t *testing.T) {
	e := githubEnv(t, -1)
	c := e.settle(t)
	if c.Error != 1 {
		for _, tm := range e.reg.Snapshot().AllTemplates() {
			for _, v := range tm.Versions {
				if r, _ := e.examples.Result(e.reg.Name, v.Digest); r.Status == StatusError {
					t.Logf("%s: %s", r.Ref, r.Error)
				}
			}
		}
		t.Fatalf("counts %+v, want one error (stall)", c)
	}
	ctx := context.Background()
	tv, err := e.svc.Template(ctx, "shop/kiosk:v1.0.9", "")
	if err != nil {
		t.Fatal(err)
	}
	st := e.examples.Of(tv)
	if st == nil || st.Status != StatusOK || !slices.Contains(st.Uses, "github.com/acme/templates/redis:v1.0.2") {
		t.Fatalf("kiosk's example: %+v, want ok using redis:v1.0.2", st)
	}
	tv, err = e.svc.Template(ctx, "shop/stall:v1.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if st := e.examples.Of(tv); st == nil || st.Status != StatusError || !strings.Contains(st.Error, "shop/stall/v1.0.0/example.yaml") || !strings.Contains(st.Error, "leaves the version directory") {
		t.Errorf("stall's example: %+v, want an error naming the import that leaves its version", st)
	}
	pages := []struct{ path, want string }{
		{"/t/shop/kiosk:v1.0.9", `id="example-status">ok<`},
		{"/t/shop/kiosk:v1.0.9", `href="/t/github.com/acme/templates/redis:v1.0.2`},
		{"/t/redis:v1.0.2", `href="/t/github.com/acme/templates/shop/kiosk:v1.0.9`},
		{"/t/redis:v1.0.2", `href="/t/github.com/acme/templates/apps/guestbook:`},
	}
	for _, p := range pages {
		if _, body := get(t, e.url+p.path); !strings.Contains(body, p.want) {
			t.Errorf("%s lacks %s", p.path, p.want)
		}
	}
}

// TestExamplesPendingGitHub: until a GitHub registry's index settles, its
// versions' examples are pending, in the counts and in each version's
// status.
func TestExamplesPendingGitHub(t *testing.T) {
	e := githubEnv(t, time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for e.examples.Counts().Pending == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no example pending: %+v", e.examples.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := 0
	for _, tm := range e.reg.Snapshot().AllTemplates() {
		for _, v := range tm.Versions {
			if v.Example != "" && v.Problem == "" {
				want++
			}
		}
	}
	if c := e.examples.Counts(); c != (ExampleCounts{Pending: want}) {
		t.Errorf("counts %+v, want %d pending", c, want)
	}
	if n := e.counter.n.Load(); n != 0 {
		t.Errorf("%d examples expanded before the index settled", n)
	}
	tv, err := e.svc.Template(context.Background(), "shop/kiosk:v1.0.9", "")
	if err != nil {
		t.Fatal(err)
	}
	if st := e.examples.Of(tv); st == nil || st.Status != StatusPending {
		t.Errorf("status %+v, want pending", st)
	}
	if _, body := get(t, e.url+"/t/shop/kiosk:v1.0.9"); !strings.Contains(body, `id="example-status">pending<`) {
		t.Errorf("the page does not say pending")
	}
}
