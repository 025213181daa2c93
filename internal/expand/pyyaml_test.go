package expand

import (
	"reflect"
	"strings"
	"testing"
)

// TestDecodeYAMLPy: whole documents, through both decoders.
func TestDecodeYAMLPy(t *testing.T) {
	tests := []struct {
		name, in string
		want     any
		err      string
	}{
		{name: "n key", in: "properties: {n: 2, y: 3}\n", want: map[string]any{"properties": map[string]any{"n": int64(2), "y": int64(3)}}},
		{name: "bool keys", in: "yes: 1\n1: 2\n~: 3\n", want: map[string]any{"true": int64(1), "1": int64(2), "null": int64(3)}},
		{name: "quoted stays string", in: "a: 'yes'\nb: \"12:30:00\"\nc: !!str 017\n", want: map[string]any{"a": "yes", "b": "12:30:00", "c": "017"}},
		{name: "tags", in: "a: !!int '42'\nb: !!float 1\nc: !!bool yes\n", want: map[string]any{"a": int64(42), "b": 1.0, "c": true}},
		{name: "merge", in: "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n", want: map[string]any{"base": map[string]any{"x": int64(1), "y": int64(2)}, "d": map[string]any{"x": int64(1), "y": int64(3)}}},
		{name: "merge list", in: "a: &a {x: 1}\nb: &b {x: 2, z: 2}\nd:\n  <<: [*a, *b]\n", want: map[string]any{"a": map[string]any{"x": int64(1)}, "b": map[string]any{"x": int64(2), "z": int64(2)}, "d": map[string]any{"x": int64(1), "z": int64(2)}}},
		{name: "unknown tag", in: "a: !foo 1\n", err: "tag !foo"},
		{name: "two documents", in: "a: 1\n---\nb: 2\n", err: "single document"},
		{name: "duplicate key keeps the last", in: "a: 1\na: 2\n", want: map[string]any{"a": int64(2)}},
		{name: "empty", in: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeYAML([]byte(tt.in), yamlLimits{})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			checkFastYAML(t, []byte(tt.in))
		})
	}
}

// TestKeyOrder: mappings keep document order through both decoders and
// schema-style copies.
func TestKeyOrder(t *testing.T) {
	doc := "z: 1\na: 2\nm: {y: 1, b: 2}\nc: 3\n"
	for name, decode := range map[string]func(*keyOrder) any{
		"full": func(o *keyOrder) any { v, _ := decodeYAML([]byte(doc), yamlLimits{order: o}); return v },
		"fast": func(o *keyOrder) any { v, _ := fastYAML([]byte(doc), o); return v },
	} {
		o := newKeyOrder()
		m := decode(o).(map[string]any)
		if got := o.Keys(m); !reflect.DeepEqual(got, []string{"z", "a", "m", "c"}) {
			t.Errorf("%s: keys %v", name, got)
		}
		if got := o.Keys(m["m"].(map[string]any)); !reflect.DeepEqual(got, []string{"y", "b"}) {
			t.Errorf("%s: nested keys %v", name, got)
		}
		cp := map[string]any{"default2": 0, "default1": 0}
		for k, v := range m {
			cp[k] = v
		}
		o.Inherit(cp, m)
		if got := o.Keys(cp); !reflect.DeepEqual(got, []string{"z", "a", "m", "c", "default1", "default2"}) {
			t.Errorf("%s: inherited keys %v", name, got)
		}
	}
	if got := (*keyOrder)(nil).Keys(map[string]any{"b": 1, "a": 2}); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("nil order: %v", got)
	}
}
