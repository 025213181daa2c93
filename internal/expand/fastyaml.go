package expand

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/dmhq/dm/internal/expand/pyyaml"
)

// fastYAML decodes the YAML that templates typically render — block
// mappings and sequences of plain, quoted and one-line flow values — an
// order of magnitude faster than the full decoder, which dominates
// expansion time. Plain scalars resolve as PyYAML's (ResolvePlain). It
// reports ok=false for anything outside that subset (anchors and aliases,
// so it never expands one; tags, block scalars, multi-line scalars,
// duplicate keys...), and the caller falls back to decodeYAML. For what it
// accepts it returns exactly what decodeYAML returns; FuzzFastYAML checks
// that. order, if set, records mappings' key order.
func fastYAML(data []byte, order *keyOrder) (v any, ok bool) {
	if !printable(data) {
		return nil, false
	}
	p := &fy{order: order}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if bytes.IndexByte(line, '\r') >= 0 {
			return nil, false // a lone CR breaks lines too
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		rest := line[n:]
		if len(rest) == 0 || rest[0] == '#' {
			continue
		}
		if rest[0] == '\t' || (n == 0 && (rest[0] == '%' || bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("...")))) {
			return nil, false
		}
		if bytes.IndexByte(rest, '\t') >= 0 {
			return nil, false
		}
		p.lines = append(p.lines, fyLine{indent: n, text: string(rest)})
	}
	if len(p.lines) == 0 {
		return nil, false
	}
	if p.lines[0].indent != 0 {
		return nil, false
	}
	v, ok = p.block(0)
	if !ok || p.i != len(p.lines) {
		return nil, false
	}
	return v, true
}

// printable reports whether a document has only characters YAML allows
// unescaped.
func printable(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError || r < 0xA0 || r >= 0xD800 && r < 0xE000 || r == 0xFEFF || r == 0x2028 || r == 0x2029 || r == 0xFFFE || r == 0xFFFF {
			return false
		}
		i += n
	}
	return true
}

type fyLine struct {
	indent int
	text   string
}

type fy struct {
	lines []fyLine
	i     int
	order *keyOrder
}

func isSeqItem(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// block parses the mapping or sequence starting at the current line, whose
// indent is n.
func (p *fy) block(n int) (any, bool) {
	if isSeqItem(p.lines[p.i].text) {
		return p.seq(n)
	}
	return p.mapping(n)
}

func (p *fy) seq(n int) (any, bool) {
	out := []any{}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < n {
			break
		}
		if l.indent > n || !isSeqItem(l.text) {
			return nil, false
		}
		rest := strings.TrimLeft(strings.TrimPrefix(l.text, "-"), " ")
		if rest == "" || rest[0] == '#' {
			p.i++
			if p.i < len(p.lines) && p.lines[p.i].indent > n {
				v, ok := p.block(p.lines[p.i].indent)
				if !ok {
					return nil, false
				}
				out = append(out, v)
			} else {
				out = append(out, nil)
			}
			continue
		}
		// "- key: v" or "- - x": a nested block starting inside this line.
		col := n + len(l.text) - len(rest)
		if isSeqItem(rest) || keyEnd(rest) >= 0 {
			p.lines[p.i] = fyLine{indent: col, text: rest}
			v, ok := p.block(col)
			if !ok {
				return nil, false
			}
			out = append(out, v)
			continue
		}
		v, ok := scalarOrFlow(rest, p.order)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		p.i++
	}
	return out, true
}

// keyEnd returns the index of the ':' ending a simple mapping key at the
// start of t, or -1.
func keyEnd(t string) int {
	if t == "" {
		return -1
	}
	if len(t) > 1000 {
		t = t[:1000] // YAML caps implicit keys at 1024 characters
	}
	if t[0] == '"' || t[0] == '\'' {
		end := quotedEnd(t)
		if end < 0 || end >= len(t) || t[end] != ':' || (end+1 < len(t) && t[end+1] != ' ') {
			return -1
		}
		return end
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == ':' && (i+1 == len(t) || t[i+1] == ' ') {
			return i
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return -1
		}
	}
	return -1
}

// quotedEnd returns the index just past the quoted scalar at the start of
// t, or -1.
func quotedEnd(t string) int {
	q := t[0]
	for i := 1; i < len(t); i++ {
		switch {
		case q == '"' && t[i] == '\\':
			i++
		case t[i] == q:
			if q == '\'' && i+1 < len(t) && t[i+1] == '\'' {
				i++
				continue
			}
			return i + 1
		}
	}
	return -1
}

func (p *fy) mapping(n int) (any, bool) {
	out := map[string]any{}
	var keys []string
	if p.order != nil {
		defer func() {
			p.order.Record(out, keys)
		}()
	}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < n {
			break
		}
		if l.indent > n {
			return nil, false
		}
		end := keyEnd(l.text)
		if end <= 0 {
			return nil, false
		}
		key, ok := fyKey(l.text[:end])
		if !ok {
			return nil, false
		}
		if _, dup := out[key]; dup {
			return nil, false
		}
		if p.order != nil {
			keys = append(keys, key)
		}
		rest := strings.TrimLeft(l.text[end+1:], " ")
		p.i++
		if rest == "" || rest[0] == '#' {
			switch {
			case p.i < len(p.lines) && p.lines[p.i].indent > n:
				v, ok := p.block(p.lines[p.i].indent)
				if !ok {
					return nil, false
				}
				out[key] = v
			case p.i < len(p.lines) && p.lines[p.i].indent == n && isSeqItem(p.lines[p.i].text):
				v, ok := p.seq(n)
				if !ok {
					return nil, false
				}
				out[key] = v
			default:
				out[key] = nil
			}
			continue
		}
		v, ok := scalarOrFlow(rest, p.order)
		if !ok {
			return nil, false
		}
		out[key] = v
	}
	return out, true
}

