package expand

import (
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/index"
)

// ResourceInput is a required property that a resource of a
// configuration lacks; Input.Name is the property's, Resource the
// resource's.
type ResourceInput struct {
	Resource string
	schema.Input
}

// MissingInConfig returns the required properties without a value or
// default of the templates a configuration's resources instantiate
// directly, resource by resource: imported templates whose schema is
// among imports, and registry references whose schema registry returns
// (nil when it has none or cannot say; the expansion reports errors).
// values (--values keyed by resource name) count as given.
func MissingInConfig(cfg *Config, imports map[string][]byte, values map[string]any, registry func(ref string) *schema.Schema) []ResourceInput {
	names := map[string]string{}
	for _, imp := range cfg.Imports {
		names[imp.Path] = imp.Path
		if imp.Name != "" {
			names[imp.Name] = imp.Path
		}
	}
	var out []ResourceInput
	langs := engine.Default()
	for _, rs := range cfg.Resources {
		var sc *schema.Schema
		switch kind, p := classifyType(langs, rs.Type, names); kind {
		case importType:
			if b, ok := imports[p+index.SchemaSuffix]; ok {
				sc, _ = schema.Parse(b, p+index.SchemaSuffix)
			}
		case registryType:
			if registry != nil {
				sc = registry(rs.Type)
			}
		}
		if sc == nil {
			continue
		}
		props := rs.Properties
		if m, ok := values[rs.Name].(map[string]any); ok {
			props = value.Merge(props, m)
		}
		for _, in := range sc.Missing(props) {
			out = append(out, ResourceInput{Resource: rs.Name, Input: in})
		}
	}
	return out
}
