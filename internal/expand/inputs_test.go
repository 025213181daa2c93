package expand

import (
	"reflect"
	"testing"

	"github.com/dmhq/dm/internal/expand/schema"
)

// TestMissingInConfig: the required properties each resource lacks, of
// imported and registry templates; values and defaults count as given,
// primitives and unknown references have none.
func TestMissingInConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`imports:
- {path: t/a.jinja, name: a}
resources:
- {name: one, type: a}
- {name: two, type: a, properties: {x: 1}}
- {name: three, type: redis:v1}
- {name: four, type: v1/ConfigMap}
- {name: five, type: nosuch:v1}
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]byte{"t/a.jinja": nil, "t/a.jinja.schema": []byte("required: [x, y]\nproperties:\n  x: {type: integer}\n  y: {type: string, default: why}\n")}
	redis, err := schema.Parse([]byte("required: [port]\nproperties:\n  port: {type: integer}\n"), "redis.jinja.schema")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, in := range MissingInConfig(cfg, imports, map[string]any{"five": map[string]any{}}, func(ref string) *schema.Schema {
		if ref == "redis:v1" {
			return redis
		}
		return nil
	}) {
		got[in.Resource] = append(got[in.Resource], in.Name)
	}
	if want := map[string][]string{"one": {"x"}, "three": {"port"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("MissingInConfig = %v, want %v", got, want)
	}
}
