package jinja

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"

	"github.com/dmhq/dm/internal/expand/engine"
)

// arithFunc is the global that bounded operators call.
const arithFunc = "__dm_arith__"

// boundOperators rewrites every a*b, a+b, a~b, a%b, a/b, a//b and a**b
// under root, in place, into
// `false or __dm_arith__("op", a, b)`, which evaluates each operand once
// and gives the value of the call. gonja evaluates those operators without
// bounds: "x" * 2000000000 allocates 2 GB before any output limit sees it,
// and s ~ s in a loop doubles a string per step. The call does the same
// arithmetic after checking the result's size against the render's
// MaxOutputBytes; the others follow jinja2 (compat.go). It also
// rewrites node lists for printing and line tracking (rewriteNodeList).
//
// gonja keeps parsed expressions in unexported fields of its control
// structures, so the walk reads them by reflection and changes the
// operator nodes through their pointers; it descends only into gonja's
// node and control-structure types (and this package's wrappers).
func boundOperators(root reflect.Value) {
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Pointer:
			if v.IsNil() || !walkable(v.Type().Elem()) || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			if v.Type().Elem() == callType {
				c := (*nodes.Call)(v.UnsafePointer())
				rewriteDictCall(c)
				methodReceiver(c)
			}
			if v.Type().Elem() == dictType {
				dedupDictPairs((*nodes.Dict)(v.UnsafePointer()))
			}
			if v.Type().Elem() == negationType {
				boolNegation((*nodes.Negation)(v.UnsafePointer()))
			}
			if be, ok := binaryExpression(v); ok {
				walk(reflect.ValueOf(be.Left))
				walk(reflect.ValueOf(be.Right))
				rewriteOperator(be)
				return
			}
			walk(v.Elem())
		case reflect.Struct:
			if walkable(v.Type()) {
				for i := 0; i < v.NumField(); i++ {
					walk(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			if k := v.Type().Elem().Kind(); k == reflect.Interface || k == reflect.Pointer || k == reflect.Struct {
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i))
				}
			}
			rewriteNodeList(v)
		case reflect.Map:
			if k := v.Type().Elem().Kind(); k == reflect.Interface || k == reflect.Pointer {
				for it := v.MapRange(); it.Next(); {
					walk(it.Value())
				}
			}
		}
	}
	walk(root)
}

var (
	binaryExpressionType = reflect.TypeFor[nodes.BinaryExpression]()
	callType             = reflect.TypeFor[nodes.Call]()
)

// binaryExpression returns the node v points to if it is a
// BinaryExpression. v may come from an unexported field, so the pointer is
// taken as it is rather than through Interface.
func binaryExpression(v reflect.Value) (*nodes.BinaryExpression, bool) {
	if v.Type().Elem() != binaryExpressionType {
		return nil, false
	}
	return (*nodes.BinaryExpression)(v.UnsafePointer()), true
}

// walkable reports whether values of t may hold expressions: gonja's nodes
// and control structures, and this package's wrappers of them.
func walkable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map:
		return true
	default:
		return false
	}
	p := t.PkgPath()
	return strings.HasSuffix(p, "/gonja/v2/nodes") || strings.HasSuffix(p, "/gonja/v2/builtins/control_structures") ||
		p == reflect.TypeFor[guardedInclude]().PkgPath()
}

func rewriteOperator(be *nodes.BinaryExpression) {
	if be.Operator == nil || be.Operator.Token == nil {
		return
	}
	op := be.Operator.Token.Val
	switch op {
	case "*", "+", "~", "/", "//", "**":
	case "%":
		if _, ok := be.Right.(*nodes.Tuple); ok {
			op = "%t"
		}
	default:
		return
	}
	at := be.Operator.Token
	call := &nodes.Call{
		Location: at,
		Func:     &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: arithFunc, Line: at.Line, Col: at.Col}},
		Args:     []nodes.Expression{&nodes.String{Location: at, Val: op}, be.Left, be.Right},
		Kwargs:   map[string]nodes.Expression{},
	}
	be.Left = &nodes.Bool{Location: at, Val: false}
	be.Right = call
	be.Operator = &nodes.BinOperator{Token: &tokens.Token{Type: tokens.Or, Val: "or", Line: at.Line, Col: at.Col}}
}

