package controller

import (
	"encoding/json"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dmhq/dm/internal/expand/schema"
)

// TestSpecSchema converts DM schemas to the OpenAPI of a defined kind's
// spec: what OpenAPI expresses is kept, the rest keeps any value, and the
// result is always a structural schema the apiserver accepts.
func TestSpecSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"no schema", ``, `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{"types defaults required descriptions enums",
			"info: {description: A web app}\nrequired: [image]\nproperties:\n" +
				"  image: {type: string, description: the image}\n" +
				"  replicas: {type: int, default: 2, minimum: 1}\n" +
				"  tier: {type: string, enum: [web, worker], default: web}\n" +
				"  debug: {type: bool}\n" +
				"  ratio: {type: number, maximum: 1, exclusiveMaximum: true}\n",
			`{"description":"A web app","type":"object","required":["image"],"properties":{` +
				`"debug":{"type":"boolean"},` +
				`"image":{"description":"the image","type":"string"},` +
				`"ratio":{"type":"number","maximum":1,"exclusiveMaximum":true},` +
				`"replicas":{"type":"integer","default":2,"minimum":1},` +
				`"tier":{"type":"string","default":"web","enum":["web","worker"]}}}`},
		{"nested objects and arrays",
			"properties:\n  ports:\n    type: array\n    items:\n      type: object\n      required: [port]\n      properties:\n        port: {type: integer}\n        name: {type: string}\n" +
				"  labels: {type: object, additionalProperties: {type: string}}\n" +
				"  extra: {type: object}\n  list: {type: array}\n",
			`{"type":"object","properties":{` +
				`"extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true},` +
				`"labels":{"type":"object","additionalProperties":{"type":"string"}},` +
				`"list":{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}},` +
				`"ports":{"type":"array","items":{"type":"object","required":["port"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}}}}`},
		{"what OpenAPI cannot express keeps any value",
			"definitions: {x: {type: string}}\nproperties:\n" +
				"  ref: {$ref: '#/definitions/x', description: by reference}\n" +
				"  either: {oneOf: [{type: string}, {type: integer}]}\n" +
				"  port: {type: [integer, string]}\n" +
				"  maybe: {type: [string, 'null']}\n" +
				"  multi: {type: [string, boolean]}\n" +
				"  look: {type: string, pattern: '^[a-z]+$', format: color}\n" +
				"  mixed: {type: object, properties: {a: {type: string}}, additionalProperties: true}\n" +
				"  bad: {type: integer, default: many, enum: [1, two]}\n" +
				"  none: {description: anything}\n",
			`{"type":"object","properties":{` +
				`"bad":{"type":"integer","enum":[1]},` +
				`"either":{"x-kubernetes-preserve-unknown-fields":true},` +
				`"look":{"type":"string","pattern":"^[a-z]+$"},` +
				`"maybe":{"type":"string","nullable":true},` +
				`"mixed":{"type":"object","properties":{"a":{"type":"string"}},"x-kubernetes-preserve-unknown-fields":true},` +
				`"multi":{"x-kubernetes-preserve-unknown-fields":true},` +
				`"none":{"description":"anything","x-kubernetes-preserve-unknown-fields":true},` +
				`"port":{"x-kubernetes-int-or-string":true},` +
				`"ref":{"description":"by reference","x-kubernetes-preserve-unknown-fields":true}}}`},
		{"a required name without a schema is left to the template",
			"required: [a, b]\nproperties: {a: {type: string}}\n",
			`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sc *schema.Schema
			if tc.schema != "" {
				var err error
				if sc, err = schema.Parse([]byte(tc.schema), "t.jinja.schema"); err != nil {
					t.Fatal(err)
				}
			}
			got := specSchema(sc)
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			structural(t, got)
		})
	}
}

// structural checks s as the apiserver checks a CRD's schema.
func structural(t *testing.T, s apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	var in apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&s, &in, nil); err != nil {
		t.Fatal(err)
	}
	ss, err := structuralschema.NewStructural(&in)
	if err != nil {
		t.Fatalf("not structural: %v", err)
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("spec"), ss); len(errs) > 0 {
		t.Errorf("not structural: %v", errs.ToAggregate())
	}
}
