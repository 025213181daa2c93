// Package schema reads DM schemas and applies them to a template
// invocation's properties.
//
// A schema is the YAML file `<template file>.schema` next to a template
// (redis.jinja.schema, replicatedservice.py.schema). Its top level holds
// `info` (title, description and any other keys: author, version...),
// `imports` (extra files the template needs, paths or {path, name}),
// `required` (the property names that must be given) and `properties` (one
// JSON Schema per property). Everything but `info` and `imports` is
// compiled, once, as one JSON Schema of an object with those properties;
// other top-level keywords such as `additionalProperties` keep their JSON
// Schema meaning. Schemas without `$schema` are read as draft 4, the draft
// DM used, and DM's type names `int`, `float`, `bool` and `str` are
// accepted for integer, number, boolean and string. The YAML is read as
// PyYAML's safe_load reads it (package pyyaml), as DM did.
//
// Apply fills in defaults and then validates, the order DM used, so a
// required property with a default is satisfied by its default. See Apply
// for how nested defaults work.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/dmhq/dm/internal/expand/pyyaml"
	"github.com/dmhq/dm/internal/expand/value"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml3 "go.yaml.in/yaml/v3"

	"github.com/dmhq/dm/internal/derrors"
)

// Schema is a parsed and compiled DM schema. It is safe for concurrent use.
type Schema struct {
	// File is the name the schema was parsed under, used in errors.
	File    string
	Info    Info
	Imports []Import
	// Required lists the top-level properties that must be present after
	// defaults are applied.
	Required []string
	// Properties holds the JSON Schema of each property as written, with
	// DM's type aliases rewritten (int becomes integer). It must not be
	// modified.
	Properties map[string]any

	warnings []string // about the schema's text, see Warnings
	compiled *jsonschema.Schema
	root     map[string]any // the compiled document, for Unknown
	defaults *node
	order    []string // property names in file order
	// patterns are the compiled patterns by their text.
	patterns map[string]*pattern
}

// Info is a schema's `info` section. Any keys are allowed; title and
// description are read when they are strings, and Fields keeps them all.
type Info struct {
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	Fields      map[string]any `json:"-"`
}

// Import is an entry of a schema's `imports`: a file the template needs,
// optionally under another name.
type Import struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// typeAlias maps DM's type names to JSON Schema's.
func typeAlias(t string) string {
	switch t {
	case "int":
		return "integer"
	case "float":
		return "number"
	case "bool":
		return "boolean"
	case "str":
		return "string"
	}
	return t
}

// Parse reads and compiles a schema. file names the schema in errors,
// which wrap derrors.InvalidArgument and carry the YAML line of syntax
// errors. Only the schema document itself is read: references to other
// files or URLs fail, since schemas come from other people's repositories.
func Parse(data []byte, file string) (*Schema, error) {
	return ParseWith(data, file, Options{})
}

// ParseWith is Parse with options.
func ParseWith(data []byte, file string, o Options) (*Schema, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %w", file, fmt.Sprintf(format, args...), derrors.InvalidArgument)
	}
	var warnings []string
	doc, node, err := pyyaml.Decode(data, pyyaml.Options{MaxAliases: 1000, Duplicate: func(line int, key string) {
		warnings = append(warnings, pyyaml.DuplicateKeyWarning(file, line, key))
	}})
	if err != nil {
		return nil, fail("%v", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, fail("schema is %s, want a mapping", typeName(doc))
	}

	s := &Schema{File: file, warnings: warnings}
	var problems []string
	if v, ok := top["info"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("info: got %s, want a mapping", typeName(v)))
		}
		s.Info.Fields = m
		s.Info.Title, _ = m["title"].(string)
		s.Info.Description, _ = m["description"].(string)
	}
	if v, ok := top["imports"]; ok && v != nil {
		if l, ok := v.([]any); ok {
			// DM wrote imports as paths; its successor as {path, name}.
			for i, e := range l {
				if p, ok := e.(string); ok {
					l[i] = map[string]any{"path": p}
				}
			}
		}
		if err := decodeStrict(v, &s.Imports); err != nil {
			problems = append(problems, "imports: "+err.Error())
		}
		for i, imp := range s.Imports {
			if imp.Path == "" {
				problems = append(problems, fmt.Sprintf("imports[%d]: path is empty", i))
			}
		}
	}
	if v, ok := top["required"]; ok && v != nil {
		if err := decodeStrict(v, &s.Required); err != nil {
			problems = append(problems, "required: "+err.Error()+" (a list of property names)")
		}
	}
	if v, ok := top["properties"]; ok && v != nil {
		props, ok := v.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("properties: got %s, want a mapping of property names to schemas", typeName(v)))
		}
		s.Properties = props
	}
	if len(problems) > 0 {
		return nil, fail("%s", strings.Join(problems, "; "))
	}

	// The compiled document is the file minus DM's own sections.
	root := make(map[string]any, len(top))
	for k, v := range top {
		if k != "info" && k != "imports" {
			root[k] = v
		}
	}
	if _, ok := root["type"]; !ok {
		root["type"] = "object"
	}
	normalizeSchema(root, "", func(w string) { s.warnings = append(s.warnings, file+": "+w) })

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	c.UseLoader(noLoader{})
	s.patterns = map[string]*pattern{}
	c.UseRegexpEngine(patternEngine(o, s.patterns))
	loc := "mem:///" + url.PathEscape(file)
	if err := c.AddResource(loc, root); err != nil {
		return nil, fail("%v", err)
	}
	if s.compiled, err = c.Compile(loc); err != nil {
		return nil, fail("invalid schema: %s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	s.root = root
	s.defaults = buildDefaults(root, root, 0)
	s.order = propertyOrder(node, s.Properties)
	return s, nil
}

// noLoader refuses to load anything: a `$ref` to another document must not
// read the local disk or the network.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("loading %s: schemas may only refer to themselves", u)
}

