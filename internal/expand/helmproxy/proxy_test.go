package helmproxy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helmproxy/helmproxytest"
)

// chart returns an invocation of a one-template chart.
func chart(tmpl string) engine.Invocation {
	files := map[string][]byte{
		"c/Chart.yaml":        []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n"),
		"c/templates/cm.yaml": []byte(tmpl),
	}
	return engine.Invocation{File: "c/Chart.yaml", Files: files, Source: files["c/Chart.yaml"],
		Properties: map[string]any{"n": 3}, Env: map[string]any{"name": "r", "namespace": "ns"}}
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n  namespace: {{ .Release.Namespace }}\ndata:\n  count: {{ .Values.n | quote }}\n"

// TestEngineLimits: a render past Timeout ends dm-helm with an error naming
// the limit, an answer over MaxResponseBytes is refused naming its field,
// and the next render starts dm-helm again and succeeds.
func TestEngineLimits(t *testing.T) {
	e := &Engine{Path: helmproxytest.Build(t)}
	defer e.Close()
	ctx := t.Context()
	out, err := e.Render(ctx, chart(cm))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Resources) != 1 || out.Resources[0].Name != "r" || out.Resources[0].Properties["data"].(map[string]any)["count"] != "3" {
		t.Fatalf("render: %+v", out)
	}
	tests := []struct {
		name     string
		timeout  time.Duration
		maxBytes int
		tmpl     string
		field    string
	}{
		{"timeout", time.Second, 0, "{{ range until 100000000 }}{{ end }}" + cm, "Timeout"},
		{"answer size", 0, 100, cm, "MaxResponseBytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.Timeout, e.MaxResponseBytes = tc.timeout, tc.maxBytes
			_, err := e.Render(ctx, chart(tc.tmpl))
			var le *engine.LimitError
			if !errors.As(err, &le) || le.Field != tc.field {
				t.Fatalf("got %v, want the limit %s", err, tc.field)
			}
			var l *engine.Located
			if !errors.As(err, &l) || l.File != "c/Chart.yaml" {
				t.Errorf("the error does not name the chart: %v", err)
			}
			e.Timeout, e.MaxResponseBytes = 0, 0
			if _, err := e.Render(ctx, chart(cm)); err != nil {
				t.Errorf("the next render: %v", err)
			}
		})
	}
	// A chart's own error keeps Helm's text, which names the template and
	// line, and its kind.
	_, err = e.Render(ctx, chart("{{ fail \"no\" }}"))
	if err == nil || !strings.Contains(err.Error(), "c/templates/cm.yaml:1:3") || !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("a chart's error: %v", err)
	}
}
