package engine

import (
	"path"
	"slices"
	"strings"
)

// SchemaSuffix is appended to a template file's name to name its schema
// (redis.jinja.schema), for languages without a Language.SchemaFile.
const SchemaSuffix = ".schema"

// jinjaStatusPrefix and jinjaStatusSuffix wrap a Jinja status template into an
// ordinary template of a configuration, so that it runs where every
// template runs (the sandbox's workers, with the engine's limits): the
// prefix gives it its three inputs on its own first line, so that errors
// name the status template's file and lines, and the suffix returns what
// it printed as the text of one primitive, which the controller reads as
// YAML.
const (
	jinjaStatusPrefix = `{% set resources = properties.resources %}{% set instance = properties.instance %}{% set properties = properties.properties %}{% set out %}`
	jinjaStatusSuffix = `{% endset %}
resources:
- name: status
  type: dm.io/v1alpha1/StatusOutput
  properties:
    text: {{ out|tojson }}
`
)

// gotmplStatusPrefix and gotmplStatusSuffix do the same for a Go template status
// template: it becomes a named template, rendered by include with its three
// inputs as its dot (.resources, .instance, .properties).
const (
	gotmplStatusPrefix = `{{- define "dm-status" -}}`
	gotmplStatusSuffix = `{{- end -}}
{{- $out := include "dm-status" (dict "resources" .properties.resources "instance" .properties.instance "properties" .properties.properties) -}}
resources:
- name: status
  type: dm.io/v1alpha1/StatusOutput
  properties:
    text: {{ toJson $out }}
`
)

// Language describes one template language: the facts other packages
// need without running it.
type Language struct {
	// Name is the language's name in the index and the API (jinja,
	// python, gotmpl, openshift).
	Name string
	// Aliases are other names accepted on the command line (py).
	Aliases []string
	// Extensions are the extensions of files that are templates of the
	// language whatever their content.
	Extensions []string
	// DataExtensions are extensions of files that are templates of the
	// language only when no template file of the same name has one of
	// Extensions (an OpenShift Template beside a Jinja template's
	// example configuration redis.yaml is the example).
	DataExtensions []string
	// DataNoun says what a data file must be to be a template of the
	// language, for messages: "a kind: Template".
	DataNoun string
	// Marker, if set, makes the language's templates directories: a
	// version directory holding Marker (Chart.yaml) is a template, the
	// marker its template file, and the engine reads the whole
	// directory.
	Marker string
	// SchemaFile, if set, is the schema's fixed file name in the
	// directory (values.schema.json); otherwise a template's schema is
	// its file name plus SchemaSuffix.
	SchemaFile string
	// Attached marks a language whose engine is not built into every
	// program: the program that renders it attaches the engine
	// (expand.Options.Engines), because its libraries cost start-up time
	// that commands which never meet such a template should not pay
	// (Helm's engine initialises client-go's scheme). Elsewhere a template
	// of the language fails with a clear error.
	Attached bool
	// Status, if its Extension is set, is the language's form of a
	// status template, which dm-controller renders over the live objects.
	Status Status
}

// Status is a language's status template: a file beside a template
// (<name>.status.jinja) that turns the live objects into status outputs.
// Prefix and Suffix wrap it into an ordinary template, so that it runs
// where every template runs (the sandbox's workers, with the engine's
// limits): the prefix gives it its three inputs (resources, instance,
// properties) on its own first line, so that errors name the status
// template's file and lines, and the suffix returns what it printed as
// the text of one primitive of type dm.io/v1alpha1/StatusOutput, which
// the controller reads as YAML.
type Status struct {
	Extension      string
	Prefix, Suffix string
}

// Schema returns the schema file name of template file tmpl.
func (l Language) Schema(tmpl string) string {
	if l.SchemaFile != "" {
		return path.Join(path.Dir(tmpl), l.SchemaFile)
	}
	return tmpl + SchemaSuffix
}

// Registry is the table of languages. Build it with Default; it is
// read-only once built.
type Registry struct {
	langs []Language
	byExt map[string]int // code extension -> index in langs
	data  map[string]int // data extension -> index in langs
}

