package starlark

import (
	"fmt"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Python's str is a sequence of code points; Starlark's is of bytes.
// So that len(s), s[i], s[a:b] and iterating over a string count
// characters as in Python, the parse tree is rewritten (runeRewrites):
//
//	s[i], s[a:b]   ->  __dm_str__(s)[i], __dm_str__(s)[a:b]   (an index that is not a string literal)
//	for c in s     ->  for c in __dm_iter__(s)
//
// __dm_str__ is s itself unless s is a string with a non-ASCII
// character, where it is a runeString indexed by character; __dm_iter__
// makes any string iterable, by character. len counts characters (in
// pyBuiltins), and list(), sorted() and the like iterate a string by
// character.

const (
	starStr  = "__dm_str__"
	starIter = "__dm_iter__"
)

// runeString is a string indexed, sliced and iterated by character.
type runeString struct {
	s starlark.String
	r []rune
}

var (
	_ starlark.Indexable = (*runeString)(nil)
	_ starlark.Sliceable = (*runeString)(nil)
	_ starlark.Iterable  = (*runeString)(nil)
)

func newRuneString(s starlark.String) *runeString {
	return &runeString{s: s, r: []rune(string(s))}
}

func (r *runeString) String() string        { return r.s.String() }
func (r *runeString) Type() string          { return "string" }
func (r *runeString) Freeze()               {}
func (r *runeString) Truth() starlark.Bool  { return r.s.Truth() }
func (r *runeString) Hash() (uint32, error) { return r.s.Hash() }
func (r *runeString) Len() int              { return len(r.r) }

// Index is the i-th character.
func (r *runeString) Index(i int) starlark.Value { return starlark.String(r.r[i]) }

// Slice is the characters from start to end by step (Python's bounds,
// already normalised).
func (r *runeString) Slice(start, end, step int) starlark.Value {
	if step == 1 {
		return starlark.String(string(r.r[start:end]))
	}
	var out []rune
	if step > 0 {
		for i := start; i < end; i += step {
			out = append(out, r.r[i])
		}
	} else {
		for i := start; i > end; i += step {
			out = append(out, r.r[i])
		}
	}
	return starlark.String(string(out))
}

// Iterate yields the characters.
func (r *runeString) Iterate() starlark.Iterator { return &runeIter{r: r} }

type runeIter struct {
	r *runeString
	i int
}

func (it *runeIter) Next(p *starlark.Value) bool {
	if it.i >= len(it.r.r) {
		return false
	}
	*p = starlark.String(it.r.r[it.i])
	it.i++
	return true
}

func (it *runeIter) Done() {}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// byCharacter is v as a sequence of characters when it is a string;
// ascii strings stay strings unless always.
func byCharacter(v starlark.Value, always bool) starlark.Value {
	s, ok := v.(starlark.String)
	if !ok || !always && isASCII(string(s)) {
		return v
	}
	return newRuneString(s)
}

// runeBuiltins are __dm_str__, __dm_iter__ and len by character.
func runeBuiltins() starlark.StringDict {
	one := func(name string, always bool) *starlark.Builtin {
		return builtin(name, func(_ *starlark.Thread, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("%s is internal to dm", name)
			}
			return byCharacter(args[0], always), nil
		})
	}
	return starlark.StringDict{
		starStr:  one(starStr, false),
		starIter: one(starIter, true),
		"len": builtin("len", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) == 1 && len(kwargs) == 0 {
				if s, ok := args[0].(starlark.String); ok {
					return starlark.MakeInt(utf8.RuneCountInString(string(s))), nil
				}
				if n, ok, err := pyLenOf(args[0]); ok {
					return n, err
				}
			}
			return starlark.Call(th, starlark.Universe["len"], args, kwargs)
		}),
	}
}

// runeRewrites rewrites subscripts and loops of one parse tree node (see
// above); targets are the subscripts that are assigned to, left alone.
func runeRewrites(n syntax.Node, targets map[*syntax.IndexExpr]bool) {
	wrap := func(x syntax.Expr, name string) syntax.Expr {
		start, _ := x.Span()
		return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: start, Name: name}, Lparen: start, Args: []syntax.Expr{x}, Rparen: start}
	}
	switch n := n.(type) {
	case *syntax.AssignStmt:
		markTargets(n.LHS, targets)
	case *syntax.ForStmt:
		markTargets(n.Vars, targets)
		n.X = wrap(n.X, starIter)
	case *syntax.ForClause:
		markTargets(n.Vars, targets)
		n.X = wrap(n.X, starIter)
	case *syntax.IndexExpr:
		if targets[n] {
			return
		}
		if lit, ok := n.Y.(*syntax.Literal); ok && lit.Token == syntax.STRING {
			return // a key, not a position
		}
		n.X = wrap(n.X, starStr)
	case *syntax.SliceExpr:
		n.X = wrap(n.X, starStr)
	}
}

func markTargets(e syntax.Expr, targets map[*syntax.IndexExpr]bool) {
	eachTarget(e, func(x syntax.Expr) {
		if ix, ok := x.(*syntax.IndexExpr); ok {
			targets[ix] = true
		}
	})
}
