package openshift

import (
	"reflect"
	"testing"
)

// TestMissing: required parameters without value or generator that are
// not supplied are inputs, typed as the parameter says.
func TestMissing(t *testing.T) {
	tpl, err := Parse([]byte(`kind: Template
apiVersion: v1
parameters:
- {name: A, required: true, description: The a.}
- {name: B, required: true, type: int, displayName: Bee}
- {name: C, required: true, value: c}
- {name: D, required: true, generate: expression, from: "[a-z]{4}"}
- {name: E}
- {name: F, required: true, type: bool}
objects: []
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range tpl.Missing(map[string]string{"F": "true"}) {
		got = append(got, in.Describe())
	}
	if want := []string{"A (string): The a.", "B (integer): Bee"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Missing = %q, want %q", got, want)
	}
	b := tpl.Missing(nil)[1]
	if v, err := b.Parse("42"); err != nil || v != int64(42) {
		t.Errorf("B: 42 -> %v, %v", v, err)
	}
	if _, err := b.Parse("x"); err == nil {
		t.Error("B: x accepted")
	}
}
