package jinja

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/dmhq/dm/internal/expand/value"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"

	"github.com/dmhq/dm/internal/expand/python"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Where gonja and jinja2 differ in what DM templates use, dm follows
// jinja2 (the engine DM ran):
//
//   - `{{ x }}` prints None as "None" (an undefined name or key still
//     prints nothing), and lists and dicts as Python's repr;
//   - `'%s-%d' % (a, b)` formats, `a % 0`, `a / 0` and `a // 0` are
//     errors, `2 ** 3` is the integer 8, `//` floors;
//   - the round filter rounds half to even at the given precision, and
//     keeps an integer an integer, as Python's round does.
//
// The output and line rewrites also let a panic in gonja be reported
// with the line of the statement that caused it.

// jinjaPlain converts a gonja value to the plain values of package python,
// mappings in the expansion's key order.
func jinjaPlain(v *exec.Value, order engine.KeyOrder) any {
	switch {
	case v == nil || v.IsNil():
		return nil
	case v.IsBool():
		return v.Bool()
	case v.IsInteger():
		return int64(v.Integer())
	case v.IsFloat():
		return v.Float()
	case v.IsString():
		return v.String()
	case v.IsList():
		if t, ok := v.Interface().(python.Tuple); ok {
			out := make(python.Tuple, len(t))
			for i, e := range t {
				out[i] = jinjaPlain(exec.ToValue(e), order)
			}
			return out
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = jinjaPlain(v.Index(i), order)
		}
		return out
	case v.IsDict():
		if d, ok := v.Interface().(*exec.Dict); ok {
			out := make(python.Dict, 0, len(d.Pairs))
			for _, p := range d.Pairs {
				out = append(out, python.Item{K: jinjaPlain(p.Key, order), V: jinjaPlain(p.Value, order)})
			}
			return out
		}
		if m, ok := v.Interface().(map[string]any); ok {
			out := make(python.Dict, 0, len(m))
			for _, k := range order.Keys(m) {
				out = append(out, python.Item{K: k, V: jinjaPlain(exec.ToValue(m[k]), order)})
			}
			return out
		}
		m := map[string]any{}
		for _, p := range v.Items() {
			m[p.Key.String()] = jinjaPlain(p.Value, order)
		}
		return m
	}
	return v.String()
}

// jinjaText is what `{{ v }}` prints: Python's str() of the value.
func jinjaText(v *exec.Value, order engine.KeyOrder) string {
	switch {
	case v.IsNil():
		return "None"
	case v.IsFloat():
		return python.Float(v.Float())
	case v.IsList(), v.IsDict():
		if _, ok := v.Interface().([]byte); ok {
			return v.String()
		}
		return python.Str(jinjaPlain(v, order))
	}
	return v.String()
}

// jinjaMoreArith is a%b, a**b, a/b and a//b as jinja2 computes them.
// tuple says the right operand of % was written as a tuple literal (gonja
// evaluates tuples to lists).
func jinjaMoreArith(g *jinjaGuard, op string, left, right *exec.Value) (any, error) {
	if op == "%" || op == "%t" {
		if left.IsString() {
			var args any
			switch r := jinjaPlain(right, g.order); {
			case op == "%t":
				args = python.Tuple(r.([]any))
			default:
				args = r
			}
			s, err := python.Percent(left.String(), args, g.maxBytes)
			if err != nil {
				var le *engine.LimitError
				if errors.As(err, &le) {
					g.err = err
				}
				return nil, err
			}
			return s, nil
		}
	}
	if !left.IsNumber() && !left.IsBool() || !right.IsNumber() && !right.IsBool() {
		return nil, fmt.Errorf("unsupported operand types for %s: %s and %s", op[:min(len(op), 2)], python.TypeName(jinjaPlain(left, engine.Sorted{})), python.TypeName(jinjaPlain(right, engine.Sorted{})))
	}
	ints := !left.IsFloat() && !right.IsFloat()
	switch op {
	case "%", "%t":
		if ints {
			a, b := left.Integer(), right.Integer()
			if b == 0 {
				return nil, errors.New("integer modulo by zero")
			}
			m := a % b
			if m != 0 && (m < 0) != (b < 0) {
				m += b
			}
			return m, nil
		}
		a, b := left.Float(), right.Float()
		if b == 0 {
			return nil, errors.New("float modulo by zero")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "/":
		if right.Float() == 0 {
			return nil, errors.New("division by zero")
		}
		return left.Float() / right.Float(), nil
	case "//":
		if right.Float() == 0 {
			return nil, errors.New("integer division or modulo by zero")
		}
		if ints {
			a, b := left.Integer(), right.Integer()
			q := a / b
			if (a%b != 0) && ((a < 0) != (b < 0)) {
				q--
			}
			return q, nil
		}
		return math.Floor(left.Float() / right.Float()), nil
	case "**":
		if ints && right.Integer() >= 0 {
			// Any base beyond ±1 to a power over 64 overflows: say so before
			// big.Int spends minutes (999999999999 ** 10000000) computing it.
			if a := left.Integer(); (a > 1 || a < -1) && right.Integer() > 64 {
				return nil, fmt.Errorf("%d ** %d is too large", a, right.Integer())
			}
			r := new(big.Int).Exp(big.NewInt(int64(left.Integer())), big.NewInt(int64(right.Integer())), nil)
			if !r.IsInt64() {
				return nil, fmt.Errorf("%d ** %d is too large", left.Integer(), right.Integer())
			}
			return int(r.Int64()), nil
		}
		a, b := left.Float(), right.Float()
		if a == 0 && b < 0 {
			return nil, errors.New("0.0 cannot be raised to a negative power")
		}
		return math.Pow(a, b), nil
	}
	return nil, errors.New(arithFunc + " is internal to dm")
}

// pyRound is jinja2's round filter: method common (Python's round: half
// to even on the exact binary value), ceil or floor; an integer stays
// an integer with the common method.
func pyRound(v *exec.Value, precision int, method string) (any, error) {
	if method != "common" && method != "ceil" && method != "floor" {
		return nil, errors.New("method must be common, ceil or floor")
	}
	if method == "common" && v.IsInteger() && !v.IsFloat() {
		if precision >= 0 {
			return v.Integer(), nil
		}
		if precision < -18 {
			return 0, nil
		}
		p := 1
		for range -precision {
			p *= 10
		}
		return int(math.RoundToEven(float64(v.Integer())/float64(p))) * p, nil
	}
	f := v.Float()
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return f, nil
	}
	if method != "common" {
		// + 0 makes -0.0 0.0: Python's math.ceil and floor return
		// integers, which have no sign of zero.
		p := math.Pow(10, float64(precision))
		if method == "ceil" {
			return math.Ceil(f*p)/p + 0, nil
		}
		return math.Floor(f*p)/p + 0, nil
	}
	return python.Round(f, precision), nil
}

