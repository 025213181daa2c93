package expand

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDMModel: the configuration model of Deployment Manager (issue 7
// section 1), each item on its own; every case failed before.
func TestDMModel(t *testing.T) {
	jinjaEcho := []byte("resources:\n- name: out\n  type: v1/ConfigMap\n  properties: {{ {'p': properties, 'env': env} | tojson }}\n")
	tests := []struct {
		name string
		req  Request
		// check gets the first primitive's properties.
		want map[string]any
		err  string
	}{
		{
			name: "primitive types pass through",
			req:  Request{Config: []byte("resources:\n- {name: a, type: compute.v1.instance}\n- {name: b, type: 'gcp-types/compute-v1:instances'}\n- {name: c, type: 'project/provider:collection'}\n- {name: d, type: redis, properties: {x: 1}}\n")},
			want: nil,
		},
		{
			name: "versioned registry reference without a registry",
			req:  Request{Config: []byte("resources:\n- {name: a, type: 'redis:v1'}\n")},
			err:  "no registry is configured",
		},
		{
			name: "string imports and import names",
			req: Request{Config: []byte("imports: [t.jinja]\nresources:\n- {name: a, type: t.jinja, properties: {k: v}}\n"),
				Imports: map[string][]byte{"t.jinja": []byte("resources:\n- {name: out, type: v1/ConfigMap, properties: {{ properties | tojson }}}\n")}},
			want: map[string]any{"k": "v"},
		},
		{
			name: "env defaults and --env",
			req: Request{Config: []byte("imports: [t.jinja]\nresources:\n- {name: a, type: t.jinja}\n"), Deployment: "d", Namespace: "ns",
				Env:     map[string]string{"project_number": "42", "region": "eu", "current_time": "now"},
				Imports: map[string][]byte{"t.jinja": jinjaEcho}},
			want: map[string]any{"p": map[string]any{}, "env": map[string]any{"deployment": "d", "name": "a", "type": "t.jinja", "namespace": "ns",
				"project": "ns", "project_number": "42", "current_time": "now", "username": "", "region": "eu"}},
		},
		{
			name: "schema imports by name, ../ paths",
			req: Request{Config: []byte("imports: [{path: ../lib/t.jinja, name: t}]\nresources:\n- {name: a, type: t}\n"),
				Imports: map[string][]byte{
					"../lib/t.jinja":        []byte("{% import 'm' as m %}\nresources:\n- {name: out, type: v1/ConfigMap, properties: {p: {{ m.x() }}, d: {{ properties['d'] }}}}\n"),
					"../lib/t.jinja.schema": []byte("info: {title: T, author: me, version: 2}\nimports: [{path: sub/m.jinja, name: m}]\nproperties:\n  d: {type: string, default: dflt}\n"),
					"../lib/sub/m.jinja":    []byte("{% macro x() %}from-m{% endmacro %}"),
				}},
			want: map[string]any{"p": "from-m", "d": "dflt"},
		},
		{
			name: "Python imports by import name",
			req: Request{Config: []byte("imports: [t.py, {path: ../shared/naming-v2.py, name: naming.py}]\nresources:\n- {name: a, type: t.py}\n"),
				Imports: map[string][]byte{
					"t.py":                   []byte("import naming\ndef GenerateConfig(ctx):\n  return {'resources': [{'name': 'o', 'type': 'T', 'properties': {'n': naming.NAME}}]}\n"),
					"../shared/naming-v2.py": []byte("NAME = 'from-naming'\n"),
				}},
			want: map[string]any{"n": "from-naming"},
		},
		{
			name: "schema import missing",
			req: Request{Config: []byte("imports: [t.jinja]\nresources:\n- {name: a, type: t.jinja}\n"),
				Imports: map[string][]byte{"t.jinja": jinjaEcho, "t.jinja.schema": []byte("imports: [h.py]\n")}},
			err: "t.jinja.schema: imports[0]: h.py (h.py from the schema's directory) was not sent",
		},
		{
			name: "properties keep document order into Starlark",
			req: Request{Config: []byte("imports: [t.py]\nresources:\n- {name: a, type: t.py, properties: {z: 1, a: 2, m: {y: 1, b: 2}}}\n"),
				Imports: map[string][]byte{"t.py": []byte("def GenerateConfig(ctx):\n  p = ctx.properties\n  return {'resources': [{'name': 'o', 'type': 'T', 'properties': {'keys': [k for k in p], 'inner': [k for k in p['m']]}}]}\n")}},
			want: map[string]any{"keys": []any{"z", "a", "m"}, "inner": []any{"y", "b"}},
		},
		{
			name: "PyYAML resolution of properties",
			req:  Request{Config: []byte("resources:\n- {name: a, type: T, properties: {n: 2, y: yes, o: 017, s: 12:30:00, e: 1e3, i: .inf}}\n")},
			want: map[string]any{"n": int64(2), "y": true, "o": int64(15), "s": int64(45000), "e": "1e3", "i": ".inf"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := New(Options{Timeout: 5 * time.Second}).Expand(context.Background(), tt.req)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				return
			}
			got := res.Config.Resources[0].Properties
			if !reflect.DeepEqual(got, tt.want) {
				// Jinja's tojson output decodes with its own number types.
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tt.want)
				if string(gj) != string(wj) {
					t.Errorf("got  %s\nwant %s", gj, wj)
				}
			}
		})
	}
}

// TestDMModelOutput: configVersion, metadata and accessControl are kept in
// the output, and versionless references asked for by name still resolve.
func TestDMModelOutput(t *testing.T) {
	x := New(Options{Resolver: newResolver(t, os.DirFS("testdata/registry"))})
	res, err := x.Expand(context.Background(), Request{Config: []byte("configVersion: 2\nresources:\n- name: a\n  type: compute.v1.network\n  metadata: {dependsOn: [b]}\n  accessControl: {gcpIamPolicy: {bindings: []}}\n")})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res.Config)
	for _, want := range []string{`"configVersion":2`, `"metadata":{"dependsOn":["b"]}`, `"accessControl":{"gcpIamPolicy":{"bindings":[]}}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output %s lacks %s", out, want)
		}
	}
	if _, err := x.Expand(context.Background(), Request{Ref: "single", Properties: map[string]any{"app": "x"}}); err != nil {
		t.Errorf("a versionless reference given as Ref: %v", err)
	}
}
