package expand

import (
	"bytes"

	"github.com/dmhq/dm/internal/expand/value"

	yaml "go.yaml.in/yaml/v2"

	"github.com/dmhq/dm/internal/expand/engine"
)

// yamlLimits bounds what a YAML document may cost to decode, and carries
// the expansion's key order.
type yamlLimits struct {
	maxBytes      int // Options.MaxInputBytes or MaxOutputBytes, named by field
	bytesField    string
	maxAliases    int // Options.MaxYAMLAliases
	maxAliasBytes int // Options.MaxYAMLAliasBytes
	// order, if set, records the key order of every decoded mapping.
	order *keyOrder
	// duplicate, if set, hears of every repeated mapping key (the last
	// value is kept, as PyYAML does).
	duplicate func(line int, key string)
}

// decodeYAML decodes a YAML (or JSON) document into plain Go values:
// map[string]any, []any, string, bool, int64, float64 and nil, resolving
// scalars as PyYAML's safe_load does (ResolvePlain). A repeated key keeps
// its last value, as in PyYAML. An alias bomb fails fast: the document's aliases are counted
// before decoding (cheap, one byte scan), and what aliases add once
// expanded is counted against Options.MaxYAMLAliasBytes.
func decodeYAML(data []byte, lim yamlLimits) (any, error) {
	v, _, err := decodeYAMLNode(data, lim)
	return v, err
}

// decodeJSON decodes a JSON document into the same plain values as
// decodeYAML; see value.DecodeJSON.
func decodeJSON(data []byte) (any, error) { return value.DecodeJSON(data) }

// isJSON reports whether data looks like a JSON object.
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// yamlErrorLine returns the line a yaml.v2 error names, or 0.
func yamlErrorLine(err error) int { return engine.LineOf(err) }

// excerpt returns line n of data (1-based), trimmed, for error messages
// about rendered output, which the user never sees otherwise.
func excerpt(data []byte, n int) string {
	if n <= 0 {
		return ""
	}
	lines := bytes.SplitN(data, []byte{'\n'}, n+1)
	if len(lines) < n {
		return ""
	}
	l := bytes.TrimRight(lines[n-1], "\r")
	if len(l) > 120 {
		l = append(l[:117:117], "..."...)
	}
	return string(l)
}

// marshalYAML encodes plain values as YAML, keys sorted.
func marshalYAML(v any) ([]byte, error) {
	return yaml.Marshal(v)
}

// DecodeValue decodes a YAML or JSON value the way the engine decodes
// configurations, into plain values with integers as int64, under the
// default input limits. Command lines use it to type property values the
// way YAML would (replicas=3 is a number).
func DecodeValue(data []byte) (any, error) {
	return decodeYAML(data, yamlLimits{maxBytes: defaultMaxInputBytes, bytesField: "MaxInputBytes", maxAliases: defaultMaxYAMLAliases})
}
