package expand

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/dmhq/dm/internal/expand/value"

	yaml "go.yaml.in/yaml/v2"

	"github.com/dmhq/dm/internal/index"
)

// Config is a configuration: the files it imports and its resources. The
// expanded configuration (Result.Config) has resources only, all primitives.
type Config struct {
	Imports   []Import   `json:"imports,omitempty"`
	Resources []Resource `json:"resources"`
}

// Import names a file sent along with a configuration, usable as a type by
// its path or by Name.
type Import struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// Resource is one resource of a configuration. For a primitive, Properties
// is the Kubernetes object; for a template, its input.
type Resource struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties,omitempty"`
}

// rawConfig is the decoding target: yaml.v2 reports unknown fields and type
// mismatches with line numbers when decoding into a struct.
type rawConfig struct {
	Imports   []Import      `yaml:"imports" json:"imports"`
	Resources []rawResource `yaml:"resources" json:"resources"`
	// Outputs was part of DM's configuration format; dm accepts and
	// ignores it so DM-era configurations still parse.
	Outputs any `yaml:"outputs" json:"outputs"`
}

type rawResource struct {
	Name       string `yaml:"name" json:"name"`
	Type       string `yaml:"type" json:"type"`
	Properties any    `yaml:"properties" json:"properties"`
	// Metadata held DM's dependsOn; accepted and ignored.
	Metadata any `yaml:"metadata" json:"metadata"`
}

// ParseConfig parses a configuration in YAML or JSON. file names the
// configuration in errors. The checks are strict: unknown fields, duplicate
// keys, resources without name or type and duplicate names are errors.
func ParseConfig(data []byte, file string) (*Config, error) {
	return parseConfig(data, file, yamlLimits{maxBytes: defaultMaxInputBytes, bytesField: "MaxInputBytes", maxAliases: defaultMaxYAMLAliases})
}

func parseConfig(data []byte, file string, lim yamlLimits) (*Config, error) {
	if lim.maxBytes > 0 && len(data) > lim.maxBytes {
		return nil, at(file, 0, limitErr(lim.bytesField, lim.maxBytes, "configuration is %d bytes", len(data)))
	}
	var raw rawConfig
	if isJSON(data) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			line := 0
			var se *json.SyntaxError
			var te *json.UnmarshalTypeError
			switch {
			case errors.As(err, &se):
				line = lineOf(data, se.Offset)
			case errors.As(err, &te):
				line = lineOf(data, te.Offset)
			}
			return nil, at(file, line, invalid("%v", err))
		}
		for i := range raw.Resources {
			raw.Resources[i].Properties = value.Numbers(raw.Resources[i].Properties)
		}
	} else {
		if lim.maxAliases > 0 {
			if n := countAliases(data); n > lim.maxAliases {
				return nil, at(file, 0, limitErr("MaxYAMLAliases", lim.maxAliases, "configuration uses %d aliases", n))
			}
		}
		if err := yaml.UnmarshalStrict(data, &raw); err != nil {
			if le := aliasingErr(err, lim.maxAliases); le != err {
				return nil, at(file, 0, le)
			}
			return nil, at(file, yamlErrorLine(err), invalid("%s", cleanYAMLError(err)))
		}
	}
	cfg := &Config{Imports: raw.Imports}
	for i, imp := range raw.Imports {
		if imp.Path == "" {
			return nil, at(file, 0, invalid("imports[%d]: missing path", i))
		}
	}
	res, err := rawResources(raw.Resources)
	if err != nil {
		return nil, at(file, 0, err)
	}
	cfg.Resources = res
	return cfg, nil
}