// jinjaArith is a*b, a+b and a~b with gonja's semantics, refusing results
// larger than the render's MaxOutputBytes (a list element counts as 16
// bytes), and a%b, a/b, a//b and a**b with jinja2's (jinjaMoreArith).
func jinjaArith(e *exec.Evaluator, params *exec.VarArgs) (any, error) {
	if len(params.Args) != 3 {
		return nil, errors.New(arithFunc + " is internal to dm")
	}
	g, err := guardOf(e.Environment.Context)
	if err != nil {
		return nil, err
	}
	op, left, right := params.Args[0].String(), params.Args[1], params.Args[2]
	tooBig := func(n int) error {
		g.err = engine.Limit("MaxOutputBytes", g.maxBytes, "%s %s %s would make a value of %d bytes", jinjaPreview(left), op, jinjaPreview(right), n)
		return g.err
	}
	switch op {
	case "*":
		if left.IsFloat() || right.IsFloat() {
			return left.Float() * right.Float(), nil
		}
		if left.IsString() {
			s, n := left.String(), right.Integer()
			if n <= 0 || s == "" {
				return "", nil
			}
			if n > g.maxBytes/len(s) {
				return nil, tooBig(len(s) * n)
			}
			return strings.Repeat(s, n), nil
		}
		return jinjaInt(left) * jinjaInt(right), nil
	case "+":
		if left.IsList() {
			if !right.IsList() {
				return nil, fmt.Errorf("unable to concatenate list to %s", right.String())
			}
			// An element costs at least an interface value: 16 bytes.
			n := left.Len() + right.Len()
			if 16*n > g.maxBytes {
				return nil, tooBig(16 * n)
			}
			out := make([]any, 0, n)
			for i := 0; i < left.Len(); i++ {
				out = append(out, left.Index(i).Interface())
			}
			for i := 0; i < right.Len(); i++ {
				out = append(out, right.Index(i).Interface())
			}
			return out, nil
		}
		if left.IsNil() || right.IsNil() {
			// jinja2 raises UndefinedError for an undefined operand and
			// TypeError for None, where gonja would read either as ""
			// or 0: 'p/' + properties['missing'] is an error there.
			l, r := jinjaPreview(left), jinjaPreview(right)
			if left.IsNil() {
				l = "None (or an undefined name or key)"
			}
			if right.IsNil() {
				r = "None (or an undefined name or key)"
			}
			return nil, fmt.Errorf("unable to add %s and %s", l, r)
		}
		if left.IsFloat() || right.IsFloat() {
			return left.Float() + right.Float(), nil
		}
		if left.IsString() || right.IsString() {
			return concat(left.String(), right.String(), g.maxBytes, tooBig)
		}
		return jinjaInt(left) + jinjaInt(right), nil
	case "~":
		return concat(left.String(), right.String(), g.maxBytes, tooBig)
	default:
		return jinjaMoreArith(g, op, left, right)
	}
}

func concat(a, b string, limit int, tooBig func(int) error) (any, error) {
	if len(a)+len(b) > limit {
		return nil, tooBig(len(a) + len(b))
	}
	return a + b, nil
}

// jinjaPreview names a value for an error without printing all of it: a
// list of a million items printed to be cut to 20 characters took seconds.
func jinjaPreview(v *exec.Value) string {
	switch {
	case v.IsList():
		return fmt.Sprintf("a list of %d items", v.Len())
	case v.IsDict():
		return fmt.Sprintf("a dict of %d items", v.Len())
	case v.IsString():
		s := v.String()
		if len(s) > 20 {
			return fmt.Sprintf("%q... (%d bytes)", s[:20], len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	return v.String()
}
