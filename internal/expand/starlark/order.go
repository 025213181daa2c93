package starlark

import (
	"go.starlark.net/starlark"

	"github.com/dmhq/dm/internal/expand/engine"
)

// fileSet is a template's files and the key their content is cached
// under.
type fileSet struct {
	key   string
	files map[string][]byte
}

// starlarkValue converts a plain value to Starlark as toStarlark does, with
// dicts in the keys' document order (Keys). The Starlark engine converts
// properties and yaml.load results with it.
func starlarkValue(o engine.KeyOrder, v any) starlark.Value {
	switch v := v.(type) {
	case map[string]any:
		d := starlark.NewDict(len(v))
		for _, k := range o.Keys(v) {
			_ = d.SetKey(starlark.String(k), starlarkValue(o, v[k])) // a fresh dict is not frozen
		}
		return d
	case []any:
		l := make([]starlark.Value, len(v))
		for i, e := range v {
			l[i] = starlarkValue(o, e)
		}
		return starlark.NewList(l)
	}
	return toStarlark(v)
}

// recordStarlark records, for the maps of gv (fromStarlark's result of
// sv), the insertion order of sv's dicts, so a Python-style template's
// output keeps its order into the templates it instantiates.
func recordStarlark(o engine.KeyOrder, sv starlark.Value, gv any) {
	if o == nil {
		return
	}
	switch s := sv.(type) {
	case *starlark.Dict:
		m, ok := gv.(map[string]any)
		if !ok {
			return
		}
		items := s.Items()
		keys := make([]string, 0, len(items))
		for _, it := range items {
			k, ok := it[0].(starlark.String)
			if !ok {
				return
			}
			keys = append(keys, string(k))
			recordStarlark(o, it[1], m[string(k)])
		}
		o.Record(m, keys)
	case *starlark.List:
		l, ok := gv.([]any)
		if !ok || len(l) != s.Len() {
			return
		}
		for i := range l {
			recordStarlark(o, s.Index(i), l[i])
		}
	case starlark.Tuple:
		l, ok := gv.([]any)
		if !ok || len(l) != len(s) {
			return
		}
		for i := range l {
			recordStarlark(o, s[i], l[i])
		}
	}
}
