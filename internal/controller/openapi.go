package controller

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/dmhq/dm/internal/expand/schema"
)

// maxSchemaDepth bounds the nesting converted; deeper levels keep any
// value (the template's own schema still validates them).
const maxSchemaDepth = 32

// specSchema converts a template's DM schema to the structural OpenAPI v3
// schema of a defined kind's spec. What structural OpenAPI expresses
// (types, defaults, required, descriptions, enums, bounds, nested objects
// and arrays) is kept; what it cannot ($ref, oneOf/anyOf/allOf/not, tuple
// items, several types, patterns Go's regexp rejects, unknown formats)
// becomes x-kubernetes-preserve-unknown-fields or is dropped, and is still
// enforced by the template's own schema when the instance is expanded. A
// nil schema gives a spec that keeps any field.
func specSchema(sc *schema.Schema) apiextensionsv1.JSONSchemaProps {
	if sc == nil || (len(sc.Properties) == 0 && len(sc.Required) == 0) {
		return preserve(apiextensionsv1.JSONSchemaProps{Type: "object"})
	}
	out := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if sc.Info.Description != "" {
		out.Description = sc.Info.Description
	}
	for name, p := range sc.Properties {
		out.Properties[name] = openAPI(p, 1)
	}
	for _, r := range sc.Required {
		// A required name without a schema has no field to require:
		// CRD validation would reject it, the template's schema does not.
		if _, ok := sc.Properties[r]; ok {
			out.Required = append(out.Required, r)
		}
	}
	return out
}

// preserve marks s as keeping any unknown field or value.
func preserve(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	s.XPreserveUnknownFields = ptr(true)
	return s
}

// anyValue is a node that accepts any value.
func anyValue(desc string) apiextensionsv1.JSONSchemaProps {
	return preserve(apiextensionsv1.JSONSchemaProps{Description: desc})
}

// formats are the formats the apiserver knows; others are dropped.
var formats = []string{
	"bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
	"uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
	"byte", "password", "date", "duration", "datetime", "date-time", "int32", "int64", "float", "double",
}

// openAPI converts one JSON Schema node.
func openAPI(v any, depth int) apiextensionsv1.JSONSchemaProps {
	m, ok := v.(map[string]any)
	desc := ""
	if ok {
		desc, _ = m["description"].(string)
		if t, _ := m["title"].(string); desc == "" {
			desc = t
		}
	}
	if !ok || depth > maxSchemaDepth {
		return anyValue(desc)
	}
	for _, k := range []string{"$ref", "oneOf", "anyOf", "allOf", "not", "patternProperties", "dependencies", "if"} {
		if _, ok := m[k]; ok {
			return anyValue(desc)
		}
	}
	out := apiextensionsv1.JSONSchemaProps{Description: desc}
	typ, nullable, ok := schemaType(m)
	if !ok {
		return anyValue(desc)
	}
	if typ == "int-or-string" {
		out.XIntOrString = true
	} else {
		out.Type = typ
	}
	out.Nullable = nullable
	if typ == "" {
		// No type: any value, as JSON Schema means it.
		return anyValue(desc)
	}
	switch typ {
	case "object":
		objectSchema(m, &out, depth)
	case "array":
		items := anyValue("")
		if it, ok := m["items"].(map[string]any); ok {
			items = openAPI(it, depth+1)
		}
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}
		out.MinItems, out.MaxItems = intOf(m["minItems"]), intOf(m["maxItems"])
	case "string":
		out.MinLength, out.MaxLength = intOf(m["minLength"]), intOf(m["maxLength"])
		if p, ok := m["pattern"].(string); ok {
			if _, err := regexp.Compile(p); err == nil {
				out.Pattern = p
			}
		}
		if f, ok := m["format"].(string); ok && slices.Contains(formats, f) {
			out.Format = f
		}
	case "integer", "number":
		numberSchema(m, &out)
	}
	if e, ok := m["enum"].([]any); ok {
		for _, x := range e {
			if j := rawJSON(x, typ); j != nil {
				out.Enum = append(out.Enum, *j)
			}
		}
	}
	if d, ok := m["default"]; ok {
		out.Default = rawJSON(d, typ)
	}
	return out
}

