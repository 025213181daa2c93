package controller

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/expand/schema"
)

func TestRedact(t *testing.T) {
	props := map[string]any{"a": "x", "b": map[string]any{"c": "y", "d": []any{1}}, "e": 3}
	tests := []struct {
		paths [][]string
		want  string
	}{
		{nil, `{"a":"x","b":{"c":"y","d":[1]},"e":3}`},
		{[][]string{{"a"}}, `{"a":"(redacted)","b":{"c":"y","d":[1]},"e":3}`},
		{[][]string{{"b", "c"}, {"e"}}, `{"a":"x","b":{"c":"(redacted)","d":[1]},"e":"(redacted)"}`},
		{[][]string{{"b"}}, `{"a":"x","b":"(redacted)","e":3}`},
		{[][]string{{"a", "deeper"}}, `{"a":"(redacted)","b":{"c":"y","d":[1]},"e":3}`},
		{[][]string{{"missing"}, {"b", "missing"}}, `{"a":"x","b":{"c":"y","d":[1]},"e":3}`},
	}
	for _, tt := range tests {
		got, _ := json.Marshal(redactPaths(props, tt.paths))
		if string(got) != tt.want {
			t.Errorf("redactPaths(%v) = %s, want %s", tt.paths, got, tt.want)
		}
	}
	if b, _ := json.Marshal(props); string(b) != tests[0].want {
		t.Errorf("redactPaths changed its input: %s", b)
	}
	var paths []string
	for _, p := range leafPaths(props, nil, nil) {
		paths = append(paths, strings.Join(p, "."))
	}
	slices.Sort(paths)
	if !reflect.DeepEqual(paths, []string{"a", "b.c", "b.d", "e"}) {
		t.Errorf("leafPaths = %v", paths)
	}

	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "s", "annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{...data...}"}, "managedFields": []any{"x"}},
		"data":       map[string]any{"k": "djE="},
		"stringData": map[string]any{"s": "plain"}}
	got, _ := json.Marshal(redactSecret(secret))
	if want := `{"apiVersion":"v1","data":{"k":"(redacted)"},"kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"(redacted)"},"name":"s"},"stringData":{"s":"(redacted)"}}`; string(got) != want {
		t.Errorf("redactSecret = %s\nwant %s", got, want)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}
	if got := redactSecret(cm); !reflect.DeepEqual(got, cm) {
		t.Errorf("redactSecret changed a ConfigMap: %v", got)
	}

	sc, err := schema.Parse([]byte(`properties:
  password: {type: string, writeOnly: true}
  pin: {type: string, format: password}
  plain: {type: string}
  nested: {type: object, properties: {token: {type: string, writeOnly: true}, shown: {type: string}}}
`), "t.jinja.schema")
	if err != nil {
		t.Fatal(err)
	}
	paths = nil
	for _, p := range sensitivePaths(sc) {
		paths = append(paths, strings.Join(p, "."))
	}
	slices.Sort(paths)
	if !reflect.DeepEqual(paths, []string{"nested.token", "password", "pin"}) {
		t.Errorf("sensitivePaths = %v", paths)
	}
}
