package api

import (
	"context"
	"testing"
	"testing/fstest"
)

func inputsRegistry(t *testing.T) *Service {
	return testService(t, fstest.MapFS{
		"web/v1/web.jinja":        {Data: []byte("resources: []\n")},
		"web/v1/web.jinja.schema": {Data: []byte("required: [port, name]\nproperties:\n  port: {type: integer}\n  name: {type: string, default: web}\n")},
		"db/v1/db.yaml": {Data: []byte("apiVersion: template.openshift.io/v1\nkind: Template\nmetadata: {name: db}\n" +
			"parameters:\n- {name: PASSWORD, required: true}\n- {name: USER, required: true, value: app}\n- {name: TOKEN, required: true, generate: expression, from: '[a-z]{8}'}\nobjects: []\n")},
		"hello/v1/Chart.yaml":         {Data: []byte("apiVersion: v2\nname: hello\nversion: 1.0.0\n")},
		"hello/v1/values.schema.json": {Data: []byte(`{"required": ["message"], "properties": {"message": {"type": "string"}}}`)},
		"hello/v1/templates/cm.yaml":  {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
	})
}

func TestMissingInputs(t *testing.T) {
	s := inputsRegistry(t)
	ctx := context.Background()
	tests := []struct {
		ref   string
		props map[string]any
		want  []string
	}{
		// The schema's required property without a default.
		{"github.com/a/b/web:v1", nil, []string{"port"}},
		{"github.com/a/b/web:v1", map[string]any{"port": 80}, nil},
		// An OpenShift template's required parameters without a value or
		// generator.
		{"github.com/a/b/db:v1", nil, []string{"PASSWORD"}},
		{"github.com/a/b/db:v1", map[string]any{"PASSWORD": "x"}, nil},
		// A chart's values may come from its values.yaml: Helm says.
		{"github.com/a/b/hello:v1", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			tv, err := s.Template(ctx, tt.ref, "")
			if err != nil {
				t.Fatal(err)
			}
			in, err := MissingInputs(ctx, s, tv, tt.props)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, i := range in {
				got = append(got, i.Name)
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Errorf("props %v: missing %q, want %q", tt.props, got, tt.want)
			}
		})
	}
}

func TestMissingConfigInputs(t *testing.T) {
	s := inputsRegistry(t)
	ctx := context.Background()
	config := "resources:\n- name: w\n  type: github.com/a/b/web:v1\n- name: c\n  type: ConfigMap\n  properties: {}\n"
	tests := []struct {
		name   string
		config string
		values map[string]any
		want   []string // RESOURCE.PROPERTY
	}{
		{"a registry template's required property", config, nil, []string{"w.port"}},
		{"given by --values keyed by resource", config, map[string]any{"w": map[string]any{"port": 80}}, nil},
		{"a configuration that does not parse", "resources: [", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MissingConfigInputs(ctx, s, "", &ExpandRequest{Config: tt.config}, tt.values)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %q", got, tt.want)
			}
			for i, in := range got {
				if in.Name != tt.want[i] || in.Resource+"."+in.Property != tt.want[i] {
					t.Errorf("input %d: %q (%s, %s), want %q", i, in.Name, in.Resource, in.Property, tt.want[i])
				}
			}
		})
	}
}
