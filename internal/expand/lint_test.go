package expand

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
)

// TestLintExamples: lint's findings about examples, with and without
// expanding them.
func TestLintExamples(t *testing.T) {
	kiosk := map[string]string{
		"kiosk.jinja":        "resources:\n- name: {{ env['name'] }}\n  type: v1/ConfigMap\n  properties: {data: {greeting: {{ properties['greeting'] }}}}\n",
		"kiosk.jinja.schema": "properties:\n  greeting: {type: string, default: hi}\n  screens: {type: integer}\n",
	}
	tests := []struct {
		name    string
		example string
		expand  bool
		want    []string // substrings of the findings, in order; none: no finding
	}{
		{"imports its template", "imports:\n- path: kiosk.jinja\nresources:\n- name: k\n  type: kiosk.jinja\n", true, nil},
		{"imports a file that is not there", "imports:\n- path: nope.jinja\nresources: []\n", true, []string{`import "nope.jinja"`}},
		{"import leaving the version", "imports:\n- path: ../../x.jinja\nresources: []\n", true, []string{"leaves the version directory"}},
		// An example its own schema refuses is reported once, with the
		// property, whether or not examples are expanded.
		{"imported, against its schema", "imports:\n- path: kiosk.jinja\n  name: k\nresources:\n- name: lobby\n  type: k\n  properties: {screens: two}\n", false, []string{"example.yaml: resources[0] (lobby) violates the template's own schema: kiosk.jinja.schema: invalid properties: properties.screens"}},
		{"by reference, against its schema", "resources:\n- name: a\n  type: v1/ConfigMap\n- name: lobby\n  type: kiosk:v1\n  properties: {screens: two}\n", true, []string{"resources[1] (lobby) violates the template's own schema: kiosk.jinja.schema: invalid properties: properties.screens"}},
		{"by reference, as its schema says", "resources:\n- name: lobby\n  type: kiosk:v1\n  properties: {screens: 2}\n", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"kiosk/v1.0.0/example.yaml": {Data: []byte(tt.example)}}
			for p, c := range kiosk {
				fsys["kiosk/v1.0.0/"+p] = &fstest.MapFile{Data: []byte(c)}
			}
			checkLint(t, fsys, tt.expand, tt.want)
		})
	}
}

// checkLint lints the registry fsys and checks its findings, in order,
// against substrings want (none: no finding).
func checkLint(t *testing.T, fsys fstest.MapFS, expand bool, want []string, engines ...engine.Engine) {
	t.Helper()
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(fsys)}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Lint(context.Background(), reg, expand, engines...) {
		got = append(got, f.String())
	}
	if len(got) != len(want) {
		t.Fatalf("findings %q, want %d matching %q", got, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("finding %q lacks %q", got[i], w)
		}
	}
}
