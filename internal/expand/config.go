package expand

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/layout"
	"github.com/dmhq/dm/internal/expand/value"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/dmhq/dm/internal/resolve"
)

// Config is a configuration: the files it imports and its resources. The
// expanded configuration (Result.Config) has resources only, all primitives.
type Config struct {
	// ConfigVersion is the configuration's configVersion (DM's successor
	// wrote one), kept as written.
	ConfigVersion any        `json:"configVersion,omitempty"`
	Imports       []Import   `json:"imports,omitempty"`
	Resources     []Resource `json:"resources"`
	// Outputs are the configuration's own outputs (DM's outputs: [{name,
	// value}]) as written; Result.Outputs has them resolved. They are not
	// part of the flat configuration that dm expand prints.
	Outputs []Output `json:"-"`
	// ignoredOutputFields say which fields of Outputs beside name and
	// value were ignored, each with its line: Expand warns about them.
	ignoredOutputFields []string
}

// Import names a file sent along with a configuration, usable as a type by
// its path or by Name. In YAML an import is a path alone (DM's format) or a
// mapping with path and name.
type Import struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// Resource is one resource of a configuration. For a primitive, Properties
// is the Kubernetes object; for a template, its input. Metadata (DM's
// dependsOn) and AccessControl are kept as written and passed through to
// the output.
type Resource struct {
	Name          string         `json:"name"`
	Type          string         `json:"type"`
	Properties    map[string]any `json:"properties,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	AccessControl map[string]any `json:"accessControl,omitempty"`
	// Helm is where a type: helm resource's chart comes from, and its
	// content template (seed 002); nil for every other type.
	Helm *HelmChart `json:"-"`
	// project is a resource's project field, which Deployment Manager
	// ignored (every resource of a deployment is in its project): Expand
	// warns naming it, and leaves it out.
	project any
}

// HelmType is the type of a resource that is a Helm chart.
const HelmType = "helm"

// HelmChart is a type: helm resource's chart: Chart alone, a registry
// reference whose version is a chart (or an oci:// reference); URL, a .tgz
// (or an oci:// reference); or Repo, a chart repository, with Chart its
// name and Version a constraint. Content is a Go template whose output,
// YAML, is merged over the resource's properties, the chart's values.
type HelmChart struct {
	Chart, URL, Repo, Version, Content string
}

// source returns where the chart comes from outside the registries, or
// ok false for a registry reference (Chart alone).
func (h *HelmChart) source() (src engine.ChartSource, ok bool) {
	switch {
	case strings.HasPrefix(h.URL, "oci://"):
		return engine.ChartSource{OCI: h.URL}, true
	case h.URL != "":
		return engine.ChartSource{URL: h.URL}, true
	case h.Repo != "":
		return engine.ChartSource{Repo: h.Repo, Chart: h.Chart, Version: h.Version}, true
	case strings.HasPrefix(h.Chart, "oci://"):
		return engine.ChartSource{OCI: h.Chart}, true
	}
	return engine.ChartSource{}, false
}

// checkHelm checks a resource's chart fields.
func checkHelm(i int, r Resource) error {
	h := r.Helm
	if r.Type != HelmType {
		if h != nil {
			return invalid("resources[%d] (%s): chart, url, repo, version and content are fields of type: helm resources, not of type %q", i, r.Name, r.Type)
		}
		return nil
	}
	if h == nil || h.Chart == "" && h.URL == "" {
		return invalid("resources[%d] (%s): a type: helm resource needs chart (a registry reference or oci://HOST/PATH:VERSION), url (a .tgz or oci://...) or repo with chart and version", i, r.Name)
	}
	switch {
	case h.URL != "" && (h.Chart != "" || h.Repo != ""):
		return invalid("resources[%d] (%s): url names the chart alone; chart and repo are for a registry reference or a chart repository", i, r.Name)
	case h.Repo != "" && h.Chart == "":
		return invalid("resources[%d] (%s): repo needs chart, the chart's name in the repository", i, r.Name)
	case h.Version != "" && h.Repo == "":
		return invalid("resources[%d] (%s): version is the constraint of a chart of a repository (repo); a registry reference or URL names its version itself", i, r.Name)
	}
	return nil
}

// ParseConfig parses a configuration in YAML or JSON. file names the
// configuration in errors. The checks are strict: unknown fields and
// resources without name or type are errors. A repeated mapping key keeps
// its last value, as PyYAML does (Expand warns about it).
func ParseConfig(data []byte, file string) (*Config, error) {
	return parseConfig(data, file, yamlLimits{maxBytes: defaultMaxInputBytes, bytesField: "MaxInputBytes", maxAliases: defaultMaxYAMLAliases})
}

func parseConfig(data []byte, file string, lim yamlLimits) (*Config, error) {
	if lim.maxBytes > 0 && len(data) > lim.maxBytes {
		return nil, at(file, 0, limitErr(lim.bytesField, lim.maxBytes, "configuration is %d bytes", len(data)))
	}
	var (
		doc  any
		root *yaml3.Node
		err  error
	)
	if isJSON(data) {
		doc, err = decodeJSON(data)
	} else {
		doc, root, err = decodeYAMLNode(data, lim)
	}
	if err != nil {
		if errors.Is(err, derrors.LimitExceeded) {
			return nil, at(file, 0, err)
		}
		return nil, at(file, yamlErrorLine(err), invalid("%s", strings.TrimPrefix(yamlLinePrefixRE.ReplaceAllString(err.Error(), "$1"), "yaml: ")))
	}
	line := func(path ...any) int { return nodeLine(root, path) }
	cfg, err := configFromDoc(doc, line)
	if err != nil {
		var l *located
		if errors.As(err, &l) {
			return nil, at(file, l.Line, l.Err)
		}
		return nil, at(file, 0, err)
	}
	return cfg, nil
}

// lineErr is an error at a line of the document being read (0: unknown).
func lineErr(line int, format string, args ...any) error {
	return &located{Line: line, Err: invalid(format, args...)}
}

// configFromDoc reads a decoded configuration. line gives the line of a
// path of keys and indexes.
func configFromDoc(doc any, line func(path ...any) int) (*Config, error) {
	cfg := &Config{}
	if doc == nil {
		return cfg, nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, lineErr(line(), "a configuration is a mapping with imports and resources, not %s", kindOf(doc))
	}
	for _, k := range sortedKeys(m) {
		switch k {
		case "imports", "resources", "outputs":
		case "configVersion":
			cfg.ConfigVersion = m[k]
		default:
			return nil, lineErr(line(k), "field %s not found in a configuration (want imports, resources)", k)
		}
	}
	imps, ok := m["imports"].([]any)
	if !ok && m["imports"] != nil {
		return nil, lineErr(line("imports"), "imports is %s; want a list", kindOf(m["imports"]))
	}
	for i, e := range imps {
		var imp Import
		switch e := e.(type) {
		case string:
			imp.Path = e
		case map[string]any:
			for _, k := range sortedKeys(e) {
				s, ok := e[k].(string)
				switch {
				case k != "path" && k != "name":
					return nil, lineErr(line("imports", i, k), "field %s not found in an import (want path, name)", k)
				case !ok:
					return nil, lineErr(line("imports", i, k), "imports[%d].%s is %s; want a string", i, k, kindOf(e[k]))
				case k == "path":
					imp.Path = s
				default:
					imp.Name = s
				}
			}
		default:
			return nil, lineErr(line("imports", i), "imports[%d] is %s; want a path or a mapping with path and name", i, kindOf(e))
		}
		if imp.Path == "" {
			return nil, lineErr(line("imports", i), "imports[%d]: missing path", i)
		}
		cfg.Imports = append(cfg.Imports, imp)
	}
	res, err := resourcesFromValue(m["resources"], line)
	if err != nil {
		return nil, err
	}
	cfg.Resources = res
	var extra []outputExtra
	if cfg.Outputs, extra, err = outputsFromValue(m["outputs"], true); err != nil {
		return nil, lineErr(line("outputs"), "%v", err)
	}
	for _, e := range extra {
		msg := e.String()
		if n := line("outputs", e.index, e.fields[0]); n > 0 {
			msg = fmt.Sprintf("line %d: %s", n, msg)
		}
		cfg.ignoredOutputFields = append(cfg.ignoredOutputFields, msg)
	}
	return cfg, nil
}

// resourcesFromValue reads a list of resources: a configuration's or a
// template output's.
func resourcesFromValue(v any, line func(path ...any) int) ([]Resource, error) {
	list, ok := v.([]any)
	if !ok && v != nil {
		return nil, lineErr(line("resources"), "resources is %s; want a list", kindOf(v))
	}
	out := make([]Resource, 0, len(list))
	for i, e := range list {
		rm, ok := e.(map[string]any)
		if !ok {
			return nil, lineErr(line("resources", i), "resources[%d] is %s; want a mapping with name, type, properties", i, kindOf(e))
		}
		var r Resource
		for _, k := range sortedKeys(rm) { // sorted: of two faults, always the same one
			fv := rm[k]
			switch k {
			case "name", "type":
				s, ok := fv.(string)
				if !ok {
					return nil, lineErr(line("resources", i, k), "resources[%d].%s is %s; want a string", i, k, kindOf(fv))
				}
				if k == "name" {
					r.Name = s
				} else {
					r.Type = s
				}
			case "properties", "metadata", "accessControl":
				var p map[string]any
				switch fv := fv.(type) {
				case nil:
				case map[string]any:
					p = fv
				default:
					return nil, lineErr(line("resources", i, k), "resources[%d] (%v).%s: want a mapping, got %s", i, rm["name"], k, kindOf(fv))
				}
				switch k {
				case "properties":
					r.Properties = p
				case "metadata":
					r.Metadata = p
				default:
					r.AccessControl = p
				}
			case "chart", "url", "repo", "version", "content":
				s, ok := fv.(string)
				if !ok {
					return nil, lineErr(line("resources", i, k), "resources[%d].%s is %s; want a string", i, k, kindOf(fv))
				}
				if r.Helm == nil {
					r.Helm = &HelmChart{}
				}
				*map[string]*string{"chart": &r.Helm.Chart, "url": &r.Helm.URL, "repo": &r.Helm.Repo, "version": &r.Helm.Version, "content": &r.Helm.Content}[k] = s
			case "project":
				r.project = fv
			default:
				if k == "action" {
					// DM's actions call an API method at deploy time.
					return nil, lineErr(line("resources", i, k), "resources[%d] (%v) is a Deployment Manager action (%v), an API method call, which dm does not run: declare the state the call makes as a resource instead (docs/gcp.md: what has no Config Connector equivalent)", i, rm["name"], fv)
				}
				return nil, lineErr(line("resources", i, k), "field %s not found in a resource (want name, type, properties)", k)
			}
		}
		if err := checkResource(i, r); err != nil {
			return nil, &located{Line: line("resources", i), Err: err}
		}
		if err := checkHelm(i, r); err != nil {
			return nil, &located{Line: line("resources", i), Err: err}
		}
		out = append(out, r)
	}
	return out, nil
}

// nodeLine returns the line of the node at path (mapping keys and
// sequence indexes) under root, or of the deepest node found; 0 without a
// node tree (JSON).
func nodeLine(root *yaml3.Node, path []any) int {
	n := root
	if n == nil {
		return 0
	}
	if n.Kind == yaml3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for j, p := range path {
		for n.Kind == yaml3.AliasNode {
			n = n.Alias
		}
		switch p := p.(type) {
		case string:
			if n.Kind != yaml3.MappingNode {
				return n.Line
			}
			next := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = i
					break
				}
			}
			if next < 0 {
				return n.Line
			}
			if j == len(path)-1 {
				return n.Content[next].Line // the key
			}
			n = n.Content[next+1]
		case int:
			if n.Kind != yaml3.SequenceNode || p >= len(n.Content) {
				return n.Line
			}
			n = n.Content[p]
		}
	}
	return n.Line
}

func checkResource(i int, r Resource) error {
	switch {
	case r.Name == "":
		return invalid("resources[%d]: missing name", i)
	case r.Type == "":
		return invalid("resources[%d] (%s): missing type", i, r.Name)
	case len(r.Name) > 253:
		return invalid("resources[%d]: name longer than 253 characters", i)
	}
	return nil
}

var yamlLinePrefixRE = regexp.MustCompile(`(^|; |yaml: )line \d+: `)

// Output is one of a template's outputs; see package layout.
type Output = layout.Output

// ignoredFields are the fields of a template's output that Deployment
// Manager ignored, and so dm ignores with a warning.
type ignoredFields struct {
	// top are the output's fields beside resources, outputs and imports,
	// sorted.
	top []string
	// outputs are its outputs' fields beside name and value.
	outputs []outputExtra
}

// configFromValue reads a template's output: a mapping with resources and
// outputs (a Starlark dict or decoded YAML). Other fields beside resources
// are returned in ignored, sorted, as Deployment Manager ignored them (a
// multi-line value pasted into a template without indentation makes
// fields of its lines); without resources they are an error (a misspelt
// resources). So are an output's fields beside name and value
// (resourceName, description).
func configFromValue(v any) (res []Resource, outs []Output, ignored ignoredFields, err error) {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, nil, ignored, invalid("output is empty; want a mapping with resources")
		}
		return nil, nil, ignored, invalid("output is %s; want a mapping with resources", kindOf(v))
	}
	for k := range m {
		switch k {
		case "resources", "outputs", "imports":
		default:
			ignored.top = append(ignored.top, k)
		}
	}
	sort.Strings(ignored.top)
	if _, ok := m["resources"]; !ok && len(ignored.top) > 0 {
		return nil, nil, ignoredFields{}, invalid("output has unknown field %q; want resources", ignored.top[0])
	}
	noLine := func(...any) int { return 0 }
	res, err = resourcesFromValue(m["resources"], noLine)
	if err != nil {
		var l *located
		if errors.As(err, &l) {
			return nil, nil, ignored, l.Err
		}
		return nil, nil, ignored, err
	}
	outs, ignored.outputs, err = outputsFromValue(m["outputs"], false)
	if err != nil {
		return nil, nil, ignoredFields{}, err
	}
	return res, outs, ignored, nil
}

// outputsFromValue reads outputs: a list of mappings with a name and a
// value. A configuration's names must be unique; a template's may repeat,
// as Deployment Manager let them (the Cloud Foundation Toolkit's folder.py
// returns an output "name" per folder): a reference to a repeated one is
// refused as ambiguous where it is made. Fields beside name and value (a
// description, a template's resourceName) are returned in extra: Deployment
// Manager read only the two and deployed such configurations.
func outputsFromValue(v any, unique bool) (outs []Output, extra []outputExtra, err error) {
	list, ok := v.([]any)
	if !ok && v != nil {
		return nil, nil, invalid("outputs is %s; want a list of {name, value}", kindOf(v))
	}
	seen := map[string]bool{}
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, nil, invalid("outputs[%d] is %s; want a mapping with name and value", i, kindOf(e))
		}
		name, ok := m["name"].(string)
		switch {
		case !ok || name == "":
			return nil, nil, invalid("outputs[%d]: missing name", i)
		case unique && seen[name]:
			return nil, nil, invalid("outputs[%d]: two outputs named %q", i, name)
		}
		if _, ok := m["value"]; !ok {
			return nil, nil, invalid("outputs[%d] (%s): missing value", i, name)
		}
		var fields []string
		for k := range m {
			if k != "name" && k != "value" {
				fields = append(fields, k)
			}
		}
		if len(fields) > 0 {
			sort.Strings(fields)
			extra = append(extra, outputExtra{index: i, name: name, fields: fields})
		}
		seen[name] = true
		outs = append(outs, Output{Name: name, Value: m["value"]})
	}
	return outs, extra, nil
}

// outputExtra is an output with fields beside name and value.
type outputExtra struct {
	index  int
	name   string
	fields []string // sorted
}

// String is the warning about e.
func (e outputExtra) String() string {
	what := "field " + e.fields[0] + " is"
	if len(e.fields) > 1 {
		what = "fields " + strings.Join(e.fields, ", ") + " are"
	}
	return fmt.Sprintf("outputs[%d] (%s): %s ignored, as Deployment Manager ignored an output's fields beside name and value", e.index, e.name, what)
}

// kindOf names a plain value's kind for messages.
func kindOf(v any) string { return value.Kind(v) }

// typeKind is what a resource's type names.
type typeKind int

const (
	primitiveType typeKind = iota
	importType
	registryType
	urlType
	chartType // type: helm, its chart outside the registries
)

// classifyType decides what typ names, given the type names the scope's
// imports provide (path or alias -> path). As in Deployment Manager, a type
// that is neither an import nor a registry reference with a version (or a
// digest pin) is a primitive and passes through as written:
// compute.v1.instance, gcp-types/compute-v1:instances, Service,
// apps/v1/Deployment. Expansion does not decide what a cluster can apply.
// A type that looks like a template file but is not imported stays an
// error (a missing import, not a primitive).
func classifyType(langs *engine.Registry, typ string, imports map[string]string) (typeKind, string) {
	if p, ok := imports[typ]; ok {
		return importType, p
	}
	switch {
	case strings.Contains(typ, "://"):
		return urlType, typ
	case looksLikeFile(langs, typ), isVersionedRef(typ):
		return registryType, typ
	}
	return primitiveType, typ
}

// isVersionedRef reports whether typ is a registry reference with a
// version (redis:v1, common/web:v1.2, github.com/o/r/t:v1) or a digest pin.
func isVersionedRef(typ string) bool {
	if !strings.Contains(typ, ":v") && !strings.Contains(typ, "@sha256:") {
		return false
	}
	r, err := resolve.Parse(typ)
	return err == nil && (r.Version != "" || r.Digest != "")
}

// looksLikeFile reports whether typ names a template file rather than a
// reference, to give a better error when the import is missing.
func looksLikeFile(langs *engine.Registry, typ string) bool {
	if strings.Contains(typ, ":") {
		return false
	}
	_, ok := langs.ForFile(typ)
	return ok && path.Ext(typ) != ""
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return engine.SortedKeys(m) }
