package api

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/resolve"
)

func TestDescribeSchema(t *testing.T) {
	tests := []struct {
		name      string
		schema    string
		title     string
		required  []string
		props     []Property
		wantError bool
	}{
		{
			name:     "properties in the file's order, DM's int as integer",
			schema:   "info:\n  title: ' Web '\n  description: Serves.\nrequired: [port]\nproperties:\n  port: {type: int, description: ' The port. '}\n  image: {type: string, default: nginx}\n",
			title:    "Web",
			required: []string{"port"},
			props: []Property{
				{Name: "port", Type: "integer", Description: "The port.", Required: true},
				{Name: "image", Type: "string", Default: "nginx"},
			},
		},
		{name: "no properties", schema: "info: {title: Empty}\n", title: "Empty"},
		{name: "does not compile", schema: "properties: {a: {type: nosuchtype}}\n", wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tv TemplateVersion
			err := describeSchema(&tv, []byte(tt.schema), "t.jinja.schema")
			if (err != nil) != tt.wantError {
				t.Fatalf("error %v, want error %v", err, tt.wantError)
			}
			if err != nil {
				return
			}
			if tv.Title != tt.title || !reflect.DeepEqual(tv.Required, tt.required) || !reflect.DeepEqual(tv.Properties, tt.props) {
				t.Errorf("got title %q required %q properties %+v;\nwant %q %q %+v", tv.Title, tv.Required, tv.Properties, tt.title, tt.required, tt.props)
			}
		})
	}
}

// TestDescribeParameters: an OpenShift template without a DM schema is
// described by its engine's Describer (its parameters), through
// fromDescription.
func TestDescribeParameters(t *testing.T) {
	src := `apiVersion: template.openshift.io/v1
kind: Template
metadata:
  name: pg
  annotations: {description: PostgreSQL}
parameters:
- {name: DB, value: app, description: The database.}
- {name: PASSWORD, generate: expression, from: '[a-z]{8}', required: true}
- {name: USER, displayName: User name, required: true}
objects: []
`
	describe := func(tv *TemplateVersion, src []byte) {
		d := Describer("openshift", "")
		if d == nil {
			t.Fatal("no describer for openshift")
		}
		desc, err := d.Describe(context.Background(), "pg.yaml", func(string) ([]byte, error) { return src, nil })
		fromDescription(tv, desc, err)
	}
	var tv TemplateVersion
	describe(&tv, []byte(src))
	want := []Property{
		{Name: "DB", Type: "string", Default: "app", Description: "The database."},
		{Name: "PASSWORD", Type: "string", Default: "generated: [a-z]{8}", Required: true},
		{Name: "USER", Type: "string", Description: "User name", Required: true},
	}
	if tv.Title != "pg" || tv.Description != "PostgreSQL" || tv.SchemaError != "" {
		t.Errorf("title %q description %q error %q", tv.Title, tv.Description, tv.SchemaError)
	}
	if !reflect.DeepEqual(tv.Properties, want) || !reflect.DeepEqual(tv.Required, []string{"PASSWORD", "USER"}) {
		t.Errorf("properties %+v required %q", tv.Properties, tv.Required)
	}
	var bad TemplateVersion
	describe(&bad, []byte("kind: ConfigMap\n"))
	if bad.SchemaError == "" {
		t.Errorf("a document that is not a Template gives no error")
	}
}

