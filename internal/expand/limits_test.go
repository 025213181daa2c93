package expand

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/derrors"
)

// oneTemplate is a configuration instantiating the import file once.
func oneTemplate(file string, src string) Request {
	return Request{
		Config:  []byte(fmt.Sprintf("imports: [{path: %s}]\nresources:\n- {name: t, type: %s}\n", file, file)),
		Imports: map[string][]byte{file: []byte(src)},
	}
}

// bigAliased is a configuration with one n-byte scalar aliased k times.
func bigAliased(n, k int) []byte {
	var b strings.Builder
	b.WriteString("resources:\n- name: a\n  type: ConfigMap\n  properties:\n    big: &big " + strings.Repeat("x", n) + "\n    copies:\n")
	for range k {
		b.WriteString("    - *big\n")
	}
	return []byte(b.String())
}

const billionLaughs = `resources:
- name: bomb
  type: ConfigMap
  properties:
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

func TestLimits(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		req   Request
		field string // the Options field the error must name
	}{
		{
			name:  "starlark infinite loop",
			req:   oneTemplate("t.py", "def GenerateConfig(context):\n    while True:\n        pass\n"),
			field: "StarlarkSteps",
		},
		{
			name:  "starlark timeout",
			opts:  Options{StarlarkSteps: 1 << 62, Timeout: 100 * time.Millisecond},
			req:   oneTemplate("t.py", "def GenerateConfig(context):\n    while True:\n        pass\n"),
			field: "Timeout",
		},
		{
			name:  "starlark recursion is not allowed",
			req:   oneTemplate("t.py", "def f(n):\n    return f(n+1)\n\ndef GenerateConfig(context):\n    return f(0)\n"),
			field: "", // an ordinary error: Starlark rejects recursion
		},
		{
			name:  "jinja recursive macro",
			req:   oneTemplate("t.jinja", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
			field: "JinjaCallDepth",
		},
		{
			name: "jinja imported recursive macro",
			req: Request{
				Config: []byte("imports: [{path: t.jinja}, {path: m.jinja}]\nresources:\n- {name: t, type: t.jinja}\n"),
				Imports: map[string][]byte{
					"t.jinja": []byte(`{% from "m.jinja" import f %}{{ f(0) }}`),
					"m.jinja": []byte(`{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}`),
				},
			},
			field: "JinjaCallDepth",
		},
		{
			name:  "jinja self include",
			req:   oneTemplate("t.jinja", `x{% include "t.jinja" %}`),
			field: "JinjaCallDepth",
		},
		{
			name:  "jinja long loop",
			req:   oneTemplate("t.jinja", "{% for i in range(100000000) %}{% endfor %}"),
			field: "JinjaSteps",
		},
		{
			name:  "jinja timeout",
			opts:  Options{JinjaSteps: 1 << 40, Timeout: 100 * time.Millisecond},
			req:   oneTemplate("t.jinja", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
			field: "Timeout",
		},
		{
			name:  "jinja output size",
			opts:  Options{MaxOutputBytes: 1000},
			req:   oneTemplate("t.jinja", "{% for i in range(1000) %}xxxxxxxxxx{% endfor %}"),
			field: "MaxOutputBytes",
		},
		{
			name:  "gotmpl allocation",
			req:   oneTemplate("t.gotmpl", "{{ range until 1000000000 }}{{ end }}"),
			field: "MaxOutputBytes",
		},
		{
			name:  "jinja string repetition",
			req:   oneTemplate("t.jinja", `{% set s = "x" * 2000000000 %}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "jinja doubling in a loop",
			req:   oneTemplate("t.jinja", `{% set ns = namespace(s="xxxxxxxx") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "jinja list doubling",
			req:   oneTemplate("t.jinja", `{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name: "jinja repetition in an imported macro",
			req: Request{
				Config:  []byte("imports: [{path: t.jinja}, {path: m.jinja}]\nresources:\n- {name: t, type: t.jinja}\n"),
				Imports: map[string][]byte{"t.jinja": []byte(`{% import "m.jinja" as m %}{{ m.big() }}`), "m.jinja": []byte(`{% macro big() %}{{ "y" * 3000000000 }}{% endmacro %}`)},
			},
			field: "MaxOutputBytes",
		},
		{
			name:  "jinja indent filter",
			req:   oneTemplate("t.jinja", `{% set s = "a" | indent(2000000000) %}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "jinja zfill method",
			req:   oneTemplate("t.jinja", `{% set s = "x".zfill(2000000000) %}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "jinja format width",
			req:   oneTemplate("t.jinja", `{% set s = "{:>2000000000}".format(1) %}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "jinja replace amplification",
			req:   oneTemplate("t.jinja", `{% set a = "a" * 1000 %}{% set s = a.replace("a", "b" * 100000, -1) %}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "starlark string repetition",
			req:   oneTemplate("t.py", "def GenerateConfig(ctx):\n  s = 'x' * 500000000\n  return {'resources': []}\n"),
			field: "MaxOutputBytes",
		},
		{
			name:  "starlark doubling in a loop",
			req:   oneTemplate("t.py", "def GenerateConfig(ctx):\n  s = 'x'\n  for i in range(40):\n    s = s + s\n  return {'resources': []}\n"),
			field: "MaxOutputBytes",
		},
		{
			name:  "starlark augmented list doubling",
			req:   oneTemplate("t.py", "def GenerateConfig(ctx):\n  l = [1]\n  for i in range(40):\n    l += l\n  return {'resources': []}\n"),
			field: "MaxOutputBytes",
		},
		{
			name:  "starlark list of a huge range",
			req:   oneTemplate("t.py", "def GenerateConfig(ctx):\n  l = list(range(100000000))\n  return {'resources': []}\n"),
			field: "MaxOutputBytes",
		},
		{
			name:  "starlark replace amplification",
			req:   oneTemplate("t.py", "def GenerateConfig(ctx):\n  s = ('a' * 1000).replace('a', 'b' * 100000)\n  return {'resources': []}\n"),
			field: "MaxOutputBytes",
		},
		{
			name:  "gotmpl string doubling",
			req:   oneTemplate("t.gotmpl", `{{ $s := "xxxxxxxx" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "gotmpl list doubling",
			req:   oneTemplate("t.gotmpl", `{{ $l := list 1 }}{{ range until 40 }}{{ $l = concat $l $l }}{{ end }}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "gotmpl replace amplification",
			req:   oneTemplate("t.gotmpl", `{{ $s := replace "a" (repeat 100000 "b") (repeat 1000 "a") }}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "gotmpl repeat overflow",
			req:   oneTemplate("t.gotmpl", `{{ $s := repeat 4611686018427387904 "abcd" }}resources: []`),
			field: "MaxOutputBytes",
		},
		{
			name:  "gotmpl loop that writes nothing",
			opts:  Options{Timeout: 200 * time.Millisecond},
			req:   oneTemplate("t.gotmpl", "{{ range $i := 100000000000 }}{{ range 10 }}{{ end }}{{ end }}"),
			field: "Timeout",
		},
		{
			name:  "gotmpl recursion",
			req:   oneTemplate("t.gotmpl", `{{ define "x" }}{{ template "x" . }}{{ end }}{{ template "x" . }}`),
			field: "",
		},
		{
			name:  "alias bomb in configuration",
			req:   Request{Config: []byte(billionLaughs)},
			field: "MaxYAMLAliasBytes",
		},
		{
			name:  "alias bomb in output",
			req:   oneTemplate("t.jinja", billionLaughs),
			field: "MaxYAMLAliasBytes",
		},
		{
			// Issue 9: within MaxYAMLAliases, but 1 GB once expanded.
			name:  "one big scalar aliased 999 times",
			req:   Request{Config: bigAliased(1_000_000, 999)},
			field: "MaxYAMLAliasBytes",
		},
		{
			name:  "big aliased scalar in output",
			opts:  Options{MaxOutputBytes: 2 << 20},
			req:   oneTemplate("t.jinja", string(bigAliased(100_000, 999))),
			field: "MaxYAMLAliasBytes",
		},
		{
			name:  "too many aliases",
			req:   Request{Config: bigAliased(10, 1001)},
			field: "MaxYAMLAliases",
		},
		{
			name:  "configuration size",
			opts:  Options{MaxInputBytes: 100},
			req:   Request{Config: []byte("resources: []\n" + strings.Repeat("# padding\n", 20))},
			field: "MaxInputBytes",
		},
		{
			name:  "resources",
			opts:  Options{MaxResources: 3},
			req:   oneTemplate("t.jinja", "resources:\n{% for i in range(5) %}- {name: r{{ i }}, type: ConfigMap}\n{% endfor %}"),
			field: "MaxResources",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			var err error
			opts := tt.opts
			if tt.field != "Timeout" && opts.Timeout == 0 {
				// Only the limit under test may end it: under -race on a
				// loaded 2-core machine, reaching a size limit can take
				// longer than the default 10s per template.
				opts.Timeout, opts.TotalTimeout = 80*time.Second, 80*time.Second
			}
			go func() {
				defer close(done)
				_, err = New(opts).Expand(context.Background(), tt.req)
			}()
			select {
			case <-done:
			case <-time.After(90 * time.Second):
				// A hang detector, not a speed test: -race on a loaded
				// machine makes the step limits take seconds.
				t.Fatal("expansion did not stop")
			}
			if err == nil {
				t.Fatal("expansion succeeded")
			}
			t.Log(err)
			if tt.field == "" {
				return
			}
			if !errors.Is(err, derrors.LimitExceeded) {
				t.Errorf("error does not wrap LimitExceeded: %v", err)
			}
			if !strings.Contains(err.Error(), "Options."+tt.field) {
				t.Errorf("error does not name Options.%s: %v", tt.field, err)
			}
		})
	}
}

// writeChain writes a registry of templates t0 -> t1 -> ... -> t<n-1>,
// the last one emitting a ConfigMap.
func writeChain(t testing.TB, n int) string {
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("t%d", i), "v1")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("resources:\n- {name: n%d, type: \"t%d:v1\"}\n", i+1, i+1)
		if i == n-1 {
			body = "resources:\n- {name: cm, type: ConfigMap, properties: {apiVersion: v1, kind: ConfigMap}}\n"
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("t%d.jinja", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDepth(t *testing.T) {
	r := newResolver(t, os.DirFS(writeChain(t, 40)))
	req := Request{Config: []byte("resources:\n- {name: top, type: \"t0:v1\"}\n")}
	_, err := New(Options{Resolver: r}).Expand(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "Options.MaxDepth") || !errors.Is(err, derrors.LimitExceeded) {
		t.Fatalf("default depth: got %v, want a MaxDepth error", err)
	}
	res, err := New(Options{Resolver: r, MaxDepth: 40}).Expand(context.Background(), req)
	if err != nil {
		t.Fatalf("MaxDepth 40: %v", err)
	}
	if len(res.Config.Resources) != 1 || len(res.References) != 40 {
		t.Errorf("got %d resources and %d references, want 1 and 40", len(res.Config.Resources), len(res.References))
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(Options{}).Expand(ctx, oneTemplate("t.jinja", "resources: []"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// A Go template cannot be interrupted; the checkpoints gotmpl.guardTemplate puts
// in loops must stop its goroutine once the caller has given up.
func TestGoTemplateGoroutineStops(t *testing.T) {
	before := runtime.NumGoroutine()
	x := New(Options{Timeout: 100 * time.Millisecond})
	for i := 0; i < 3; i++ {
		_, err := x.Expand(context.Background(), oneTemplate("t.gotmpl", `{{ define "spin" }}{{ range 100000000000 }}{{ end }}{{ end }}{{ template "spin" . }}`))
		var le *LimitError
		if !errors.As(err, &le) || le.Field != "Timeout" {
			t.Fatalf("err = %v, want a Timeout limit error", err)
		}
	}
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines still running after the timeouts (%d before)", n, before)
	}
}

// The bounded operators keep Starlark's and gonja's semantics.
func TestBoundedOperatorSemantics(t *testing.T) {
	tests := []struct{ file, src string }{
		{"t.py", `def GenerateConfig(ctx):
  a = [1, 2]
  b = a
  a += [3]
  data = {"s": "ab" * 2 + "-" + "x".replace("x", "y"), "n": str(6 * 7 + 1), "alias": str(b),
          "t": str((1,) + (2,)), "r": str([i * 2 for i in range(4)]), "f": str(1.5 * 2)}
  return {"resources": [{"name": "c", "type": "ConfigMap", "properties": {"data": data}}]}
`},
		{"t.jinja", `{% set ns = namespace(l=[1, 2]) %}{% set ns.l = ns.l + [3] %}resources:
- name: c
  type: ConfigMap
  properties:
    data: {s: "{{ "ab" * 2 ~ "-" ~ "x".replace("x", "y", -1) }}", "n": "{{ 6 * 7 + 1 }}", alias: "{{ ns.l }}", t: "(1, 2)", r: "[0, 2, 4, 6]", f: "{{ 1.5 * 2 }}"}
`},
	}
	want := map[string]any{"s": "abab-y", "n": "43", "alias": "[1, 2, 3]", "t": "(1, 2)", "r": "[0, 2, 4, 6]", "f": "3.0"}
	for _, tt := range tests {
		res, err := New(Options{}).Expand(context.Background(), oneTemplate(tt.file, tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		got := res.Config.Resources[0].Properties["data"].(map[string]any)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: data.%s = %#v, want %#v", tt.file, k, got[k], v)
			}
		}
	}
}
