package helmproxy

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helmproxy/helmproxytest"
)

// programs are dm-helm and dm-helm-render, built by the first test that
// needs them.
var programs helmproxytest.Programs

func TestMain(m *testing.M) {
	code := m.Run()
	programs.Remove()
	os.Exit(code)
}

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
	e := &Engine{Path: programs.Helm(t)}
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
	e := &Engine{Path: programs.Helm(t)}
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

// TestEnginePrograms: an offline render starts dm-helm-render, a lint or
// a render for a cluster starts dm-helm, and a render while dm-helm runs
// goes to it; without dm-helm-render, or with only dm-helm named, dm-helm
// renders; a dm-helm-render named but absent is an error; and
// dm-helm-render refuses what it does not do.
func TestEnginePrograms(t *testing.T) {
	helm, render := programs.Paths(t)
	ctx := t.Context()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	// running names the programs e runs, dm-helm's slot first.
	running := func(e *Engine) string {
		e.mu.Lock()
		defer e.mu.Unlock()
		var s []string
		for _, c := range []*child{e.child, e.render} {
			if c != nil {
				s = append(s, c.name)
			}
		}
		return strings.Join(s, ",")
	}
	steps := []struct {
		name string
		do   func(e *Engine) error
		want string
	}{
		{"render", func(e *Engine) error { _, err := e.Render(ctx, chart(cm)); return err }, "dm-helm-render"},
		{"lint", func(e *Engine) error {
			inv := chart(cm)
			_, err := e.Lint(ctx, inv.Files, inv.File)
			return err
		}, "dm-helm,dm-helm-render"},
		{"render again", func(e *Engine) error { _, err := e.Render(ctx, chart(cm)); return err }, "dm-helm,dm-helm-render"},
	}
	e := &Engine{Getenv: env("DM_HELM", helm, "DM_HELM_RENDER", render)}
	for _, s := range steps {
		if err := s.do(e); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := running(e); got != s.want {
			t.Errorf("after %s: running %q, want %q", s.name, got, s.want)
		}
	}
	// Once dm-helm runs, a render goes to it: end dm-helm-render, and a
	// render starts no other.
	e.mu.Lock()
	e.render.close()
	e.render = nil
	e.mu.Unlock()
	if _, err := e.Render(ctx, chart(cm)); err != nil || running(e) != "dm-helm" {
		t.Errorf("a render while dm-helm runs: %v, running %q", err, running(e))
	}
	e.Close()
	if running(e) != "" {
		t.Errorf("after Close: running %q", running(e))
	}

	for _, tt := range []struct {
		name string
		e    *Engine
		want string // running after one render; "" for an error
		err  string
	}{
		{"paths", &Engine{Path: helm, RenderPath: render, Getenv: env()}, "dm-helm-render", ""},
		{"only dm-helm named", &Engine{Getenv: env("DM_HELM", helm)}, "dm-helm", ""},
		{"only Path", &Engine{Path: helm, Getenv: env()}, "dm-helm", ""},
		{"dm-helm-render named, absent", &Engine{Path: helm, Getenv: env("DM_HELM_RENDER", render+".absent")}, "", "$DM_HELM_RENDER"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.e.Close()
			_, err := tt.e.Render(ctx, chart(cm))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %v, want an error naming %s", err, tt.err)
				}
				return
			}
			if err != nil || running(tt.e) != tt.want {
				t.Errorf("render: %v, running %q, want %q", err, running(tt.e), tt.want)
			}
		})
	}

	// dm-helm-render answers a lint or a fetch with an error naming dm-helm.
	e = &Engine{Path: render, Getenv: env()}
	defer e.Close()
	inv := chart(cm)
	if _, err := e.Lint(ctx, inv.Files, inv.File); err == nil || !strings.Contains(err.Error(), "does not lint charts (dm-helm does)") {
		t.Errorf("dm-helm-render linting: %v", err)
	}
	if _, _, err := e.Fetch(ctx, FetchRequest{URL: "https://127.0.0.1:1/c.tgz"}); err == nil || !strings.Contains(err.Error(), "does not download charts (dm-helm does)") {
		t.Errorf("dm-helm-render fetching: %v", err)
	}
}
