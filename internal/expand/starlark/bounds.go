package starlark

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Starlark bounds steps and time but not memory: "x" * 500000000 takes
// 500 MB in one step, a string doubled in a loop reaches gigabytes within
// the step limit, and list(range(n)) materialises n elements in one step.
// boundStarlark rewrites a parsed file so that the operators and calls
// that build large values go through builtins that check the size of the
// result first, against Options.MaxOutputBytes (a list or tuple element
// counts as 16 bytes).

// Names of the predeclared builtins the rewrite calls.
const (
	starArith   = "__dm_arith__"
	starCheck   = "__dm_check__"
	starReplace = "__dm_replace__"
)

// boundStarlark rewrites f in place:
//
//	a * b, a + b, a % b  ->  False or __dm_arith__("*", a, b) (each operand evaluated once;
//	                         % formats strings as Python does)
//	a += b, a *= b    ->  a += __dm_check__("+", a, b)       (lists keep growing in place)
//	s.replace(o, n)   ->  __dm_replace__(s, o, n)
func boundStarlark(f *syntax.File) {
	targets := map[*syntax.IndexExpr]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		rewritePythonTree(n)
		runeRewrites(n, targets)
		switch n := n.(type) {
		case *syntax.BinaryExpr:
			if n.Op == syntax.STAR || n.Op == syntax.PLUS || n.Op == syntax.PERCENT || n.Op == syntax.SLASHSLASH {
				call := &syntax.CallExpr{
					Fn:     &syntax.Ident{NamePos: n.OpPos, Name: starArith},
					Lparen: n.OpPos,
					Args:   []syntax.Expr{opLiteral(n.Op, n.OpPos), n.X, n.Y},
					Rparen: n.OpPos,
				}
				n.X = &syntax.Ident{NamePos: n.OpPos, Name: "False"}
				n.Y = call
				n.Op = syntax.OR
			}
		case *syntax.AssignStmt:
			if n.Op == syntax.PLUS_EQ || n.Op == syntax.STAR_EQ {
				op := syntax.PLUS
				if n.Op == syntax.STAR_EQ {
					op = syntax.STAR
				}
				n.RHS = &syntax.CallExpr{
					Fn:     &syntax.Ident{NamePos: n.OpPos, Name: starCheck},
					Lparen: n.OpPos,
					Args:   []syntax.Expr{opLiteral(op, n.OpPos), n.LHS, n.RHS},
					Rparen: n.OpPos,
				}
			}
		case *syntax.CallExpr:
			if d, ok := n.Fn.(*syntax.DotExpr); ok && d.Name.Name == "replace" {
				n.Fn = &syntax.Ident{NamePos: d.Dot, Name: starReplace}
				n.Args = append([]syntax.Expr{d.X}, n.Args...)
			}
		}
		return true
	})
}

func opLiteral(op syntax.Token, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: `"` + op.String() + `"`, Value: op.String()}
}

// starlarkSize is the size a value counts for, and whether it is a
// sequence whose size operators multiply or add.
func starlarkSize(v starlark.Value) (int, bool) {
	switch v := v.(type) {
	case starlark.String:
		return len(v), true
	case starlark.Bytes:
		return len(v), true
	case *starlark.List:
		return 16 * v.Len(), true
	case starlark.Tuple:
		return 16 * len(v), true
	}
	return 0, false
}

// starlarkResultSize is the size of x op y for sequences, or -1.
func starlarkResultSize(op string, x, y starlark.Value) int {
	xs, xok := starlarkSize(x)
	ys, yok := starlarkSize(y)
	switch op {
	case "+":
		if xok && yok {
			return xs + ys
		}
	case "*":
		seq, n := xs, y
		if !xok {
			seq, n = ys, x
		}
		if xok != yok {
			if i, ok := n.(starlark.Int); ok {
				if k, ok := i.Int64(); ok && k > 0 {
					if seq > 0 && k > int64(1<<40)/int64(seq) {
						return 1 << 40
					}
					return seq * int(k)
				}
			}
		}
	}
	return -1
}

