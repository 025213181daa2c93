package value

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCopy(t *testing.T) {
	in := map[string]any{"a": []any{map[string]any{"b": 1}}, "l": map[string]string{"x": "y"}}
	out := Copy(in).(map[string]any)
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("copy differs: %v", out)
	}
	out["a"].([]any)[0].(map[string]any)["b"] = 2
	out["l"].(map[string]string)["x"] = "z"
	if in["a"].([]any)[0].(map[string]any)["b"] != 1 || in["l"].(map[string]string)["x"] != "y" {
		t.Fatal("copy shares state with the original")
	}
}

func TestNumbers(t *testing.T) {
	tests := []struct {
		in   json.Number
		want any
	}{
		{"3", int64(3)},
		{"-7", int64(-7)},
		{"1.5", 1.5},
		{"1e400", "1e400"},
		{"99999999999999999999", 1e20},
	}
	for _, tt := range tests {
		got := Numbers(map[string]any{"n": []any{tt.in}}).(map[string]any)["n"].([]any)[0]
		if got != tt.want {
			t.Errorf("Numbers(%s) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestMerge(t *testing.T) {
	base := map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}, "l": []any{1}}
	over := map[string]any{"b": 2, "m": map[string]any{"y": 3, "z": 4}, "l": []any{2}}
	got := Merge(base, over)
	want := map[string]any{"a": 1, "b": 2, "m": map[string]any{"x": 1, "y": 3, "z": 4}, "l": []any{2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(base["m"], map[string]any{"x": 1, "y": 2}) {
		t.Errorf("Merge modified its base: %v", base)
	}
}
