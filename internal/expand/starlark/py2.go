package starlark

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Source-level shims for the Python that DM templates use and Starlark's
// grammar lacks. Each rewrite keeps every token on its line, so errors
// still point at the template's own lines:
//
//	'a' 'b'          ->  ('a' + 'b')      implicit concatenation, also
//	                                      across lines inside brackets
//	u'x', ur'x'      ->  'x', r'x'        Python 2 unicode literals
//	x is None        ->  x == None
//	x is not None    ->  x != None
//	yaml.load(s)     ->  yaml.safe_load(s) (load is a Starlark keyword)
//	f(x for x in y)  ->  f([x for x in y]) a generator expression, which
//	                                      Starlark lacks, as a list
//
// and an f-string is refused with a message saying what to use instead.

// pyEdit replaces src[start:end] with text.
type pyEdit struct {
	start, end int
	text       string
	// order places edits at the same offset: -1 first (a generator's
	// opening bracket, outside any other insertion), 1 last (its closing
	// bracket).
	order int
}

// pyLexeme is a token of interest: a string literal or an identifier.
type pyLexeme struct {
	str        bool
	start, end int // the whole token, prefix included
	quote      int // offset of the opening quote (strings)
	line       int
	depth      int // bracket depth at the token
	open       int // offset of the innermost open bracket, -1 if none
	val        string
}

// rewritePython applies the source shims to a .py file.
func rewritePython(file string, src []byte) ([]byte, error) {
	s := string(src)
	lex, closeOf, err := lexPython(file, s)
	if err != nil {
		return nil, err
	}
	var edits []pyEdit
	generators := map[int]bool{} // the open brackets of generator expressions
	for i := 0; i < len(lex); i++ {
		t := lex[i]
		if t.str {
			prefix := strings.ToLower(s[t.start:t.quote])
			if strings.Contains(prefix, "f") {
				return nil, engine.At(file, t.line, engine.Invalid("f-strings are not supported in Python-style templates; use %% or format"))
			}
			if strings.Contains(prefix, "u") {
				// Starlark strings are Unicode already.
				u := strings.IndexAny(s[t.start:t.quote], "uU")
				edits = append(edits, pyEdit{t.start + u, t.start + u + 1, "", 0})
			}
			edits = pyEscapes(s, t, prefix, edits)
			// A run of adjacent literals is one string.
			j := i
			for j+1 < len(lex) && lex[j+1].str && onlySpace(s, lex[j].end, lex[j+1].start, lex[j].depth > 0) {
				j++
			}
			if j > i {
				edits = append(edits, pyEdit{t.start, t.start, "(", 0})
				for k := i; k < j; k++ {
					edits = append(edits, pyEdit{lex[k].end, lex[k].end, " +", 0})
				}
				edits = append(edits, pyEdit{lex[j].end, lex[j].end, ")", 0})
				for k := i + 1; k <= j; k++ {
					p := strings.ToLower(s[lex[k].start:lex[k].quote])
					edits = pyEscapes(s, lex[k], p, edits)
					if strings.Contains(p, "f") {
						return nil, engine.At(file, lex[k].line, engine.Invalid("f-strings are not supported in Python-style templates; use %% or format"))
					}
					if strings.Contains(p, "u") {
						u := strings.IndexAny(s[lex[k].start:lex[k].quote], "uU")
						edits = append(edits, pyEdit{lex[k].start + u, lex[k].start + u + 1, "", 0})
					}
				}
				i = j
			}
			continue
		}
		switch t.val {
		case "for":
			// A for inside parentheses (not a list, dict or set
			// comprehension's brackets) is a generator expression: f(x
			// for x in y), (x for x in y). A list gives the same values.
			if t.open >= 0 && s[t.open] == '(' && !generators[t.open] {
				if end, ok := closeOf[t.open]; ok {
					generators[t.open] = true
					edits = append(edits, pyEdit{start: t.open + 1, end: t.open + 1, text: "[", order: -1}, pyEdit{start: end, end: end, text: "]", order: 1})
				}
			}
		case "is":
			if i+1 < len(lex) && !lex[i+1].str && lex[i+1].val == "not" && onlySpace(s, t.end, lex[i+1].start, t.depth > 0) {
				edits = append(edits, pyEdit{t.start, t.end, "!=", 0}, pyEdit{lex[i+1].start, lex[i+1].end, "", 0})
				i++
			} else {
				edits = append(edits, pyEdit{t.start, t.end, "==", 0})
			}
		case "load":
			if k := strings.TrimRight(s[:t.start], " \t"); strings.HasSuffix(k, ".") {
				edits = append(edits, pyEdit{t.start, t.end, "safe_load", 0})
			}
		}
	}
	if len(edits) == 0 {
		return src, nil
	}
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].start != edits[j].start {
			return edits[i].start < edits[j].start
		}
		return edits[i].order < edits[j].order
	})
	var sb strings.Builder
	sb.Grow(len(s) + 4*len(edits))
	pos := 0
	for _, e := range edits {
		if e.start < pos {
			continue // overlapping (cannot happen for the edits above)
		}
		sb.WriteString(s[pos:e.start])
		sb.WriteString(e.text)
		pos = e.end
	}
	sb.WriteString(s[pos:])
	return []byte(sb.String()), nil
}

