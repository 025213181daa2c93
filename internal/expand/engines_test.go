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
	withCue := engine.New(append(engine.Default().Languages(), engine.Language{Name: "cue", Extensions: []string{".cue"}})...)
	if _, err := enginesByName(withCue, builtinEngines(x)); err == nil || !strings.Contains(err.Error(), `"cue" has no engine`) {
		t.Errorf("a row without an engine: %v", err)
	}
	extra := append(builtinEngines(x), fakeEngine{"cue"})
	if _, err := enginesByName(x.langs, extra); err == nil || !strings.Contains(err.Error(), `"cue" is not a language`) {
		t.Errorf("an engine without a row: %v", err)
	}
}

// TestAttachedEngines: an attached language (helm) renders with the engine
// a program attaches, and without one fails with an error naming the
// template, not at the Expander's construction.
func TestAttachedEngines(t *testing.T) {
	inv := engine.Invocation{File: "web/Chart.yaml"}
	_, err := New(Options{}).engines["helm"].Render(context.Background(), inv)
	if err == nil || !strings.Contains(err.Error(), "web/Chart.yaml") || !strings.Contains(err.Error(), "helm templates are not rendered by this program") {
		t.Errorf("helm without an engine: %v", err)
	}
	x := New(Options{Engines: []engine.Engine{fakeEngine{"helm"}}})
	if _, err := x.engines["helm"].Render(context.Background(), inv); err != nil {
		t.Errorf("helm with an attached engine: %v", err)
	}
}

type fakeEngine struct{ name string }

func (f fakeEngine) Name() string { return f.name }
func (fakeEngine) Render(context.Context, engine.Invocation) (engine.Output, error) {
	return engine.Output{}, nil
}
