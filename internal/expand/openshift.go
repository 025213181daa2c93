package expand

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/openshift"
)

var (
	yamlTemplateKindRE = regexp.MustCompile(`(?m)^kind:[ \t]*["']?Template["']?[ \t]*(#.*)?\r?$`)
	jsonTemplateKindRE = regexp.MustCompile(`"kind"\s*:\s*"Template"`)
)

// isOpenShiftTemplate reports whether a configuration document is a kind:
// Template, by a cheap look at its top-level kind.
func isOpenShiftTemplate(data []byte) bool {
	if isJSON(data) {
		return jsonTemplateKindRE.Match(data)
	}
	return yamlTemplateKindRE.Match(data)
}

// templateName names the resource of a Template given directly: its
// metadata.name, else the file name.
func templateName(data []byte, file string) string {
	if t, err := openshift.Parse(data); err == nil {
		if n, ok := t.Metadata["name"].(string); ok && n != "" {
			return n
		}
	}
	return refName(file)
}

// renderOpenShift processes a kind: Template with the invocation's
// properties as parameter values. Each object becomes a primitive named by
// its metadata.name (qualified by its lower-cased kind when two objects
// share a name, as a Service and a Deployment often do).
func (x *Expander) renderOpenShift(ctx context.Context, inv engine.Invocation) (_ any, err error) {
	defer recoverEngine("OpenShift template", inv.File, nil, &err)
	v, err := x.cached("openshift:"+inv.FilesKey+":"+inv.File, func() (any, error) {
		t, err := openshift.Parse(inv.Source)
		if err != nil {
			return nil, at(inv.File, yamlErrorLine(err), err)
		}
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	params := make(map[string]string, len(inv.Properties))
	for k, p := range inv.Properties {
		s, err := paramString(p)
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", k, err)
		}
		params[k] = s
	}
	out, err := v.(*openshift.Template).Process(params, openshift.Options{MaxRenderedBytes: x.opts.MaxOutputBytes})
	if err != nil {
		return nil, at(inv.File, 0, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
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
			return nil, at(inv.File, 0, invalid("objects[%d] (%s) has no kind", i, names[i]))
		}
		n := names[i]
		if count[n] > 1 {
			n = strings.ToLower(kind) + "-" + n
		}
		res[i] = engine.Resource{Name: n, Type: kind, Properties: o}
	}
	return res, nil
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
