package starlark

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Starlark has no exceptions. try/except runs the try body as a function
// that a Go builtin calls, matching a failure to the handlers by the
// Python exception class its message names:
//
//	try:                         if __dm_try__:
//	    x = d[k]                     x = d[k]
//	except (KeyError, IndexError) as e:   elif __dm_except__("e", "KeyError", "IndexError"):
//	    x = None                     x = None
//	else:                        else:
//	    ...                          ...
//
// rewriteTry turns the clauses into that if/elif chain over the same lines
// (so the parser reads them and errors keep their lines); translateTry
// then rewrites the chain in the parse tree:
//
//	def __dm_try_1(__dm_st):     # the body; each name it assigns is also
//	    x = d[k]                 # recorded in __dm_st, so that what the body
//	    __dm_st["x"] = x         # assigned before it failed is kept
//	__dm_r1 = __dm_try__(__dm_try_1, ("KeyError", "IndexError"))
//	if "x" in __dm_r1[2]: x = __dm_r1[2]["x"]
//	if __dm_r1[0] == "ok": <else>
//	elif __dm_r1[0] == "return": return __dm_r1[1]
//	elif __dm_r1[0] == 0: e = __dm_r1[1]; <handler 0>
//
// A failure no handler matches, and a bound dm sets (steps, output size,
// time), goes on failing. finally is refused, and so is a body that reads
// a name before it assigns it (the body being a function, the name would
// be its own local there).

const (
	starTry    = "__dm_try__"
	starExcept = "__dm_except__"
	starFinal  = "__dm_finally__"
)

var (
	tryRE     = regexp.MustCompile(`^(\s*)try\s*:(.*)$`)
	exceptRE  = regexp.MustCompile(`^(\s*)except\b([^:]*):(.*)$`)
	finallyRE = regexp.MustCompile(`^(\s*)finally\s*:(.*)$`)
	excNameRE = regexp.MustCompile(`^[A-Za-z_][\w.]*$`)
)

// rewriteTry rewrites the clauses of try statements as above; ok is false
// when the file has none.
func rewriteTry(file string, src []byte) ([]byte, bool, error) {
	s := string(src)
	if !strings.Contains(s, "try") || !strings.Contains(s, "except") && !strings.Contains(s, "finally") {
		return src, false, nil
	}
	lines := strings.Split(s, "\n")
	cont := pyLineContinues(s)
	changed := false
	for i, l := range lines {
		if i < len(cont) && cont[i] {
			continue
		}
		t := strings.TrimRight(l, "\r")
		if m := tryRE.FindStringSubmatch(t); m != nil {
			lines[i] = m[1] + "if " + starTry + ":" + m[2]
			changed = true
			continue
		}
		if m := finallyRE.FindStringSubmatch(t); m != nil {
			lines[i] = m[1] + "elif " + starFinal + ":" + m[2]
			changed = true
			continue
		}
		m := exceptRE.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		clause := strings.TrimSpace(m[2])
		as := ""
		if k := strings.LastIndex(clause, " as "); k >= 0 {
			clause, as = strings.TrimSpace(clause[:k]), strings.TrimSpace(clause[k+4:])
		} else if c := topLevelComma(clause); c >= 0 && !strings.HasPrefix(clause, "(") {
			clause, as = strings.TrimSpace(clause[:c]), strings.TrimSpace(clause[c+1:]) // Python 2's except E, e
		}
		if as != "" && !excNameRE.MatchString(as) || strings.Contains(as, ".") {
			return nil, false, engine.At(file, i+1, engine.Invalid("cannot read except clause %q", strings.TrimSpace(t)))
		}
		clause = strings.TrimSuffix(strings.TrimPrefix(clause, "("), ")")
		args := []string{strconv.Quote(as)}
		for _, n := range strings.Split(clause, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			if !excNameRE.MatchString(n) {
				return nil, false, engine.At(file, i+1, engine.Invalid("cannot read except clause %q: dm matches exceptions by class name", strings.TrimSpace(t)))
			}
			args = append(args, strconv.Quote(n[strings.LastIndexByte(n, '.')+1:]))
		}
		lines[i] = m[1] + "elif " + starExcept + "(" + strings.Join(args, ", ") + "):" + m[3]
		changed = true
	}
	if !changed {
		return src, false, nil
	}
	return []byte(strings.Join(lines, "\n")), true, nil
}