// jinjaRound is the round filter.
func jinjaRound(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	precision, method := 0, "common"
	if len(params.Args) > 0 {
		precision = params.Args[0].Integer()
	} else if v, ok := params.KwArgs["precision"]; ok {
		precision = v.Integer()
	}
	if len(params.Args) > 1 {
		method = params.Args[1].String()
	} else if v, ok := params.KwArgs["method"]; ok {
		method = v.String()
	}
	if !in.IsNumber() {
		return exec.AsValue(fmt.Errorf("round: %s is not a number", python.TypeName(jinjaPlain(in, engine.Sorted{}))))
	}
	out, err := pyRound(in, precision, method)
	if err != nil {
		return exec.AsValue(fmt.Errorf("round: %w", err))
	}
	return exec.AsValue(out)
}

// pyOutput replaces a {{ ... }} node: it records the line on the guard
// and prints the value as jinja2 would.
type pyOutput struct{ out *nodes.Output }

func (o *pyOutput) Position() *tokens.Token { return o.out.Start }
func (o *pyOutput) String() string          { return "dm-output" } // jinjaExecError removes it

// Execute evaluates and prints the expression.
func (o *pyOutput) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	g, err := guardOf(r.Environment.Context)
	if err != nil {
		return err
	}
	n := o.out
	g.line = n.Start.Line
	expr := n.Expression
	if n.Condition != nil {
		c := r.Eval(n.Condition)
		if c.IsError() {
			return fmt.Errorf("unable to render condition at line %d: %s: %w", n.Condition.Position().Line, n.Condition, c)
		}
		if !c.IsTrue() {
			if n.Alternative == nil {
				return nil
			}
			expr = n.Alternative
		}
	}
	v := r.Eval(expr)
	if v.IsError() {
		return fmt.Errorf("Unable to render expression at line %d: %s: %w", expr.Position().Line, expr, v)
	}
	var s string
	switch {
	case v.IsNil():
		if defined(r, expr) {
			s = "None"
		}
	case r.Config.AutoEscape && v.IsString() && !v.Safe:
		s = v.Escaped()
	default:
		s = jinjaText(v, g.order)
	}
	_, err = io.WriteString(r.Output, s)
	return err
}

// defined reports whether an expression that evaluated to nil names
// something that exists (Python's None) rather than an undefined name,
// attribute or key (jinja2's Undefined, which prints nothing).
func defined(r *exec.Renderer, expr nodes.Expression) bool {
	var parent nodes.Node
	var key string
	switch x := expr.(type) {
	case *nodes.None:
		return true
	case *nodes.Name:
		if x.Name.Val == "none" { // jinja2's lower-case literal
			return true
		}
		if g, err := guardOf(r.Environment.Context); err == nil && g.undefined[x.Name.Val] {
			return false
		}
		_, ok := r.Environment.Context.Get(x.Name.Val)
		return ok
	case *nodes.GetAttribute:
		if x.Attribute == "" {
			return false
		}
		parent, key = x.Node, x.Attribute
	case *nodes.GetItem:
		s, ok := x.Arg.(*nodes.String)
		if !ok {
			return false
		}
		parent, key = x.Node, s.Val
	default:
		return false
	}
	pe, ok := parent.(nodes.Expression)
	if !ok {
		return false
	}
	p := r.Eval(pe)
	switch d := p.Interface().(type) {
	case map[string]any:
		_, ok := d[key]
		return ok
	case *exec.Dict:
		for _, pair := range d.Pairs {
			if pair.Key.IsString() && pair.Key.String() == key {
				return true
			}
		}
	}
	return false
}

// lineMark records the line of the statement that follows it.
type lineMark struct{ pos *tokens.Token }

func (m *lineMark) Position() *tokens.Token { return m.pos }
func (m *lineMark) String() string          { return "dm-line" }

// Execute records the line.
func (m *lineMark) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	g, err := guardOf(r.Environment.Context)
	if err != nil {
		return err
	}
	g.line = m.pos.Line
	return nil
}

var nodeListType = reflect.TypeFor[[]nodes.Node]()

// rewriteNodeList replaces the outputs of a node list (reached through
// an addressable value) with pyOutput and puts a lineMark before each
// statement. A list already rewritten is left alone.
func rewriteNodeList(v reflect.Value) {
	if v.Type() != nodeListType || !v.CanAddr() {
		return
	}
	list := (*[]nodes.Node)(unsafe.Pointer(v.UnsafeAddr()))
	for _, n := range *list {
		if b, ok := n.(*nodes.ControlStructureBlock); ok {
			switch b.ControlStructure.(type) {
			case *pyOutput, *lineMark:
				return
			}
		}
	}
	out := make([]nodes.Node, 0, len(*list))
	for _, n := range *list {
		switch n := n.(type) {
		case *nodes.Output:
			out = append(out, &nodes.ControlStructureBlock{Location: n.Start, Name: "dm-output", ControlStructure: &pyOutput{out: n}})
			continue
		case *nodes.ControlStructureBlock:
			if _, ok := n.ControlStructure.(*checkpoint); !ok && n.Location != nil {
				out = append(out, &nodes.ControlStructureBlock{Location: n.Location, Name: "dm-line", ControlStructure: &lineMark{pos: n.Location}})
			}
		}
		out = append(out, n)
	}
	*list = out
}

