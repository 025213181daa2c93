package expand

import (
	"context"
	"strings"
	"testing"
)

// DM's own registry's storage/redis:v1 passes env to
// common/replicatedservice:v1 as a list where that schema declares an
// object: a template its own child's schema contradicts.
var dmRedis = map[string][]byte{
	"redis.jinja": []byte(`resources:
- name: {{ env['name'] }}-master
  type: replicatedservice.py
  properties:
    image: redis
    env:
    - name: GET_HOSTS_FROM
      value: env
`),
	"replicatedservice.py": []byte(`def GenerateConfig(context):
    p = context.properties
    return {'resources': [{'name': context.env['name'], 'type': 'v1/ConfigMap',
        'properties': {'data': {'port': str(p['port']), 'env': str(p['env'])}}}]}
`),
	"replicatedservice.py.schema": []byte(`properties:
  image: {type: string}
  port: {type: integer, default: 6379}
  env: {type: object, description: Environment variables}
`),
}

// TestSkipSchemaValidation: without the option a schema violation fails,
// naming the property and the option; with it defaults still apply and
// the violation is a warning.
func TestSkipSchemaValidation(t *testing.T) {
	x := New(Options{})
	cfg := []byte("imports:\n- path: redis.jinja\n- path: replicatedservice.py\nresources:\n- name: cache\n  type: redis.jinja\n")
	tests := []struct {
		name    string
		skip    bool
		wantErr []string
	}{
		{"validated", false, []string{"properties.env", "expected object", "--skip-schema-validation"}},
		{"skipped", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := x.Expand(context.Background(), Request{Config: cfg, Imports: dmRedis, SkipSchemaValidation: tt.skip})
			if tt.wantErr != nil {
				if err == nil {
					t.Fatal("expanded a template whose child's schema refuses its properties")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data := res.Config.Resources[0].Properties["data"].(map[string]any)
			if data["port"] != "6379" {
				t.Errorf("port %v: the schema's default was not applied", data["port"])
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "properties.env") || !strings.Contains(res.Warnings[0], "not validated") {
				t.Errorf("warnings %q, want one naming properties.env", res.Warnings)
			}
		})
	}
}
