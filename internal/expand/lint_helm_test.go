package expand

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm/helmlint"
)

// TestLintCharts: a chart's version is linted with Helm's own rules where
// the helm engine is attached, with findings naming the file and line;
// without it lint says the rules were left out, and does not count an
// example it cannot expand as an error.
func TestLintCharts(t *testing.T) {
	chart := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: hi\nversion: 0.1.0\nicon: https://example.com/i.png\n",
		"values.yaml":       "greeting: hello\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
		"example.yaml":      "resources:\n- name: hi\n  type: hi:v0.1.0\n",
	}
	broken := map[string]string{
		// The action is never closed: Helm names the end of the file, line 5.
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name\n",
	}
	tests := []struct {
		name    string
		files   map[string]string
		engines []engine.Engine
		expand  bool
		want    []string // substrings of the findings, in order; none: no finding
	}{
		{"clean chart", nil, []engine.Engine{&helmlint.Engine{}}, true, nil},
		{"template error at its line", broken, []engine.Engine{&helmlint.Engine{}}, false, []string{"hi/v0.1.0: error: templates/cm.yaml:5: parse error"}},
		{"no helm engine", nil, nil, false, []string{"hi/v0.1.0: warning: helm's own lint rules were not run"}},
		{"no helm engine, expanded", nil, nil, true, []string{"helm's own lint rules were not run", "warning: example.yaml was not expanded: "}},
		// dm's proxy engine when dm-helm is not installed: the chart is
		// not at fault.
		{"linter unavailable", nil, []engine.Engine{unavailableLinter{}}, false, []string{"hi/v0.1.0: warning: helm's own lint rules were not run: dm-helm is not installed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for p, c := range chart {
				fsys["hi/v0.1.0/"+p] = &fstest.MapFile{Data: []byte(c)}
			}
			for p, c := range tt.files {
				fsys["hi/v0.1.0/"+p] = &fstest.MapFile{Data: []byte(c)}
			}
			checkLint(t, fsys, tt.expand, tt.want, tt.engines...)
		})
	}
}

// unavailableLinter is a helm engine whose lint rules cannot run.
type unavailableLinter struct{}

func (unavailableLinter) Name() string { return "helm" }
func (unavailableLinter) Render(context.Context, engine.Invocation) (engine.Output, error) {
	return engine.Output{}, derrors.Errorf(derrors.Unavailable, "dm-helm is not installed")
}
func (unavailableLinter) Lint(context.Context, map[string][]byte, string) ([]engine.Finding, error) {
	return nil, derrors.Errorf(derrors.Unavailable, "dm-helm is not installed")
}