func rawResources(raws []rawResource) ([]Resource, error) {
	out := make([]Resource, 0, len(raws))
	for i, r := range raws {
		props, err := normalize(r.Properties)
		if err != nil {
			return nil, invalid("resources[%d] (%s).properties: %v", i, r.Name, err)
		}
		res := Resource{Name: r.Name, Type: r.Type}
		switch p := props.(type) {
		case nil:
		case map[string]any:
			res.Properties = p
		default:
			return nil, invalid("resources[%d] (%s).properties: want a mapping, got %s", i, r.Name, kindOf(props))
		}
		if err := checkResource(i, res); err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
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

var yamlLinePrefixRE = regexp.MustCompile(`(^|; )line \d+: `)

// cleanYAMLError replaces Go type names in yaml.v2 messages with the
// names users know.
func cleanYAMLError(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.NewReplacer(
		"in type expand.rawConfig", "in a configuration (want imports, resources)",
		"in type expand.rawResource", "in a resource (want name, type, properties)",
		"in type expand.Import", "in an import (want path, name)",
		"expand.rawConfig", "configuration",
		"expand.rawResource", "resource",
		"expand.Import", "import",
		"unmarshal errors:\n  ", "",
		"\n  ", "; ",
	).Replace(s)
	return yamlLinePrefixRE.ReplaceAllString(s, "$1")
}

// configFromValue reads a template's output: a mapping with resources (a
// Starlark dict or decoded YAML).
func configFromValue(v any) ([]Resource, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, invalid("output is empty; want a mapping with resources")
		}
		return nil, invalid("output is %s; want a mapping with resources", kindOf(v))
	}
	for k := range m {
		switch k {
		case "resources", "outputs", "imports":
		default:
			return nil, invalid("output has unknown field %q; want resources", k)
		}
	}
	list, ok := m["resources"].([]any)
	if !ok && m["resources"] != nil {
		return nil, invalid("output resources is %s; want a list", kindOf(m["resources"]))
	}
	out := make([]Resource, 0, len(list))
	for i, e := range list {
		rm, ok := e.(map[string]any)
		if !ok {
			return nil, invalid("resources[%d] is %s; want a mapping with name, type, properties", i, kindOf(e))
		}
		var r Resource
		for k, fv := range rm {
			switch k {
			case "name", "type":
				s, ok := fv.(string)
				if !ok {
					return nil, invalid("resources[%d].%s is %s; want a string", i, k, kindOf(fv))
				}
				if k == "name" {
					r.Name = s
				} else {
					r.Type = s
				}
			case "properties":
				switch p := fv.(type) {
				case nil:
				case map[string]any:
					r.Properties = p
				default:
					return nil, invalid("resources[%d] (%v).properties is %s; want a mapping", i, rm["name"], kindOf(fv))
				}
			case "metadata":
			default:
				return nil, invalid("resources[%d] (%v): unknown field %q; want name, type, properties", i, rm["name"], k)
			}
		}
		if err := checkResource(i, r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// kindOf names a plain value's kind for messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, int, float64:
		return "a number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// typeKind is what a resource's type names.
type typeKind int

const (
	primitiveType typeKind = iota
	importType
	registryType
	urlType
)

// primitiveRE matches Kubernetes kinds, optionally with group and version:
// Service, v1/Service, apps/v1/Deployment, example.com/v1beta1/Widget.
var primitiveRE = regexp.MustCompile(`^(?:(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?/)?[A-Z][A-Za-z0-9]*$`)

// classifyType decides what typ names, given the type names the scope's
// imports provide (path or alias -> path).
func classifyType(typ string, imports map[string]string) (typeKind, string) {
	if p, ok := imports[typ]; ok {
		return importType, p
	}
	switch {
	case primitiveRE.MatchString(typ):
		return primitiveType, typ
	case strings.Contains(typ, "://"):
		return urlType, typ
	}
	return registryType, typ
}

// looksLikeFile reports whether typ names a template file rather than a
// reference, to give a better error when the import is missing.
func looksLikeFile(typ string) bool {
	if strings.Contains(typ, ":") {
		return false
	}
	_, ok := index.LanguageOf(typ)
	return ok && path.Ext(typ) != ""
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
