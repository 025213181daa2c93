// Package openshift processes OpenShift-style templates: YAML or JSON
// documents of `kind: Template` holding a list of objects, a list of
// parameters and a set of labels (seed 000 and section 3.8 of seed 004).
//
// Processing resolves every parameter's value (supplied values override the
// template's `value`; parameters without a value and with `generate:
// expression` get a cryptographically random value built from `from`),
// substitutes `${NAME}`, `$(NAME)` and `${{NAME}}` references in every string
// value of the objects, adds the template's labels to every object's
// metadata.labels and returns the processed Template. The processed
// Template's objects are what dm deploys; ToList gives the `kind: List` that
// `dm process` prints, and the Template itself marshals to what `POST
// /processedTemplates` returns.
//
// A Template returned by Parse is immutable as far as this package is
// concerned: Process never modifies its receiver, so one parsed Template can
// be cached and processed any number of times, from several goroutines.
package openshift

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/pyyaml"
	"github.com/dmhq/dm/internal/expand/value"
)

// Kind is the value of the `kind` field of a template document.
const Kind = "Template"

// ErrNotTemplate is wrapped by Parse when the document is well-formed but
// its kind is not Template, so that a caller classifying files can tell a
// supporting YAML file from a broken template. It wraps
// derrors.InvalidArgument.
var ErrNotTemplate = derrors.Errorf(derrors.InvalidArgument, "document is not a kind: Template")

// Parameter types accepted in a parameter's `type` field. The empty type
// means string.
const (
	TypeString = "string"
	TypeInt    = "int"
	TypeBool   = "bool"
	TypeBase64 = "base64"
)

// GenerateExpression is the only generator: `generate: expression` builds a
// random value from the pseudo regular expression in `from`.
const GenerateExpression = "expression"

// Template is an OpenShift-style template document.
//
// Objects hold JSON-like values: map[string]any, []any, string, bool, nil,
// int64 (integral numbers) and float64. Top-level fields this package does
// not know are kept in Extra and written back by MarshalJSON.
type Template struct {
	APIVersion string
	Kind       string
	Metadata   map[string]any
	Message    string
	Objects    []map[string]any
	Parameters []Parameter
	Labels     map[string]string
	// Extra holds the document's other top-level fields, unchanged.
	Extra map[string]any

	// gens caches the compiled generator of each parameter, index for
	// index, so that processing a parsed template does not parse `from`
	// again. Entries are checked against Parameter.From before use, so a
	// caller that edits Parameters still gets correct results.
	gens []*generator
}

// Parameter is one entry of a template's `parameters`.
type Parameter struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
	Value       string `json:"value,omitempty"`
	Generate    string `json:"generate,omitempty"`
	From        string `json:"from,omitempty"`
	Required    bool   `json:"required,omitempty"`
	// Type is one of TypeString (or empty), TypeInt, TypeBool, TypeBase64.
	Type string `json:"type,omitempty"`
}

// checkAliases refuses documents whose aliases expand beyond
// pyyaml.DefaultMaxAliasBytes (yaml.v2 would write a 1 MB scalar aliased
// 999 times out as 1 GB of JSON) or number more than 1000.
func checkAliases(data []byte) error {
	err := pyyaml.CheckAliases(data, pyyaml.Options{MaxAliases: 1000})
	var le *pyyaml.LimitError
	if errors.As(err, &le) {
		field := map[string]string{"MaxAliases": "MaxYAMLAliases", "MaxAliasBytes": "MaxYAMLAliasBytes"}[le.Field]
		return fmt.Errorf("template: %s: exceeds the limit of %d (Options.%s): %w", le.Detail, le.Limit, field, derrors.LimitExceeded)
	}
	return nil
}

// Parse decodes a template from YAML or JSON and validates it: the kind must
// be Template (otherwise the error wraps ErrNotTemplate), parameter names
// must be unique and made of letters, digits and underscores, types and
// generators must be known and generator expressions must compile. Syntax
// errors carry the YAML line; the caller adds the file name. Every error
// wraps derrors.InvalidArgument.
func Parse(data []byte) (*Template, error) {
	if err := checkAliases(data); err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("template: %w: %w", err, derrors.InvalidArgument)
	}
	t := new(Template)
	if err := t.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	return t, nil
}

