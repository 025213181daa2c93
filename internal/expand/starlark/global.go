package starlark

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.starlark.net/syntax"
)

// Python's `global` statement, which Starlark lacks: helpers that keep
// module-level state (a counter, a registry of names) declare it in the
// functions that assign it. rewriteGlobals keeps such a name in a dict,
// the module's global globalsDict, which functions may change: every use
// of NAME at the top level, in a function that declares it global, and in
// a function that only reads it becomes globalsDict["NAME"]; a function
// that binds NAME without declaring it keeps its own local, as in Python.
// The global statement itself becomes pass, on its line.

// globalsDict is the dict that holds the names declared global.
const globalsDict = "__dm_globals__"

// globalMarker stands for a global statement while the file is analysed.
const globalMarker = "__dm_global__"

var globalStmtRE = regexp.MustCompile(`^(\s*)global\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(;?\s*#.*)?\r?$`)

// rewriteGlobals rewrites the uses of names declared global, and reports
// whether it did (then the program needs globalsDict, see
// declareGlobalsDict). A file without global statements is returned as is.
func rewriteGlobals(file string, src []byte) ([]byte, bool, error) {
	if !strings.Contains(string(src), "global") {
		return src, false, nil
	}
	orig := strings.Split(string(src), "\n")
	lines := slices.Clone(orig)
	marked := map[int]bool{} // 1-based lines that look like global statements
	for i, l := range lines {
		if m := globalStmtRE.FindStringSubmatch(l); m != nil {
			lines[i] = m[1] + globalMarker + "(" + m[2] + ")" + m[3]
			marked[i+1] = true
		}
	}
	if len(marked) == 0 {
		return src, false, nil
	}
	text := strings.Join(lines, "\n")
	f, err := starlarkOptions().Parse(file, text, 0)
	if err != nil {
		return nil, false, starlarkSyntaxError(file, src, err)
	}
	a := &globalAnalysis{statements: map[int]bool{}}
	module := &globalScope{}
	a.scopes = append(a.scopes, module)
	for _, s := range f.Stmts {
		a.walk(s, module)
	}
	names := map[string]bool{}
	for _, sc := range a.scopes {
		for n := range sc.declared {
			names[n] = true
		}
	}
	var edits []*syntax.Ident
	for _, sc := range a.scopes {
		for _, id := range sc.idents {
			if !names[id.Name] {
				continue
			}
			if sc == module || sc.declared[id.Name] || !sc.bound[id.Name] {
				edits = append(edits, id)
			}
		}
	}
	// Edit from the end so earlier offsets stay true.
	slices.SortFunc(edits, func(x, y *syntax.Ident) int {
		if x.NamePos.Line != y.NamePos.Line {
			return int(y.NamePos.Line - x.NamePos.Line)
		}
		return int(y.NamePos.Col - x.NamePos.Col)
	})
	lines = strings.Split(text, "\n")
	for _, id := range edits {
		i := int(id.NamePos.Line) - 1
		l := lines[i]
		off := runeOffset(l, int(id.NamePos.Col)-1)
		if off < 0 || !strings.HasPrefix(l[off:], id.Name) {
			continue
		}
		lines[i] = l[:off] + globalsDict + `["` + id.Name + `"]` + l[off+len(id.Name):]
	}
	for n := range marked {
		l := lines[n-1]
		start := strings.Index(l, globalMarker+"(")
		if !a.statements[n] || start < 0 {
			lines[n-1] = orig[n-1] // inside a string literal
			continue
		}
		end := strings.IndexByte(l[start:], ')')
		lines[n-1] = l[:start] + "pass" + l[start+end+1:] // a no-op at the top level too
	}
	return []byte(strings.Join(lines, "\n")), true, nil
}

