package schema

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// Unknown lists the properties of props that the schema does not define,
// with the nearest defined name when one is near: a misspelled property
// (replcas=3) would otherwise be accepted and silently ignored. Objects
// whose schema allows other keys (additionalProperties other than false,
// patternProperties) or defines no properties are not looked into; with
// additionalProperties: false validation itself refuses the keys.
//
// Each entry reads `unknown property "spec.replcas" (did you mean
// replicas?)`.
func (s *Schema) Unknown(props map[string]any) []string {
	if s.root == nil {
		return nil
	}
	var out []string
	unknownIn(s.root, props, "", &out)
	return out
}

func unknownIn(sch map[string]any, v map[string]any, prefix string, out *[]string) {
	defined, _ := sch["properties"].(map[string]any)
	if len(defined) == 0 {
		return
	}
	_, patterns := sch["patternProperties"]
	ap, hasAP := sch["additionalProperties"]
	open := patterns || hasAP && ap != false
	names := make([]string, 0, len(defined))
	for n := range defined {
		names = append(names, n)
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ps, ok := defined[k].(map[string]any)
		if !ok {
			if _, known := defined[k]; known || open || hasAP && ap == false {
				continue
			}
			msg := fmt.Sprintf("unknown property %q", prefix+k)
			if near := derrors.Near(k, names); len(near) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
			}
			*out = append(*out, msg)
			continue
		}
		if m, ok := v[k].(map[string]any); ok {
			unknownIn(ps, m, prefix+k+".", out)
		}
	}
}
