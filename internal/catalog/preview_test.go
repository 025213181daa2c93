package catalog

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// formFields are a form of every input kind, for the form tests.
func formFields() []field {
	return []field{
		newField("replicas", "integer", "", 1, nil, true),
		newField("ratio", "number", "", nil, nil, false),
		newField("on", "boolean", "", nil, nil, false),
		newField("labels.tier", "string", "", nil, []string{"web", "db"}, false),
		newField("ports", "array", "", nil, nil, false),
		newField("any", "", "", nil, nil, false),
	}
}

// TestFormProperties: the preview form's fields are read as dm reads the
// properties it asks for (schema.Input.Parse) and nested as --properties
// nests them (expand.SetPath), so a value means the same in the catalog
// and on the command line.
func TestFormProperties(t *testing.T) {
	fields := formFields()
	tests := []struct {
		name string
		form string
		want map[string]any
		errs map[string]string // field: text its error holds
	}{
		{name: "typed", form: "replicas=3&ratio=0.5&on=true&labels.tier=db&ports=[80,443]&any=x",
			want: map[string]any{"replicas": int64(3), "ratio": 0.5, "on": true, "labels": map[string]any{"tier": "db"}, "ports": []any{int64(80), int64(443)}, "any": "x"}},
		{name: "empty fields left out", form: "replicas=&on=", want: map[string]any{}},
		{name: "not an integer", form: "replicas=three", errs: map[string]string{"replicas": `replicas: "three" is not an integer`}},
		// The catalog once read booleans as Go does (1, t, TRUE); dm
		// reads yes and no as YAML does, and so does the form now.
		{name: "boolean yes", form: "on=yes", want: map[string]any{"on": true}},
		{name: "boolean 1", form: "on=1", errs: map[string]string{"on": `on: "1" is not true or false`}},
		// The enum is checked at the field, not only by the expansion.
		{name: "not in the enum", form: "labels.tier=mid", errs: map[string]string{"labels.tier": `"mid" is not one of web, db`}},
		// An untyped field is YAML, as on the command line: a text that is
		// not YAML is an error at the field, no longer passed as text.
		{name: "untyped not YAML", form: "any=" + url.QueryEscape("a: ["), errs: map[string]string{"any": "is not YAML"}},
		// A field the schema does not name is typed as --properties types
		// it; one that is not YAML stays text (it has no field to mark).
		{name: "unnamed", form: "extra.count=3&note=" + url.QueryEscape("a: ["), want: map[string]any{"extra": map[string]any{"count": int64(3)}, "note": "a: ["}},
		{name: "path through a value", form: "replicas=3&replicas.x=1", errs: map[string]string{"replicas.x": "replicas is not a mapping"}},
		{name: "empty segment", form: "a..b=1", errs: map[string]string{"a..b": "empty key segment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, err := url.ParseQuery(tt.form)
			if err != nil {
				t.Fatal(err)
			}
			st := &previewState{values: map[string]string{}, fieldErrors: map[string]string{}}
			props, ok := formProperties(fields, vals, st)
			if ok != (len(tt.errs) == 0) || len(st.fieldErrors) != len(tt.errs) {
				t.Fatalf("ok %v, errors %v; want errors %v", ok, st.fieldErrors, tt.errs)
			}
			for f, want := range tt.errs {
				if !strings.Contains(st.fieldErrors[f], want) {
					t.Errorf("error of %s: %q, want %q in it", f, st.fieldErrors[f], want)
				}
			}
			if tt.errs == nil && !reflect.DeepEqual(props, tt.want) {
				t.Errorf("properties %#v, want %#v", props, tt.want)
			}
		})
	}
}
