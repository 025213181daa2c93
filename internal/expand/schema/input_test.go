package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

const inputSchema = `required: [name, replicas, size, password, token, ratio, enabled, tags, port]
properties:
  name: {type: string, description: "  Name of the\n  service. ", pattern: "^[a-z]+$"}
  replicas: {type: integer, minimum: 1}
  size: {type: string, enum: [small, large]}
  password: {type: string, format: password}
  token: {type: string, writeOnly: true}
  ratio: {type: number}
  enabled: {type: boolean}
  tags: {type: array, items: {type: string}}
  port: {type: integer, default: 80}
  extra: {type: string}
`

// TestMissing: the required properties absent and without default, in
// the schema's order, with what the prompt shows.
func TestMissing(t *testing.T) {
	s, err := Parse([]byte(inputSchema), "t.jinja.schema")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range s.Missing(map[string]any{"ratio": 0.5}) {
		got = append(got, in.Describe())
	}
	want := []string{
		"name (string): Name of the service.",
		"replicas (integer)",
		"size (string, one of small, large)",
		"password (string, secret)",
		"token (string, secret)",
		"enabled (boolean)",
		"tags (array)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Missing:\n got %q\nwant %q", got, want)
	}
}

func TestInputParse(t *testing.T) {
	s, err := Parse([]byte(inputSchema), "t.jinja.schema")
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]Input{}
	for _, in := range s.Missing(nil) {
		inputs[in.Name] = in
	}
	tests := []struct {
		input, text string
		want        any
		err         string
	}{
		{"name", "web", "web", ""},
		{"name", "Web", nil, "does not match pattern"},
		{"name", "  ", nil, "name is required"},
		{"replicas", "3", int64(3), ""},
		{"replicas", "three", nil, `"three" is not an integer`},
		{"replicas", "0", nil, "minimum"},
		{"size", "large", "large", ""},
		{"size", "medium", nil, `"medium" is not one of small, large`},
		{"ratio", "0.25", 0.25, ""},
		{"ratio", "x", nil, "not a number"},
		{"enabled", "yes", true, ""},
		{"enabled", "false", false, ""},
		{"enabled", "maybe", nil, "not true or false"},
		{"tags", "[a, b]", []any{"a", "b"}, ""},
		{"tags", "[1]", nil, "properties.tags[0]: expected string"},
		{"tags", "[a", nil, "is not YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.input+"="+tt.text, func(t *testing.T) {
			in, ok := inputs[tt.input]
			if !ok {
				in = Input{Name: tt.input, Type: "number", check: s.propertyCheck(tt.input)}
			}
			v, err := in.Parse(tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, derrors.InvalidArgument) {
					t.Errorf("Parse(%q) = %v, %v; want an error with %q", tt.text, v, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(v, tt.want) {
				t.Errorf("Parse(%q) = %#v, %v; want %#v", tt.text, v, err, tt.want)
			}
		})
	}
}

func TestMissingError(t *testing.T) {
	e := &MissingError{What: "property", How: "--properties", Inputs: []Input{{Name: "a", Type: "string", Description: "The a."}}}
	if got := e.Error(); got != "1 required property without a value (give them with --properties, or run on a terminal to be asked):\n  a (string): The a." {
		t.Errorf("Error() = %q", got)
	}
	if !errors.Is(e, derrors.InvalidArgument) {
		t.Error("not InvalidArgument")
	}
	if got := Count(2, "parameter"); got != "2 required parameters" {
		t.Errorf("Count = %q", got)
	}
}
