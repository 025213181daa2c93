package openshift

import (
	"context"
	"errors"
	"testing"

	"github.com/dmhq/dm/internal/expand/engine"
)

func TestEngineRender(t *testing.T) {
	src := []byte(`apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: db}
parameters:
- name: NAME
  value: pg
objects:
- apiVersion: v1
  kind: Service
  metadata: {name: "${NAME}"}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: "${NAME}"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cfg}
`)
	var e engine.Engine = &Engine{MaxOutputBytes: 1 << 20}
	out, err := e.Render(context.Background(), engine.Invocation{File: "db.yaml", Source: src, Properties: map[string]any{"NAME": "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"service-shop/Service", "deployment-shop/Deployment", "cfg/ConfigMap"}
	if len(out.Resources) != len(want) {
		t.Fatalf("resources %v, want %v", out.Resources, want)
	}
	for i, r := range out.Resources {
		if got := r.Name + "/" + r.Type; got != want[i] {
			t.Errorf("resources[%d] = %s, want %s", i, got, want[i])
		}
	}
	ct := e.(engine.ConfigTemplater)
	if !ct.IsConfigTemplate(src) || ct.ResourceName(src) != "db" {
		t.Errorf("IsConfigTemplate = %v, ResourceName = %q", ct.IsConfigTemplate(src), ct.ResourceName(src))
	}
}

func TestEngineCheck(t *testing.T) {
	tests := []struct {
		name, src   string
		notTemplate bool
		ok          bool
	}{
		{"template", "kind: Template\nobjects: []\n", false, true},
		{"a configuration", "resources: []\n", true, false},
		{"not YAML", "kind: [\n", false, false},
	}
	for _, tt := range tests {
		err := (&Engine{}).Check(context.Background(), map[string][]byte{"t.yaml": []byte(tt.src)}, "t.yaml")
		var nt *engine.NotTemplateError
		if (err == nil) != tt.ok || errors.As(err, &nt) != tt.notTemplate {
			t.Errorf("%s: Check = %v", tt.name, err)
		}
	}
}