// UnmarshalJSON decodes and validates a template document like Parse, but
// from JSON only. It lets a Template be the body of a JSON request.
func (t *Template) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	// UseNumber keeps integers exact; normalize turns them into int64.
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("template: %w: %w", err, derrors.InvalidArgument)
	}
	m, ok := value.Numbers(doc).(map[string]any)
	if !ok {
		return derrors.Errorf(derrors.InvalidArgument, "template: document is %s, want an object", typeName(doc))
	}
	nt, err := fromMap(m)
	if err != nil {
		return err
	}
	*t = *nt
	return nil
}

// fromMap builds a Template from a decoded, normalized document.
func fromMap(m map[string]any) (*Template, error) {
	t := &Template{}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if kind, ok := m["kind"].(string); !ok || kind != Kind {
		return nil, fmt.Errorf("%w (kind is %s)", ErrNotTemplate, describe(m["kind"]))
	}
	for k, v := range m {
		switch k {
		case "kind":
			t.Kind = Kind
		case "apiVersion":
			s, ok := v.(string)
			if !ok {
				bad("apiVersion: got %s, want a string", typeName(v))
			}
			t.APIVersion = s
		case "metadata":
			if v == nil {
				continue
			}
			md, ok := v.(map[string]any)
			if !ok {
				bad("metadata: got %s, want an object", typeName(v))
			}
			t.Metadata = md
		case "message":
			s, ok := scalarString(v)
			if !ok {
				bad("message: got %s, want a string", typeName(v))
			}
			t.Message = s
		case "objects":
			if v == nil {
				continue
			}
			list, ok := v.([]any)
			if !ok {
				bad("objects: got %s, want a list", typeName(v))
				continue
			}
			t.Objects = make([]map[string]any, len(list))
			for i, o := range list {
				om, ok := o.(map[string]any)
				if !ok {
					bad("objects[%d]: got %s, want an object", i, typeName(o))
				}
				t.Objects[i] = om
			}
		case "parameters":
			if v == nil {
				continue
			}
			list, ok := v.([]any)
			if !ok {
				bad("parameters: got %s, want a list", typeName(v))
				continue
			}
			t.Parameters = make([]Parameter, len(list))
			for i, p := range list {
				if err := decodeParameter(p, &t.Parameters[i]); err != nil {
					bad("parameters[%d]: %w", i, err)
				}
			}
		case "labels":
			if v == nil {
				continue
			}
			lm, ok := v.(map[string]any)
			if !ok {
				bad("labels: got %s, want an object", typeName(v))
				continue
			}
			t.Labels = make(map[string]string, len(lm))
			for lk, lv := range lm {
				s, ok := scalarString(lv)
				if !ok {
					bad("labels.%s: got %s, want a string", lk, typeName(lv))
				}
				t.Labels[lk] = s
			}
		default:
			if t.Extra == nil {
				t.Extra = make(map[string]any)
			}
			t.Extra[k] = v
		}
	}
	if len(errs) == 0 {
		gens, err := compileParameters(t.Parameters)
		if err != nil {
			return nil, err
		}
		t.gens = gens
		return t, nil
	}
	return nil, fmt.Errorf("template: %w: %w", joinErrors(sortErrors(errs)), derrors.InvalidArgument)
}

// decodeParameter fills p from one element of `parameters`.
func decodeParameter(v any, p *Parameter) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("got %s, want an object", typeName(v))
	}
	str := func(key string, dst *string) error {
		x, ok := m[key]
		if !ok || x == nil {
			return nil
		}
		// YAML authors write `value: 1` as often as `value: "1"`.
		s, ok := scalarString(x)
		if !ok {
			return fmt.Errorf("%s: got %s, want a string", key, typeName(x))
		}
		*dst = s
		return nil
	}
	// The name must really be a string: YAML 1.1 reads `name: N` or
	// `name: yes` as a boolean, and a parameter silently named "false"
	// would only fail later, confusingly.
	if n, ok := m["name"]; ok && n != nil {
		s, ok := n.(string)
		if !ok {
			return fmt.Errorf("name: got %s, want a string", typeName(n))
		}
		p.Name = s
	}
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"displayName", &p.DisplayName}, {"description", &p.Description},
		{"value", &p.Value}, {"generate", &p.Generate}, {"from", &p.From}, {"type", &p.Type},
	} {
		if err := str(f.key, f.dst); err != nil {
			return err
		}
	}
	if r, ok := m["required"]; ok && r != nil {
		b, ok := r.(bool)
		if !ok {
			return fmt.Errorf("required: got %s, want a boolean", typeName(r))
		}
		p.Required = b
	}
	return nil
}

