package schema

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/expand/value"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/dmhq/dm/internal/derrors"
)

// maxRefDepth bounds $ref chains followed while collecting defaults, so
// that a recursive schema does not recurse forever.
const maxRefDepth = 32

// node holds the defaults of one object or array level, precomputed at
// Parse so that Apply only walks what has defaults.
type node struct {
	props []propDefault // sorted by name
	items *node         // defaults inside each element of an array
}

// propDefault is a property that has a default or nested defaults.
type propDefault struct {
	name   string
	def    any
	hasDef bool
	child  *node
}

// buildDefaults collects the defaults below schema s. It returns nil when
// there are none.
func buildDefaults(root map[string]any, s any, depth int) *node {
	m, ok := s.(map[string]any)
	if !ok || depth > maxRefDepth {
		return nil
	}
	if ref, ok := m["$ref"].(string); ok {
		// Draft 4 ignores a $ref's siblings: follow the reference only.
		return buildDefaults(root, resolveLocal(root, ref), depth+1)
	}
	n := &node{}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, ps := range props {
			p := propDefault{name: name, child: buildDefaults(root, ps, depth+1)}
			if pm, ok := ps.(map[string]any); ok {
				p.def, p.hasDef = pm["default"]
				if ref, ok := pm["$ref"].(string); ok && !p.hasDef {
					if rm, ok := resolveLocal(root, ref).(map[string]any); ok {
						p.def, p.hasDef = rm["default"]
					}
				}
			}
			if p.hasDef || p.child != nil {
				n.props = append(n.props, p)
			}
		}
		slices.SortFunc(n.props, func(a, b propDefault) int { return cmp.Compare(a.name, b.name) })
	}
	n.items = buildDefaults(root, m["items"], depth+1)
	if len(n.props) == 0 && n.items == nil {
		return nil
	}
	return n
}

