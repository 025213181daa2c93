package expand

import (
	"reflect"
	"sort"

	"go.starlark.net/starlark"
)

// keyOrder remembers the document order of the keys of decoded mappings,
// so that mappings keep the order they were written in from the
// configuration through properties into templates, as PyYAML and Python 3.7+
// dicts do (a template that builds a list by iterating a dict depends on
// it). The engine's values stay plain map[string]any; the order lives
// beside them, keyed by map identity, for one expansion. Not safe for
// concurrent use: one run records and reads it on one goroutine.
type keyOrder struct {
	m map[uintptr]orderEntry
}

type orderEntry struct {
	m    map[string]any // keeps the map alive, so its address is not reused
	keys []string
}

func newKeyOrder() *keyOrder { return &keyOrder{m: map[uintptr]orderEntry{}} }

// Record notes keys as m's order.
func (o *keyOrder) Record(m map[string]any, keys []string) {
	if o == nil || len(keys) < 2 {
		return
	}
	o.m[reflect.ValueOf(m).Pointer()] = orderEntry{m: m, keys: keys}
}

// Keys returns m's keys in document order: the recorded keys that m still
// has, then keys added since (a schema's defaults), sorted. Without a
// record (a nil keyOrder, a map built in Go) the keys are sorted. The
// Starlark and Jinja engines use it to build their dicts.
func (o *keyOrder) Keys(m map[string]any) []string {
	if o == nil || len(m) < 2 {
		return sortedKeys(m)
	}
	e, ok := o.m[reflect.ValueOf(m).Pointer()]
	if !ok {
		return sortedKeys(m)
	}
	out := make([]string, 0, len(m))
	seen := make(map[string]bool, len(e.keys))
	for _, k := range e.keys {
		if _, ok := m[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == len(m) {
		return out
	}
	n := len(out)
	for k := range m {
		if !seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out[n:])
	return out
}

// Inherit records for dst (a copy of src with keys added, such as
// properties after schema defaults) src's order.
func (o *keyOrder) Inherit(dst, src map[string]any) {
	if o == nil {
		return
	}
	if e, ok := o.m[reflect.ValueOf(src).Pointer()]; ok {
		o.Record(dst, e.keys)
	}
}

// starlarkValue converts a plain value to Starlark as toStarlark does, with
// dicts in the keys' document order (Keys). The Starlark engine converts
// properties and yaml.load results with it.
func (o *keyOrder) starlarkValue(v any) starlark.Value {
	switch v := v.(type) {
	case map[string]any:
		d := starlark.NewDict(len(v))
		for _, k := range o.Keys(v) {
			_ = d.SetKey(starlark.String(k), o.starlarkValue(v[k])) // a fresh dict is not frozen
		}
		return d
	case []any:
		l := make([]starlark.Value, len(v))
		for i, e := range v {
			l[i] = o.starlarkValue(e)
		}
		return starlark.NewList(l)
	}
	return toStarlark(v)
}

// recordStarlark records, for the maps of gv (fromStarlark's result of
// sv), the insertion order of sv's dicts, so a Python-style template's
// output keeps its order into the templates it instantiates.
func (o *keyOrder) recordStarlark(sv starlark.Value, gv any) {
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
			o.recordStarlark(it[1], m[string(k)])
		}
		o.Record(m, keys)
	case *starlark.List:
		l, ok := gv.([]any)
		if !ok || len(l) != s.Len() {
			return
		}
		for i := range l {
			o.recordStarlark(s.Index(i), l[i])
		}
	case starlark.Tuple:
		l, ok := gv.([]any)
		if !ok || len(l) != len(s) {
			return
		}
		for i := range l {
			o.recordStarlark(s[i], l[i])
		}
	}
}
