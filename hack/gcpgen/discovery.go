package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A discovery document, as google.golang.org/api ships it, and the
// trimmed form kept in third_party/googleapis/discovery: the methods DM
// calls and the schemas their request bodies reach, with each field's
// type and whether the server alone sets it (output only).

type discoDoc struct {
	Name      string                 `json:"name"`
	Version   string                 `json:"version"`
	Revision  string                 `json:"revision,omitempty"`
	Methods   map[string]*discoMeth  `json:"methods,omitempty"` // trimmed form: "instances.insert"
	Schemas   map[string]*discoField `json:"schemas"`
	Resources map[string]*discoRes   `json:"resources,omitempty"` // full form only
}

type discoRes struct {
	Methods   map[string]*discoMeth `json:"methods"`
	Resources map[string]*discoRes  `json:"resources"`
}

type discoMeth struct {
	Request    *discoField            `json:"request,omitempty"`
	Parameters map[string]*discoField `json:"parameters,omitempty"`
}

type discoField struct {
	Ref                  string                 `json:"$ref,omitempty"`
	Type                 string                 `json:"type,omitempty"`
	Format               string                 `json:"format,omitempty"`
	Location             string                 `json:"location,omitempty"` // parameters: path or query
	Description          string                 `json:"description,omitempty"`
	ReadOnly             bool                   `json:"readOnly,omitempty"`
	Items                *discoField            `json:"items,omitempty"`
	Properties           map[string]*discoField `json:"properties,omitempty"`
	AdditionalProperties *discoField            `json:"additionalProperties,omitempty"`
}

// discoDir is where google.golang.org/api keeps the document of api
// (compute/beta): compute/v0.beta/compute-api.json.
func discoFile(moduleDir, api string) string {
	name, version, _ := strings.Cut(api, "/")
	dir := version
	if name == "compute" && (version == "beta" || version == "alpha") {
		dir = "v0." + version
	}
	return filepath.Join(moduleDir, name, dir, name+"-api.json")
}

func (r *discoRes) find(path []string) *discoMeth {
	if r == nil || len(path) == 0 {
		return nil
	}
	if len(path) == 1 {
		return r.Methods[path[0]]
	}
	return r.Resources[path[0]].find(path[1:])
}

// trimDiscovery reads the full document of api and keeps methods and the
// schemas they reach.
func trimDiscovery(moduleDir, api string, methods []string) (*discoDoc, error) {
	b, err := os.ReadFile(discoFile(moduleDir, api))
	if err != nil {
		return nil, err
	}
	var full discoDoc
	if err := json.Unmarshal(b, &full); err != nil {
		return nil, fmt.Errorf("%s: %w", api, err)
	}
	out := &discoDoc{Name: full.Name, Version: full.Version, Revision: full.Revision,
		Methods: map[string]*discoMeth{}, Schemas: map[string]*discoField{}}
	root := &discoRes{Resources: full.Resources}
	var keep func(name string)
	var walk func(f *discoField)
	walk = func(f *discoField) {
		if f == nil {
			return
		}
		if f.Ref != "" {
			keep(f.Ref)
		}
		walk(f.Items)
		walk(f.AdditionalProperties)
		for _, p := range f.Properties {
			walk(p)
		}
	}
	keep = func(name string) {
		if _, ok := out.Schemas[name]; ok {
			return
		}
		s := full.Schemas[name]
		if s == nil {
			return
		}
		t := trimField(s)
		out.Schemas[name] = t
		walk(t)
	}
	for _, m := range methods {
		meth := root.find(strings.Split(m, "."))
		if meth == nil {
			return nil, fmt.Errorf("%s has no method %s", api, m)
		}
		tm := &discoMeth{Parameters: map[string]*discoField{}}
		if meth.Request != nil {
			tm.Request = &discoField{Ref: meth.Request.Ref}
			keep(meth.Request.Ref)
		}
		for name, p := range meth.Parameters {
			if p.Location == "path" || p.Location == "query" {
				tm.Parameters[name] = &discoField{Type: p.Type, Location: p.Location, Format: p.Format}
			}
		}
		out.Methods[m] = tm
	}
	return out, nil
}