// declareGlobalsDict makes globalsDict a dict before the file's first
// statement (in the tree, so no line moves).
func declareGlobalsDict(f *syntax.File) {
	decl := &syntax.AssignStmt{Op: syntax.EQ, LHS: &syntax.Ident{Name: globalsDict}, RHS: &syntax.DictExpr{}}
	f.Stmts = append([]syntax.Stmt{decl}, f.Stmts...)
}

// runeOffset returns the byte offset of the n-th rune of s, or -1.
func runeOffset(s string, n int) int {
	off := 0
	for ; n > 0; n-- {
		if off >= len(s) {
			return -1
		}
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	return off
}

// globalScope is the module or one function: the names it declares
// global, the names it binds, and the identifiers it uses (reads and
// writes alike).
type globalScope struct {
	declared map[string]bool
	bound    map[string]bool
	idents   []*syntax.Ident
}

type globalAnalysis struct {
	scopes []*globalScope
	// statements are the lines of the global statements found.
	statements map[int]bool
}

func (a *globalAnalysis) walk(n syntax.Node, sc *globalScope) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.DefStmt:
			fn := &globalScope{declared: map[string]bool{}, bound: map[string]bool{}}
			a.scopes = append(a.scopes, fn)
			for _, p := range n.Params {
				switch p := p.(type) {
				case *syntax.Ident:
					fn.bound[p.Name] = true
				case *syntax.BinaryExpr: // name=default, the default evaluated outside
					if id, ok := p.X.(*syntax.Ident); ok {
						fn.bound[id.Name] = true
					}
					a.walk(p.Y, sc)
				case *syntax.UnaryExpr: // *args, **kwargs
					if id, ok := p.X.(*syntax.Ident); ok {
						fn.bound[id.Name] = true
					}
				}
			}
			for _, s := range n.Body {
				a.walk(s, fn)
			}
			return false
		case *syntax.ExprStmt:
			if c, ok := n.X.(*syntax.CallExpr); ok {
				if id, ok := c.Fn.(*syntax.Ident); ok && id.Name == globalMarker {
					a.statements[int(id.NamePos.Line)] = true
					for _, arg := range c.Args {
						if id, ok := arg.(*syntax.Ident); ok && sc.declared != nil {
							sc.declared[id.Name] = true
						}
					}
					return false
				}
			}
		case *syntax.AssignStmt:
			bindTargets(n.LHS, sc)
		case *syntax.ForStmt:
			bindTargets(n.Vars, sc)
		case *syntax.ForClause:
			bindTargets(n.Vars, sc)
		case *syntax.DotExpr:
			a.walk(n.X, sc) // not the attribute's name
			return false
		case *syntax.CallExpr:
			a.walk(n.Fn, sc)
			for _, arg := range n.Args {
				if b, ok := arg.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
					a.walk(b.Y, sc) // not the keyword's name
					continue
				}
				a.walk(arg, sc)
			}
			return false
		case *syntax.LambdaExpr:
			a.walk(n.Body, sc) // not the parameters
			return false
		case *syntax.LoadStmt:
			return false
		case *syntax.Ident:
			sc.idents = append(sc.idents, n)
		}
		return true
	})
}

// bindTargets records the names an assignment target binds in a function.
func bindTargets(e syntax.Expr, sc *globalScope) {
	if sc.bound == nil {
		return // the module: every use is rewritten
	}
	eachTarget(e, func(x syntax.Expr) {
		if id, ok := x.(*syntax.Ident); ok {
			sc.bound[id.Name] = true
		}
	})
}

// eachTarget calls fn with each target an assignment's left side holds:
// a name, a subscript, an attribute, inside tuples, lists and
// parentheses.
func eachTarget(e syntax.Expr, fn func(syntax.Expr)) {
	switch e := e.(type) {
	case *syntax.TupleExpr:
		for _, x := range e.List {
			eachTarget(x, fn)
		}
	case *syntax.ListExpr:
		for _, x := range e.List {
			eachTarget(x, fn)
		}
	case *syntax.ParenExpr:
		eachTarget(e.X, fn)
	default:
		fn(e)
	}
}
