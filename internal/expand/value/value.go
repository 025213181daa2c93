// Package value handles plain decoded values, what YAML and JSON decode to
// in the engine: map[string]any, []any, string, bool, int64, float64 and
// nil. The engine, the schema and the OpenShift packages share it.
package value

import (
	"encoding/json"
	"maps"
	"strconv"
)

// Copy returns a deep copy of v's maps and lists; scalars are shared.
func Copy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Copy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = Copy(e)
		}
		return l
	case map[string]string:
		return maps.Clone(x)
	}
	return v
}

// Numbers replaces json.Number values in v, in place, by int64 when
// integral and in range, else float64, and returns v. A number beyond
// float64's range keeps its text rather than lose it.
func Numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = Numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = Numbers(e)
		}
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	}
	return v
}

// Merge returns base with over merged in, as Helm merges values files:
// mappings both hold are merged recursively, any other value of over
// replaces base's. Neither argument is modified; unchanged nested values
// are shared.
func Merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = Merge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}
