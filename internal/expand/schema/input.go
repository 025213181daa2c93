package schema

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/pyyaml"
)

// Input is a value the user must supply: a required property that has
// no value and no default (or an OpenShift template's required parameter
// without value or generator). dm asks for it on a terminal, and lists it
// in a MissingError otherwise.
type Input struct {
	Name        string
	Description string
	// Type is the JSON Schema type the text is read as: string, integer,
	// number, boolean, array or object; empty reads YAML, as --properties
	// does.
	Type string
	// Enum lists the allowed values, if the schema restricts them.
	Enum []any
	// Secret marks a property whose schema says format: password or
	// writeOnly: read without echo and never shown.
	Secret bool

	// check validates a typed value; nil accepts any.
	check func(v any) error
}

// NewInput returns an Input that Parse checks with check (nil: none)
// after typing the text.
func NewInput(name, description, typ string, check func(v any) error) Input {
	return Input{Name: name, Description: description, Type: typ, check: check}
}

// inputError is an answer that does not fit its input: its message is
// shown to the user as is, and it wraps derrors.InvalidArgument.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Unwrap() error { return derrors.InvalidArgument }

func invalidInput(format string, args ...any) error {
	return &inputError{fmt.Sprintf(format, args...)}
}

// Missing returns the inputs props lacks: the schema's required top-level
// properties that are absent and have no default, in the schema's order.
func (s *Schema) Missing(props map[string]any) []Input {
	var out []Input
	for _, d := range s.PropertyDocs() {
		if _, given := props[d.Name]; given || !d.Required || d.HasDefault {
			continue
		}
		in := Input{Name: d.Name, Description: strings.TrimSpace(d.Description)}
		if m, ok := s.Properties[d.Name].(map[string]any); ok {
			if t, ok := m["type"].(string); ok {
				in.Type = t
			}
			in.Enum, _ = m["enum"].([]any)
			wo, _ := m["writeOnly"].(bool)
			in.Secret = m["format"] == "password" || wo
		}
		in.check = s.propertyCheck(d.Name)
		out = append(out, in)
	}
	return out
}

// propertyCheck validates one top-level property's value against the
// schema, ignoring what the other properties lack.
func (s *Schema) propertyCheck(name string) func(v any) error {
	return func(v any) error {
		props := map[string]any{name: v}
		err := s.Validate(props)
		var ve *ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		at := instancePath(props, []string{name})
		var msgs []string
		for _, x := range ve.Violations {
			if x.Path == at || strings.HasPrefix(x.Path, at+".") || strings.HasPrefix(x.Path, at+"[") {
				msg := x.Message
				if x.Path != at {
					msg = x.String()
				}
				msgs = append(msgs, msg)
			}
		}
		if len(msgs) == 0 {
			return nil
		}
		return invalidInput("%s", strings.Join(msgs, "; "))
	}
}

// Parse reads text as the input's type says (a number for integer and
// number, true/false/yes/no for boolean, YAML for arrays, objects and
// untyped inputs, the text itself for strings) and validates the value.
func (in Input) Parse(text string) (any, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, invalidInput("%s is required", in.Name)
	}
	var v any
	switch in.Type {
	case "string":
		v = text
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, invalidInput("%q is not an integer", text)
		}
		v = n
	case "number":
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, invalidInput("%q is not a number", text)
		}
		v = x
	case "boolean":
		switch strings.ToLower(text) {
		case "true", "yes", "y":
			v = true
		case "false", "no", "n":
			v = false
		default:
			return nil, invalidInput("%q is not true or false", text)
		}
	default:
		doc, _, err := pyyaml.Decode([]byte(text), pyyaml.Options{MaxAliases: 100})
		if err != nil {
			return nil, invalidInput("%q is not YAML: %v", text, err)
		}
		v = doc
	}
	if len(in.Enum) > 0 && !slices.ContainsFunc(in.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return nil, invalidInput("%q is not one of %s", text, in.enum())
	}
	if in.check != nil {
		if err := in.check(v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (in Input) enum() string {
	s := make([]string, len(in.Enum))
	for i, e := range in.Enum {
		s[i] = fmt.Sprint(e)
	}
	return strings.Join(s, ", ")
}

// Describe says what the input is: "name (integer, one of 1, 2, 3):
// description".
func (in Input) Describe() string {
	var kind []string
	if in.Type != "" {
		kind = append(kind, in.Type)
	}
	if len(in.Enum) > 0 {
		kind = append(kind, "one of "+in.enum())
	}
	if in.Secret {
		kind = append(kind, "secret")
	}
	s := in.Name
	if len(kind) > 0 {
		s += " (" + strings.Join(kind, ", ") + ")"
	}
	if d := strings.Join(strings.Fields(in.Description), " "); d != "" {
		s += ": " + d
	}
	return s
}

// MissingError lists every required input that was not given, with its
// description, so that a script learns all of them at once.
type MissingError struct {
	// What names an input ("property", "parameter") and How says how to
	// give them ("--properties KEY=VALUE").
	What, How string
	Inputs    []Input
}

// Error lists the inputs, one a line.
func (e *MissingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s without a value (give them with %s, or run on a terminal to be asked):", Count(len(e.Inputs), e.What), e.How)
	for _, in := range e.Inputs {
		b.WriteString("\n  ")
		b.WriteString(in.Describe())
	}
	return b.String()
}

// Unwrap returns derrors.InvalidArgument.
func (e *MissingError) Unwrap() error { return derrors.InvalidArgument }

// Count says "1 required property", "2 required properties" (or
// parameters).
func Count(n int, what string) string {
	if n != 1 {
		what = strings.TrimSuffix(what, "y") + map[bool]string{true: "ies", false: "s"}[strings.HasSuffix(what, "y")]
	}
	return fmt.Sprintf("%d required %s", n, what)
}
