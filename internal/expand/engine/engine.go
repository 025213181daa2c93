// Package engine is the contract between the expansion walk (package
// expand) and the template languages, and the one table of those
// languages that every other package asks: which file names are
// templates of which language, what a language is called on the command
// line, where a template's schema is, which files are status templates.
//
// The package imports nothing of the project and no template library, so
// the index, the catalog, the API and the controller can read the table
// without linking gonja, Starlark or sprig. The implementations live in
// their own packages and are attached to the table by name when an
// Expander is built.
package engine

import (
	"context"
	"fmt"
)

// Engine renders one template invocation. Implementations are safe for
// concurrent use; they cache what they compile under Invocation.FilesKey.
type Engine interface {
	// Name is the language's name in the table (Language.Name).
	Name() string
	// Render runs the template and returns what it made. Errors that
	// know where they happened are *Located.
	Render(ctx context.Context, inv Invocation) (Output, error)
}

// Checker is implemented by engines that can parse a template without
// running it, for lint: Check reports the first syntax error of file,
// one of files.
type Checker interface {
	Check(ctx context.Context, files map[string][]byte, file string) error
}

// ConfigTemplater is implemented by engines whose templates may be given
// in place of a configuration (a kind: Template document): expansion
// then expands the document as the one resource of its template.
type ConfigTemplater interface {
	// IsConfigTemplate reports, by a cheap look, whether a configuration
	// document is a template of the engine.
	IsConfigTemplate(data []byte) bool
	// ResourceName names the resource of a template given directly, ""
	// for the default (the file name).
	ResourceName(data []byte) string
}

// NotTemplateError is what a Checker returns for a file of a data
// extension (.yaml) that is not a template of its language: lint then
// says which code templates the version could have had instead.
type NotTemplateError struct {
	File string
	// Want says what a template of the language is: "a kind: Template".
	Want string
	Err  error
}

func (e *NotTemplateError) Error() string { return fmt.Sprintf("%s is not %s", e.File, e.Want) }

// Unwrap returns the parser's error.
func (e *NotTemplateError) Unwrap() error { return e.Err }

// Invocation is one template call.
type Invocation struct {
	// File is the template file, a key of Files. For a language whose
	// templates are directories (Language.Marker), it is the marker file.
	File string
	// Source is Files[File].
	Source []byte
	// Files are the files the template may read: its version directory,
	// or the files sent with a configuration. A directory engine (a
	// chart) reads its whole tree from here.
	Files map[string][]byte
	// FilesKey identifies the content of Files; engines cache what they
	// compile under FilesKey and File.
	FilesKey string
	// Imports returns Files as strings (the imports global of DM's
	// templates); it is computed once per Files and must not be changed.
	Imports func() map[string]any
	// Properties are the template's properties after its schema's
	// defaults; Env is its env (deployment, name, type, namespace,
	// version and --env).
	Properties map[string]any
	Env        map[string]any
	// Label names the template for people (its reference or path).
	Label string
	// Order knows the document order of the keys of the mappings of
	// Properties; engines whose dicts keep insertion order use it.
	Order KeyOrder
	// Print receives what the template prints (Starlark's print): the
	// invocation's Label, the file and line it printed from.
	Print func(ctx context.Context, label, file string, line int, msg string)
	// Cluster is the cluster the expansion is deployed to (Helm's
	// .Capabilities and lookup); nil renders offline. Only engines that
	// read a cluster (helm) use it.
	Cluster *Cluster
}

// KeyOrder remembers the document order of decoded mappings' keys.
type KeyOrder interface {
	// Keys returns m's keys in document order (sorted when unknown).
	Keys(m map[string]any) []string
	// Record notes keys as m's order.
	Record(m map[string]any, keys []string)
	// Inherit records for dst, a copy of src with keys perhaps added,
	// src's order.
	Inherit(dst, src map[string]any)
}

// Output is what a template made; exactly one field is set.
type Output struct {
	// YAML is rendered text: a configuration (resources, outputs).
	YAML []byte
	// Value is a configuration as a decoded value: a mapping with
	// resources and outputs.
	Value any
	// Resources are primitives made directly (OpenShift's objects).
	Resources []Resource
}

// Resource is a primitive an engine made directly.
type Resource struct {
	Name       string
	Type       string
	Properties map[string]any
}

// ChartSource names a Helm chart outside the registries, as a type: helm
// resource gives it: a .tgz URL, an OCI reference
// (oci://HOST/PATH:VERSION), or a chart repository with the chart's name
// and a version constraint.
type ChartSource struct {
	URL     string `json:"url,omitempty"`
	OCI     string `json:"oci,omitempty"`
	Repo    string `json:"repo,omitempty"`
	Chart   string `json:"chart,omitempty"`
	Version string `json:"version,omitempty"`
}

// String names the source for people.
func (s ChartSource) String() string {
	switch {
	case s.OCI != "":
		return s.OCI
	case s.URL != "":
		return s.URL
	}
	v := s.Version
	if v == "" {
		v = "latest"
	}
	return s.Repo + " " + s.Chart + "@" + v
}

// Chart is a downloaded chart: its files relative to its directory, and
// what it is.
type Chart struct {
	Files   map[string][]byte
	Name    string
	Version string
	URL     string
	Digest  string
}

// ChartFetcher downloads the charts of type: helm resources; a program
// that renders charts attaches one (expand.Options.Charts).
type ChartFetcher interface {
	FetchChart(ctx context.Context, src ChartSource) (*Chart, error)
}

// Linter is implemented by engines whose language has lint rules of its
// own (Helm's pkg/lint for charts): dm lint and registryd's template
// descriptions run them on a version beside dm's checks.
type Linter interface {
	// Lint checks the template whose template file is file, one of
	// files (the version directory). An error means the rules could not
	// run at all; what they found is in the findings.
	Lint(ctx context.Context, files map[string][]byte, file string) ([]Finding, error)
}

// Finding is one message of a language's lint rules.
type Finding struct {
	// Severity is "error" or "warning", as the index's findings.
	Severity string
	// File is the file the rule names, relative to the version directory
	// (templates/cm.yaml); Line is 1-based, 0 when unknown.
	File string
	Line int
	// Message is the rule's text.
	Message string
}
