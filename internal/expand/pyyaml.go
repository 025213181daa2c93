package expand

import (
	"errors"
	"math"

	"github.com/dmhq/dm/internal/expand/pyyaml"
	yaml3 "go.yaml.in/yaml/v3"
)

// decodeYAMLNode decodes a YAML document as PyYAML's safe_load does
// (package pyyaml) under lim, recording key order in lim.order, and
// returns it with its node tree, for line numbers.
func decodeYAMLNode(data []byte, lim yamlLimits) (any, *yaml3.Node, error) {
	if lim.maxBytes > 0 && len(data) > lim.maxBytes {
		return nil, nil, limitErr(lim.bytesField, lim.maxBytes, "document is %d bytes", len(data))
	}
	opts := pyyaml.Options{MaxAliases: lim.maxAliases, MaxAliasBytes: lim.maxAliasBytes}
	if lim.order != nil {
		opts.Record = lim.order.Record
	}
	opts.Duplicate = lim.duplicate
	v, n, err := pyyaml.Decode(data, opts)
	var le *pyyaml.LimitError
	if errors.As(err, &le) {
		field := map[string]string{"MaxAliases": "MaxYAMLAliases", "MaxAliasBytes": "MaxYAMLAliasBytes"}[le.Field]
		return nil, nil, limitErr(field, le.Limit, "%s", le.Detail)
	}
	return v, n, err
}

// DefaultMaxYAMLAliasBytes is Options.MaxYAMLAliasBytes's default.
const DefaultMaxYAMLAliasBytes = pyyaml.DefaultMaxAliasBytes

// finite replaces the non-finite floats in v (YAML's .inf, -.inf, .nan),
// in place, by the strings ".inf", "-.inf" and ".nan", so JSON output
// never fails on them, and returns v.
func finite(v any) any {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsInf(x, 1):
			return ".inf"
		case math.IsInf(x, -1):
			return "-.inf"
		case math.IsNaN(x):
			return ".nan"
		}
	case map[string]any:
		for k, e := range x {
			switch e.(type) {
			case float64, map[string]any, []any:
				x[k] = finite(e)
			}
		}
	case []any:
		for i, e := range x {
			switch e.(type) {
			case float64, map[string]any, []any:
				x[i] = finite(e)
			}
		}
	}
	return v
}
