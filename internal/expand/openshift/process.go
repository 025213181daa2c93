package openshift

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dmhq/dm/internal/expand/value"

	"github.com/dmhq/dm/internal/derrors"
)

// Defaults of Options fields left zero.
const (
	DefaultMaxGeneratedLength = 1024
	DefaultMaxRenderedBytes   = 8 << 20
)

// Options bounds processing. Zero fields take their defaults; the error
// that enforces a limit names its field and wraps derrors.LimitExceeded.
type Options struct {
	// MaxGeneratedLength is the longest value a generator expression may
	// produce, in bytes (default DefaultMaxGeneratedLength). It is checked
	// against the expression's longest possible output before generating.
	MaxGeneratedLength int
	// MaxRenderedBytes bounds the size of the processed objects, counted as
	// the bytes of their strings and keys plus 8 per other scalar (default
	// DefaultMaxRenderedBytes). It stops templates that multiply a large
	// parameter value by referencing it many times.
	MaxRenderedBytes int
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxGeneratedLength < 0 {
		return o, fmt.Errorf("openshift: Options.MaxGeneratedLength is negative (%d): %w", o.MaxGeneratedLength, derrors.InvalidArgument)
	}
	if o.MaxRenderedBytes < 0 {
		return o, fmt.Errorf("openshift: Options.MaxRenderedBytes is negative (%d): %w", o.MaxRenderedBytes, derrors.InvalidArgument)
	}
	if o.MaxGeneratedLength == 0 {
		o.MaxGeneratedLength = DefaultMaxGeneratedLength
	}
	if o.MaxRenderedBytes == 0 {
		o.MaxRenderedBytes = DefaultMaxRenderedBytes
	}
	return o, nil
}

// ParameterError reports every problem with a template's parameter values
// at once. It wraps derrors.InvalidArgument.
type ParameterError struct {
	// Unknown lists supplied names the template does not declare.
	Unknown []string
	// Missing lists required parameters left without a value or generator.
	Missing []string
	// Invalid describes values that do not fit their parameter's type and
	// generators that failed, one message per parameter.
	Invalid []string
}

// Error lists the unknown, the missing and the invalid parameters, in that
// order, on one line.
func (e *ParameterError) Error() string {
	var parts []string
	if len(e.Unknown) > 0 {
		parts = append(parts, "unknown parameters: "+strings.Join(e.Unknown, ", "))
	}
	if len(e.Missing) > 0 {
		parts = append(parts, "required parameters without a value: "+strings.Join(e.Missing, ", "))
	}
	parts = append(parts, e.Invalid...)
	return "template parameters: " + strings.Join(parts, "; ")
}

// Unwrap returns derrors.InvalidArgument.
func (e *ParameterError) Unwrap() error { return derrors.InvalidArgument }