func trimField(f *discoField) *discoField {
	if f == nil {
		return nil
	}
	d := f.Description
	t := &discoField{Ref: f.Ref, Type: f.Type, Format: f.Format,
		ReadOnly: f.ReadOnly || strings.Contains(d, "[Output Only]") || strings.HasPrefix(strings.TrimSpace(d), "Output only") ||
			strings.HasPrefix(strings.TrimSpace(d), "Output Only"),
		Items: trimField(f.Items), AdditionalProperties: trimField(f.AdditionalProperties)}
	if len(f.Properties) > 0 {
		t.Properties = map[string]*discoField{}
		for k, p := range f.Properties {
			t.Properties[k] = trimField(p)
		}
	}
	return t
}

// restNode is one field of a request body with $refs followed.
type restNode struct {
	Type     string // string, integer, number, boolean, object, array, map, any
	ReadOnly bool
	Param    bool // a parameter of the method, not a field of its body
	Props    map[string]*restNode
	Items    *restNode // an array's items, a map's values
}

// restTree builds the body DM writes for method m of doc: the request
// schema's fields and the method's parameters (DM takes them as
// properties too), to depth 12, a recursive schema cut where it repeats.
func restTree(doc *discoDoc, m string) (*restNode, error) {
	meth := doc.Methods[m]
	if meth == nil {
		return nil, fmt.Errorf("%s %s: no method %s in the vendored discovery document (run -refresh)", doc.Name, doc.Version, m)
	}
	root := &restNode{Type: "object", Props: map[string]*restNode{}}
	if meth.Request != nil {
		r := convertField(doc, meth.Request, map[string]bool{}, 0)
		if r != nil && r.Props != nil {
			root = r
		}
	}
	for name, p := range meth.Parameters {
		if _, ok := root.Props[name]; !ok {
			root.Props[name] = &restNode{Type: scalarType(p), Param: true}
		}
	}
	return root, nil
}

func scalarType(f *discoField) string {
	switch f.Type {
	case "integer":
		return "integer"
	case "number":
		return "number"
	case "boolean":
		return "boolean"
	case "string":
		if f.Format == "int64" || f.Format == "uint64" {
			return "integer" // JSON string in REST, a number in KCC
		}
		return "string"
	case "any":
		return "any"
	}
	return "string"
}

func convertField(doc *discoDoc, f *discoField, stack map[string]bool, depth int) *restNode {
	if f == nil || depth > 12 {
		return nil
	}
	if f.Ref != "" {
		if stack[f.Ref] {
			return &restNode{Type: "any"}
		}
		s := doc.Schemas[f.Ref]
		if s == nil {
			return &restNode{Type: "any"}
		}
		stack[f.Ref] = true
		defer delete(stack, f.Ref)
		n := convertField(doc, s, stack, depth)
		if n != nil {
			n.ReadOnly = n.ReadOnly || f.ReadOnly
		}
		return n
	}
	switch {
	case f.Type == "array":
		return &restNode{Type: "array", ReadOnly: f.ReadOnly, Items: convertField(doc, f.Items, stack, depth+1)}
	case f.Type == "object" && len(f.Properties) > 0:
		n := &restNode{Type: "object", ReadOnly: f.ReadOnly, Props: map[string]*restNode{}}
		for k, p := range f.Properties {
			if c := convertField(doc, p, stack, depth+1); c != nil {
				n.Props[k] = c
			}
		}
		return n
	case f.Type == "object" && f.AdditionalProperties != nil:
		return &restNode{Type: "map", ReadOnly: f.ReadOnly, Items: convertField(doc, f.AdditionalProperties, stack, depth+1)}
	case f.Type == "object":
		return &restNode{Type: "any", ReadOnly: f.ReadOnly}
	}
	return &restNode{Type: scalarType(f), ReadOnly: f.ReadOnly}
}
