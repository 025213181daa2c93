package openshift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Engine is the OpenShift template language of dm's engine table: a
// kind: Template processed with the invocation's properties as parameter
// values. Each object becomes a primitive named by its metadata.name
// (qualified by its lower-cased kind when two objects share a name, as a
// Service and a Deployment often do).
type Engine struct {
	// MaxOutputBytes bounds what one template renders.
	MaxOutputBytes int
	// Cache holds parsed templates; nil parses every time.
	Cache engine.Cache
}

// Name returns "openshift".
func (*Engine) Name() string { return "openshift" }

// Render processes the template.
func (e *Engine) Render(ctx context.Context, inv engine.Invocation) (_ engine.Output, err error) {
	defer engine.Recover("OpenShift template", inv.File, nil, &err)
	parse := func() (any, error) {
		t, err := Parse(inv.Source)
		if err != nil {
			return nil, engine.At(inv.File, engine.LineOf(err), err)
		}
		return t, nil
	}
	var v any
	if e.Cache != nil {
		v, err = engine.Cached(e.Cache, "openshift:"+inv.FilesKey+":"+inv.File, parse)
	} else {
		v, err = parse()
	}
	if err != nil {
		return engine.Output{}, err
	}
	params := make(map[string]string, len(inv.Properties))
	for k, p := range inv.Properties {
		s, err := paramString(p)
		if err != nil {
			return engine.Output{}, fmt.Errorf("property %s: %w", k, err)
		}
		params[k] = s
	}
	out, err := v.(*Template).Process(params, Options{MaxRenderedBytes: e.MaxOutputBytes})
	if err != nil {
		return engine.Output{}, engine.At(inv.File, 0, err)
	}
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}
	names := make([]string, len(out.Objects))
	count := map[string]int{}
	for i, o := range out.Objects {
		md, _ := o["metadata"].(map[string]any)
		n, _ := md["name"].(string)
		if n == "" {
			n = fmt.Sprintf("object-%d", i)
		}
		names[i] = n
		count[n]++
	}
	res := make([]engine.Resource, len(out.Objects))
	for i, o := range out.Objects {
		kind, _ := o["kind"].(string)
		if kind == "" {
			return engine.Output{}, engine.At(inv.File, 0, engine.Invalid("objects[%d] (%s) has no kind", i, names[i]))
		}
		n := names[i]
		if count[n] > 1 {
			n = strings.ToLower(kind) + "-" + n
		}
		res[i] = engine.Resource{Name: n, Type: kind, Properties: o}
	}
	return engine.Output{Resources: res}, nil
}

// Check parses a kind: Template.
func (*Engine) Check(_ context.Context, files map[string][]byte, file string) error {
	_, err := Parse(files[file])
	if errors.Is(err, ErrNotTemplate) {
		return &engine.NotTemplateError{File: file, Want: "a kind: Template", Err: err}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

var (
	yamlTemplateKindRE = regexp.MustCompile(`(?m)^kind:[ \t]*["']?Template["']?[ \t]*(#.*)?\r?$`)
	jsonTemplateKindRE = regexp.MustCompile(`"kind"\s*:\s*"Template"`)
)

// IsConfigTemplate reports whether a configuration document is a kind:
// Template, by a cheap look at its top-level kind: such a configuration
// is expanded as the one template it is.
func (*Engine) IsConfigTemplate(data []byte) bool {
	if isJSONDoc(data) {
		return jsonTemplateKindRE.Match(data)
	}
	return yamlTemplateKindRE.Match(data)
}

// ResourceName names the resource of a Template given directly: its
// metadata.name, or "" for the caller's default.
func (*Engine) ResourceName(data []byte) string {
	if t, err := Parse(data); err == nil {
		if n, ok := t.Metadata["name"].(string); ok {
			return n
		}
	}
	return ""
}

// isJSONDoc reports whether data's first non-space byte opens a JSON
// object.
func isJSONDoc(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// paramString formats a property as a template parameter value; lists and
// mappings become JSON, for ${{NAME}}.
func paramString(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
}