// pyFloorDiv is Python's x // y: for floats CPython's divmod (the
// quotient from fmod, so that -3.0 // 0.3 is -11.0 where floor(-3.0 /
// 0.3) is -10.0), for integers and bools Starlark's floor division.
func pyFloorDiv(x, y starlark.Value) (starlark.Value, error) {
	x, y = boolAsInt(x, y), boolAsInt(y, x)
	_, xf := x.(starlark.Float)
	_, yf := y.(starlark.Float)
	if !xf && !yf {
		return starlark.Binary(syntax.SLASHSLASH, x, y)
	}
	a, ok1 := starlark.AsFloat(x)
	b, ok2 := starlark.AsFloat(y)
	if !ok1 || !ok2 {
		return starlark.Binary(syntax.SLASHSLASH, x, y)
	}
	if b == 0 {
		return nil, fmt.Errorf("floored division by zero")
	}
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 && (b < 0) != (mod < 0) {
		div -= 1
	}
	if div == 0 {
		return starlark.Float(math.Copysign(0, a/b)), nil
	}
	q := math.Floor(div)
	if div-q > 0.5 {
		q++
	}
	return starlark.Float(q), nil
}

// boolAsInt is x as an int when x is a bool and other a number.
func boolAsInt(x, other starlark.Value) starlark.Value {
	b, ok := x.(starlark.Bool)
	if !ok {
		return x
	}
	switch other.(type) {
	case starlark.Int, starlark.Float, starlark.Bool:
		return starlark.MakeInt64(b2i(b))
	}
	return x
}

// starlarkBounds returns the builtins the rewrite calls and dm's Python
// builtins (compat.go). A range stays lazy: only the builtins
// that materialise a sequence (list, sorted, ...) check its length, so a
// loop over a long range is bounded by steps, not refused.
func starlarkBounds(limit int) starlark.StringDict {
	tooBig := func(what string, n int) error {
		return engine.Limit("MaxOutputBytes", limit, "%s would make a value of %d bytes", what, n)
	}
	check := func(op string, x, y starlark.Value) error {
		if n := starlarkResultSize(op, x, y); n > limit {
			return tooBig(fmt.Sprintf("%s %s %s", x.Type(), op, y.Type()), n)
		}
		return nil
	}
	ops := map[string]syntax.Token{"+": syntax.PLUS, "*": syntax.STAR, "%": syntax.PERCENT, "//": syntax.SLASHSLASH}
	opArgs := func(b *starlark.Builtin, args starlark.Tuple) (string, error) {
		if len(args) != 3 {
			return "", fmt.Errorf("%s is internal to dm", b.Name())
		}
		op, _ := starlark.AsString(args[0])
		if _, ok := ops[op]; !ok {
			return "", fmt.Errorf("%s is internal to dm", b.Name())
		}
		return op, nil
	}
	d := starlark.StringDict{
		starArith: starlark.NewBuiltin(starArith, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			op, err := opArgs(b, args)
			if err != nil {
				return nil, err
			}
			if op == "%" {
				return starPercent(args[1], args[2], limit)
			}
			if op == "//" {
				return pyFloorDiv(args[1], args[2])
			}
			// Python's bools are integers: True + 1 is 2.
			x, y := boolAsInt(args[1], args[2]), boolAsInt(args[2], args[1])
			if err := check(op, x, y); err != nil {
				return nil, err
			}
			return starlark.Binary(ops[op], x, y)
		}),
		starCheck: starlark.NewBuiltin(starCheck, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			op, err := opArgs(b, args)
			if err != nil {
				return nil, err
			}
			if err := check(op, args[1], args[2]); err != nil {
				return nil, err
			}
			return args[2], nil
		}),
		starReplace: starlark.NewBuiltin("replace", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("replace: no receiver")
			}
			recv := args[0]
			if s, ok := recv.(starlark.String); ok && len(args) >= 3 {
				old, ok1 := starlark.AsString(args[1])
				new, ok2 := starlark.AsString(args[2])
				if ok1 && ok2 {
					if n := engine.ReplacedSize(string(s), old, new); n > limit {
						return nil, tooBig("replace", n)
					}
				}
			}
			ha, ok := recv.(starlark.HasAttrs)
			if !ok {
				return nil, fmt.Errorf("%s has no .replace field or method", recv.Type())
			}
			m, err := ha.Attr("replace")
			if err != nil || m == nil {
				return nil, fmt.Errorf("%s has no .replace field or method", recv.Type())
			}
			return starlark.Call(th, m, args[1:], kwargs)
		}),
	}
	for k, v := range pyBuiltins(limit) {
		d[k] = v
	}
	recoverBuiltins(d)
	return d
}