func TestTemplateAndFile(t *testing.T) {
	s := testService(t, fstest.MapFS{
		"web/v1/web.jinja":        {Data: []byte("resources: []\n")},
		"web/v1/web.jinja.schema": {Data: []byte("info: {title: Web}\nproperties: {port: {type: integer}}\n")},
		"web/v1/example.yaml":     {Data: []byte("resources: [{name: w, type: web:v1}]\n")},
	})
	ctx := context.Background()
	tv, err := s.Template(ctx, "github.com/a/b/web:v1", "")
	if err != nil {
		t.Fatal(err)
	}
	if tv.Title != "Web" || len(tv.Properties) != 1 || tv.ExampleContent == "" || tv.SchemaContent == "" || tv.Resolved != "github.com/a/b/web:v1.0.0" {
		t.Errorf("Template: %+v", tv)
	}
	if types := tv.PropertyTypes(); len(types) != 1 || types["port"] != "integer" {
		t.Errorf("PropertyTypes() = %v, want port: integer", types)
	}
	f, err := s.File(ctx, "github.com/a/b/web:v1", "", "web.jinja")
	if err != nil || string(f.Content) != "resources: []\n" || f.File.Path != "web.jinja" {
		t.Errorf("File web.jinja: %+v, %v", f, err)
	}
	for _, tt := range []struct {
		path string
		want error
	}{{"", derrors.InvalidArgument}, {"nope.txt", derrors.NotFound}} {
		if _, err := s.File(ctx, "github.com/a/b/web:v1", "", tt.path); !errors.Is(err, tt.want) {
			t.Errorf("File %q: %v, want %v", tt.path, err, tt.want)
		}
	}
	if _, err := s.Resolve(ctx, "github.com/a/b/nope:v1", ""); !errors.Is(err, derrors.NotFound) {
		t.Errorf("Resolve of a missing template: %v, want NotFound", err)
	}
}

// linterEngine is a chart engine whose lint rules only count their runs:
// the test asks which descriptions pay for them.
type linterEngine struct{ runs int }

func (e *linterEngine) Name() string { return "helm" }

func (e *linterEngine) Render(context.Context, engine.Invocation) (engine.Output, error) {
	return engine.Output{}, errors.ErrUnsupported
}

func (e *linterEngine) Lint(context.Context, map[string][]byte, string) ([]engine.Finding, error) {
	e.runs++
	return []engine.Finding{{Severity: "warning", File: "Chart.yaml", Message: "icon is recommended"}}, nil
}

// TestTemplateInputsLeavesOutLint checks that TemplateInputs, what dm
// expand and deploy read to ask for inputs, describes a chart as Template
// does but without running Helm's lint rules (a dm-helm round trip that
// cost a chart's expansion more than its render), and that Template
// still runs them.
func TestTemplateInputsLeavesOutLint(t *testing.T) {
	g, err := OpenRegistry(RegistrySpec{Prefix: "github.com/a/b", FS: fstest.MapFS{
		"hello/v1/Chart.yaml":         {Data: []byte("apiVersion: v2\nname: hello\nversion: 1.0.0\n")},
		"hello/v1/values.schema.json": {Data: []byte(`{"properties": {"message": {"type": "string"}}}`)},
		"hello/v1/templates/cm.yaml":  {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
	}}, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	lint := &linterEngine{}
	s := NewService(resolve.New(resolve.Registry{}, g), expand.Options{Engines: []engine.Engine{lint}})
	linted := func(tv *TemplateVersion) bool {
		return slices.ContainsFunc(tv.Findings, func(f Finding) bool { return strings.Contains(f.Message, "icon is recommended") })
	}

	in, err := s.TemplateInputs(ctx, "github.com/a/b/hello:v1", "")
	if err != nil {
		t.Fatal(err)
	}
	if lint.runs != 0 || linted(in) {
		t.Errorf("TemplateInputs ran the lint rules %d times (findings %v), want none", lint.runs, in.Findings)
	}
	if in.Language != "helm" || in.SchemaContent == "" || len(in.Properties) != 1 {
		t.Errorf("TemplateInputs: %+v, want the chart's language, schema and property", in)
	}

	tv, err := s.Template(ctx, "github.com/a/b/hello:v1", "")
	if err != nil {
		t.Fatal(err)
	}
	if lint.runs != 1 || !linted(tv) {
		t.Errorf("Template ran the lint rules %d times (findings %v), want once with its finding", lint.runs, tv.Findings)
	}
}