// Default returns the table of dm's template languages. Adding a
// language is adding its row here and its engine in package engines.
func Default() *Registry {
	return New(
		Language{Name: "jinja", Extensions: []string{".jinja"}, Status: Status{".status.jinja", jinjaStatusPrefix, jinjaStatusSuffix}},
		Language{Name: "python", Aliases: []string{"py"}, Extensions: []string{".py"}},
		Language{Name: "gotmpl", Extensions: []string{".gotmpl"}, Status: Status{".status.gotmpl", gotmplStatusPrefix, gotmplStatusSuffix}},
		Language{Name: "openshift", DataExtensions: []string{".yaml", ".yml", ".json"}, DataNoun: "a kind: Template"},
		Language{Name: "helm", Marker: "Chart.yaml", SchemaFile: "values.schema.json", Attached: true},
	)
}

// New returns a registry of langs, in the order given (the order of
// lists shown to people).
func New(langs ...Language) *Registry {
	r := &Registry{langs: langs, byExt: map[string]int{}, data: map[string]int{}}
	for i, l := range langs {
		for _, e := range l.Extensions {
			r.byExt[e] = i
		}
		for _, e := range l.DataExtensions {
			r.data[e] = i
		}
	}
	return r
}

// Languages returns the table's languages in order.
func (r *Registry) Languages() []Language { return slices.Clone(r.langs) }

// Lookup returns the language named name or one of its aliases.
func (r *Registry) Lookup(name string) (Language, bool) {
	for _, l := range r.langs {
		if l.Name == name || slices.Contains(l.Aliases, name) {
			return l, true
		}
	}
	return Language{}, false
}

// ForFile returns the language of a template file by its name (a
// directory language's marker) or extension, and whether it has one. A
// data extension (.yaml) reports its language too; IsCode tells the two
// apart.
func (r *Registry) ForFile(name string) (Language, bool) {
	for _, l := range r.langs {
		if l.Marker != "" && path.Base(name) == l.Marker {
			return l, true
		}
	}
	ext := path.Ext(name)
	if i, ok := r.byExt[ext]; ok {
		return r.langs[i], true
	}
	if i, ok := r.data[ext]; ok {
		return r.langs[i], true
	}
	return Language{}, false
}

// IsCode reports whether name has a code extension: a template whatever
// its content.
func (r *Registry) IsCode(name string) bool {
	_, ok := r.byExt[path.Ext(name)]
	return ok
}

// IsTemplateExt reports whether ext (with its dot) is any language's
// extension, code or data.
func (r *Registry) IsTemplateExt(ext string) bool {
	_, code := r.byExt[ext]
	_, data := r.data[ext]
	return code || data
}

// Markers returns the marker files of directory languages.
func (r *Registry) Markers() []string {
	var out []string
	for _, l := range r.langs {
		if l.Marker != "" {
			out = append(out, l.Marker)
		}
	}
	return out
}

// StatusExtensions returns the status template extensions in table order.
func (r *Registry) StatusExtensions() []string {
	var out []string
	for _, l := range r.langs {
		if l.Status.Extension != "" {
			out = append(out, l.Status.Extension)
		}
	}
	return out
}

// Describe lists the template files a template named name may have, for
// messages: "name.jinja, name.py, name.gotmpl or a kind: Template
// name.yaml". With data false it lists the code files only. An empty
// name lists extensions.
func (r *Registry) Describe(name string, data bool) string {
	var parts []string
	for _, l := range r.langs {
		for _, e := range l.Extensions {
			parts = append(parts, name+e)
		}
	}
	if data {
		for _, l := range r.langs {
			if len(l.DataExtensions) > 0 {
				parts = append(parts, l.DataNoun+" "+name+l.DataExtensions[0])
			}
			if l.Marker != "" {
				parts = append(parts, "a directory with "+l.Marker)
			}
		}
	}
	return joinOr(parts)
}

// Names returns the language names and aliases people may write on the
// command line, table order: "jinja", "py", "gotmpl", "openshift".
func (r *Registry) Names() []string {
	var out []string
	for _, l := range r.langs {
		if len(l.Aliases) > 0 {
			out = append(out, l.Aliases[0])
		} else {
			out = append(out, l.Name)
		}
	}
	return out
}

// DescribeNames lists Names for help and messages: "jinja, py, gotmpl or
// openshift".
func (r *Registry) DescribeNames() string { return joinOr(r.Names()) }

func joinOr(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