// objectSchema fills the properties (or the map values) of an object.
func objectSchema(m map[string]any, out *apiextensionsv1.JSONSchemaProps, depth int) {
	props, _ := m["properties"].(map[string]any)
	ap, hasAP := m["additionalProperties"]
	apSchema, apIsSchema := ap.(map[string]any)
	switch {
	case len(props) > 0:
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		for name, p := range props {
			out.Properties[name] = openAPI(p, depth+1)
		}
		if req, ok := m["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					if _, ok := props[s]; ok {
						out.Required = append(out.Required, s)
					}
				}
			}
		}
		// Properties beside additional ones: structural OpenAPI has no
		// such object, so the fields not listed are kept, unchecked.
		if hasAP && ap != false {
			out.XPreserveUnknownFields = ptr(true)
		}
	case apIsSchema:
		s := openAPI(apSchema, depth+1)
		out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &s}
	default:
		// A free-form object.
		out.XPreserveUnknownFields = ptr(true)
	}
	out.MinProperties, out.MaxProperties = intOf(m["minProperties"]), intOf(m["maxProperties"])
}

// numberSchema fills a number's bounds, from draft 4's boolean
// exclusiveMinimum/Maximum or draft 6's numbers.
func numberSchema(m map[string]any, out *apiextensionsv1.JSONSchemaProps) {
	out.Minimum, out.Maximum = floatOf(m["minimum"]), floatOf(m["maximum"])
	switch x := m["exclusiveMinimum"].(type) {
	case bool:
		out.ExclusiveMinimum = x && out.Minimum != nil
	default:
		if f := floatOf(x); f != nil {
			out.Minimum, out.ExclusiveMinimum = f, true
		}
	}
	switch x := m["exclusiveMaximum"].(type) {
	case bool:
		out.ExclusiveMaximum = x && out.Maximum != nil
	default:
		if f := floatOf(x); f != nil {
			out.Maximum, out.ExclusiveMaximum = f, true
		}
	}
	if f := floatOf(m["multipleOf"]); f != nil && *f > 0 {
		out.MultipleOf = f
	}
}

// schemaType reads a node's type: one OpenAPI type, "int-or-string", or
// "" for none; nullable when "null" is among several. ok is false when
// the types cannot be expressed (such as string or boolean).
func schemaType(m map[string]any) (typ string, nullable, ok bool) {
	var types []string
	switch t := m["type"].(type) {
	case nil:
		if _, ok := m["properties"]; ok {
			return "object", false, true
		}
		return "", false, true
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return "", false, false
			}
			types = append(types, s)
		}
	default:
		return "", false, false
	}
	if i := slices.Index(types, "null"); i >= 0 {
		types, nullable = slices.Delete(types, i, i+1), true
	}
	sort.Strings(types)
	switch {
	case len(types) == 1 && slices.Contains([]string{"object", "array", "string", "integer", "number", "boolean"}, types[0]):
		return types[0], nullable, true
	case slices.Equal(types, []string{"integer", "string"}):
		return "int-or-string", nullable, true
	}
	return "", false, false
}

// fits tells whether JSON value v is of OpenAPI type typ, so that a
// default or an enum value the apiserver would reject is left to the
// template's own schema.
func fits(v any, typ string) bool {
	switch x := v.(type) {
	case map[string]any:
		return typ == "object"
	case []any:
		return typ == "array"
	case string:
		return typ == "string" || typ == "int-or-string"
	case bool:
		return typ == "boolean"
	case nil:
		return false
	default:
		f := floatOf(x)
		if f == nil {
			return false
		}
		if typ == "number" {
			return true
		}
		return (typ == "integer" || typ == "int-or-string") && *f == float64(int64(*f))
	}
}

func floatOf(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case float64:
		f = x
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return nil
		}
	default:
		return nil
	}
	return &f
}

func intOf(v any) *int64 {
	f := floatOf(v)
	if f == nil || *f < 0 || *f != float64(int64(*f)) {
		return nil
	}
	return ptr(int64(*f))
}

// rawJSON is v as JSON when it is of type typ; nil when not, or when it
// has no JSON form (an infinite float).
func rawJSON(v any, typ string) *apiextensionsv1.JSON {
	if !fits(v, typ) {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return &apiextensionsv1.JSON{Raw: b}
}
