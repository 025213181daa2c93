package jinja

import (
	"context"
	"errors"
	"strings"
	"testing"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// TestRender: the engine through the interface, with no key order given
// (mappings iterate sorted) and with its limits.
func TestRender(t *testing.T) {
	tests := []struct {
		name, src string
		want      string
		wantErr   string
		limit     bool
	}{
		{name: "properties and env", src: "n: {{ properties.n }}-{{ env.name }}", want: "n: 3-web"},
		{name: "dict order without a recorded one is sorted", src: "{% for k in properties.m %}{{ k }}{% endfor %}", want: "abc"},
		{name: "python str of a dict", src: "{{ properties.m }}", want: "{'a': 1, 'b': 2, 'c': 3}"},
		{name: "imports", src: "{{ imports['x.txt'] }}", want: "hello"},
		{name: "steps", src: "{% for i in range(100) %}{% endfor %}", wantErr: "JinjaSteps", limit: true},
		{name: "syntax error names its file", src: "a\n{% if %}", wantErr: "t.jinja: Unable to parse"},
		// jinja2 prints a name bound to an undefined key nothing, and one
		// bound to None "None" (deploymentmanager-samples' gke
		// replicatedservice: {% set PORT = properties['port'] %}).
		{name: "set to an undefined key prints nothing", src: "{% set p = properties['port'] %}[{{ p }}][{{ properties['port'] }}]", want: "[][]"},
		{name: "set to an undefined attribute prints nothing", src: "{% set p = properties.port %}{% set q = p %}[{{ p }}][{{ q }}]", want: "[][]"},
		{name: "set to None prints None", src: "{% set p = None %}{% set q = properties.n %}{% set q = none %}[{{ p }}][{{ q }}]", want: "[None][None]"},
		// jinja2 refuses to add an undefined key or None (UndefinedError,
		// TypeError; deploymentmanager-samples' gke crd-instance adds a
		// clusterType it is not given).
		{name: "adding an undefined key", src: "{{ 'p/' + properties['clusterType'] }}", wantErr: `unable to add "p/" and None (or an undefined name or key)`},
		{name: "adding None", src: "{{ properties.n + None }}", wantErr: "unable to add 3 and None"},
		{name: "joining an undefined key with ~", src: "[{{ 'p/' ~ properties['clusterType'] }}]", want: "[p/]"},
		// A newline an escape makes is a newline of the value, and the
		// source's lines stay where they were: an error on the next line
		// names that line.
		{name: "escapes making newlines", src: `{{ "a\nb" }}|{{ 'c\x0Ad' }}|{{ 'e\012f' }}|{{ 'g\/h' }}`, want: "a\nb|c\nd|e\nf|g\\/h"},
		{name: "a line after an escaped newline", src: "{{ 'a\\x0a' }}\n{{ nosuch(1) }}", wantErr: "t.jinja:2: "},
		// jinja2's string filters read str() of any value; an undefined
		// one (None in gonja) reads as ''.
		{name: "string filters of other values", src: "{{ 5 | trim('x') }}|{{ [1, 2] | upper }}|{{ 1.5 | trim }}|{{ true | lower }}|{{ properties.m | replace('a', 'z') }}|{{ 12 | center(4) }}", want: "5|[1, 2]|1.5|true|{'z': 1, 'b': 2, 'c': 3}| 12 "},
		{name: "string filters of an undefined key", src: "[{{ properties['missing'] | lower }}][{{ properties.port | trim }}][{{ nosuch | upper }}][{{ properties.x | replace('a', 'b') }}]", want: "[][][][]"},
		{name: "set again to a value prints it", src: "{% set p = properties.port %}{% set p = properties.n %}[{{ p }}]", want: "[3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache, _ := lru.New[string, any](16)
			e := New(1<<20, 50, 10, cache)
			files := map[string][]byte{"t.jinja": []byte(tt.src), "x.txt": []byte("hello")}
			out, err := e.Render(context.Background(), engine.Invocation{
				File: "t.jinja", Source: files["t.jinja"], Files: files, FilesKey: tt.name,
				Imports:    func() map[string]any { return map[string]any{"x.txt": "hello"} },
				Properties: map[string]any{"n": int64(3), "m": map[string]any{"c": int64(3), "a": int64(1), "b": int64(2)}},
				Env:        map[string]any{"name": "web"},
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if got := errors.Is(err, derrors.LimitExceeded); got != tt.limit {
					t.Errorf("limit = %v, want %v (%v)", got, tt.limit, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out.YAML) != tt.want {
				t.Errorf("output %q, want %q", out.YAML, tt.want)
			}
		})
	}
}
