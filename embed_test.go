package dm_test

import (
	"context"
	"testing"

	"github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
)

// TestExampleRegistry keeps registry-example a model registry: no lint
// findings at all, every language, and the collections the README shows.
func TestExampleRegistry(t *testing.T) {
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(dm.ExampleRegistry())}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := reg.Snapshot()
	for _, f := range s.Findings {
		t.Errorf("finding: %s", f)
	}
	langs := map[index.Language]bool{}
	for _, tm := range s.AllTemplates() {
		for _, v := range tm.Versions {
			langs[v.Language] = true
		}
	}
	for _, l := range []index.Language{index.Jinja, index.Python, index.GoTmpl, index.OpenShift} {
		if !langs[l] {
			t.Errorf("no %s template", l)
		}
	}
	for _, c := range []string{"", "common", "apps"} {
		if _, ok := s.Collections[c]; !ok {
			t.Errorf("no collection %q", c)
		}
	}
	if s.Templates < 6 {
		t.Errorf("%d templates, want at least 6", s.Templates)
	}
}
