package starlark

import (
	"sort"
	"strings"
)

// Python's operators that Starlark's grammar lacks, rewritten in the
// source so that every token stays on its line:
//
//	a ** b          ->  __dm_pow__(a, b)       right-associative, binding
//	                                           tighter than a unary minus
//	                                           on its left (-2 ** 2 is -4)
//	a < b <= c      ->  (a < b and b <= c)     a chained comparison (b is
//	                                           evaluated twice, where
//	                                           Python evaluates it once)

// starPow is the builtin a ** b becomes.
const starPow = "__dm_pow__"

// pyToken is a token of Python source.
type pyToken struct {
	kind       byte // 'n' name, '0' number, 's' string, 'o' operator or bracket, '\n' logical line end
	start, end int
	text       string
}

// pyOperators are Python's operators, longest first.
var pyOperators = []string{"**=", "//=", ">>=", "<<=", "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "->", ":=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="}

// tokenizePython splits src into tokens; ok is false where it cannot
// (an unterminated string: the parser reports it).
func tokenizePython(src string) ([]pyToken, bool) {
	var out []pyToken
	depth := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			if depth == 0 {
				out = append(out, pyToken{kind: '\n', start: i, end: i + 1, text: "\n"})
			}
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r'):
			i += 2
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			end, _, ok := scanString(src, i)
			if !ok {
				return nil, false
			}
			out = append(out, pyToken{kind: 's', start: i, end: end, text: src[i:end]})
			i = end
		case isNameStart(c):
			j := i
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && j-i <= 2 && strings.Trim(strings.ToLower(src[i:j]), "rbuf") == "" {
				end, _, ok := scanString(src, j)
				if !ok {
					return nil, false
				}
				out = append(out, pyToken{kind: 's', start: i, end: end, text: src[i:end]})
				i = end
				continue
			}
			out = append(out, pyToken{kind: 'n', start: i, end: j, text: src[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isNameByte(src[j]) || src[j] == '.' || (src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(src[i:j]), "0x")) {
				j++
			}
			out = append(out, pyToken{kind: '0', start: i, end: j, text: src[i:j]})
			i = j
		default:
			n := 1
			for _, op := range pyOperators {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth > 0 {
					depth--
				}
			}
			out = append(out, pyToken{kind: 'o', start: i, end: i + n, text: src[i : i+n]})
			i += n
		}
	}
	return out, true
}

func isNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isNameByte(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }

// pyKeywords cannot end an operand.
var pyKeywords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "is": true, "if": true, "else": true, "elif": true,
	"for": true, "while": true, "lambda": true, "return": true, "yield": true, "def": true, "class": true,
	"import": true, "from": true, "as": true, "pass": true, "break": true, "continue": true, "del": true,
	"global": true, "assert": true, "raise": true, "try": true, "except": true, "finally": true, "with": true,
}

// endsOperand reports whether token t can end an operand.
func endsOperand(t pyToken) bool {
	switch t.kind {
	case '0', 's':
		return true
	case 'n':
		return !pyKeywords[t.text]
	case 'o':
		return t.text == ")" || t.text == "]" || t.text == "}"
	}
	return false
}

