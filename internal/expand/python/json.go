package python

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyJSON holds the options of Python's json.Dumps that templates use.
type pyJSON struct {
	// indent is nil for one line, else the string each level adds.
	indent *string
	// ItemSep and KeySep default as Python's: ", " and ": " on one line,
	// "," and ": " with an indent.
	ItemSep, KeySep string
	SortKeys        bool
	// limit bounds the output's size.
	limit int
}

func NewJSON(limit int) *pyJSON {
	return &pyJSON{ItemSep: ", ", KeySep: ": ", limit: limit}
}

// SetIndent applies json.Dumps's indent: a number of spaces or a string.
func (o *pyJSON) SetIndent(n int, s *string) {
	if s == nil {
		str := strings.Repeat(" ", min(max(n, 0), 64))
		s = &str
	}
	o.indent = s
	if o.ItemSep == ", " {
		o.ItemSep = ","
	}
}

// Dumps is json.Dumps(v) with ensure_ascii and allow_nan, as Python
// writes it.
func (o *pyJSON) Dumps(v any) (string, error) {
	var sb strings.Builder
	if err := o.write(&sb, v, 0); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func (o *pyJSON) newline(sb *strings.Builder, level int) {
	sb.WriteByte('\n')
	for range level {
		sb.WriteString(*o.indent)
	}
}

func (o *pyJSON) write(sb *strings.Builder, v any, level int) error {
	if sb.Len() > o.limit {
		return SizeErr("json.Dumps", sb.Len(), o.limit)
	}
	if level > 1000 {
		return fmt.Errorf("json.Dumps: value nested too deep")
	}
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(v))
	case int:
		sb.WriteString(strconv.Itoa(v))
	case int64:
		sb.WriteString(strconv.FormatInt(v, 10))
	case *big.Int:
		sb.WriteString(v.String())
	case float64:
		sb.WriteString(jsonFloat(v))
	case string:
		writeJSONString(sb, v)
	case []any:
		return o.writeList(sb, v, level)
	case Tuple:
		return o.writeList(sb, v, level)
	case map[string]any:
		d := make(Dict, 0, len(v))
		for _, k := range mapKeys(v) {
			d = append(d, Item{k, v[k]})
		}
		return o.writeDict(sb, d, level)
	case Dict:
		return o.writeDict(sb, v, level)
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", TypeName(v))
	}
	return nil
}

func (o *pyJSON) writeList(sb *strings.Builder, l []any, level int) error {
	if len(l) == 0 {
		sb.WriteString("[]")
		return nil
	}
	sb.WriteByte('[')
	for i, e := range l {
		if i > 0 {
			sb.WriteString(o.ItemSep)
		}
		if o.indent != nil {
			o.newline(sb, level+1)
		}
		if err := o.write(sb, e, level+1); err != nil {
			return err
		}
	}
	if o.indent != nil {
		o.newline(sb, level)
	}
	sb.WriteByte(']')
	return nil
}

func (o *pyJSON) writeDict(sb *strings.Builder, d Dict, level int) error {
	if len(d) == 0 {
		sb.WriteString("{}")
		return nil
	}
	type kv struct {
		k    string
		orig any // the key as given: sort_keys orders by it, as Python does
		v    any
	}
	items := make([]kv, len(d))
	for i, it := range d {
		var k string
		switch key := it.K.(type) {
		case string:
			k = key
		case nil:
			k = "null"
		case bool:
			k = strconv.FormatBool(key)
		case int, int64, *big.Int:
			k = fmt.Sprint(key)
		case float64:
			k = jsonFloat(key)
		default:
			return fmt.Errorf("keys must be str, int, float, bool or None, not %s", TypeName(it.K))
		}
		items[i] = kv{k, it.K, it.V}
	}
	if o.SortKeys {
		sort.SliceStable(items, func(i, j int) bool { return Less(items[i].orig, items[j].orig) })
	}
	sb.WriteByte('{')
	for i, it := range items {
		if i > 0 {
			sb.WriteString(o.ItemSep)
		}
		if o.indent != nil {
			o.newline(sb, level+1)
		}
		writeJSONString(sb, it.k)
		sb.WriteString(o.KeySep)
		if err := o.write(sb, it.v, level+1); err != nil {
			return err
		}
	}
	if o.indent != nil {
		o.newline(sb, level)
	}
	sb.WriteByte('}')
	return nil
}

// writeJSONString quotes s as Python's json module does with
// ensure_ascii: non-ASCII as \uXXXX (surrogate pairs above U+FFFF).
func writeJSONString(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '"':
			sb.WriteString(`\"`)
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\b':
			sb.WriteString(`\b`)
		case r == '\f':
			sb.WriteString(`\f`)
		case r < 0x20 || r >= 0x7f && r <= 0xffff:
			fmt.Fprintf(sb, `\u%04x`, r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
}

// HTMLSafeJSON is jinja2's tojson: sorted keys, with <, >, & and '
// escaped so the text is safe in HTML.
func HTMLSafeJSON(s string) string {
	return strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "'", `\u0027`).Replace(s)
}

// jsonFloat spells a float as Python's json module does, keys included.
func jsonFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return Float(v)
}