// resolveLocal resolves a reference inside the schema document
// (#/definitions/x); other references have no defaults to offer.
func resolveLocal(root map[string]any, ref string) any {
	if ref == "#" {
		return root
	}
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = root
	for _, tok := range strings.Split(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// Apply returns props with defaults filled in, after validating the result
// against the schema. props is not modified; the result is a new map that
// shares unchanged nested values with props.
//
// Defaults follow DM: a property that is absent gets a copy of its
// `default` (a property present with a null value is not absent). Nested
// defaults are applied inside objects that are present, including one that
// was just filled from its own default, and inside every object element of
// an array whose `items` schema has defaults. An absent object without a
// default of its own is not created just because its properties have
// defaults: absence often means "feature off". Defaults reached through a
// local `$ref` (#/definitions/...) count; those inside allOf, anyOf and
// oneOf do not.
//
// props must hold JSON-like values: map[string]any, []any, string, bool,
// nil and numbers. The error lists every violation with its path, such as
// `properties.ports[0].port: expected integer, got string`, in a
// *ValidationError that wraps derrors.InvalidArgument.
func (s *Schema) Apply(props map[string]any) (map[string]any, error) {
	var out map[string]any
	if s.defaults != nil {
		out = applyObject(s.defaults, props)
	} else {
		out = make(map[string]any, len(props))
		maps.Copy(out, props)
	}
	if err := s.Validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Defaults returns props with defaults filled in, as Apply does, without
// validating. props is not modified.
func (s *Schema) Defaults(props map[string]any) map[string]any {
	if s.defaults == nil {
		out := make(map[string]any, len(props))
		maps.Copy(out, props)
		return out
	}
	return applyObject(s.defaults, props)
}

// Validate checks props against the schema without applying defaults. The
// zero Schema accepts anything.
func (s *Schema) Validate(props map[string]any) error {
	if s.compiled == nil {
		return nil
	}
	if err := s.compiled.Validate(props); err != nil {
		return s.validationError(props, err)
	}
	return nil
}

// applyObject returns a copy of in with n's defaults applied.
func applyObject(n *node, in map[string]any) map[string]any {
	out := make(map[string]any, len(in)+len(n.props))
	maps.Copy(out, in)
	for i := range n.props {
		p := &n.props[i]
		v, present := out[p.name]
		if !present {
			if !p.hasDef {
				continue
			}
			v = value.Copy(p.def)
		}
		if p.child != nil {
			v = applyValue(p.child, v)
		}
		out[p.name] = v
	}
	return out
}

func applyValue(n *node, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(n.props) > 0 {
			return applyObject(n, x)
		}
	case []any:
		if n.items != nil {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = applyValue(n.items, e)
			}
			return out
		}
	}
	return v
}

// ValidationError lists every way a template's properties violate its
// schema. It wraps derrors.InvalidArgument.
type ValidationError struct {
	// File is the schema's file name.
	File string
	// Violations are sorted by path.
	Violations []Violation
}

// Violation is one failed check.
type Violation struct {
	// Path locates the value, e.g. `properties.ports[0].port`; it is empty
	// for a problem with the properties as a whole.
	Path    string
	Message string
}

// String formats the violation as "path: message".
func (v Violation) String() string {
	if v.Path == "" {
		return v.Message
	}
	return v.Path + ": " + v.Message
}

// Error names the schema file and lists every violation on one line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(": invalid properties: ")
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Unwrap returns derrors.InvalidArgument.
func (e *ValidationError) Unwrap() error { return derrors.InvalidArgument }

// validationError flattens the validator's error tree into violations.
func (s *Schema) validationError(instance any, err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%s: %w: %w", s.File, err, derrors.InvalidArgument)
	}
	p := message.NewPrinter(language.English)
	var out []Violation
	var limit error // a pattern's match that ran out of time
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		path := instancePath(instance, e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Pattern:
			if pt := s.patterns[k.Want]; pt != nil {
				if err := pt.failure(k.Got); err != nil {
					if limit == nil {
						limit = fmt.Errorf("%s: %s: %w", s.File, cmp.Or(path, "properties"), err)
					}
					return
				}
			}
		case *kind.Required:
			for _, m := range k.Missing {
				out = append(out, Violation{path, "missing required property " + strconv.Quote(m)})
			}
			return
		case *kind.Type:
			if isWholeRef(instanceValue(instance, e.InstanceLocation)) {
				// $(ref.NAME.FIELD) stands for a value only deployment
				// knows (the Cloud Foundation Toolkit's cloud_sql.py
				// takes `dependsOn: $(ref.master.resources)` for an
				// array): Deployment Manager validated the properties
				// before resolving references, and let them through.
				return
			}
			out = append(out, Violation{path, fmt.Sprintf("expected %s, got %s", strings.Join(k.Want, " or "), k.Got)})
			return
		case *kind.AnyOf:
			out = append(out, Violation{path, "matches none of the anyOf alternatives"})
			return
		case *kind.OneOf:
			if len(k.Subschemas) == 0 {
				out = append(out, Violation{path, "matches none of the oneOf alternatives"})
			} else {
				out = append(out, Violation{path, k.LocalizedString(p)})
			}
			return
		}
		if len(e.Causes) == 0 {
			out = append(out, Violation{path, e.ErrorKind.LocalizedString(p)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if limit != nil {
		return limit
	}
	slices.SortStableFunc(out, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return &ValidationError{File: s.File, Violations: out}
}

// wholeRefRE matches a string that is one value reference, $(ref.NAME.PATH).
var wholeRefRE = regexp.MustCompile(`^\$\(ref\.[^()\s]+\)$`)

// isWholeRef reports whether v is a string that is one value reference.
func isWholeRef(v any) bool {
	s, ok := v.(string)
	return ok && wholeRefRE.MatchString(s)
}

// instanceValue is the value at the JSON pointer tokens loc in instance,
// or nil.
func instanceValue(instance any, loc []string) any {
	cur := instance
	for _, tok := range loc {
		switch c := cur.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		case map[string]any:
			cur = c[tok]
		default:
			return nil
		}
	}
	return cur
}

// instancePath renders a JSON pointer's tokens as `properties.a[0].b`,
// looking at the instance to tell array indexes from keys that are digits.
func instancePath(instance any, loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("properties")
	cur := instance
	for _, tok := range loc {
		switch c := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
			continue
		case map[string]any:
			cur = c[tok]
		default:
			cur = nil
		}
		if isIdent(tok) {
			b.WriteString("." + tok)
		} else {
			b.WriteString("[" + strconv.Quote(tok) + "]")
		}
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// PropertyDoc describes one top-level property for `dm describe`.
type PropertyDoc struct {
	Name string `json:"name"`
	// Type is the property's JSON Schema type (integer for DM's int), or
	// several joined with "|", or empty when the schema does not say.
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	HasDefault  bool   `json:"-"`
	Default     any    `json:"default,omitempty"`
}

// PropertyDocs describes the top-level properties in the order the schema
// file lists them, followed by required names that have no schema.
func (s *Schema) PropertyDocs() []PropertyDoc {
	docs := make([]PropertyDoc, 0, len(s.order))
	for _, name := range s.order {
		d := PropertyDoc{Name: name, Required: slices.Contains(s.Required, name)}
		if m, ok := s.Properties[name].(map[string]any); ok {
			switch t := m["type"].(type) {
			case string:
				d.Type = t
			case []any:
				var ts []string
				for _, e := range t {
					ts = append(ts, fmt.Sprint(e))
				}
				d.Type = strings.Join(ts, "|")
			}
			d.Description, _ = m["description"].(string)
			if def, ok := m["default"]; ok {
				d.Default, d.HasDefault = value.Copy(def), true
			}
		}
		docs = append(docs, d)
	}
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; !ok {
			docs = append(docs, PropertyDoc{Name: name, Required: true})
		}
	}
	return docs
}