// translateTry rewrites the if/elif chains rewriteTry made, in every
// statement list of f.
func translateTry(file string, f *syntax.File) error {
	n := 0
	var list func(stmts []syntax.Stmt) ([]syntax.Stmt, error)
	list = func(stmts []syntax.Stmt) ([]syntax.Stmt, error) {
		var out []syntax.Stmt
		for _, st := range stmts {
			var err error
			switch st := st.(type) {
			case *syntax.DefStmt:
				st.Body, err = list(st.Body)
			case *syntax.ForStmt:
				st.Body, err = list(st.Body)
			case *syntax.WhileStmt:
				st.Body, err = list(st.Body)
			case *syntax.IfStmt:
				if id, ok := st.Cond.(*syntax.Ident); ok && id.Name == starTry {
					n++
					var tr []syntax.Stmt
					if tr, err = tryStmts(file, st, n, list); err != nil {
						return nil, err
					}
					out = append(out, tr...)
					continue
				}
				if st.True, err = list(st.True); err == nil {
					st.False, err = list(st.False)
				}
			}
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
		return out, nil
	}
	var err error
	f.Stmts, err = list(f.Stmts)
	return err
}

// tryStmts is one try statement, translated.
func tryStmts(file string, st *syntax.IfStmt, n int, list func([]syntax.Stmt) ([]syntax.Stmt, error)) ([]syntax.Stmt, error) {
	pos := st.If
	refuse := func(p syntax.Position, format string, args ...any) error {
		return engine.At(file, int(p.Line), engine.Invalid("try: %s; dm runs try/except with except clauses and else, without finally", fmt.Sprintf(format, args...)))
	}
	type handler struct {
		as      string
		classes []string
		body    []syntax.Stmt
	}
	var handlers []handler
	var elseBody []syntax.Stmt
	rest := st.False
	for {
		if len(rest) != 1 {
			elseBody = rest
			break
		}
		clause, ok := rest[0].(*syntax.IfStmt)
		if !ok {
			elseBody = rest
			break
		}
		if id, ok := clause.Cond.(*syntax.Ident); ok && id.Name == starFinal {
			return nil, refuse(clause.If, "finally is not supported")
		}
		call, ok := clause.Cond.(*syntax.CallExpr)
		if !ok || !isIdent(call.Fn, starExcept) {
			elseBody = rest
			break
		}
		h := handler{body: clause.True}
		for i, a := range call.Args {
			lit, ok := a.(*syntax.Literal)
			if !ok {
				return nil, refuse(clause.If, "cannot read an except clause")
			}
			s, _ := lit.Value.(string)
			if i == 0 {
				h.as = s
			} else {
				h.classes = append(h.classes, s)
			}
		}
		handlers = append(handlers, h)
		rest = clause.False
	}
	if len(handlers) == 0 {
		return nil, refuse(pos, "a try without an except clause is not supported")
	}
	body, err := list(st.True)
	if err != nil {
		return nil, err
	}
	// The names the body assigns, none read before it assigns them.
	assigned := map[string]bool{}
	var order []string
	var bad error
	var walkStmts func(stmts []syntax.Stmt)
	reads := func(e syntax.Node) {
		if e == nil || bad != nil {
			return
		}
		syntax.Walk(e, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.LambdaExpr, *syntax.Comprehension:
				return false
			case *syntax.Ident:
				if assignedLater(n.Name, body) && !assigned[n.Name] && bad == nil {
					bad = refuse(n.NamePos, "its body reads %s before it assigns it", n.Name)
				}
			}
			return true
		})
	}
	bind := func(e syntax.Expr) {
		for _, id := range targetNames(e) {
			if !assigned[id.Name] {
				assigned[id.Name] = true
				order = append(order, id.Name)
			}
		}
	}
	walkStmts = func(stmts []syntax.Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *syntax.AssignStmt:
				reads(s.RHS)
				if s.Op != syntax.EQ {
					reads(s.LHS)
				} else if _, isIdent := s.LHS.(*syntax.Ident); !isIdent {
					// x[k] = v and x.f = v read x.
					if _, isTuple := s.LHS.(*syntax.TupleExpr); !isTuple {
						if _, isList := s.LHS.(*syntax.ListExpr); !isList {
							reads(s.LHS)
						}
					}
				}
				bind(s.LHS)
			case *syntax.ForStmt:
				reads(s.X)
				bind(s.Vars)
				walkStmts(s.Body)
			case *syntax.WhileStmt:
				reads(s.Cond)
				walkStmts(s.Body)
			case *syntax.IfStmt:
				reads(s.Cond)
				walkStmts(s.True)
				walkStmts(s.False)
			case *syntax.DefStmt:
				bind(s.Name)
			case *syntax.ExprStmt:
				reads(s.X)
			case *syntax.ReturnStmt:
				reads(s.Result)
			case *syntax.LoadStmt:
				for _, id := range s.To {
					bind(id)
				}
			}
		}
	}
	walkStmts(body)
	if bad != nil {
		return nil, bad
	}
	fn := fmt.Sprintf("__dm_try_%d", n)
	res := fmt.Sprintf("__dm_r%d", n)
	state := &syntax.Ident{NamePos: pos, Name: "__dm_st"}
	id := func(name string) *syntax.Ident { return &syntax.Ident{NamePos: pos, Name: name} }
	str := func(s string) *syntax.Literal { return strLiteral(s, pos) }
	index := func(x syntax.Expr, k syntax.Expr) *syntax.IndexExpr {
		return &syntax.IndexExpr{X: x, Lbrack: pos, Y: k, Rbrack: pos}
	}
	num := func(i int) *syntax.Literal {
		return &syntax.Literal{Token: syntax.INT, TokenPos: pos, Raw: strconv.Itoa(i), Value: int64(i)}
	}
	resAt := func(i int) syntax.Expr { return index(id(res), num(i)) }
	// The body records what it assigns and returns (value,) for return.
	var record func(stmts []syntax.Stmt) []syntax.Stmt
	record = func(stmts []syntax.Stmt) []syntax.Stmt {
		var out []syntax.Stmt
		for _, s := range stmts {
			out = append(out, s)
			var names []*syntax.Ident
			switch s := s.(type) {
			case *syntax.AssignStmt:
				names = targetNames(s.LHS)
			case *syntax.DefStmt:
				names = []*syntax.Ident{s.Name}
			case *syntax.LoadStmt:
				names = s.To
			case *syntax.ReturnStmt:
				var v syntax.Expr = id("None")
				if s.Result != nil {
					v = s.Result
				}
				s.Result = &syntax.TupleExpr{Lparen: pos, List: []syntax.Expr{v}, Rparen: pos}
			case *syntax.ForStmt:
				s.Body = record(append(recordNames(targetNames(s.Vars), state, pos), s.Body...))
			case *syntax.WhileStmt:
				s.Body = record(s.Body)
			case *syntax.IfStmt:
				s.True, s.False = record(s.True), record(s.False)
			}
			out = append(out, recordNames(names, state, pos)...)
		}
		return out
	}
	def := &syntax.DefStmt{Def: pos, Name: id(fn), Lparen: pos, Params: []syntax.Expr{state}, Rparen: pos, Body: record(body)}
	var classes []syntax.Expr
	for _, h := range handlers {
		t := &syntax.TupleExpr{Lparen: pos, Rparen: pos}
		for _, c := range h.classes {
			t.List = append(t.List, str(c))
		}
		if len(h.classes) == 0 {
			t.List = []syntax.Expr{str("")}
		}
		classes = append(classes, t)
	}
	out := []syntax.Stmt{
		def,
		&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: id(res), RHS: &syntax.CallExpr{Fn: id(starTry), Lparen: pos, Args: append([]syntax.Expr{id(fn)}, classes...), Rparen: pos}},
	}
	for _, name := range order {
		out = append(out, &syntax.IfStmt{If: pos,
			Cond: &syntax.BinaryExpr{OpPos: pos, Op: syntax.IN, X: str(name), Y: resAt(2)},
			True: []syntax.Stmt{&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: id(name), RHS: index(resAt(2), str(name))}},
		})
	}
	is := func(v syntax.Expr) syntax.Expr {
		return &syntax.BinaryExpr{OpPos: pos, Op: syntax.EQL, X: resAt(0), Y: v}
	}
	okBody := elseBody
	if len(okBody) == 0 {
		okBody = []syntax.Stmt{&syntax.BranchStmt{Token: syntax.PASS, TokenPos: pos}}
	}
	if okBody, err = list(okBody); err != nil {
		return nil, err
	}
	chain := &syntax.IfStmt{If: pos, Cond: is(str("ok")), True: okBody}
	tail := chain
	add := func(cond syntax.Expr, body []syntax.Stmt) {
		next := &syntax.IfStmt{If: pos, Cond: cond, True: body}
		tail.ElsePos, tail.False = pos, []syntax.Stmt{next}
		tail = next
	}
	add(is(str("return")), []syntax.Stmt{&syntax.ReturnStmt{Return: pos, Result: resAt(1)}})
	for i, h := range handlers {
		hb, err := list(h.body)
		if err != nil {
			return nil, err
		}
		if h.as != "" {
			hb = append([]syntax.Stmt{&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: id(h.as), RHS: resAt(1)}}, hb...)
		}
		add(is(num(i)), hb)
	}
	return append(out, chain), nil
}

