package engine

import (
	"slices"
	"testing"
)

func TestDefaultForFile(t *testing.T) {
	r := Default()
	tests := []struct {
		file string
		lang string // "" means not a template file
		code bool
	}{
		{"redis.jinja", "jinja", true},
		{"lib/helpers.py", "python", true},
		{"web.gotmpl", "gotmpl", true},
		{"pg.yaml", "openshift", false},
		{"pg.yml", "openshift", false},
		{"pg.json", "openshift", false},
		{"redis.jinja.schema", "", false},
		{"README.md", "", false},
		{"Makefile", "", false},
	}
	for _, tt := range tests {
		l, ok := r.ForFile(tt.file)
		if ok != (tt.lang != "") || l.Name != tt.lang {
			t.Errorf("ForFile(%q) = %q, %v; want %q", tt.file, l.Name, ok, tt.lang)
		}
		if got := r.IsCode(tt.file); got != tt.code {
			t.Errorf("IsCode(%q) = %v, want %v", tt.file, got, tt.code)
		}
	}
}

func TestDefaultLookupAndNames(t *testing.T) {
	r := Default()
	for name, want := range map[string]string{"jinja": "jinja", "py": "python", "python": "python", "gotmpl": "gotmpl", "openshift": "openshift", "helm": "helm", "cue": "", "": ""} {
		l, ok := r.Lookup(name)
		if ok != (want != "") || l.Name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, l.Name, ok, want)
		}
	}
	if got, want := r.Names(), []string{"jinja", "py", "gotmpl", "openshift", "helm"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	if got, want := r.StatusExtensions(), []string{".status.jinja", ".status.gotmpl"}; !slices.Equal(got, want) {
		t.Errorf("StatusExtensions() = %q, want %q", got, want)
	}
}

func TestDescribe(t *testing.T) {
	r := Default()
	tests := []struct {
		name string
		data bool
		want string
	}{
		{"t", true, "t.jinja, t.py, t.gotmpl, a kind: Template t.yaml or a directory with Chart.yaml"},
		{"", true, ".jinja, .py, .gotmpl, a kind: Template .yaml or a directory with Chart.yaml"},
		{"", false, ".jinja, .py or .gotmpl"},
	}
	for _, tt := range tests {
		if got := r.Describe(tt.name, tt.data); got != tt.want {
			t.Errorf("Describe(%q, %v) = %q, want %q", tt.name, tt.data, got, tt.want)
		}
	}
}

// TestDirectoryLanguage: a language whose templates are directories
// (a chart) is a row with a marker and a fixed schema file name.
func TestDirectoryLanguage(t *testing.T) {
	r := New(
		Language{Name: "jinja", Extensions: []string{".jinja"}},
		Language{Name: "helm", Marker: "Chart.yaml", SchemaFile: "values.schema.json"},
	)
	helm, ok := r.Lookup("helm")
	if !ok {
		t.Fatal("no helm")
	}
	if got := helm.Schema("Chart.yaml"); got != "values.schema.json" {
		t.Errorf("helm schema = %q", got)
	}
	if got := helm.Schema("sub/Chart.yaml"); got != "sub/values.schema.json" {
		t.Errorf("helm schema in a subdirectory = %q", got)
	}
	jinja, _ := r.Lookup("jinja")
	if got := jinja.Schema("redis.jinja"); got != "redis.jinja.schema" {
		t.Errorf("jinja schema = %q", got)
	}
	if got := r.Markers(); !slices.Equal(got, []string{"Chart.yaml"}) {
		t.Errorf("Markers() = %q", got)
	}
	if l, ok := r.ForFile("charts/db/Chart.yaml"); !ok || l.Name != "helm" {
		t.Errorf("ForFile(Chart.yaml) = %q, %v", l.Name, ok)
	}
	if got := r.Describe("t", true); got != "t.jinja or a directory with Chart.yaml" {
		t.Errorf("Describe = %q", got)
	}
}