// jinjaToJSON is jinja2's tojson filter: json.dumps with sorted keys and
// Python's separators, HTML-safe.
func jinjaToJSON(limit int) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		if in.IsError() {
			return in
		}
		o := python.NewJSON(limit)
		o.SortKeys = true
		ind, ok := params.KwArgs["indent"]
		if !ok && len(params.Args) > 0 {
			ind, ok = params.Args[0], true
		}
		if ok && !ind.IsNil() {
			if ind.IsString() {
				s := ind.String()
				o.SetIndent(0, &s)
			} else {
				o.SetIndent(ind.Integer(), nil)
			}
		}
		s, err := o.Dumps(jinjaPlain(in, engine.Sorted{})) // sorted keys
		if err != nil {
			return exec.AsValue(fmt.Errorf("tojson: %w", err))
		}
		return exec.AsSafeValue(python.HTMLSafeJSON(s))
	}
}

// jinjaSource prepares a Jinja file for gonja's lexer, where it reads
// differently from jinja2's: jinjaTagLiterals, then jinjaTagNewlines.
func jinjaSource(src []byte) []byte {
	return jinjaTagBodies(jinjaTagNewlines(jinjaTagLiterals(src)), func(body string) string {
		return jinjaFilterOperands(jinjaDictCalls(jinjaConditionals(body, true)))
	})
}

// jinjaToken is a token of a tag body: its kind ('n' a name or number,
// 's' a string, 'o' an operator or bracket) and its place.
type jinjaToken struct {
	kind       byte
	start, end int
	text       string
}

func jinjaTokens(s string) []jinjaToken {
	var out []jinjaToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isJinjaBlank(c):
			i++
		case c == '\'' || c == '"':
			end := jinjaStringEnd(s, i)
			out = append(out, jinjaToken{'s', i, end, s[i:end]})
			i = end
		case isIdentByte(c):
			j := i
			for j < len(s) && (isIdentByte(s[j]) || s[j] == '.' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9' && s[i] >= '0' && s[i] <= '9') {
				j++
			}
			out = append(out, jinjaToken{'n', i, j, s[i:j]})
			i = j
		default:
			n := 1
			for _, op := range []string{"==", "!=", "<=", ">=", "//", "**"} {
				if strings.HasPrefix(s[i:], op) {
					n = 2
				}
			}
			out = append(out, jinjaToken{'o', i, i + n, s[i : i+n]})
			i += n
		}
	}
	return out
}

// jinjaFilterStops end a filter's operand, scanning back: every operator
// that binds less tightly than a filter.
var jinjaFilterStops = map[string]bool{
	"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true, "+": true, "-": true, "*": true,
	"/": true, "//": true, "%": true, "**": true, "~": true, ",": true, ":": true, "=": true,
	"in": true, "not": true, "is": true, "and": true, "or": true, "if": true, "else": true,
	"for": true, "set": true, "with": true, "import": true, "as": true, "from": true, "elif": true,
}

// jinjaFilterOperands parenthesises each filter chain with its operand
// (x | f | g becomes (x | f | g)) where gonja would read it otherwise.
// jinja2 binds a filter to the unary operand before it: not x | length
// is not (x | length), a in b | upper is a in (b | upper); gonja applies
// a filter to the whole comparison or negation before it.
func jinjaFilterOperands(s string) string {
	if !strings.Contains(s, "|") {
		return s
	}
	toks := jinjaTokens(s)
	type ins struct {
		at   int
		text string
	}
	var edits []ins
	closeOf := func(i int) int { // the token closing the bracket at toks[i]
		depth := 0
		for j := i; j < len(toks); j++ {
			switch toks[j].text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth--; depth == 0 {
					return j
				}
			}
		}
		return -1
	}
	openOf := func(i int) int {
		depth := 0
		for j := i; j >= 0; j-- {
			switch toks[j].text {
			case ")", "]", "}":
				depth++
			case "(", "[", "{":
				if depth--; depth == 0 {
					return j
				}
			}
		}
		return -1
	}
	for i := 0; i < len(toks); i++ {
		if toks[i].text != "|" || i == 0 || i > 0 && toks[i-1].text == "|" {
			continue
		}
		// The operand: back to a stop at this depth; a - or + that
		// follows an operator (or nothing) is unary, part of it.
		start := i - 1
		for start >= 0 {
			t := toks[start]
			if t.text == ")" || t.text == "]" || t.text == "}" {
				if start = openOf(start); start < 0 {
					break
				}
			} else if t.text == "(" || t.text == "[" || t.text == "{" {
				break
			} else if jinjaFilterStops[t.text] {
				unary := (t.text == "-" || t.text == "+") && (start == 0 || toks[start-1].kind == 'o' && toks[start-1].text != ")" && toks[start-1].text != "]" && toks[start-1].text != "}" || jinjaFilterStops[toks[start-1].text])
				if !unary {
					break
				}
			}
			start--
		}
		start++
		if start >= i {
			continue
		}
		// The chain: | name [(...)] repeated.
		end := i
		for end < len(toks) && toks[end].text == "|" {
			if end+1 >= len(toks) || toks[end+1].kind != 'n' {
				break
			}
			end += 2
			if end < len(toks) && toks[end].text == "(" {
				c := closeOf(end)
				if c < 0 {
					break
				}
				end = c + 1
			}
		}
		if end <= i+1 || end < len(toks) && toks[end].text == "." {
			continue // x | f.g: no filter jinja2 knows; left for the parser to refuse
		}
		// Already alone in brackets: nothing to do.
		if start > 0 && end < len(toks) && (toks[start-1].text == "(" && toks[end].text == ")") {
			i = end - 1
			continue
		}
		edits = append(edits, ins{toks[start].start, "("}, ins{toks[end-1].end, ")"})
		i = end - 1
	}
	if len(edits) == 0 {
		return s
	}
	sort.SliceStable(edits, func(a, b int) bool { return edits[a].at < edits[b].at })
	var b strings.Builder
	last := 0
	for _, e := range edits {
		b.WriteString(s[last:e.at])
		b.WriteString(e.text)
		last = e.at
	}
	b.WriteString(s[last:])
	return b.String()
}

