package schema

import (
	"reflect"
	"testing"
)

func TestIsStringType(t *testing.T) {
	for typ, want := range map[string]bool{
		"string": true, "string|null": true, "null|string": true,
		"integer": false, "string|integer": false, "null": false, "": false,
	} {
		if got := IsStringType(typ); got != want {
			t.Errorf("IsStringType(%q) = %v, want %v", typ, got, want)
		}
	}
}

func TestKeepText(t *testing.T) {
	types := map[string]string{"tag": "string", "ver": "string|null", "replicas": "integer", "name": "string"}
	tests := []struct {
		name  string
		props map[string]any
		text  map[string]string
		want  map[string]any
	}{
		{
			name:  "numbers typed as strings keep their text",
			props: map[string]any{"tag": 1.1, "ver": int64(2), "replicas": int64(3)},
			text:  map[string]string{"tag": "1.10", "ver": "2", "replicas": "3"},
			want:  map[string]any{"tag": "1.10", "ver": "2", "replicas": int64(3)},
		},
		{
			name:  "a string stays as decoded",
			props: map[string]any{"name": "web"},
			text:  map[string]string{"name": "'web'"},
			want:  map[string]any{"name": "web"},
		},
		{
			name:  "values not given as text are untouched",
			props: map[string]any{"tag": 1.5, "other": true},
			text:  map[string]string{"other": "true"},
			want:  map[string]any{"tag": 1.5, "other": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			KeepText(types, tt.props, tt.text)
			if !reflect.DeepEqual(tt.props, tt.want) {
				t.Errorf("got %#v, want %#v", tt.props, tt.want)
			}
		})
	}
}
