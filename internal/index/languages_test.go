package index

import (
	"testing"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/index/indextest"
)

// TestDirectoryLanguage: a table row with a marker (a chart's
// Chart.yaml) and a fixed schema name is all the index needs to take
// such a version directory as a template.
func TestDirectoryLanguage(t *testing.T) {
	langs := engine.New(append(engine.Default().Languages(),
		engine.Language{Name: "helm", Marker: "Chart.yaml", SchemaFile: "values.schema.json"})...)
	s := build(langs, "github.com/acme/t", indextest.Tree(map[string]string{
		"db/v1/Chart.yaml":            "name: db\n",
		"db/v1/values.yaml":           "replicas: 1\n",
		"db/v1/values.schema.json":    "{}",
		"db/v1/templates/svc.yaml":    "kind: Service\n",
		"db/v1/example.yaml":          "",
		"web/v1/web.jinja":            "",
		"web/v1/web.jinja.schema":     "",
		"web/v1/example.yaml":         "",
		"plain/v1/plain.yaml":         "kind: Template\n",
		"plain/v1/values.schema.json": "{}",
	}), nil)
	tests := []struct {
		name, template, lang, schema string
	}{
		{"db", "Chart.yaml", "helm", "values.schema.json"},
		{"web", "web.jinja", "jinja", "web.jinja.schema"},
		{"plain", "plain.yaml", "openshift", ""},
	}
	for _, tt := range tests {
		tm, ok := s.Template("", tt.name)
		if !ok {
			t.Fatalf("no template %s; findings %v", tt.name, s.Findings)
		}
		v := tm.Versions[0]
		if v.Template != tt.template || string(v.Language) != tt.lang || v.Schema != tt.schema || v.Problem != "" {
			t.Errorf("%s: template %q, language %q, schema %q, problem %q; want %q, %q, %q", tt.name, v.Template, v.Language, v.Schema, v.Problem, tt.template, tt.lang, tt.schema)
		}
	}
}