// jinjaDictCalls rewrites dict(a=1, b=x) into the literal {'a': 1, 'b':
// x}: gonja passes keyword arguments in a map, which loses the order
// jinja2's dict keeps. A call with positional arguments stays.
func jinjaDictCalls(s string) string {
	if !strings.Contains(s, "dict(") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			end := jinjaStringEnd(s, i)
			sb.WriteString(s[i:end])
			i = end - 1
			continue
		case strings.HasPrefix(s[i:], "dict(") && (i == 0 || !isIdentByte(s[i-1]) && s[i-1] != '.'):
			open := i + 4
			end := jinjaGroupEnd(s, open)
			if end < 0 {
				break
			}
			if lit, ok := dictLiteral(jinjaDictCalls(s[open+1 : end])); ok {
				sb.WriteString(lit)
				i = end
				continue
			}
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// dictLiteral turns the arguments of dict(...) into a dict literal, if
// they are all keyword arguments.
func dictLiteral(args string) (string, bool) {
	var parts []string
	start := 0
	for i := 0; i <= len(args); i++ {
		if i < len(args) {
			switch c := args[i]; c {
			case '\'', '"':
				i = jinjaStringEnd(args, i) - 1
				continue
			case '(', '[', '{':
				if e := jinjaGroupEnd(args, i); e >= 0 {
					i = e
				}
				continue
			case ',':
			default:
				continue
			}
		}
		parts = append(parts, args[start:i])
		start = i + 1
	}
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			continue // dict() or a trailing comma
		}
		eq := strings.IndexByte(p, '=')
		if eq < 0 || eq+1 < len(p) && p[eq+1] == '=' {
			return "", false
		}
		name := strings.TrimSpace(p[:eq])
		if name == "" || !isIdentName(name) {
			return "", false
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		b.WriteString("'" + name + "': " + p[eq+1:])
	}
	b.WriteByte('}')
	return b.String(), true
}

func isIdentName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) || i == 0 && s[i] >= '0' && s[i] <= '9' {
			return false
		}
	}
	return true
}

// jinjaConditionals rewrites the conditional expressions (A if C else B)
// inside brackets of a tag body, which gonja reads only at the top of
// {{ }} and {% set %}: in a call's arguments it reads if and else as
// names, in parentheses it fails. ((C) and [A] or [B])[0] evaluates C,
// then A or B only, as jinja2 does (gonja's and and or return an
// operand, as Python's do); without else the value is undefined, as in
// jinja2. top is the tag's own level, left to gonja.
func jinjaConditionals(s string, top bool) string {
	if !strings.Contains(s, "if") {
		return s
	}
	// Nested groups first.
	var sb strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\'', '"':
			end := jinjaStringEnd(s, i)
			sb.WriteString(s[i:end])
			i = end - 1
		case '(', '[', '{':
			end := jinjaGroupEnd(s, i)
			if end < 0 {
				sb.WriteString(s[i:])
				i = len(s)
				continue
			}
			inner := jinjaConditionals(s[i+1:end], false)
			changed = changed || inner != s[i+1:end]
			sb.WriteByte(c)
			sb.WriteString(inner)
			sb.WriteByte(s[end])
			i = end
		default:
			sb.WriteByte(c)
		}
	}
	if changed {
		s = sb.String()
	}
	if top {
		return s
	}
	// Then each top-level segment (between commas and colons).
	var out strings.Builder
	start := 0
	flush := func(end int) {
		out.WriteString(jinjaConditional(s[start:end]))
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			i = jinjaStringEnd(s, i) - 1
		case '(', '[', '{':
			if e := jinjaGroupEnd(s, i); e >= 0 {
				i = e
			}
		case ',', ':':
			flush(i)
			out.WriteByte(c)
			start = i + 1
		}
	}
	flush(len(s))
	return out.String()
}

// jinjaConditional rewrites one segment A if C [else B].
func jinjaConditional(seg string) string {
	at := jinjaKeyword(seg, "if", 0)
	if at < 0 || strings.TrimSpace(seg[:at]) == "" {
		return seg
	}
	a, rest := seg[:at], seg[at+2:]
	c, b := rest, ""
	hasElse := false
	if e := jinjaKeyword(rest, "else", 0); e >= 0 {
		c, b, hasElse = rest[:e], jinjaConditional(rest[e+4:]), true
	}
	lead := a[:len(a)-len(strings.TrimLeft(a, " \t\r\n"))]
	alt := "__dm_undefined__"
	if hasElse {
		alt = b
	}
	return lead + "((" + c + ") and [" + strings.TrimLeft(a, " \t\r\n") + "] or [" + alt + "])[0]"
}

// jinjaKeyword is the offset of the word kw in s outside strings and
// brackets, from from, or -1.
func jinjaKeyword(s, kw string, from int) int {
	for i := from; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			i = jinjaStringEnd(s, i) - 1
		case c == '(' || c == '[' || c == '{':
			if e := jinjaGroupEnd(s, i); e >= 0 {
				i = e
			}
		case strings.HasPrefix(s[i:], kw) && (i == 0 || !isIdentByte(s[i-1])) && (i+len(kw) == len(s) || !isIdentByte(s[i+len(kw)])):
			return i
		}
	}
	return -1
}

func isIdentByte(c byte) bool { return c == '_' || isAlnum(c) || c >= 0x80 }

// jinjaStringEnd is the offset after the string literal opening at s[i].
func jinjaStringEnd(s string, i int) int {
	q := s[i]
	for k := i + 1; k < len(s); k++ {
		if s[k] == '\\' {
			k++
			continue
		}
		if s[k] == q {
			return k + 1
		}
	}
	return len(s)
}

