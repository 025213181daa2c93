package expand

import (
	"context"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/expand/engine"
)

// TestEveryLanguageHasAnEngine: the table and the engines agree, and a
// table row without an engine (or an engine without a row) is refused
// when the Expander is built, not when a template of it is expanded.
func TestEveryLanguageHasAnEngine(t *testing.T) {
	x := New(Options{})
	for _, l := range x.langs.Languages() {
		if e := x.engines[l.Name]; e == nil || e.Name() != l.Name {
			t.Errorf("language %s: engine %v", l.Name, e)
		}
	}
	withHelm := engine.New(append(engine.Default().Languages(), engine.Language{Name: "helm", Marker: "Chart.yaml"})...)
	if _, err := enginesByName(withHelm, builtinEngines(x)); err == nil || !strings.Contains(err.Error(), `"helm" has no engine`) {
		t.Errorf("a row without an engine: %v", err)
	}
	extra := append(builtinEngines(x), fakeEngine{"cue"})
	if _, err := enginesByName(x.langs, extra); err == nil || !strings.Contains(err.Error(), `"cue" is not a language`) {
		t.Errorf("an engine without a row: %v", err)
	}
}

type fakeEngine struct{ name string }

func (f fakeEngine) Name() string { return f.name }
func (fakeEngine) Render(context.Context, engine.Invocation) (engine.Output, error) {
	return engine.Output{}, nil
}
