package helmproxy

import (
	"errors"
	"fmt"
	"slices"
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

// TestEngineLint: Helm's lint rules run in dm-helm, their findings naming
// the file and line within the chart's directory, as helm.Engine's do
// in-process.
func TestEngineLint(t *testing.T) {
	e := &Engine{Path: helmproxytest.Build(t)}
	defer e.Close()
	tests := []struct {
		name string
		tmpl string
		want string // a finding, as severity file:line: message's start; "" for none
	}{
		{"clean", cm, ""},
		{"parse error", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: {{ .Values.n \n", "error c/templates/cm.yaml:6: parse error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := chart(tt.tmpl)
			fs, err := e.Lint(t.Context(), inv.Files, inv.File)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s %s:%d: %s", f.Severity, f.File, f.Line, f.Message))
			}
			if tt.want == "" {
				for _, f := range fs {
					if f.Severity == "error" {
						t.Errorf("a clean chart: %q", got)
					}
				}
				return
			}
			if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, tt.want) }) {
				t.Errorf("findings %q, want one starting %q", got, tt.want)
			}
		})
	}
}

// TestChildEnv: dm-helm starts with GOGC=400 unless the user set GOGC,
// whatever else the environment holds.
func TestChildEnv(t *testing.T) {
	tests := []struct {
		environ, want []string
	}{
		{nil, []string{"GOGC=400"}},
		{[]string{"HOME=/h", "PATH=/bin"}, []string{"HOME=/h", "PATH=/bin", "GOGC=400"}},
		{[]string{"GOGC=50", "HOME=/h"}, []string{"GOGC=50", "HOME=/h"}},
		{[]string{"GOGC=off"}, []string{"GOGC=off"}},
		{[]string{"GOGCX=1"}, []string{"GOGCX=1", "GOGC=400"}},
	}
	for _, tt := range tests {
		if got := childEnv(tt.environ); !slices.Equal(got, tt.want) {
			t.Errorf("childEnv(%q) = %q, want %q", tt.environ, got, tt.want)
		}
	}
}