// jinjaGroupEnd is the offset of the bracket closing the one at s[i], or
// -1.
func jinjaGroupEnd(s string, i int) int {
	depth := 0
	for k := i; k < len(s); k++ {
		switch s[k] {
		case '\'', '"':
			k = jinjaStringEnd(s, k) - 1
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// jinjaTagNewlines puts a space after every line break inside a tag
// ({{ }} and {% %}, outside string literals) that is directly followed
// by something other than a blank. gonja's lexer does not count a line
// break as whitespace and glues it to the next token, so in
//
//	{{ x
//	|
//	upper }}
//
// the filter is named "\nupper", and a -%} at the start of a line loses
// its whitespace control. jinja2 treats the break as a blank; with the
// space, gonja lexes the break into a whitespace token. Lines stay as
// they were; {% raw %} blocks and comments are left alone.
func jinjaTagNewlines(src []byte) []byte {
	return jinjaTagBodies(src, func(body string) string {
		var sb strings.Builder
		var quote byte
		for i := 0; i < len(body); i++ {
			c := body[i]
			switch {
			case quote != 0:
				if c == '\\' && i+1 < len(body) {
					sb.WriteString(body[i : i+2])
					i++
					continue
				}
				if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '\n' && (i+1 == len(body) || !isJinjaBlank(body[i+1])):
				sb.WriteString("\n ")
				continue
			}
			sb.WriteByte(c)
		}
		return sb.String()
	})
}

func isJinjaBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jinjaTagLiterals rewrites, inside tags, what jinja2's parser accepts and
// gonja's does not, keeping every line break where it was:
//
//   - adjacent string literals, which jinja2 joins as Python does
//     ('a' 'b', also across lines): ('a' ~'b');
//   - a backslash-newline inside a string literal, which jinja2 drops
//     ('ab\<newline>cd' is 'abcd'): ('ab' ~<newline>'cd');
//   - a trailing comma before the ) of a call or the ] or } of a list or
//     dict (m(a,<newline>b,<newline>)): a blank. A tuple's (1,) keeps it.
func jinjaTagLiterals(src []byte) []byte {
	return jinjaTagBodies(src, func(body string) string {
		if !strings.ContainsAny(body, "'\",") {
			return body
		}
		var sb strings.Builder
		var stack []byte // open brackets: '(' of a call, 't' of a tuple or group, '[' and '{'
		prev := byte(0)  // the last non-blank byte written outside literals
		for i := 0; i < len(body); {
			c := body[i]
			switch {
			case c == '\'' || c == '"':
				end, ok := jinjaLiteralGroup(body, i)
				if !ok { // unterminated: gonja reports it
					sb.WriteString(body[i:])
					return sb.String()
				}
				sb.WriteString(joinJinjaLiterals(jinjaEscapes(body[i:end])))
				i, prev = end, c
				continue
			case c == '(':
				if prev != 0 && (prev == '_' || prev == ')' || prev == ']' || isAlnum(prev)) {
					stack = append(stack, '(')
				} else {
					stack = append(stack, 't')
				}
			case c == '[' || c == '{':
				stack = append(stack, c)
			case c == ')' || c == ']' || c == '}':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			case c == ',' && len(stack) > 0:
				k := i + 1
				for k < len(body) && isJinjaBlank(body[k]) {
					k++
				}
				top := stack[len(stack)-1]
				if k < len(body) && (top == '(' && body[k] == ')' || top == '[' && body[k] == ']' || top == '{' && body[k] == '}') {
					c = ' ' // a trailing comma
				}
			}
			sb.WriteByte(c)
			if !isJinjaBlank(c) {
				prev = c
			}
			i++
		}
		return sb.String()
	})
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// jinjaLiteralGroup returns the end of the string literals that start at
// s[i] and follow each other separated by blanks only; ok is false when
// the last is not terminated.
func jinjaLiteralGroup(s string, i int) (end int, ok bool) {
	end = i
	for i < len(s) && (s[i] == '\'' || s[i] == '"') {
		q := s[i]
		k := i + 1
		for k < len(s) && s[k] != q {
			if s[k] == '\\' {
				k++
			}
			k++
		}
		if k >= len(s) {
			return len(s), false
		}
		end = k + 1
		for i = end; i < len(s) && isJinjaBlank(s[i]); i++ {
		}
	}
	return end, true
}

// jinjaEscapes rewrites the escapes of each string literal in group g
// (literals separated by blanks) so that gonja reads the value jinja2
// reads. jinja2 decodes a literal as Python's unicode-escape codec does:
// \n, \t, \\, \', \", \a, \b, \f, \v, \r, octal \ooo, \xhh, \uhhhh and
// \Uhhhhhhhh are characters, and a backslash before anything else stays
// ('a\/b' is a, backslash, slash, b). gonja's lexer stops a literal at a
// quote after any backslash and its parser reads what remains as Go
// escapes, refusing '\/'. Each literal with a backslash is written again
// with only escapes both read alike: \x5c for a backslash, \' or \" for
// the literal's own quote, \xhh for other control characters. A
// backslash-newline stays for joinJinjaLiterals.
func jinjaEscapes(g string) string {
	if strings.IndexByte(g, '\\') < 0 {
		return g
	}
	var sb strings.Builder
	for i := 0; i < len(g); {
		c := g[i]
		if c != '\'' && c != '"' {
			sb.WriteByte(c)
			i++
			continue
		}
		k := i + 1
		for k < len(g) && g[k] != c {
			if g[k] == '\\' {
				k++
			}
			k++
		}
		if k > len(g) {
			k = len(g)
		}
		sb.WriteByte(c)
		sb.WriteString(pyUnicodeEscape(g[i+1:min(k, len(g))], c))
		if k < len(g) {
			sb.WriteByte(c)
		}
		i = k + 1
	}
	return sb.String()
}

// pyUnicodeEscape decodes body as Python's unicode-escape codec and
// writes the value back as gonja reads it inside quote.
func pyUnicodeEscape(body string, quote byte) string {
	var sb strings.Builder
	write := func(r rune) {
		switch {
		case r == '\\':
			sb.WriteString(`\x5c`)
		case r == rune(quote):
			sb.WriteString(`\` + string(r))
		case r >= 0x20 && r != 0x7f:
			sb.WriteRune(r)
		default:
			// A newline an escape made (\n, \x0a, \012) is written as an
			// escape too: a line break would move every later line.
			fmt.Fprintf(&sb, `\x%02x`, r)
		}
	}
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\n' {
			sb.WriteByte(c) // a line break of the source stays one
			i++
			continue
		}
		if c != '\\' || i+1 >= len(body) {
			r, n := utf8.DecodeRuneInString(body[i:])
			write(r)
			i += n
			continue
		}
		e := body[i+1]
		switch {
		case e == '\n' || e == '\r':
			sb.WriteString(body[i : i+2]) // a continued line: joinJinjaLiterals
			i += 2
		case strings.IndexByte("abfnrtv", e) >= 0:
			write(rune("\a\b\f\n\r\t\v"[strings.IndexByte("abfnrtv", e)]))
			i += 2
		case e == '\\' || e == '\'' || e == '"':
			write(rune(e))
			i += 2
		case e >= '0' && e <= '7':
			j, n := i+1, 0
			for ; j < len(body) && j < i+4 && body[j] >= '0' && body[j] <= '7'; j++ {
				n = n*8 + int(body[j]-'0')
			}
			write(rune(n))
			i = j
		case e == 'x' || e == 'u' || e == 'U':
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+2+digits <= len(body) {
				if n, err := strconv.ParseUint(body[i+2:i+2+digits], 16, 32); err == nil && n <= unicode.MaxRune {
					write(rune(n))
					i += 2 + digits
					continue
				}
			}
			// jinja2 fails on a truncated escape; gonja will too.
			sb.WriteString(body[i : i+2])
			i += 2
		default:
			write('\\')
			i++
		}
	}
	return sb.String()
}

// joinJinjaLiterals rewrites a group of adjacent literals, each possibly
// broken by backslash-newlines, into one parenthesised ~ concatenation.
// A single plain literal is returned as it is.
func joinJinjaLiterals(g string) string {
	var sb strings.Builder
	pieces := 0
	for i := 0; i < len(g); {
		c := g[i]
		if isJinjaBlank(c) {
			sb.WriteByte(c)
			i++
			continue
		}
		// A literal from its opening quote.
		if pieces > 0 {
			sb.WriteByte('~')
		}
		pieces++
		sb.WriteByte(c)
		k := i + 1
		for ; g[k] != c; k++ {
			if g[k] != '\\' {
				sb.WriteByte(g[k])
				continue
			}
			nl := k + 1
			if nl < len(g) && g[nl] == '\r' && nl+1 < len(g) && g[nl+1] == '\n' {
				nl++
			}
			if g[nl] == '\n' {
				// Close, concatenate, break the line, reopen.
				sb.WriteString(string(c) + " ~" + g[k+1:nl+1] + string(c))
				pieces++
				k = nl
				continue
			}
			sb.WriteString(g[k : k+2])
			k++
		}
		sb.WriteByte(c)
		i = k + 1
	}
	if pieces == 1 {
		return g
	}
	return "(" + strings.TrimRight(sb.String(), " \t\r\n") + ")" + g[len(strings.TrimRight(g, " \t\r\n")):]
}

// jinjaTagBodies replaces the inside of every {{ }} and {% %} tag of src
// (between the opener and the closer, whitespace control included) by
// what f returns for it. Text, comments and {% raw %} blocks are left
// alone. A }} closes an expression only outside brackets and string
// literals, as in jinja2.
func jinjaTagBodies(src []byte, f func(body string) string) []byte {
	s := string(src)
	var sb strings.Builder
	changed := false
	last := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		switch s[i+1] {
		case '#':
			end := strings.Index(s[i+2:], "#}")
			if end < 0 {
				i = len(s)
				continue
			}
			i += 2 + end + 1
		case '%', '{':
			start := i + 2
			if s[i+1] == '%' && isRaw(s[start:]) {
				loc := rawEndTagRE.FindStringIndex(s[start:])
				if loc == nil {
					i = len(s)
					continue
				}
				i = start + loc[1] - 1
				continue
			}
			end := jinjaTagEnd(s, start, s[i+1])
			body := s[start:end]
			if nb := f(body); nb != body {
				sb.WriteString(s[last:start])
				sb.WriteString(nb)
				last, changed = end, true
			}
			i = end + 1
		}
	}
	if !changed {
		return src
	}
	sb.WriteString(s[last:])
	return []byte(sb.String())
}

// jinjaTagEnd returns where the closer of a tag whose body starts at
// s[start] is (len(s) if there is none): }} for an expression (kind '{'),
// %} for a statement.
func jinjaTagEnd(s string, start int, kind byte) int {
	depth := 0
	var quote byte
	for k := start; k < len(s); k++ {
		c := s[k]
		switch {
		case quote != 0:
			if c == '\\' {
				k++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case kind == '%' && c == '%' && k+1 < len(s) && s[k+1] == '}':
			return k
		case kind == '{' && c == '}' && depth == 0 && k+1 < len(s) && s[k+1] == '}':
			return k
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		}
	}
	return len(s)
}

var (
	rawStartRE  = regexp.MustCompile(`^[-+]?\s*raw\s*[-+]?%}`)
	rawEndTagRE = regexp.MustCompile(`\{%[-+]?\s*endraw\s*[-+]?%}`)
)

func isRaw(s string) bool { return rawStartRE.MatchString(s) }

// Dict order. gonja iterates a Go map, and its keys(), values() and
// items() list it, in sorted key order; jinja2's dicts keep insertion
// order, which for properties is the configuration's document order. The
// parse rewrites `for x in EXPR` into `for x in __dm_iter__(EXPR, pairs)`
// and d.keys()/values()/items() (and Python 2's iter*) into
// `__dm_dict__("items", d)`, which list a map in the render's key order.

const (
	iterFunc = "__dm_iter__"
	dictFunc = "__dm_dict__"
)

var orderedMethods = map[string]string{
	"keys": "keys", "values": "values", "items": "items",
	"iterkeys": "keys", "itervalues": "values", "iteritems": "items",
}

// rewriteDictCall rewrites d.items() and friends, in place.
func rewriteDictCall(c *nodes.Call) {
	ga, ok := c.Func.(*nodes.GetAttribute)
	if !ok || len(c.Args) > 0 || len(c.Kwargs) > 0 {
		return
	}
	m, ok := orderedMethods[ga.Attribute]
	if !ok {
		return
	}
	recv, ok := ga.Node.(nodes.Expression)
	if !ok {
		return
	}
	at := ga.Location
	c.Func = &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: dictFunc, Line: at.Line, Col: at.Col}}
	c.Args = []nodes.Expression{&nodes.String{Location: at, Val: m}, recv}
	c.Parent = nil
}

var (
	dictType     = reflect.TypeFor[nodes.Dict]()
	negationType = reflect.TypeFor[nodes.Negation]()
)

// boolFunc is __dm_bool__(x): Python's bool(x).
const boolFunc = "__dm_bool__"

// boolNegation makes not x a bool, as in Python: gonja's not of a
// number is a number (not 2 is 0, not 0.0 is 1.1).
func boolNegation(n *nodes.Negation) {
	if c, ok := n.Term.(*nodes.Call); ok {
		if f, ok := c.Func.(*nodes.Name); ok && f.Name.Val == boolFunc {
			return
		}
	}
	at := n.Term.Position()
	n.Term = &nodes.Call{Location: at, Func: &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: boolFunc, Line: at.Line, Col: at.Col}}, Args: []nodes.Expression{n.Term}, Kwargs: map[string]nodes.Expression{}}
}

func jinjaBool(_ *exec.Evaluator, params *exec.VarArgs) *exec.Value {
	if len(params.Args) != 1 {
		return exec.AsValue(errors.New(boolFunc + " is internal to dm"))
	}
	if params.Args[0].IsError() {
		return params.Args[0]
	}
	return exec.AsValue(params.Args[0].IsTrue())
}

// dedupDictPairs makes a dict literal that repeats a literal key
// ({'a': 1, 'a': 2}) what jinja2 (Python) makes of it: the key in its
// first place with its last value.
func dedupDictPairs(d *nodes.Dict) {
	if len(d.Pairs) < 2 {
		return
	}
	first := map[string]int{}
	kept := d.Pairs[:0:0]
	for _, p := range d.Pairs {
		var key string
		switch k := p.Key.(type) {
		case *nodes.String:
			key = "s:" + k.Val
		case *nodes.Integer:
			key = fmt.Sprintf("i:%d", k.Val)
		default:
			kept = append(kept, p)
			continue
		}
		if i, ok := first[key]; ok {
			kept[i] = &nodes.Pair{Key: kept[i].Key, Value: p.Value}
			continue
		}
		first[key] = len(kept)
		kept = append(kept, p)
	}
	d.Pairs = kept
}

// methodReceiver gives a method call on a computed value ((a ~ b).upper(),
// (x | string).split('-')) its receiver, which gonja's parser sets only
// for a call on a name and without which it finds no method.
func methodReceiver(c *nodes.Call) {
	if c.Parent != nil {
		return
	}
	if ga, ok := c.Func.(*nodes.GetAttribute); ok {
		if _, isName := ga.Node.(*nodes.Name); !isName {
			c.Parent = ga.Node
		}
	}
}

// orderedLoop makes a for loop iterate maps in the render's key order.
func orderedLoop(f *controlStructures.ForControlStructure) {
	if c, ok := f.ObjectEvaluator.(*nodes.Call); ok {
		if n, ok := c.Func.(*nodes.Name); ok && n.Name.Val == iterFunc {
			return
		}
	}
	at := f.ObjectEvaluator.Position()
	f.ObjectEvaluator = &nodes.Call{
		Location: at,
		Func:     &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: iterFunc, Line: at.Line, Col: at.Col}},
		Args:     []nodes.Expression{f.ObjectEvaluator, &nodes.Bool{Location: at, Val: f.Value != ""}},
		Kwargs:   map[string]nodes.Expression{},
	}
}

func orderedItems(order engine.KeyOrder, m map[string]any, what string) []any {
	keys := order.Keys(m)
	out := make([]any, len(keys))
	for i, k := range keys {
		switch what {
		case "keys":
			out[i] = k
		case "values":
			out[i] = m[k]
		default:
			out[i] = python.Tuple{k, m[k]}
		}
	}
	return out
}

// jinjaIter is __dm_iter__(x, pairs): a map as its keys (pairs: its
// [key, value] pairs) in key order; anything else as it is.
func jinjaIter(e *exec.Evaluator, params *exec.VarArgs) *exec.Value {
	if len(params.Args) != 2 {
		return exec.AsValue(errors.New(iterFunc + " is internal to dm"))
	}
	m, ok := params.Args[0].Interface().(map[string]any)
	if !ok {
		return params.Args[0]
	}
	g, err := guardOf(e.Environment.Context)
	if err != nil {
		return exec.AsValue(err)
	}
	if params.Args[1].IsTrue() {
		return exec.AsValue(orderedItems(g.order, m, "items"))
	}
	return exec.AsValue(orderedItems(g.order, m, "keys"))
}

// jinjaDict is __dm_dict__(method, d): keys(), values() or items() of a
// map in key order, the method itself on anything else.
func jinjaDict(e *exec.Evaluator, params *exec.VarArgs) *exec.Value {
	if len(params.Args) != 2 {
		return exec.AsValue(errors.New(dictFunc + " is internal to dm"))
	}
	what, recv := params.Args[0].String(), params.Args[1]
	if m, ok := recv.Interface().(map[string]any); ok {
		g, err := guardOf(e.Environment.Context)
		if err != nil {
			return exec.AsValue(err)
		}
		return exec.AsValue(orderedItems(g.order, m, what))
	}
	var d *exec.Dict
	switch x := recv.Interface().(type) {
	case *exec.Dict:
		d = x
	case exec.Dict:
		d = &x
	default:
		return exec.AsValue(fmt.Errorf("%s has no method %s", python.TypeName(jinjaPlain(recv, engine.Sorted{})), what))
	}
	out := make([]any, len(d.Pairs))
	for i, p := range d.Pairs {
		switch what {
		case "keys":
			out[i] = p.Key
		case "values":
			out[i] = p.Value
		default:
			out[i] = python.Tuple{p.Key, p.Value}
		}
	}
	return exec.AsValue(out)
}

// copyOrdered copies a plain value as value.Copy does, keeping the key
// order of its maps in order.
func copyOrdered(order engine.KeyOrder, v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyOrdered(order, e)
		}
		order.Inherit(m, x)
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = copyOrdered(order, e)
		}
		return l
	}
	return value.Copy(v)
}

// jinjaFormat is jinja2's format filter: Python's % with the filter's
// arguments (or keyword arguments as a mapping).
func jinjaFormat(limit int) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		var args any
		if len(params.KwArgs) > 0 {
			d := python.Dict{}
			for _, k := range engine.SortedKeys(params.KwArgs) {
				d = append(d, python.Item{K: k, V: jinjaPlain(params.KwArgs[k], engine.Sorted{})})
			}
			args = d
		} else {
			t := make(python.Tuple, len(params.Args))
			for i, a := range params.Args {
				t[i] = jinjaPlain(a, engine.Sorted{})
			}
			args = t
		}
		s, err := python.Percent(in.String(), args, limit)
		if err != nil {
			return exec.AsValue(fmt.Errorf("format: %w", err))
		}
		return exec.AsValue(s)
	}
}

// jinjaInt is an operand as Python's int: True is 1.
func jinjaInt(v *exec.Value) int {
	if v.IsBool() {
		if v.Bool() {
			return 1
		}
		return 0
	}
	return v.Integer()
}

// jinjaReverse is jinja2's reverse filter: a string backwards, any other
// iterable's items in reverse order (gonja's sorts them as well).
func jinjaReverse(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsString() {
		r := []rune(in.String())
		slices.Reverse(r)
		return exec.AsValue(string(r))
	}
	var items []any
	switch v := jinjaPlain(in, engine.Sorted{}).(type) {
	case []any:
		for i := in.Len() - 1; i >= 0; i-- {
			items = append(items, in.Index(i).Interface())
		}
		_ = v
	case python.Tuple:
		for i := len(v) - 1; i >= 0; i-- {
			items = append(items, v[i])
		}
	case python.Dict:
		for i := len(v) - 1; i >= 0; i-- {
			items = append(items, v[i].K)
		}
	default:
		return exec.AsValue(fmt.Errorf("reverse: %s is not iterable", python.TypeName(v)))
	}
	if items == nil {
		items = []any{}
	}
	return exec.AsValue(items)
}

// jinjaDictsort is jinja2's dictsort: (key, value) pairs sorted by key
// (or by="value"), case-insensitively unless case_sensitive.
func jinjaDictsort(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	caseSensitive, byValue, reverse := false, false, false
	for i, a := range params.Args {
		switch i {
		case 0:
			caseSensitive = a.IsTrue()
		case 1:
			byValue = a.String() == "value"
		case 2:
			reverse = a.IsTrue()
		}
	}
	if v, ok := params.KwArgs["case_sensitive"]; ok {
		caseSensitive = v.IsTrue()
	}
	if v, ok := params.KwArgs["by"]; ok {
		switch v.String() {
		case "key":
		case "value":
			byValue = true
		default:
			return exec.AsValue(errors.New("dictsort: you can only sort by either \"key\" or \"value\""))
		}
	}
	if v, ok := params.KwArgs["reverse"]; ok {
		reverse = v.IsTrue()
	}
	var items []python.Tuple
	switch d := jinjaPlain(in, engine.Sorted{}).(type) {
	case python.Dict:
		for _, it := range d {
			items = append(items, python.Tuple{it.K, it.V})
		}
	default:
		return exec.AsValue(fmt.Errorf("dictsort: %s is not a dict", python.TypeName(d)))
	}
	key := func(t python.Tuple) any {
		k := t[0]
		if byValue {
			k = t[1]
		}
		if s, ok := k.(string); ok && !caseSensitive {
			return strings.ToLower(s)
		}
		return k
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := key(items[i]), key(items[j])
		if reverse {
			a, b = b, a
		}
		return python.Less(a, b)
	})
	out := make([]any, len(items))
	for i, t := range items {
		out[i] = t
	}
	return exec.AsValue(out)
}

// executeInclude is gonja's {% include %}, with the included file's own
// statements rewritten as the including file's are (boundOperators): gonja
// parses an included file at render time, where no parse hook sees its
// top-level {{ }}.
func executeInclude(r *exec.Renderer, inc *controlStructures.IncludeControlStructure) error {
	field := func(name string) any {
		f := reflect.ValueOf(inc).Elem().FieldByName(name)
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
	}
	if field("isEmpty").(bool) {
		return nil
	}
	ignoreMissing := field("ignoreMissing").(bool)
	name := r.Eval(field("filenameExpression").(nodes.Expression))
	if name.IsError() {
		return fmt.Errorf("unable to evaluate filename: %w", name)
	}
	file, err := r.Loader.Resolve(name.String())
	if err != nil {
		if ignoreMissing {
			return nil
		}
		return fmt.Errorf("failed to resolve filename: %w", err)
	}
	loader, err := r.Loader.Inherit(file)
	if err != nil {
		if ignoreMissing {
			return nil
		}
		return fmt.Errorf("failed to inherit loader: %w", err)
	}
	included, err := exec.NewTemplate(file, r.Config, loader, r.Environment)
	if err != nil {
		if ignoreMissing {
			return nil
		}
		return fmt.Errorf("unable to load template '%s': %w", file, err)
	}
	boundOperators(reflect.ValueOf(included.Root()))
	return exec.NewRenderer(r.Environment, r.Output, r.Config.Inherit(), loader, included).Execute()
}

// undefinedSet is {% set NAME = EXPR %}, recording in the guard whether
// NAME was bound to an undefined key or attribute (jinja2's Undefined),
// which gonja holds as nil like None: {% set p = properties['port'] %}
// {{ p }} prints nothing when the key is missing, as in jinja2, and "None"
// when its value is None.
type undefinedSet struct {
	inner exec.ControlStructure
	name  string           // the target, when a plain name
	expr  nodes.Expression // the value, when a plain expression
}

// newUndefinedSet wraps gonja's set statement c, reading its target and
// expression (unexported fields of SetControlStructure).
func newUndefinedSet(c nodes.ControlStructure) nodes.ControlStructure {
	inner, ok := c.(exec.ControlStructure)
	scs, isSet := c.(*controlStructures.SetControlStructure)
	if !ok || !isSet {
		return c
	}
	u := &undefinedSet{inner: inner}
	v := reflect.ValueOf(scs).Elem()
	field := func(name string) any {
		f := v.FieldByName(name)
		if !f.IsValid() {
			return nil
		}
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
	}
	if n, ok := field("target").(*nodes.Name); ok && field("condition") == nil && field("alternative") == nil {
		if e, ok := field("expression").(nodes.Expression); ok && e != nil {
			u.name, u.expr = n.Name.Val, e
		}
	}
	return u
}

func (u *undefinedSet) Position() *tokens.Token { return u.inner.Position() }
func (u *undefinedSet) String() string          { return u.inner.String() }

// Execute runs the set statement, then records whether it bound its name
// to an undefined value.
func (u *undefinedSet) Execute(r *exec.Renderer, b *nodes.ControlStructureBlock) error {
	if err := u.inner.Execute(r, b); err != nil || u.name == "" {
		return err
	}
	g, err := guardOf(r.Environment.Context)
	if err != nil {
		return err
	}
	v, _ := r.Environment.Context.Get(u.name)
	if v == nil && !defined(r, u.expr) {
		if g.undefined == nil {
			g.undefined = map[string]bool{}
		}
		g.undefined[u.name] = true
	} else {
		delete(g.undefined, u.name)
	}
	return nil
}