// pyEscapes appends the edits that make the escapes of string literal t
// read in Starlark as Python reads them: a backslash before a character
// that starts no escape is kept ('\+' is a backslash and a plus, which
// Starlark refuses as an invalid escape), and an octal or hex escape of a
// code point over 127 ('\351', '\xe9') is that character (Starlark
// refuses non-ASCII ones in a string; they are bytes in a bytes literal,
// as in Python). Raw literals have no escapes.
func pyEscapes(s string, t pyLexeme, prefix string, edits []pyEdit) []pyEdit {
	if strings.Contains(prefix, "r") {
		return edits
	}
	isBytes := strings.Contains(prefix, "b")
	body := s[t.quote:t.end]
	if strings.IndexByte(body, '\\') < 0 {
		return edits
	}
	q := 1
	if len(body) >= 6 && body[1] == body[0] && body[2] == body[0] {
		q = 3
	}
	for i := q; i < len(body)-q; i++ {
		if body[i] != '\\' {
			continue
		}
		at := t.quote + i
		switch c := body[i+1]; {
		case c == '\n' || c == '\r' || strings.IndexByte("abfnrtv\\'\"", c) >= 0:
			i++
		case c >= '0' && c <= '7':
			j, n := i+1, 0
			for ; j < len(body)-q && j < i+4 && body[j] >= '0' && body[j] <= '7'; j++ {
				n = n*8 + int(body[j]-'0')
			}
			if n > 127 && !isBytes {
				edits = append(edits, pyEdit{at, t.quote + j, fmt.Sprintf("\\u%04x", n), 0})
			} else if n > 255 {
				edits = append(edits, pyEdit{at, t.quote + j, fmt.Sprintf("\\x%02x", n&0xff), 0})
			}
			i = j - 1
		case c == 'x':
			if i+4 <= len(body)-q {
				if n, err := strconv.ParseUint(body[i+2:i+4], 16, 8); err == nil && n > 127 && !isBytes {
					edits = append(edits, pyEdit{at, at + 4, fmt.Sprintf("\\u%04x", n), 0})
				}
			}
			i++
		case (c == 'u' || c == 'U' || c == 'N') && !isBytes:
			i++ // Starlark reads \u and \U as Python does; \N{...} it refuses
		default:
			// Python keeps the backslash: write it escaped.
			edits = append(edits, pyEdit{at, at + 1, "\\\\", 0})
			i++
		}
	}
	return edits
}

// onlySpace reports whether s[from:to] holds only what may separate two
// adjacent literals: blanks, and inside brackets also line breaks and
// comments; outside them a backslash-newline.
func onlySpace(s string, from, to int, bracketed bool) bool {
	for i := from; i < to; i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\f':
		case c == '\\' && i+1 < to && (s[i+1] == '\n' || s[i+1] == '\r'):
			i++
		case c == '\r' || c == '\n':
			if !bracketed {
				return false
			}
		case c == '#':
			if !bracketed {
				return false
			}
			for i < to && s[i] != '\n' {
				i++
			}
		default:
			return false
		}
	}
	return true
}