func isIdent(e syntax.Expr, name string) bool {
	id, ok := e.(*syntax.Ident)
	return ok && id.Name == name
}

// targetNames are the names an assignment's target binds.
func targetNames(e syntax.Expr) []*syntax.Ident {
	switch e := e.(type) {
	case *syntax.Ident:
		return []*syntax.Ident{e}
	case *syntax.TupleExpr:
		var out []*syntax.Ident
		for _, x := range e.List {
			out = append(out, targetNames(x)...)
		}
		return out
	case *syntax.ListExpr:
		var out []*syntax.Ident
		for _, x := range e.List {
			out = append(out, targetNames(x)...)
		}
		return out
	case *syntax.ParenExpr:
		return targetNames(e.X)
	}
	return nil
}

// assignedLater reports whether the statements assign name anywhere
// (outside nested functions).
func assignedLater(name string, stmts []syntax.Stmt) bool {
	found := false
	for _, s := range stmts {
		syntax.Walk(s, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.DefStmt:
				if n.Name.Name == name {
					found = true
				}
				return false
			case *syntax.LambdaExpr, *syntax.Comprehension:
				return false
			case *syntax.AssignStmt:
				for _, id := range targetNames(n.LHS) {
					found = found || id.Name == name
				}
			case *syntax.ForStmt:
				for _, id := range targetNames(n.Vars) {
					found = found || id.Name == name
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// recordNames are the statements __dm_st["x"] = x for each name.
func recordNames(names []*syntax.Ident, state *syntax.Ident, pos syntax.Position) []syntax.Stmt {
	out := make([]syntax.Stmt, 0, len(names))
	for _, n := range names {
		out = append(out, &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ,
			LHS: &syntax.IndexExpr{X: &syntax.Ident{NamePos: pos, Name: state.Name}, Lbrack: pos, Y: strLiteral(n.Name, pos), Rbrack: pos},
			RHS: &syntax.Ident{NamePos: pos, Name: n.Name}})
	}
	return out
}

// pyExceptionParents are the builtin exception classes and what each
// derives from, for matching an except clause.
var pyExceptionParents = map[string]string{
	"KeyError": "LookupError", "IndexError": "LookupError", "LookupError": "Exception",
	"ValueError": "Exception", "TypeError": "Exception", "AttributeError": "Exception",
	"ZeroDivisionError": "ArithmeticError", "ArithmeticError": "Exception", "AssertionError": "Exception",
	"RuntimeError": "Exception", "NotImplementedError": "RuntimeError", "NameError": "Exception",
	"Exception": "BaseException",
}

// raisedRE and starlarkRE read the Python class a failure's message
// names: a class name (CamelCase, as Python's are) before the message, as
// raise and assert write (ValueError: ...), else what Starlark says of
// the operation that failed.
var (
	raisedRE   = regexp.MustCompile(`^([A-Z]\w*): `)
	starlarkRE = []struct {
		re    *regexp.Regexp
		class string
	}{
		{regexp.MustCompile(`^key .* not in |^pop: missing key|^dict\.pop`), "KeyError"},
		{regexp.MustCompile(`out of range`), "IndexError"},
		{regexp.MustCompile(`has no \.\S+ field or method|has no attribute`), "AttributeError"},
		{regexp.MustCompile(`division by zero|modulo by zero`), "ZeroDivisionError"},
		{regexp.MustCompile(`invalid literal|not a valid|^int: |^float: |could not convert|unsupported format character|incomplete format|substring not found|values to unpack|math domain error|not in list|Unknown format code|Invalid format specifier|Unknown conversion specifier|(?i:single '[{}]' encountered)|unmatched '[{}]' in format|single '[{}]' in format|Format specifier missing precision|Precision not allowed|Cannot specify`), "ValueError"},
		{regexp.MustCompile(`^undefined: `), "NameError"},
		{regexp.MustCompile(`unknown binary op|unsupported|not supported|got .*, want |want .*, got |not callable|not iterable|not subscriptable|unhashable|missing argument|unexpected keyword|takes|for parameter|is required, not|must be .*, not|can only concatenate|has no len|not all arguments converted|not enough arguments for format string|requires int or char|wants int|not JSON serializable|format requires|cannot be interpreted|argument`), "TypeError"},
	}
)

// failureClass is the Python exception class of a failure and its message.
func failureClass(err error) (class, msg string) {
	msg = err.Error()
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		msg = ee.Msg
		if u := errors.Unwrap(ee); u != nil {
			msg = u.Error()
		}
	}
	msg = strings.TrimPrefix(msg, "fail: ")
	if m := raisedRE.FindStringSubmatch(msg); m != nil && m[1] != "fail" {
		return m[1], msg[len(m[0]):]
	}
	for _, c := range starlarkRE {
		if c.re.MatchString(msg) {
			return c.class, msg
		}
	}
	return "Exception", msg
}

// classChain is the class a failure names and the classes it derives
// from, most derived first: a template's class (looked up in globals, the
// try body's module) by its bases, a builtin by Python's hierarchy; a
// class of no known base derives from Exception.
func classChain(class string, globals starlark.StringDict) []string {
	var chain []string
	if c, ok := globals[class].(*pyClass); ok {
		for k := c; k != nil; k = k.base {
			chain = append(chain, k.name)
			if k.exception != "" {
				class = k.exception
				break
			}
			class = "Exception"
		}
	} else if _, builtin := pyExceptionParents[class]; !builtin && class != "BaseException" {
		chain = append(chain, class)
		class = "Exception"
	}
	for k := class; k != ""; k = pyExceptionParents[k] {
		chain = append(chain, k)
	}
	return chain
}

// catches reports whether an except clause naming classes catches a
// failure whose class and bases are chain.
func catches(classes, chain []string) bool {
	for _, c := range classes {
		if c == "" {
			return true
		}
		for _, k := range chain {
			if k == c {
				return true
			}
		}
	}
	return false
}

// tryBuiltin is __dm_try__(body, handler classes...): it calls body with
// a fresh dict for what it assigns and returns ("ok", None, assigned),
// ("return", value, assigned) or (i, exception, assigned) for the first
// handler i that catches its failure; other failures, and dm's bounds,
// go on failing.
func tryBuiltin(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 2 || len(kwargs) != 0 {
		return nil, fmt.Errorf("%s is internal to dm", starTry)
	}
	state := starlark.NewDict(4)
	v, err := starlark.Call(th, args[0], starlark.Tuple{state}, nil)
	if err == nil {
		if t, ok := v.(starlark.Tuple); ok && len(t) == 1 {
			return starlark.Tuple{starlark.String("return"), t[0], state}, nil
		}
		return starlark.Tuple{starlark.String("ok"), starlark.None, state}, nil
	}
	if isBound(err) {
		return nil, err
	}
	class, msg := failureClass(err)
	var globals starlark.StringDict
	if fn, ok := args[0].(*starlark.Function); ok {
		globals = fn.Globals()
	}
	chain := classChain(class, globals)
	for i, h := range args[1:] {
		t, _ := h.(starlark.Tuple)
		var classes []string
		for _, c := range t {
			s, _ := starlark.AsString(c)
			classes = append(classes, s)
		}
		if catches(classes, chain) {
			return starlark.Tuple{starlark.MakeInt(i), &pyException{class: class, msg: msg}, state}, nil
		}
	}
	return nil, err
}

// isBound reports whether a failure is one of dm's bounds (steps, output
// size, time, cancellation), which no except clause catches.
func isBound(err error) bool {
	var lim *engine.LimitError
	if errors.As(err, &lim) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "Starlark computation cancelled") || strings.Contains(s, "context canceled") || strings.Contains(s, "deadline exceeded")
}

// pyException is the value of except ... as e: str(e) is its message.
type pyException struct{ class, msg string }

var _ starlark.HasAttrs = (*pyException)(nil)

func (e *pyException) String() string        { return e.msg }
func (e *pyException) Type() string          { return e.class }
func (e *pyException) Freeze()               {}
func (e *pyException) Truth() starlark.Bool  { return true }
func (e *pyException) Hash() (uint32, error) { return starlark.String(e.msg).Hash() }

// Attr is args, Python 3's, and message, Python 2's.
func (e *pyException) Attr(name string) (starlark.Value, error) {
	switch name {
	case "args":
		return starlark.Tuple{starlark.String(e.msg)}, nil
	case "message":
		return starlark.String(e.msg), nil
	}
	return nil, nil
}

func (e *pyException) AttrNames() []string { return []string{"args", "message"} }