// matchOpen returns the index of the bracket that the closing bracket at
// toks[i] closes, or -1.
func matchOpen(toks []pyToken, i int) int {
	depth := 0
	for j := i; j >= 0; j-- {
		switch toks[j].text {
		case ")", "]", "}":
			depth++
		case "(", "[", "{":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// matchClose returns the index of the bracket closing the one at toks[i],
// or -1.
func matchClose(toks []pyToken, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// primaryStart is the first token of the primary (an atom and its
// trailers: .name, [...], (...)) ending at toks[i], or -1.
func primaryStart(toks []pyToken, i int) int {
	for {
		t := toks[i]
		switch {
		case t.kind == 'o' && (t.text == ")" || t.text == "]" || t.text == "}"):
			j := matchOpen(toks, i)
			if j < 0 {
				return -1
			}
			// A call or subscript: the bracket follows an operand.
			if (t.text == ")" || t.text == "]") && j > 0 && endsOperand(toks[j-1]) {
				i = j - 1
				continue
			}
			return j
		case t.kind == 'n' || t.kind == '0':
			if i >= 2 && toks[i-1].text == "." && endsOperand(toks[i-2]) {
				i -= 2
				continue
			}
			return i
		case t.kind == 's':
			// Adjacent literals are one atom.
			for i > 0 && toks[i-1].kind == 's' {
				i--
			}
			return i
		default:
			return -1
		}
	}
}

// primaryEnd is the last token of the unary-prefixed primary starting at
// toks[i] (the right operand of **, which may itself be a power), or -1.
func primaryEnd(toks []pyToken, i int) int {
	for i < len(toks) && (toks[i].text == "-" || toks[i].text == "+" || toks[i].text == "~") {
		i++
	}
	if i >= len(toks) {
		return -1
	}
	t := toks[i]
	switch {
	case t.text == "(" || t.text == "[" || t.text == "{":
		i = matchClose(toks, i)
		if i < 0 {
			return -1
		}
	case t.kind == 'n' && !pyKeywords[t.text], t.kind == '0':
	case t.kind == 's':
		for i+1 < len(toks) && toks[i+1].kind == 's' {
			i++
		}
	default:
		return -1
	}
	for i+1 < len(toks) {
		switch n := toks[i+1]; {
		case n.text == "." && i+2 < len(toks) && toks[i+2].kind == 'n':
			i += 2
		case n.text == "(" || n.text == "[":
			if i = matchClose(toks, i+1); i < 0 {
				return -1
			}
		default:
			return i
		}
	}
	return i
}

// rewriteOperators rewrites ** and chained comparisons; src is returned
// as is when it has neither.
func rewriteOperators(src []byte) []byte {
	s := string(src)
	if strings.Contains(s, "**") {
		s = rewritePower(s)
	}
	if strings.ContainsAny(s, "<>=!") || strings.Contains(s, " in ") || strings.Contains(s, " is ") {
		// A pass rewrites the outermost chains; one nested in another's
		// operand ((0 < (a < b <= c) + 1 <= 9)) is copied into it as
		// written and rewritten by the next pass. Each pass goes one
		// bracket deeper, so brackets bound the passes.
		for range strings.Count(s, "(") + strings.Count(s, "[") + strings.Count(s, "{") + 1 {
			next := rewriteChains(s)
			if next == s {
				break
			}
			s = next
		}
	}
	if s == string(src) {
		return src
	}
	return []byte(s)
}

// rewritePower rewrites the rightmost binary ** until none is left
// (a ** b ** c is a ** (b ** c)).
func rewritePower(s string) string {
	for range strings.Count(s, "**") {
		toks, ok := tokenizePython(s)
		if !ok {
			return s
		}
		at := -1
		for i := len(toks) - 1; i > 0; i-- {
			if toks[i].text == "**" && endsOperand(toks[i-1]) {
				at = i
				break
			}
		}
		if at < 0 {
			return s
		}
		l := primaryStart(toks, at-1)
		r := primaryEnd(toks, at+1)
		if l < 0 || r < 0 {
			return s
		}
		s = s[:toks[l].start] + starPow + "(" + s[toks[l].start:toks[at].start] + "," + s[toks[at].end:toks[r].end] + ")" + s[toks[r].end:]
	}
	return s
}

// comparison operators; "not in" and "is not" are two tokens.
var pyComparisons = map[string]bool{"<": true, ">": true, "<=": true, ">=": true, "==": true, "!=": true, "in": true, "is": true}

// rewriteChains rewrites each chained comparison a op1 b op2 c ... into
// (a op1 b and b op2 c ...).
func rewriteChains(s string) string {
	toks, ok := tokenizePython(s)
	if !ok {
		return s
	}
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	// A segment is the tokens between separators at one bracket depth;
	// segs holds, for each open bracket (and the top level), the
	// comparisons of the current segment: the operator tokens' indexes.
	type seg struct {
		first int   // first token of the segment
		ops   []int // comparison operators: index of the first token
		forIn bool  // inside "for ... in": the in is not a comparison
	}
	stack := []seg{{first: 0}}
	flush := func(end int) { // the segment ends before toks[end]
		sg := stack[len(stack)-1]
		stack[len(stack)-1] = seg{first: end + 1}
		if len(sg.ops) < 2 {
			return
		}
		// Operands X0 op0 X1 op1 ... Xn: Xk runs from after op(k-1) to
		// before op(k).
		opEnd := func(o int) int { // the last token of the operator
			if toks[o].text == "not" || toks[o].text == "is" && o+1 < len(toks) && toks[o+1].text == "not" {
				return o + 1
			}
			return o
		}
		starts := []int{sg.first}
		ends := []int{}
		for _, o := range sg.ops {
			ends = append(ends, o-1)
			starts = append(starts, opEnd(o)+1)
		}
		ends = append(ends, end-1)
		for k := range starts {
			if starts[k] > ends[k] {
				return
			}
		}
		text := func(a, b int) string { return s[toks[a].start:toks[b].end] }
		var b strings.Builder
		b.WriteString("(")
		for k := range starts {
			if k > 0 {
				// The operator with its blanks, as written.
				b.WriteString(s[toks[ends[k-1]].end:toks[starts[k]].start])
			}
			b.WriteString(text(starts[k], ends[k]))
			if k > 0 && k < len(starts)-1 {
				// The shared operand again, on the same line.
				x := text(starts[k], ends[k])
				if strings.ContainsAny(x, "#\n") {
					return
				}
				b.WriteString(" and " + x)
			}
		}
		b.WriteString(")")
		edits = append(edits, edit{toks[sg.first].start, toks[end-1].end, b.String()})
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		sg := &stack[len(stack)-1]
		switch {
		case t.kind == '\n' || t.text == ";" || t.text == "," || t.text == ":" || t.text == "=" || t.text == ":=" ||
			t.kind == 'o' && strings.HasSuffix(t.text, "=") && len(t.text) >= 2 && !pyComparisons[t.text]:
			flush(i)
		case t.text == "(" || t.text == "[" || t.text == "{":
			stack = append(stack, seg{first: i + 1})
		case t.text == ")" || t.text == "]" || t.text == "}":
			if len(stack) > 1 {
				flush(i)
				stack = stack[:len(stack)-1]
			}
			// The bracketed group is one operand of the enclosing segment.
		case t.kind == 'n' && (t.text == "and" || t.text == "or" || t.text == "if" || t.text == "else" || t.text == "lambda" ||
			t.text == "return" || t.text == "yield" || t.text == "assert" || t.text == "elif" || t.text == "while" || t.text == "del" || t.text == "print"):
			flush(i)
		case t.kind == 'n' && t.text == "for":
			flush(i)
			stack[len(stack)-1].forIn = true
		case t.kind == 'n' && t.text == "not":
			if i+1 < len(toks) && toks[i+1].text == "in" {
				if !sg.forIn {
					sg.ops = append(sg.ops, i)
				}
				i++
				continue
			}
			flush(i)
		case t.kind == 'n' && t.text == "in" && sg.forIn:
			flush(i) // for x in y: the iterable starts a segment
		case t.kind == 'n' && t.text == "is":
			sg.ops = append(sg.ops, i)
			if i+1 < len(toks) && toks[i+1].text == "not" {
				i++
			}
		case pyComparisons[t.text]:
			sg.ops = append(sg.ops, i)
		}
	}
	flush(len(toks))
	if len(edits) == 0 {
		return s
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b strings.Builder
	last := 0
	for _, e := range edits {
		if e.start < last {
			continue
		}
		b.WriteString(s[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(s[last:])
	return b.String()
}
