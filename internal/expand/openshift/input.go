package openshift

import (
	"fmt"

	"github.com/dmhq/dm/internal/expand/schema"
)

// Missing returns the required parameters that have neither a value nor
// a generator and are not supplied, as inputs: dm asks for them on a
// terminal, as oc process does, or lists them all. A supplied value is
// the parameter's text (fmt.Sprint of the typed input).
func (t *Template) Missing(supplied map[string]string) []schema.Input {
	var out []schema.Input
	for i := range t.Parameters {
		p := &t.Parameters[i]
		if !p.Required || p.Value != "" || p.Generate != "" || supplied[p.Name] != "" {
			continue
		}
		desc := p.Description
		if desc == "" {
			desc = p.DisplayName
		}
		typ := "string"
		switch p.Type {
		case TypeInt:
			typ = "integer"
		case TypeBool:
			typ = "boolean"
		}
		out = append(out, schema.NewInput(p.Name, desc, typ, func(v any) error {
			_, err := typedValue(p, fmt.Sprint(v))
			return err
		}))
	}
	return out
}