// compileParameters validates the parameter declarations and compiles their
// generators. All problems are reported together.
func compileParameters(params []Parameter) ([]*generator, error) {
	var errs []error
	gens := make([]*generator, len(params))
	seen := make(map[string]bool, len(params))
	for i, p := range params {
		where := fmt.Sprintf("parameters[%d]", i)
		if p.Name != "" {
			where = fmt.Sprintf("parameters[%d] (%s)", i, p.Name)
		}
		if err := validName(p.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		} else if seen[p.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate parameter name", where))
		}
		seen[p.Name] = true
		switch p.Type {
		case "", TypeString, TypeInt, TypeBool, TypeBase64:
		default:
			errs = append(errs, fmt.Errorf("%s: unknown type %q (want string, int, bool or base64)", where, p.Type))
		}
		switch p.Generate {
		case "":
		case GenerateExpression:
			g, err := compileGenerator(p.From)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: from: %w", where, err))
				continue
			}
			gens[i] = g
		default:
			errs = append(errs, fmt.Errorf("%s: unknown generator %q (want %q)", where, p.Generate, GenerateExpression))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("template: %w: %w", joinErrors(errs), derrors.InvalidArgument)
	}
	return gens, nil
}

// validName reports whether name can be referenced as ${NAME}: OpenShift
// accepts letters, digits and underscores.
func validName(name string) error {
	if name == "" {
		return errors.New("name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return fmt.Errorf("name %q: only letters, digits and _ are allowed", name)
		}
	}
	return nil
}

func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// MarshalJSON writes the template as a `kind: Template` document, with the
// fields in Extra alongside the known ones. It has a value receiver so that
// Template values marshal the same way as pointers.
func (t Template) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.toMap())
}

// toMap returns the document form of t. Values are shared with t.
func (t *Template) toMap() map[string]any {
	m := make(map[string]any, len(t.Extra)+7)
	maps.Copy(m, t.Extra)
	m["kind"] = Kind
	if t.APIVersion != "" {
		m["apiVersion"] = t.APIVersion
	}
	if t.Metadata != nil {
		m["metadata"] = t.Metadata
	}
	if t.Message != "" {
		m["message"] = t.Message
	}
	objs := make([]any, len(t.Objects))
	for i, o := range t.Objects {
		objs[i] = o
	}
	m["objects"] = objs
	if len(t.Parameters) > 0 {
		m["parameters"] = t.Parameters
	}
	if len(t.Labels) > 0 {
		m["labels"] = t.Labels
	}
	return m
}

// YAML returns the template as a YAML document.
func (t *Template) YAML() ([]byte, error) {
	b, err := yaml.Marshal(t.toMap())
	if err != nil {
		return nil, fmt.Errorf("template: marshal YAML: %w", err)
	}
	return b, nil
}

// ToList returns the template's objects as a `kind: List` document (apiVersion
// v1, items), the output of `oc process` and `dm process`. The items are the
// template's object maps, not copies.
func (t *Template) ToList() map[string]any {
	items := make([]any, len(t.Objects))
	for i, o := range t.Objects {
		items[i] = o
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "List",
		"metadata":   map[string]any{},
		"items":      items,
	}
}

// scalarString converts a YAML scalar to its string form.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case nil:
		return "", true
	}
	return "", false
}

// typeName names the JSON type of v for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64, json.Number, int:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// describe quotes v for an error message.
func describe(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if v == nil {
		return "missing"
	}
	return typeName(v)
}

// sortErrors orders errors by message so that reports built from map
// iteration are deterministic.
func sortErrors(errs []error) []error {
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// multiError reports several problems on one line, so that a message stays
// readable after the engine prefixes it with a layout path.
type multiError []error

func (m multiError) Error() string {
	var b strings.Builder
	for i, e := range m {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

func (m multiError) Unwrap() []error { return m }

// joinErrors returns nil, the only error, or a multiError.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return multiError(errs)
}
