package openshift

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/expand/value"

	"github.com/dmhq/dm/internal/derrors"
)

// refKind is the syntax of a parameter reference.
type refKind uint8

const (
	refNone   refKind = iota
	refString         // ${NAME} or $(NAME)
	refJSON           // ${{NAME}}
)

// param is a parameter's final value, ready for substitution.
type param struct {
	value string
	// typed is the value a field takes when its whole value is one
	// ${NAME} or $(NAME) reference: int64, bool or the string itself.
	typed any
}

// substituter replaces parameter references in strings and copies values.
type substituter struct {
	params map[string]*param
	// budget is what is left of Options.MaxRenderedBytes.
	budget int
	limit  int
}

// limitError is returned when the processed objects exceed
// Options.MaxRenderedBytes.
type limitError struct{ limit int }

func (e *limitError) Error() string {
	return fmt.Sprintf("processed objects larger than Options.MaxRenderedBytes (%d bytes)", e.limit)
}

func (e *limitError) Unwrap() error { return derrors.LimitExceeded }

// pathError is an error at a place in an object; the path is built while
// the error travels up, so that successful substitution builds no paths.
type pathError struct {
	path []string // innermost first
	err  error
}

func (e *pathError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		p := e.path[i]
		if p[0] != '[' && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	b.WriteString(": ")
	b.WriteString(e.err.Error())
	return b.String()
}

func (e *pathError) Unwrap() error { return e.err }

func withPath(err error, seg string) error {
	if pe, ok := err.(*pathError); ok {
		pe.path = append(pe.path, seg)
		return pe
	}
	return &pathError{path: []string{seg}, err: err}
}

// copyValue returns a deep copy of v with every string value substituted.
// Map keys are copied as they are, like OpenShift does.
func (s *substituter) copyValue(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return s.substituteField(x)
	case map[string]any:
		return s.copyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := s.copyValue(e)
			if err != nil {
				return nil, withPath(err, "["+strconv.Itoa(i)+"]")
			}
			out[i] = c
		}
		return out, nil
	}
	// Scalars are immutable; other Go types are shared, not copied.
	s.budget -= 8
	if s.budget < 0 {
		return nil, &limitError{s.limit}
	}
	return v, nil
}

func (s *substituter) copyMap(m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, e := range m {
		s.budget -= len(k)
		c, err := s.copyValue(e)
		if err != nil {
			return nil, withPath(err, k)
		}
		out[k] = c
	}
	return out, nil
}

// substituteField substitutes one string field. A field that is exactly
// one reference takes the parameter's type (${NAME}, $(NAME)) or its JSON
// value (${{NAME}}).
func (s *substituter) substituteField(in string) (any, error) {
	if strings.IndexByte(in, '$') < 0 {
		s.budget -= len(in)
		if s.budget < 0 {
			return nil, &limitError{s.limit}
		}
		return in, nil
	}
	if name, kind, n := parseRef(in, 0); kind != refNone && n == len(in) {
		if p, ok := s.params[name]; ok {
			s.budget -= len(p.value)
			if s.budget < 0 {
				return nil, &limitError{s.limit}
			}
			if kind == refJSON {
				v, err := decodeJSONValue(p.value)
				if err != nil {
					return nil, fmt.Errorf("${{%s}}: %w", name, err)
				}
				return v, nil
			}
			return p.typed, nil
		}
	}
	out := s.substitute(in)
	s.budget -= len(out)
	if s.budget < 0 {
		return nil, &limitError{s.limit}
	}
	return out, nil
}

// substitute replaces every reference to a known parameter in in by the
// parameter's value, as text. References to unknown names are left as they
// are: `$(ref.NAME.PATH)` value references and shell variables in scripts
// must survive processing.
func (s *substituter) substitute(in string) string {
	var b strings.Builder
	last := 0
	for i := strings.IndexByte(in, '$'); i >= 0; {
		next := i + 1
		if name, kind, end := parseRef(in, i); kind != refNone {
			if p, ok := s.params[name]; ok {
				if last == 0 {
					b.Grow(len(in) + len(p.value))
				}
				b.WriteString(in[last:i])
				b.WriteString(p.value)
				last, next = end, end
			}
		}
		j := strings.IndexByte(in[next:], '$')
		if j < 0 {
			break
		}
		i = next + j
	}
	if last == 0 {
		return in
	}
	b.WriteString(in[last:])
	return b.String()
}

// parseRef parses a reference starting at in[i] ('$'). It returns the name,
// the kind (refNone if there is no well-formed reference) and the offset
// just past the reference.
func parseRef(in string, i int) (string, refKind, int) {
	if i+1 >= len(in) {
		return "", refNone, 0
	}
	switch in[i+1] {
	case '{':
		if i+2 < len(in) && in[i+2] == '{' {
			if name, end := scanName(in, i+3); name != "" && strings.HasPrefix(in[end:], "}}") {
				return name, refJSON, end + 2
			}
			return "", refNone, 0
		}
		if name, end := scanName(in, i+2); name != "" && end < len(in) && in[end] == '}' {
			return name, refString, end + 1
		}
	case '(':
		if name, end := scanName(in, i+2); name != "" && end < len(in) && in[end] == ')' {
			return name, refString, end + 1
		}
	}
	return "", refNone, 0
}

// scanName returns the parameter name starting at in[i] and its end.
func scanName(in string, i int) (string, int) {
	j := i
	for j < len(in) && isNameByte(in[j]) {
		j++
	}
	return in[i:j], j
}

// typedValue converts a parameter's value to the type the parameter
// declares. Empty values stay strings: an optional typed parameter that
// was left empty is not an error.
func typedValue(p *Parameter, value string) (any, error) {
	if value == "" {
		return value, nil
	}
	switch p.Type {
	case TypeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not an int", p.Name, value)
		}
		return n, nil
	case TypeBool:
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not a bool", p.Name, value)
		}
		return b, nil
	case TypeBase64:
		// The value is already encoded (Kubernetes []byte fields are
		// base64 strings in JSON): check it, substitute it unchanged.
		if _, err := base64.StdEncoding.DecodeString(value); err != nil {
			return nil, fmt.Errorf("parameter %s: value is not valid base64: %w", p.Name, err)
		}
	}
	return value, nil
}

// decodeJSONValue decodes a ${{NAME}} value: a JSON number, boolean,
// string, list, object or null.
func decodeJSONValue(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("value %s is not JSON: %w", abbreviate(s), err)
	}
	var extra any
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, fmt.Errorf("value %s is not one JSON value", abbreviate(s))
	}
	return value.Numbers(v), nil
}

// abbreviate quotes s for an error message, cutting long values.
func abbreviate(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