// Process returns the processed template: parameters carry their final
// values, objects are deep copies with every parameter reference
// substituted, and the template's labels are set in every object's
// metadata.labels. t is not modified; the result shares nothing with it.
//
// Values in params override the parameters' `value`. A parameter still
// without a value that has `generate: expression` gets a random value from
// crypto/rand. Supplied names the template does not declare, required
// parameters without a value and values that do not parse as the
// parameter's type are reported together in a *ParameterError.
//
// In every string value of the objects (map keys are left alone),
// `${NAME}` and `$(NAME)` are replaced by the value, also inside longer
// strings; a string that is exactly one such reference becomes an int64 or
// a bool for parameters of type int or bool. A string that is exactly
// `${{NAME}}` becomes the value decoded as JSON (a number, boolean, list,
// object...). References to names that are not parameters are left as
// they are. The template's labels, after substitution, are added to each
// object's metadata.labels and win over labels of the same key, as in
// OpenShift; labels of pod templates inside workloads are left alone.
func (t *Template) Process(params map[string]string, opts Options) (*Template, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	gens := t.gens
	if len(gens) != len(t.Parameters) {
		// Built in Go rather than by Parse: validate now.
		if gens, err = compileParameters(t.Parameters); err != nil {
			return nil, err
		}
	}

	var perr ParameterError
	for name := range params {
		if !slices.ContainsFunc(t.Parameters, func(p Parameter) bool { return p.Name == name }) {
			perr.Unknown = append(perr.Unknown, name)
		}
	}
	slices.Sort(perr.Unknown)

	out := &Template{
		APIVersion: t.APIVersion,
		Kind:       Kind,
		Parameters: slices.Clone(t.Parameters),
	}
	values := make(map[string]*param, len(t.Parameters))
	var rnd randSource
	for i := range out.Parameters {
		p := &out.Parameters[i]
		if v, ok := params[p.Name]; ok {
			p.Value = v
		}
		if p.Value == "" && p.Generate != "" {
			g := gens[i]
			if g == nil || g.from != p.From {
				// The caller changed From after Parse.
				if g, err = compileGenerator(p.From); err != nil {
					perr.Invalid = append(perr.Invalid, fmt.Sprintf("parameter %s: from: %v", p.Name, err))
					continue
				}
			}
			if g.maxLen > opts.MaxGeneratedLength {
				return nil, fmt.Errorf("%w: parameter %s: expression %s can generate %d bytes, more than Options.MaxGeneratedLength (%d)",
					derrors.LimitExceeded, p.Name, abbreviate(p.From), g.maxLen, opts.MaxGeneratedLength)
			}
			if p.Value, err = g.generate(&rnd); err != nil {
				return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
			}
		}
		if p.Value == "" && p.Required {
			perr.Missing = append(perr.Missing, p.Name)
			continue
		}
		typed, err := typedValue(p, p.Value)
		if err != nil {
			perr.Invalid = append(perr.Invalid, err.Error())
			continue
		}
		values[p.Name] = &param{value: p.Value, typed: typed}
	}
	if len(perr.Unknown)+len(perr.Missing)+len(perr.Invalid) > 0 {
		return nil, &perr
	}

	s := &substituter{params: values, budget: opts.MaxRenderedBytes, limit: opts.MaxRenderedBytes}
	out.Message = s.substitute(t.Message)
	if len(t.Labels) > 0 {
		out.Labels = make(map[string]string, len(t.Labels))
		for k, v := range t.Labels {
			out.Labels[s.substitute(k)] = s.substitute(v)
		}
	}
	if t.Metadata != nil {
		out.Metadata = value.Copy(t.Metadata).(map[string]any)
	}
	if t.Extra != nil {
		out.Extra = value.Copy(t.Extra).(map[string]any)
	}
	out.Objects = make([]map[string]any, len(t.Objects))
	for i, o := range t.Objects {
		obj, err := s.copyMap(o)
		if err == nil {
			err = addLabels(obj, out.Labels)
		}
		if err != nil {
			err = withPath(err, fmt.Sprintf("objects[%d]", i))
			return nil, fmt.Errorf("%w: template: %w", kindOf(err), err)
		}
		out.Objects[i] = obj
	}
	out.gens = gens
	return out, nil
}

// kindOf returns the sentinel an object error should be reported under.
func kindOf(err error) error {
	if _, ok := errors.AsType[*limitError](err); ok {
		return derrors.LimitExceeded
	}
	return derrors.InvalidArgument
}

// addLabels sets labels in obj's metadata.labels, creating the maps as
// needed. obj is a fresh copy, so it can be modified.
func addLabels(obj map[string]any, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		if obj["metadata"] != nil {
			return withPath(fmt.Errorf("got %s, want an object", typeName(obj["metadata"])), "metadata")
		}
		md = make(map[string]any, 1)
		obj["metadata"] = md
	}
	ls, ok := md["labels"].(map[string]any)
	if !ok {
		if md["labels"] != nil {
			return withPath(fmt.Errorf("got %s, want an object", typeName(md["labels"])), "metadata.labels")
		}
		ls = make(map[string]any, len(labels))
		md["labels"] = ls
	}
	for k, v := range labels {
		ls[k] = v
	}
	return nil
}