// lexPython finds the string literals and identifiers of Python source,
// skipping comments, with the bracket depth at each.
func lexPython(file, s string) ([]pyLexeme, map[int]int, error) {
	var out []pyLexeme
	line, depth := 1, 0
	var opens []int          // offsets of the open brackets
	closeOf := map[int]int{} // an open bracket's offset -> its closing one's
	innermost := func() int {
		if len(opens) == 0 {
			return -1
		}
		return opens[len(opens)-1]
	}
	isIdent := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '(' || c == '[' || c == '{':
			depth++
			opens = append(opens, i)
			i++
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
			if len(opens) > 0 {
				closeOf[opens[len(opens)-1]] = i
				opens = opens[:len(opens)-1]
			}
			i++
		case c == '\'' || c == '"' || isIdent(c):
			start := i
			for i < len(s) && isIdent(s[i]) {
				i++
			}
			word := s[start:i]
			isPrefix := word == "" || len(word) <= 2 && strings.Trim(strings.ToLower(word), "rbuf") == ""
			if i < len(s) && (s[i] == '\'' || s[i] == '"') && isPrefix {
				q := i
				end, nl, ok := scanString(s, q)
				if !ok {
					return nil, nil, engine.At(file, line, engine.Invalid("unterminated string literal"))
				}
				out = append(out, pyLexeme{str: true, start: start, end: end, quote: q, line: line, depth: depth, open: innermost()})
				line += nl
				i = end
				continue
			}
			if word != "" && (word[0] < '0' || word[0] > '9') {
				out = append(out, pyLexeme{start: start, end: i, line: line, depth: depth, open: innermost(), val: word})
			}
		default:
			i++
		}
	}
	return out, closeOf, nil
}

// scanString returns the end of the string literal whose opening quote is
// at q, and the line breaks inside it.
func scanString(s string, q int) (end, newlines int, ok bool) {
	quote := s[q]
	triple := strings.HasPrefix(s[q:], strings.Repeat(string(quote), 3))
	i := q + 1
	if triple {
		i = q + 3
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 < len(s) && s[i+1] == '\n' {
				newlines++
			}
			i += 2
			continue
		case c == '\n':
			if !triple {
				return 0, 0, false
			}
			newlines++
		case c == quote:
			if !triple {
				return i + 1, newlines, true
			}
			if strings.HasPrefix(s[i:], strings.Repeat(string(quote), 3)) {
				return i + 3, newlines, true
			}
		}
		i++
	}
	return 0, 0, false
}

var (
	raiseRE = regexp.MustCompile(`^(\s*)raise\s+([A-Za-z_][\w.]*)\s*\((.*)\)\s*(#.*)?$`)
	// raiseLinesRE is raiseRE over the lines of one statement, its
	// arguments spanning them.
	raiseLinesRE = regexp.MustCompile(`(?s)^([ \t]*)raise\s+([A-Za-z_][\w.]*)\s*\((.*)\)[ \t]*(#[^\n]*)?$`)
	assertRE     = regexp.MustCompile(`^(\s*)assert\s+(.*?)\s*(#[^'"]*)?$`)
	// assertLinesRE is assertRE over the lines of one statement.
	assertLinesRE = regexp.MustCompile(`(?s)^([ \t]*)assert\b(.*?)[ \t]*(#[^'"\n]*)?$`)
)