// fyKey reads a mapping key: a quoted string or a plain word that YAML
// resolves to a string.
func fyKey(k string) (string, bool) {
	if k[0] == '"' || k[0] == '\'' {
		v, rest, ok := quoted(k)
		return v, ok && rest == ""
	}
	v, ok := plain(k)
	s, isStr := v.(string)
	return s, ok && isStr
}

// scalarOrFlow reads a value that fills the rest of a line.
func scalarOrFlow(t string, ord *keyOrder) (any, bool) {
	switch t[0] {
	case '[', '{':
		v, rest, ok := flow(t, ord)
		if !ok || !restIsComment(rest) {
			return nil, false
		}
		return v, true
	case '"', '\'':
		v, rest, ok := quoted(t)
		if !ok || !restIsComment(rest) {
			return nil, false
		}
		return v, true
	}
	if i := strings.Index(t, " #"); i >= 0 {
		t = t[:i]
	}
	t = strings.TrimRight(t, " ")
	if strings.Contains(t, ": ") || strings.HasSuffix(t, ":") {
		return nil, false
	}
	return plain(t)
}

func restIsComment(rest string) bool {
	if rest == "" {
		return true
	}
	if rest[0] != ' ' {
		return false
	}
	rest = strings.TrimLeft(rest, " ")
	return rest == "" || rest[0] == '#'
}

// quoted reads a one-line quoted scalar with JSON-compatible escapes.
func quoted(t string) (string, string, bool) {
	end := quotedEnd(t)
	if end < 0 {
		return "", "", false
	}
	body, rest := t[1:end-1], t[end:]
	if t[0] == '\'' {
		return strings.ReplaceAll(body, "''", "'"), rest, true
	}
	if !strings.Contains(body, "\\") {
		return body, rest, true
	}
	var sb strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", "", false
		}
		switch body[i] {
		case '"', '\\':
			sb.WriteByte(body[i])
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		default:
			return "", "", false // \u, \x, line folding...: leave to yaml.v2
		}
	}
	return sb.String(), rest, true
}

// plain resolves a plain scalar as PyYAML does (ResolvePlain), or
// reports false for text that is not a plain scalar on its own line.
func plain(t string) (any, bool) {
	if t == "" {
		return nil, true
	}
	switch c := t[0]; {
	case c == '-':
		if len(t) == 1 || t[1] == ' ' || strings.HasPrefix(t, "---") {
			return nil, false
		}
	case strings.IndexByte("[]{},#&*!|>'\"%@`?:<=", c) >= 0:
		return nil, false
	}
	return pyyaml.ResolvePlain(t), true
}

// flow reads a one-line flow sequence or mapping.
func flow(t string, ord *keyOrder) (any, string, bool) {
	t = strings.TrimLeft(t, " ")
	if t == "" {
		return nil, "", false
	}
	switch t[0] {
	case '[':
		out := []any{}
		t = strings.TrimLeft(t[1:], " ")
		if strings.HasPrefix(t, "]") {
			return out, t[1:], true
		}
		for {
			v, rest, ok := flowValue(t, ord)
			if !ok {
				return nil, "", false
			}
			out = append(out, v)
			rest = strings.TrimLeft(rest, " ")
			if strings.HasPrefix(rest, "]") {
				return out, rest[1:], true
			}
			if !strings.HasPrefix(rest, ",") {
				return nil, "", false
			}
			t = strings.TrimLeft(rest[1:], " ")
			if strings.HasPrefix(t, "]") {
				return out, t[1:], true
			}
		}
	case '{':
		out := map[string]any{}
		var keys []string
		if ord != nil {
			defer func() { ord.Record(out, keys) }()
		}
		t = strings.TrimLeft(t[1:], " ")
		if strings.HasPrefix(t, "}") {
			return out, t[1:], true
		}
		for {
			end := keyEnd(t)
			if end <= 0 || end+1 >= len(t) {
				return nil, "", false
			}
			k, ok := fyKey(t[:end])
			if !ok {
				return nil, "", false
			}
			if _, dup := out[k]; dup {
				return nil, "", false
			}
			v, rest, ok := flowValue(strings.TrimLeft(t[end+1:], " "), ord)
			if !ok {
				return nil, "", false
			}
			out[k] = v
			if ord != nil {
				keys = append(keys, k)
			}
			rest = strings.TrimLeft(rest, " ")
			if strings.HasPrefix(rest, "}") {
				return out, rest[1:], true
			}
			if !strings.HasPrefix(rest, ",") {
				return nil, "", false
			}
			t = strings.TrimLeft(rest[1:], " ")
			if strings.HasPrefix(t, "}") {
				return out, t[1:], true
			}
		}
	}
	return nil, "", false
}

func flowValue(t string, ord *keyOrder) (any, string, bool) {
	if t == "" {
		return nil, "", false
	}
	switch t[0] {
	case '[', '{':
		return flow(t, ord)
	case '"', '\'':
		return quoted(t)
	}
	i := strings.IndexAny(t, ",]}")
	if i < 0 {
		return nil, "", false
	}
	word := strings.TrimRight(t[:i], " ")
	if word == "" {
		return nil, "", false
	}
	for i := 0; i < len(word); i++ {
		// Flow context restricts plain scalars more than block context;
		// accept only the plainest words.
		c := word[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-./ ", c) >= 0) {
			return nil, "", false
		}
	}
	v, ok := plain(word)
	return v, t[i:], ok
}
