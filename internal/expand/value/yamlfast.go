package value

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode"

	yaml2 "go.yaml.in/yaml/v2"
)

// fastYAML writes v as go.yaml.in/yaml/v2 writes asParsedJSON(v), for the
// values whose every part it can write the same way without the library's
// reflection and event emitter: mappings with string keys, lists, strings
// on one line, integers, booleans and null. It reports false for anything
// else (a float, a string over lines, a key the library would quote, a
// scalar the library might fold at its width), which then takes the
// library's way; TestFastYAML compares the two.
func (w *yamlWriter) fastYAML(v any) ([]byte, bool) {
	w.b = make([]byte, 0, 1024)
	switch x := nilOf(v).(type) {
	case map[string]any:
		if len(x) == 0 {
			return []byte("{}\n"), true
		}
		if !w.mapping(x, 0, false) {
			return nil, false
		}
	case []any:
		if len(x) == 0 {
			return []byte("[]\n"), true
		}
		if !w.sequence(x, 0, false) {
			return nil, false
		}
	default:
		s, ok := w.scalar(v, 0)
		if !ok {
			return nil, false
		}
		w.b = append(w.b, s...)
		w.b = append(w.b, '\n')
	}
	return w.b, true
}

// yamlWriter accumulates a block-style document. texts caches how the
// library writes a string scalar on its own (plain, 'single' or "double"
// quoted), which it does alike wherever the scalar is not folded: keys and
// values repeat across the objects one writer writes.
type yamlWriter struct {
	b     []byte
	texts map[string]string
}

func newYAMLWriter() *yamlWriter { return &yamlWriter{texts: map[string]string{}} }

// nilOf is v, or nil for a nil mapping or list (JSON's null).
func nilOf(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return nil
		}
	case []any:
		if x == nil {
			return nil
		}
	}
	return v
}

// yamlWidth is the library's best width: a scalar that could pass it is
// left to the library, which may fold it.
const yamlWidth = 80

func (w *yamlWriter) indent(n int) {
	for range n {
		w.b = append(w.b, ' ')
	}
}

// mapping writes m (not empty) at indent; inline: its first key follows a
// sequence's "- " on the current line.
func (w *yamlWriter) mapping(m map[string]any, indent int, inline bool) bool {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !w.plainKey(k) {
			return false
		}
		keys = append(keys, k)
	}
	if !sortKeys(keys) {
		return false
	}
	for i, k := range keys {
		if i > 0 || !inline {
			w.indent(indent)
		}
		w.b = append(w.b, k...)
		w.b = append(w.b, ':')
		switch x := nilOf(m[k]).(type) {
		case map[string]any:
			if len(x) == 0 {
				w.b = append(w.b, " {}\n"...)
				continue
			}
			w.b = append(w.b, '\n')
			if !w.mapping(x, indent+2, false) {
				return false
			}
		case []any:
			if len(x) == 0 {
				w.b = append(w.b, " []\n"...)
				continue
			}
			w.b = append(w.b, '\n')
			if !w.sequence(x, indent, false) {
				return false
			}
		default:
			s, ok := w.scalar(x, indent+len(k)+2)
			if !ok {
				return false
			}
			w.b = append(w.b, ' ')
			w.b = append(w.b, s...)
			w.b = append(w.b, '\n')
		}
	}
	return true
}

// sequence writes l (not empty) at indent; inline: its first item follows
// another sequence's "- " on the current line.
func (w *yamlWriter) sequence(l []any, indent int, inline bool) bool {
	for i, e := range l {
		if i > 0 || !inline {
			w.indent(indent)
		}
		w.b = append(w.b, "- "...)
		switch x := nilOf(e).(type) {
		case map[string]any:
			if len(x) == 0 {
				w.b = append(w.b, "{}\n"...)
				continue
			}
			if !w.mapping(x, indent+2, true) {
				return false
			}
		case []any:
			if len(x) == 0 {
				w.b = append(w.b, "[]\n"...)
				continue
			}
			if !w.sequence(x, indent+2, true) {
				return false
			}
		default:
			s, ok := w.scalar(x, indent+2)
			if !ok {
				return false
			}
			w.b = append(w.b, s...)
			w.b = append(w.b, '\n')
		}
	}
	return true
}

// scalar is v as the library writes it at column col, if fastYAML can
// tell.
func (w *yamlWriter) scalar(v any, col int) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	case int:
		return strconv.Itoa(x), true
	case int64:
		if int64(int(x)) != x {
			return "", false
		}
		return strconv.FormatInt(x, 10), true
	case string:
		if strings.ContainsAny(x, "\n\r") || !plainString(x) {
			return "", false
		}
		s := w.scalarText(x)
		if s == "" || col+len(s) > yamlWidth && strings.Contains(x, " ") {
			// Over lines, or long enough to be folded at a space.
			return "", false
		}
		return s, true
	}
	return "", false
}

// scalarText is how the library writes s, "" when over several lines.
func (w *yamlWriter) scalarText(s string) string {
	if obviouslyPlain(s) {
		return s
	}
	if t, ok := w.texts[s]; ok {
		return t
	}
	b, err := yaml2.Marshal(s)
	t := ""
	if err == nil && bytes.IndexByte(b, '\n') == len(b)-1 {
		t = string(b[:len(b)-1])
	}
	w.texts[s] = t
	return t
}

// plainKey reports whether k is a key the library writes as it is: letters,
// digits and a few marks, not a word YAML reads as another type.
func (w *yamlWriter) plainKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for i, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9', r == '.', r == '/', r == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return w.scalarText(k) == k
}

// sortKeys sorts keys as the library sorts string keys (letters before
// other characters, runs of digits by their value) and reports whether
// that order is total for them: when two keys tie, the library's unstable
// sort might order them otherwise.
func sortKeys(keys []string) bool {
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case keyLess(a, b):
			return -1
		case keyLess(b, a):
			return 1
		}
		return 0
	})
	for i := 1; i < len(keys); i++ {
		if !keyLess(keys[i-1], keys[i]) {
			return false
		}
	}
	return true
}

// keyLess is the library's order of two string keys.
func keyLess(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := unicode.IsLetter(ar[i]), unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// obviouslyPlain reports whether the library writes s as it is, by a
// rule that sees it without asking the library: a letter first (no
// number, date, indicator or document marker starts so), then letters,
// digits and ._/- or a colon before one of them (a colon before a space or
// at the end is an indicator), and not a word YAML reads as a boolean or
// null.
func obviouslyPlain(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '/', c == '-':
		case c == ':':
			if i+1 == len(s) || s[i+1] == ':' || s[i+1] == ' ' {
				return false
			}
		default:
			return false
		}
	}
	if len(s) <= 5 {
		switch strings.ToLower(s) {
		case "y", "yes", "n", "no", "on", "off", "true", "false", "null":
			return false
		}
	}
	return true
}
