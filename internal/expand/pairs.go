package expand

import (
	"fmt"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// BadPair is the error of a pair that is not KEY=VALUE. gcloud's
// --properties took KEY:VALUE, which Deployment Manager's users type
// still: such a pair is shown as dm takes it.
func BadPair(pair string) error {
	if k, v, ok := strings.Cut(pair, ":"); ok && !strings.Contains(pair, "=") && strings.TrimSpace(k) != "" {
		return derrors.Errorf(derrors.InvalidArgument, "%q: want KEY=VALUE: dm takes %s=%s where gcloud took %s", pair, strings.TrimSpace(k), v, pair)
	}
	return derrors.Errorf(derrors.InvalidArgument, "%q: want KEY=VALUE", pair)
}

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
			return nil, BadPair(pair)
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
		if err := SetPath(out, k, val); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SetPath sets the value at a dotted path (resources.limits.memory) of m,
// making the mappings on the way. A path through a value that is not a
// mapping is an error naming it, not a silent replacement: a=1,a.b=2
// would otherwise lose a=1.
func SetPath(m map[string]any, path string, v any) error {
	keys := strings.Split(path, ".")
	for i, part := range keys {
		if part == "" {
			return derrors.Errorf(derrors.InvalidArgument, "%q: empty key segment", path)
		}
		if i == len(keys)-1 {
			m[part] = v
			break
		}
		next, exists := m[part]
		if !exists {
			next = map[string]any{}
			m[part] = next
		}
		sub, ok := next.(map[string]any)
		if !ok {
			return derrors.Errorf(derrors.InvalidArgument, "%q: %s is not a mapping", path, strings.Join(keys[:i+1], "."))
		}
		m = sub
	}
	return nil
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
