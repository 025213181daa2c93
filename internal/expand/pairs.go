package expand

import (
	"fmt"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// ParsePairs parses KEY=VALUE pairs, comma-separated as dm's
// --properties and --set-string take them, into a nested mapping. VALUE
// is typed as YAML types it (replicas=3 is a number, on=true a boolean, ports=[80,443] a
// list) unless asString; KEY may be a dotted path into nested mappings
// (resources.limits.memory=1Gi). Commas inside brackets, braces or quotes
// do not separate pairs, and \, is a literal comma. text, if not nil,
// receives each VALUE as written, by dotted KEY.
func ParsePairs(s string, asString bool, text map[string]string) (map[string]any, error) {
	out := map[string]any{}
	for _, pair := range splitPairs(s) {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, derrors.Errorf(derrors.InvalidArgument, "%q: want KEY=VALUE", pair)
		}
		var val any = v
		if !asString {
			val = ""
			if strings.TrimSpace(v) != "" {
				d, err := DecodeValue([]byte(v))
				if err != nil {
					return nil, fmt.Errorf("%s: value %q: %w", k, v, err)
				}
				val = d
			}
		}
		if text != nil {
			text[k] = v
		}
		keys := strings.Split(k, ".")
		m := out
		for i, part := range keys {
			if part == "" {
				return nil, derrors.Errorf(derrors.InvalidArgument, "%q: empty key segment", k)
			}
			if i == len(keys)-1 {
				m[part] = val
				break
			}
			next, ok := m[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[part] = next
			}
			m = next
		}
	}
	return out, nil
}

func splitPairs(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
			continue
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case c == ',' && depth == 0:
			out = append(out, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return append(out, cur.String())
}