// rewriteStatements turns the two statements DM templates use to reject
// bad properties into Starlark's fail, on the same line:
//
//	raise ValueError('x is required')  ->  fail('ValueError: ' + str('x is required'))
//	assert n > 0, 'n must be positive'  ->  (n > 0) or fail('AssertionError: ' + str('n must be positive'))
//
// so the expansion stops with the message, as DM's did. Other forms
// (a bare raise, a raise spanning lines) are left to the refusal.
func rewriteStatements(src []byte) []byte {
	s := string(src)
	if !strings.Contains(s, "raise") && !strings.Contains(s, "assert") {
		return src
	}
	lines := strings.Split(s, "\n")
	cont := pyLineContinues(s)
	changed := false
	for i, l := range lines {
		if i < len(cont) && cont[i] {
			continue
		}
		t := strings.TrimRight(l, "\r")
		if j := lastLine(cont, i); j > i && strings.HasPrefix(strings.TrimSpace(t), "assert") {
			// An assert whose condition or message spans lines: the same
			// expression over the same lines.
			stmt := make([]string, 0, j-i+1)
			for _, sl := range lines[i : j+1] {
				stmt = append(stmt, strings.TrimRight(sl, "\r"))
			}
			if m := assertLinesRE.FindStringSubmatch(strings.Join(stmt, "\n")); m != nil && balanced(strings.ReplaceAll(m[2], "\n", " ")) {
				out := strings.Split(m[1]+assertExpr(m[2]), "\n")
				if len(out) == j-i+1 {
					copy(lines[i:j+1], out)
					changed = true
				}
			}
			continue
		}
		if j := lastLine(cont, i); j > i && strings.HasPrefix(strings.TrimSpace(t), "raise") {
			// A raise whose arguments span lines: fail(...) over the
			// same lines.
			stmt := make([]string, 0, j-i+1)
			for _, sl := range lines[i : j+1] {
				stmt = append(stmt, strings.TrimRight(sl, "\r"))
			}
			if m := raiseLinesRE.FindStringSubmatch(strings.Join(stmt, "\n")); m != nil && balanced(strings.ReplaceAll(m[3], "\n", " ")) {
				name := m[2][strings.LastIndexByte(m[2], '.')+1:]
				out := strings.Split(fmt.Sprintf("%sfail(%q + str(%s))", m[1], name+": ", m[3]), "\n")
				if len(out) == j-i+1 {
					copy(lines[i:j+1], out)
					changed = true
				}
			}
			continue
		}
		if m := raiseRE.FindStringSubmatch(t); m != nil && balanced(m[3]) {
			name := m[2][strings.LastIndexByte(m[2], '.')+1:]
			msg := `""`
			if strings.TrimSpace(m[3]) != "" {
				msg = "str(" + m[3] + ")"
			}
			lines[i] = fmt.Sprintf("%sfail(%q + %s)", m[1], name+": ", msg)
			changed = true
			continue
		}
		if m := assertRE.FindStringSubmatch(t); m != nil && balanced(m[2]) {
			lines[i] = m[1] + assertExpr(m[2])
			changed = true
		}
	}
	if !changed {
		return src
	}
	return []byte(strings.Join(lines, "\n"))
}

// assertExpr is the expression an assert statement's text after
// "assert" (cond[, msg]) becomes: the message read only when the
// condition is false, as Python does.
func assertExpr(stmt string) string {
	cond, msg := stmt, ""
	if c := topLevelComma(stmt); c >= 0 {
		cond, msg = stmt[:c], strings.TrimSpace(stmt[c+1:])
	}
	fail := `fail("AssertionError")`
	if msg != "" {
		fail = `fail("AssertionError: " + str(` + msg + `))`
	}
	return "(" + strings.TrimSpace(cond) + ") or " + fail
}

// lastLine returns the last line of the statement starting at line i,
// cont saying which lines continue the one before.
func lastLine(cont []bool, i int) int {
	j := i
	for j+1 < len(cont) && cont[j+1] {
		j++
	}
	return j
}

// scanTop walks s outside string literals, keeping the bracket depth,
// and calls stop at each comma at depth 0 until it returns true. ok is
// false if a string is unterminated or spans lines, or a bracket closes
// more than was opened.
func scanTop(s string, stop func(i int) bool) (depth int, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth--; depth < 0 {
				return depth, false
			}
		case ',':
			if depth == 0 && stop != nil && stop(i) {
				return depth, true
			}
		case '\'', '"':
			end, nl, ok := scanString(s, i)
			if !ok || nl > 0 {
				return depth, false
			}
			i = end - 1
		}
	}
	return depth, true
}

// balanced reports whether s has its brackets and quotes closed.
func balanced(s string) bool {
	depth, ok := scanTop(s, nil)
	return ok && depth == 0
}

// topLevelComma is the index of the first comma of s outside brackets
// and strings, or -1.
func topLevelComma(s string) int {
	at := -1
	scanTop(s, func(i int) bool { at = i; return true })
	return at
}
