package expand

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// emitYAML writes plain values as block YAML, keys sorted, like PyYAML's
// yaml.dump with default_flow_style=False. It is several times faster than
// yaml.v2's emitter, which dominated Python-style templates; strings that
// are not unambiguous plain scalars are double-quoted.
func emitYAML(v any) ([]byte, error) {
	var sb strings.Builder
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			return []byte("{}\n"), nil
		}
		if err := emitMap(&sb, v, 0, false); err != nil {
			return nil, err
		}
	case []any:
		if len(v) == 0 {
			return []byte("[]\n"), nil
		}
		if err := emitList(&sb, v, 0); err != nil {
			return nil, err
		}
	default:
		s, err := emitScalar(v)
		if err != nil {
			return nil, err
		}
		sb.WriteString(s)
		sb.WriteByte('\n')
	}
	return []byte(sb.String()), nil
}

func writeIndent(sb *strings.Builder, n int) {
	for ; n > 0; n-- {
		sb.WriteByte(' ')
	}
}

// emitMap writes m's entries at indent; with inline, the first entry
// continues the current line (a mapping that is a list item).
func emitMap(sb *strings.Builder, m map[string]any, indent int, inline bool) error {
	for i, k := range sortedKeys(m) {
		if i > 0 || !inline {
			writeIndent(sb, indent)
		}
		sb.WriteString(emitString(k))
		sb.WriteByte(':')
		if err := emitValue(sb, m[k], indent, false); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

func emitList(sb *strings.Builder, l []any, indent int) error {
	for i, e := range l {
		writeIndent(sb, indent)
		sb.WriteByte('-')
		if err := emitValue(sb, e, indent, true); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return nil
}

// emitValue writes what follows "key:" or "-".
func emitValue(sb *strings.Builder, v any, indent int, item bool) error {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			sb.WriteString(" {}\n")
			return nil
		}
		if item {
			// "- k: v" with the other keys aligned under k.
			sb.WriteByte(' ')
			return emitMap(sb, v, indent+2, true)
		}
		sb.WriteByte('\n')
		return emitMap(sb, v, indent+2, false)
	case []any:
		if len(v) == 0 {
			sb.WriteString(" []\n")
			return nil
		}
		sb.WriteByte('\n')
		if item {
			return emitList(sb, v, indent+2)
		}
		return emitList(sb, v, indent)
	default:
		s, err := emitScalar(v)
		if err != nil {
			return err
		}
		sb.WriteByte(' ')
		sb.WriteString(s)
		sb.WriteByte('\n')
		return nil
	}
}

func emitScalar(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		switch {
		case math.IsInf(v, 1):
			return ".inf", nil
		case math.IsInf(v, -1):
			return "-.inf", nil
		case math.IsNaN(v):
			return ".nan", nil
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		// PyYAML reads a float only with a dot: 1e+20 would be a string.
		switch i := strings.IndexByte(s, 'e'); {
		case strings.IndexByte(s, '.') >= 0:
		case i >= 0:
			s = s[:i] + ".0" + s[i:]
		default:
			s += ".0"
		}
		return s, nil
	case string:
		return emitString(v), nil
	default:
		return "", fmt.Errorf("cannot write a %T as YAML", v)
	}
}

// emitString writes s plain when reading it back plain gives s, else
// double-quoted (Go's quoting is valid YAML double-quoted style).
func emitString(s string) string {
	// "---" and "..." at the start of a line are document markers, so a
	// plain "..." alone in a document would end it.
	if s != "" && s == strings.TrimSpace(s) && !strings.Contains(s, ": ") && !strings.Contains(s, " #") &&
		!strings.HasPrefix(s, "---") && !strings.HasPrefix(s, "...") &&
		!strings.HasSuffix(s, ":") && !strings.ContainsAny(s, "\n\r\t\"'\\") && printable([]byte(s)) {
		if v, ok := plain(s); ok {
			if ps, isStr := v.(string); isStr && ps == s {
				return s
			}
		}
	}
	return strconv.Quote(s)
}
