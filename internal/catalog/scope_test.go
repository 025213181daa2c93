package catalog

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// TestExamplesScoped: a namespace's examples are tested as that namespace
// sees its registries; the lists that span registries (counts, recent,
// used by) show only what a caller may see; a registry served no more
// leaves nothing behind.
func TestExamplesScoped(t *testing.T) {
	ctx := context.Background()
	cm := "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"
	open := func(g *index.Registry, files fstest.MapFS) *index.Registry {
		g.Source = fetch.NewLocal(files)
		if err := g.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		return g
	}
	shared := open(&index.Registry{Name: "github.com/a/shared"}, fstest.MapFS{
		"base/v1.0.0/base.jinja":   {Data: []byte(cm)},
		"base/v1.0.0/example.yaml": {Data: []byte("imports:\n- path: base.jinja\nresources:\n- name: b\n  type: base.jinja\n")},
	})
	// team-a's example uses the shared template and one of its own
	// registry's, which only team-a's scope resolves.
	private := open(&index.Registry{Name: "github.com/a/private", Namespace: "team-a", Object: "private"}, fstest.MapFS{
		"own/v1.0.0/own.jinja":    {Data: []byte(cm)},
		"app/v1.0.0/app.jinja":    {Data: []byte(cm)},
		"app/v1.0.0/example.yaml": {Data: []byte("resources:\n- name: a\n  type: github.com/a/shared/base:v1\n- name: o\n  type: github.com/a/private/own:v1\n")},
	})
	r := resolve.New(resolve.Registry{}, shared, private)
	svc := api.NewService(r, expand.Options{})
	ex := NewExamples(ExamplesOptions{Resolver: r, Expander: svc, Poll: 10 * time.Millisecond})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go ex.Run(cctx)
	for deadline := time.Now().Add(30 * time.Second); ex.Counts().OK != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("examples not tested: %+v", ex.Counts())
		}
	}
	if res, _ := ex.ByRef(private.Key(), "github.com/a/private/app:v1.0.0"); res.Status != StatusOK {
		t.Fatalf("team-a's example: %+v", res)
	}
	everyone := func(key string) bool { return key == shared.Key() }
	teamA := func(key string) bool { return key == shared.Key() || key == private.Key() }
	if c := ex.CountsIn(everyone); c.OK != 1 {
		t.Errorf("counts for everyone: %+v, want team-a's left out", c)
	}
	for _, c := range ex.Recent(everyone) {
		if c.Registry != shared.Key() {
			t.Errorf("recent for everyone shows %s", c.Ref)
		}
	}
	if n := len(ex.UsedBy("", "github.com/a/shared/base", everyone)); n != 0 {
		t.Errorf("the shared template is used by %d versions anyone may see, want 0", n)
	}
	if u := ex.UsedBy("", "github.com/a/shared/base", teamA); len(u) != 1 || u[0].User != "github.com/a/private/app:v1.0.0" {
		t.Errorf("used by, for team-a: %+v", u)
	}
	// Served no more: forgotten.
	r.Remove(private)
	ex.Kick()
	for deadline := time.Now().Add(30 * time.Second); ex.Counts().OK != 1 || len(ex.Recent(teamA)) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("team-a's results kept after its registry went: %+v, recent %v", ex.Counts(), ex.Recent(teamA))
		}
	}
}
