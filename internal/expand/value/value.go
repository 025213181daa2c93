// Package value handles plain decoded values, what YAML and JSON decode to
// in the engine: map[string]any, []any, string, bool, int64, float64 and
// nil. The engine, the schema and the OpenShift packages share it.
package value

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// DecodeJSON decodes a JSON document into plain values, numbers as int64
// when they are integers (as YAML decodes them); syntax errors name the
// line.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			return nil, fmt.Errorf("line %d: %w", lineOf(data, se.Offset), err)
		}
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("line %d: unexpected data after the JSON document", lineOf(data, dec.InputOffset()))
	}
	return Numbers(v), nil
}

func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// Kind names a plain value's kind for messages: "a mapping", "a list".
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, int, float64:
		return "a number"
	default:
		return fmt.Sprintf("%T", v)
	}
}
