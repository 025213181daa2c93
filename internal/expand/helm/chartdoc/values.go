package chartdoc

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// Property is one row of a chart's values table for the catalog.
type Property struct {
	// Name is the value's dotted path, such as image.repository.
	Name string
	// Type is the JSON type: string, integer, number, boolean, array,
	// object (several joined with |), or empty when unknown.
	Type string
	// Default is the default as compact JSON, empty when there is none.
	Default string
	// Description is the schema's description or the comment above the
	// value in values.yaml.
	Description string
}

// Properties returns a chart's values table: from values.schema.json when
// the chart has one (its properties, nested ones by dotted name, with
// defaults from the schema or else from values.yaml), else from
// values.yaml and its comments: helm-docs' "# -- text" when present (and
// the comment lines after it), else the plain comment above the value. A
// map whose comment is a "# --" description is one row; other maps are
// walked into.
func Properties(valuesYAML, schemaJSON []byte) ([]Property, error) {
	var defaults map[string]any
	if len(valuesYAML) > 0 {
		if err := yaml3.Unmarshal(valuesYAML, &defaults); err != nil {
			return nil, invalid(fmt.Errorf("values.yaml: %w", err))
		}
	}
	if len(schemaJSON) > 0 {
		var s map[string]any
		if err := json.Unmarshal(schemaJSON, &s); err != nil {
			return nil, invalid(fmt.Errorf("values.schema.json: %w", err))
		}
		var out []Property
		schemaProps(&out, "", s, defaults)
		return out, nil
	}
	if len(valuesYAML) == 0 {
		return nil, nil
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(valuesYAML, &doc); err != nil {
		return nil, invalid(fmt.Errorf("values.yaml: %w", err))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml3.MappingNode {
		return nil, nil
	}
	var out []Property
	// The first key's comment may sit on the document when a blank line
	// separates it from the key.
	first := doc.HeadComment
	yamlProps(&out, "", doc.Content[0], first)
	return out, nil
}

func schemaProps(out *[]Property, prefix string, s map[string]any, defaults map[string]any) {
	props, _ := s["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ps, _ := props[k].(map[string]any)
		name := join(prefix, k)
		def, hasDef := defaults[k]
		if sub, ok := ps["properties"].(map[string]any); ok && len(sub) > 0 {
			dm, _ := def.(map[string]any)
			schemaProps(out, name, ps, dm)
			continue
		}
		p := Property{Name: name, Type: schemaType(ps["type"])}
		if d, ok := ps["description"].(string); ok {
			p.Description = d
		} else if d, ok := ps["title"].(string); ok {
			p.Description = d
		}
		if d, ok := ps["default"]; ok {
			p.Default = compact(d)
		} else if hasDef {
			p.Default = compact(def)
		}
		*out = append(*out, p)
	}
}

func schemaType(t any) string {
	switch t := t.(type) {
	case string:
		return t
	case []any:
		var s []string
		for _, x := range t {
			if x, ok := x.(string); ok {
				s = append(s, x)
			}
		}
		return strings.Join(s, "|")
	}
	return ""
}

func yamlProps(out *[]Property, prefix string, m *yaml3.Node, firstComment string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		comment := k.HeadComment
		if i == 0 && comment == "" {
			comment = firstComment
		}
		desc, marked := describe(comment)
		name := join(prefix, k.Value)
		if v.Kind == yaml3.MappingNode && len(v.Content) > 0 && !marked {
			yamlProps(out, name, v, "")
			continue
		}
		var val any
		_ = v.Decode(&val)
		p := Property{Name: name, Type: valueType(v, val), Description: desc}
		if val != nil {
			p.Default = compact(val)
		}
		*out = append(*out, p)
	}
}

// describe reads a comment block: the text from a helm-docs "# --" line
// on (marked), else all of it.
func describe(c string) (string, bool) {
	if c == "" {
		return "", false
	}
	lines := strings.Split(c, "\n")
	start, marked := 0, false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#")), "--") {
			start, marked = i, true
		}
	}
	var words []string
	for i, l := range lines[start:] {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		if i == 0 && marked {
			l = strings.TrimSpace(strings.TrimPrefix(l, "--"))
		}
		if strings.HasPrefix(l, "@") {
			continue // helm-docs directives (@default, @section)
		}
		if l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " "), marked
}

func valueType(n *yaml3.Node, v any) string {
	switch n.Kind {
	case yaml3.MappingNode:
		return "object"
	case yaml3.SequenceNode:
		return "array"
	}
	switch v.(type) {
	case string:
		return "string"
	case int, int64, uint64:
		return "integer"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return ""
}

func compact(v any) string {
	b, err := json.Marshal(normalize(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// normalize turns yaml.v3's map[string]any and map[any]any alike into
// what encoding/json takes.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = normalize(x)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = normalize(x)
		}
		return s
	}
	return v
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
