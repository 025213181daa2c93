package schema

import (
	"errors"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

// FuzzParse feeds arbitrary schema files to Parse and applies what
// compiles to a few property sets: errors must be InvalidArgument, never a
// panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("info: {title: T}\nrequired: [a]\nproperties:\n  a: {type: int, default: 1}\n  b: {type: object, default: {}, properties: {c: {type: string, default: x}}}\n"))
	f.Add([]byte("properties:\n  l: {type: array, items: {type: object, properties: {p: {type: integer, default: 80}}}}\n"))
	f.Add([]byte("definitions: {d: {type: string}}\nproperties: {a: {$ref: '#/definitions/d'}}\n"))
	f.Add([]byte("required: []\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "f.schema")
		if err != nil {
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("Parse error %v is not InvalidArgument", err)
			}
			return
		}
		for _, props := range []map[string]any{nil, {}, {"a": "x"}, {"a": int64(2), "b": map[string]any{}}, {"l": []any{map[string]any{}}}} {
			if _, err := s.Apply(props); err != nil && !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("Apply error %v is not InvalidArgument", err)
			}
		}
	})
}