// decodeJSON decodes JSON keeping integers exact (int64) and other numbers
// as float64.
func decodeJSON(js []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return value.Numbers(v), nil
}

// decodeStrict converts a decoded value into a typed DM section, rejecting
// unknown fields so that typos are reported.
func decodeStrict(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field != "" {
				return fmt.Errorf("%s: got a %s, want a %s", te.Field, te.Value, te.Type)
			}
			return fmt.Errorf("got a %s, want a %s", te.Value, te.Type)
		}
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// normalizeSchema rewrites DM's type aliases in a schema and its
// subschemas, in place, and drops what DM accepted but draft 4 forbids:
// empty `required` lists, and an allOf, anyOf or oneOf that lists property
// names rather than schemas (the Cloud Foundation Toolkit's schemas write
// `oneOf: [projectID, folderID]`), which Deployment Manager let pass and
// so constrained nothing; warn is told of the latter, at, a path to it.
// It follows only subschema keywords, so a `type` key inside a default
// value or an enum is left alone.
func normalizeSchema(v any, at string, warn func(string)) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if r, ok := m["required"].([]any); ok && len(r) == 0 {
		delete(m, "required")
	}
	for k, sub := range m {
		switch k {
		case "type":
			switch t := sub.(type) {
			case string:
				m[k] = typeAlias(t)
			case []any:
				for i, e := range t {
					if s, ok := e.(string); ok {
						t[i] = typeAlias(s)
					}
				}
			}
		case "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
			"propertyNames", "unevaluatedProperties", "unevaluatedItems":
			normalizeSchema(sub, join(at, k), warn)
		case "properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies":
			if sm, ok := sub.(map[string]any); ok {
				for name, e := range sm {
					normalizeSchema(e, join(at, k+"."+name), warn)
				}
			}
		case "allOf", "anyOf", "oneOf":
			list, ok := sub.([]any)
			if ok && slices.ContainsFunc(list, func(e any) bool { _, ok := e.(string); return ok }) {
				delete(m, k)
				warn(fmt.Sprintf("%s lists names (%s), not schemas, which Deployment Manager accepted: it constrains nothing", join(at, k), strings.Join(stringsOf(list), ", ")))
				continue
			}
			fallthrough
		case "items", "prefixItems":
			if list, ok := sub.([]any); ok {
				for i, e := range list {
					normalizeSchema(e, join(at, fmt.Sprintf("%s[%d]", k, i)), warn)
				}
			} else {
				normalizeSchema(sub, join(at, k), warn)
			}
		}
	}
}

// join appends key to the dotted schema path at.
func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// stringsOf returns the strings of list, the others written as %v.
func stringsOf(list []any) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = fmt.Sprint(e)
	}
	return out
}

// propertyOrder returns the property names in the order the file lists
// them (from the document's node tree), for documentation; names it cannot
// place come last, sorted.
func propertyOrder(root *yaml3.Node, props map[string]any) []string {
	var order []string
	seen := make(map[string]bool, len(props))
	n := root
	if n != nil && n.Kind == yaml3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n != nil && n.Kind == yaml3.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value != "properties" || n.Content[i+1].Kind != yaml3.MappingNode {
				continue
			}
			pn := n.Content[i+1]
			for j := 0; j+1 < len(pn.Content); j += 2 {
				name := pn.Content[j].Value
				if _, ok := props[name]; ok && !seen[name] {
					order = append(order, name)
					seen[name] = true
				}
			}
		}
	}
	var rest []string
	for name := range props {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(order, rest...)
}

// typeName names the JSON type of v for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, float64, int, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Warnings are what Parse read but is likely a mistake, each naming the
// file and line: a mapping key written twice (the last value is kept, as
// PyYAML, which DM read schemas with, keeps it).
func (s *Schema) Warnings() []string { return s.warnings }
