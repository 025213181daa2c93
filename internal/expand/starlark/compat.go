package starlark

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/dmhq/dm/internal/expand/python"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Builtins and modules that give .py templates the Python 2/3 library
// DM's templates use, on top of Starlark's own:
//
//	isinstance(x, T)        T: dict, list, tuple, str, int, float, bool,
//	                        basestring, unicode, long or a tuple of them
//	type(x) == dict         compared as Starlark type names
//	d.iteritems() ...       iteritems, iterkeys, itervalues, has_key
//	xrange, unicode, long, basestring
//	six                     iteritems/iterkeys/itervalues, string_types,
//	                        text_type, integer_types, PY2/PY3, moves.range
//	copy                    copy, deepcopy
//	'%05.1f' % x            Python's %-formatting (width, precision, flags)
//	json.dumps(v, indent=, sort_keys=, separators=)  as Python writes it
//	hashlib                 md5, sha1, sha2; str.encode, bytes.decode and Python 2's
//	                        str.decode (utf-8, ascii)

const starMethod = "__dm_method__"

// starImport is the builtin an import inside a block calls (lazyImport).
const starImport = "__dm_import__"

// pyTypeNames maps the Python names of types to Starlark's type names.
var pyTypeNames = map[string]string{
	"dict": "dict", "list": "list", "tuple": "tuple", "str": "string",
	"unicode": "string", "basestring": "string", "int": "int", "long": "int",
	"float": "float", "bool": "bool",
}

// py2Methods are the methods rewritten into __dm_method__ calls.
var py2Methods = map[string]bool{"iteritems": true, "iterkeys": true, "itervalues": true, "has_key": true,
	"zfill": true, "ljust": true, "rjust": true, "center": true, "format": true,
	"copy": true, "sort": true, "reverse": true, "count": true, "encode": true, "decode": true,
	"swapcase": true, "casefold": true, "isdecimal": true, "isnumeric": true, "isidentifier": true,
	"join": true, "index": true}

// rewritePythonTree rewrites parsed syntax, in place: `type(x) == dict`
// compares type names, Python 2 dict methods go through __dm_method__.
func rewritePythonTree(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.BinaryExpr:
		if n.Op == syntax.CIRCUMFLEX || n.Op == syntax.AMP || n.Op == syntax.PIPE {
			// Python's bitwise operators take bools (a bool is an int):
			// ('a' in p) ^ ('b' in p) is True or False. A BinaryExpr
			// cannot become a call in place: f and f(op, x, y) is the
			// call's value (f, a builtin, is true).
			x, y := n.X, n.Y
			n.Op, n.X, n.Y = syntax.AND, &syntax.Ident{NamePos: n.OpPos, Name: starBitOp}, &syntax.CallExpr{Fn: &syntax.Ident{NamePos: n.OpPos, Name: starBitOp}, Lparen: n.OpPos, Args: []syntax.Expr{strLiteral(n.Op.String(), n.OpPos), x, y}, Rparen: n.OpPos}
		}
		if n.Op == syntax.EQL || n.Op == syntax.NEQ {
			if isTypeCall(n.X) {
				n.Y = typeNameLiteral(n.Y)
			} else if isTypeCall(n.Y) {
				n.X = typeNameLiteral(n.X)
			}
		}
	case *syntax.DictExpr:
		dedupDictKeys(n)
	case *syntax.CallExpr:
		unboundMethods(n)
		if d, ok := n.Fn.(*syntax.DotExpr); ok && py2Methods[d.Name.Name] {
			n.Fn = &syntax.Ident{NamePos: d.Dot, Name: starMethod}
			n.Args = append([]syntax.Expr{d.X, strLiteral(d.Name.Name, d.Dot)}, n.Args...)
		}
	}
}

// starBitOp is x ^ y, x & y and x | y (rewritePythonTree).
const starBitOp = "__dm_bitop__"

// bitOp is Python's x op y for ^, & and |: on two bools a bool, on a bool
// and an int an int, else Starlark's (ints, sets, dict union).
func bitOp(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 3 || len(kwargs) != 0 {
		return nil, fmt.Errorf("%s is internal to dm", starBitOp)
	}
	op := map[string]syntax.Token{"^": syntax.CIRCUMFLEX, "&": syntax.AMP, "|": syntax.PIPE}[string(args[0].(starlark.String))]
	x, y := args[1], args[2]
	xb, xIsBool := x.(starlark.Bool)
	yb, yIsBool := y.(starlark.Bool)
	if xIsBool && yIsBool {
		switch op {
		case syntax.CIRCUMFLEX:
			return starlark.Bool(xb != yb), nil
		case syntax.AMP:
			return starlark.Bool(xb && yb), nil
		}
		return starlark.Bool(xb || yb), nil
	}
	if xIsBool {
		x = starlark.MakeInt(int(b2i(xb)))
	}
	if yIsBool {
		y = starlark.MakeInt(int(b2i(yb)))
	}
	return starlark.Binary(op, x, y)
}

// starUnbound makes an unbound str method (str.lower) a function.
const starUnbound = "__dm_unbound__"

// unboundMethods rewrites a call's arguments that name a method of str
// (sorted(l, key=str.lower), map(str.strip, l)), which Starlark has no
// value for, into __dm_unbound__("lower"): a function that calls the
// method of its first argument.
func unboundMethods(c *syntax.CallExpr) {
	fix := func(e syntax.Expr) syntax.Expr {
		d, ok := e.(*syntax.DotExpr)
		if !ok {
			return e
		}
		if id, ok := d.X.(*syntax.Ident); !ok || id.Name != "str" && id.Name != "unicode" {
			return e
		}
		return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: d.Dot, Name: starUnbound}, Lparen: d.Dot, Args: []syntax.Expr{strLiteral(d.Name.Name, d.Dot)}, Rparen: d.Dot}
	}
	for i, a := range c.Args {
		if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = fix(b.Y)
			continue
		}
		c.Args[i] = fix(a)
	}
}

// dedupDictKeys makes a dict literal whose keys repeat a literal key
// ({'a': 1, 'b': 2, 'a': 3}, which Starlark refuses) what Python makes
// of it: the key keeps its first place and takes its last value.
func dedupDictKeys(d *syntax.DictExpr) {
	if len(d.List) < 2 {
		return
	}
	var first map[string]int // literal key -> index of its first entry
	var drop map[int]bool
	for i, e := range d.List {
		ent, ok := e.(*syntax.DictEntry)
		if !ok {
			return
		}
		lit, ok := ent.Key.(*syntax.Literal)
		if !ok {
			continue
		}
		key := fmt.Sprintf("%v:%v", lit.Token, lit.Value)
		if first == nil {
			first = map[string]int{}
		}
		j, seen := first[key]
		if !seen {
			first[key] = i
			continue
		}
		d.List[j].(*syntax.DictEntry).Value = ent.Value
		if drop == nil {
			drop = map[int]bool{}
		}
		drop[i] = true
	}
	if len(drop) == 0 {
		return
	}
	kept := d.List[:0]
	for i, e := range d.List {
		if !drop[i] {
			kept = append(kept, e)
		}
	}
	d.List = kept
}

func isTypeCall(e syntax.Expr) bool {
	c, ok := e.(*syntax.CallExpr)
	if !ok {
		return false
	}
	id, ok := c.Fn.(*syntax.Ident)
	return ok && id.Name == "type" && len(c.Args) == 1
}

func typeNameLiteral(e syntax.Expr) syntax.Expr {
	id, ok := e.(*syntax.Ident)
	if !ok {
		return e
	}
	if t, ok := pyTypeNames[id.Name]; ok {
		return strLiteral(t, id.NamePos)
	}
	return e
}

func strLiteral(s string, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: fmt.Sprintf("%q", s), Value: s}
}

// python.TypeName of a Starlark type given as a builtin (dict), a type name
// builtin of dm (basestring) or a tuple of them; "" if it is none.
func starTypeNames(t starlark.Value) ([]string, error) {
	switch t := t.(type) {
	case *starlark.Builtin:
		if n, ok := pyTypeNames[t.Name()]; ok {
			return []string{n}, nil
		}
	case starlark.Tuple:
		var out []string
		for _, e := range t {
			n, err := starTypeNames(e)
			if err != nil {
				return nil, err
			}
			out = append(out, n...)
		}
		return out, nil
	case starlark.String:
		return []string{string(t)}, nil
	}
	return nil, fmt.Errorf("isinstance: %s is not a type dm knows (dict, list, tuple, str, int, float, bool, basestring, unicode)", t)
}

// builtin makes a Starlark builtin; recoverBuiltins makes its panics
// errors where it is predeclared or part of a module.
func builtin(name string, fn func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return fn(th, args, kwargs)
	})
}

// pyBuiltins returns the Python builtins dm adds; limit bounds what they
// may materialise.
func pyBuiltins(limit int) starlark.StringDict {
	u := starlark.Universe
	str, intB := pyStrBuiltin("str", python.Str), u["int"].(*starlark.Builtin)
	isinstance := builtin("isinstance", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x, t starlark.Value
		if err := starlark.UnpackPositionalArgs("isinstance", args, kwargs, 2, &x, &t); err != nil {
			return nil, err
		}
		if c, ok := t.(*pyClass); ok {
			o, ok := asObject(x)
			return starlark.Bool(ok && o.class.isSubclassOf(c)), nil
		}
		names, err := starTypeNames(t)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if x.Type() == n || n == "int" && x.Type() == "bool" {
				return starlark.True, nil
			}
		}
		return starlark.False, nil
	})
	method := builtin(starMethod, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		recv, name := args[0], string(args[1].(starlark.String))
		rest := args[2:]
		if d, ok := recv.(*starlark.Dict); ok {
			switch name {
			case "iteritems":
				return starlark.NewList(itemsOf(d)), nil
			case "iterkeys":
				return starlark.NewList(d.Keys()), nil
			case "itervalues":
				return starlark.NewList(valuesOf(d)), nil
			case "has_key":
				if len(rest) != 1 {
					return nil, fmt.Errorf("has_key takes one argument")
				}
				_, found, err := d.Get(rest[0])
				return starlark.Bool(found), err
			}
		}
		switch r := recv.(type) {
		case starlark.String:
			switch name {
			case "zfill", "ljust", "rjust", "center":
				return padString(string(r), name, rest, limit)
			case "encode":
				return encodeString(r, rest, kwargs)
			case "decode":
				// Python 2's str.decode: a str is its text already.
				return decodeBytes(starlark.Bytes(r), rest, kwargs)
			case "join":
				// A string is the characters it joins, as in Python.
				if len(rest) == 1 {
					if s, ok := rest[0].(starlark.String); ok {
						rest = starlark.Tuple{byCharacter(s, true)}
					}
				}
			case "swapcase", "casefold", "isdecimal", "isnumeric", "isidentifier":
				if len(rest) > 0 || len(kwargs) > 0 {
					return nil, fmt.Errorf("%s takes no arguments", name)
				}
				return strMethod(string(r), name), nil
			}
		case starlark.Bytes:
			if name == "decode" {
				return decodeBytes(r, rest, kwargs)
			}
		case *starlark.List:
			if v, ok, err := listMethod(th, r, name, rest, kwargs); ok {
				return v, err
			}
		case *starlark.Dict:
			if name == "copy" && len(rest) == 0 {
				return starCopy(r, false, 0)
			}
		case starlark.Tuple:
			// Python's tuple.count and tuple.index.
			if name == "count" {
				if v, ok, err := listMethod(th, starlark.NewList(r), name, rest, kwargs); ok {
					return v, err
				}
			}
			if name == "index" && len(rest) == 1 {
				for i, e := range r {
					if eq, err := starlark.Equal(e, rest[0]); err != nil || eq {
						return starlark.MakeInt(i), err
					}
				}
				return nil, fmt.Errorf("tuple.index(x): x not in tuple")
			}
		}
		if str, ok := recv.(starlark.String); ok && name == "format" && (python.UsesFormatSpec(string(str)) || pythonNotation(rest, kwargs)) {
			return starFormat(string(str), rest, kwargs, limit)
		}
		ha, ok := recv.(starlark.HasAttrs)
		if !ok {
			return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
		}
		m, err := ha.Attr(name)
		if err != nil || m == nil {
			return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
		}
		return starlark.Call(th, m, rest, kwargs)
	})
	// Functions that materialise a sequence check its length first: a
	// range is lazy, list(range(10**9)) is not.
	bounded := func(name string) *starlark.Builtin {
		orig := u[name].(*starlark.Builtin)
		return builtin(name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			cloned := false
			for i, a := range args {
				// A string is a sequence of characters, as in Python.
				if s, ok := a.(starlark.String); ok {
					if !cloned {
						args, cloned = slices.Clone(args), true
					}
					args[i] = byCharacter(s, true)
					a = args[i]
				}
				if s, ok := a.(starlark.Sequence); ok {
					if n := s.Len(); 16*n > limit {
						return nil, engine.Limit("MaxOutputBytes", limit, "%s() of %d elements would make a value of %d bytes", name, n, 16*n)
					}
				}
			}
			return starlark.Call(th, orig, args, kwargs)
		})
	}
	d := starlark.StringDict{
		"isinstance": isinstance,
		starMethod:   method,
		"xrange":     u["range"],
		"unicode":    str,
		"long":       intB,
		"basestring": starlark.NewBuiltin("basestring", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return nil, fmt.Errorf("basestring cannot be called; use str")
		}),
	}
	d[starBitOp] = builtin(starBitOp, bitOp)
	d[starUnbound] = builtin(starUnbound, func(th *starlark.Thread, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		name, _ := starlark.AsString(args[0])
		return builtin("str."+name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("str.%s needs a string", name)
			}
			return starlark.Call(th, method, append(starlark.Tuple{args[0], starlark.String(name)}, args[1:]...), kwargs)
		}), nil
	})
	d[starImport] = builtin(starImport, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 0 || len(kwargs) > 0 || th.Load == nil {
			return nil, fmt.Errorf("%s: want a module name and the names to import", starImport)
		}
		mod, ok := starlark.AsString(args[0])
		if !ok {
			return nil, fmt.Errorf("%s: the module name is a %s", starImport, args[0].Type())
		}
		d, err := th.Load(th, "mod:"+mod)
		if err != nil {
			return nil, err
		}
		if len(args) == 1 {
			return d[moduleExport], nil
		}
		out := make(starlark.Tuple, 0, len(args)-1)
		for _, a := range args[1:] {
			name, _ := starlark.AsString(a)
			v, ok := d[name]
			if !ok {
				// A module of a package: from pkg import mod.
				sub, err := th.Load(th, "mod:"+mod+"."+name)
				if err != nil {
					return nil, fmt.Errorf("cannot import name %s from %s", name, mod)
				}
				v = sub[moduleExport]
			}
			out = append(out, v)
		}
		if len(out) == 1 {
			return out[0], nil
		}
		return out, nil
	})
	d["sum"] = builtin("sum", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var seq starlark.Iterable
		var start starlark.Value = starlark.MakeInt(0)
		if err := starlark.UnpackArgs("sum", args, kwargs, "iterable", &seq, "start?", &start); err != nil {
			return nil, err
		}
		acc := start
		it := seq.Iterate()
		defer it.Done()
		var x starlark.Value
		for it.Next(&x) {
			switch x.(type) {
			case starlark.Int, starlark.Float, starlark.Bool:
			default:
				return nil, fmt.Errorf("sum: dm sums numbers, not %s", x.Type())
			}
			if b, ok := x.(starlark.Bool); ok {
				x = starlark.MakeInt(0)
				if b {
					x = starlark.MakeInt(1)
				}
			}
			var err error
			if acc, err = starlark.Binary(syntax.PLUS, acc, x); err != nil {
				return nil, fmt.Errorf("sum: %w", err)
			}
		}
		return acc, nil
	})
	// map and filter return lists, as in Python 2.
	d["map"] = builtin("map", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) < 2 || len(kwargs) > 0 {
			return nil, fmt.Errorf("map: want a function and one or more sequences")
		}
		seqs := make([]starlark.Indexable, len(args)-1)
		n := -1
		for i, a := range args[1:] {
			l, err := materialise(th, a, limit)
			if err != nil {
				return nil, fmt.Errorf("map: %w", err)
			}
			seqs[i] = l
			if n < 0 || l.Len() < n {
				n = l.Len()
			}
		}
		out := make([]starlark.Value, n)
		for i := range out {
			call := make(starlark.Tuple, len(seqs))
			for j, sq := range seqs {
				call[j] = sq.Index(i)
			}
			v, err := starlark.Call(th, args[0], call, nil)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return starlark.NewList(out), nil
	})
	d["filter"] = builtin("filter", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) != 2 || len(kwargs) > 0 {
			return nil, fmt.Errorf("filter: want a function (or None) and a sequence")
		}
		l, err := materialise(th, args[1], limit)
		if err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
		var out []starlark.Value
		for i := 0; i < l.Len(); i++ {
			x := l.Index(i)
			keep := x.Truth()
			if args[0] != starlark.None {
				v, err := starlark.Call(th, args[0], starlark.Tuple{x}, nil)
				if err != nil {
					return nil, err
				}
				keep = v.Truth()
			}
			if keep {
				out = append(out, x)
			}
		}
		return starlark.NewList(out), nil
	})
	for k, v := range classBuiltins() {
		d[k] = v
	}
	for k, v := range numericBuiltins(limit) {
		d[k] = v
	}
	for _, n := range []string{"list", "tuple", "sorted", "reversed", "enumerate", "zip", "set", "any", "all", "max", "min"} {
		d[n] = bounded(n)
	}
	for k, v := range runeBuiltins() {
		d[k] = v
	}
	return d
}

func itemsOf(d *starlark.Dict) []starlark.Value {
	items := d.Items()
	out := make([]starlark.Value, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out
}

func valuesOf(d *starlark.Dict) []starlark.Value {
	items := d.Items()
	out := make([]starlark.Value, len(items))
	for i, it := range items {
		out[i] = it[1]
	}
	return out
}

// sixModule is the part of six that DM templates use.
func sixModule(b starlark.StringDict) starlark.StringDict {
	u := starlark.Universe
	dictFn := func(name, method string) *starlark.Builtin {
		return builtin("six."+name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var d *starlark.Dict
			if err := starlark.UnpackPositionalArgs("six."+name, args, kwargs, 1, &d); err != nil {
				return nil, err
			}
			return starlark.Call(th, b[starMethod], starlark.Tuple{d, starlark.String(method)}, nil)
		})
	}
	moves := starlarkstruct.FromStringDict(starlark.String("six.moves"), starlark.StringDict{
		"range": u["range"], "xrange": u["range"], "zip": b["zip"], "map": starlark.None,
	})
	return starlark.StringDict{
		"iteritems":     dictFn("iteritems", "iteritems"),
		"iterkeys":      dictFn("iterkeys", "iterkeys"),
		"itervalues":    dictFn("itervalues", "itervalues"),
		"string_types":  starlark.Tuple{u["str"]},
		"text_type":     u["str"],
		"binary_type":   u["bytes"],
		"integer_types": starlark.Tuple{u["int"]},
		"PY2":           starlark.False,
		"PY3":           starlark.True,
		"moves":         moves,
	}
}

// copyModule is Python's copy: copy and deepcopy of lists, dicts and
// tuples (other values are immutable).
func copyModule() starlark.StringDict {
	one := func(name string, deep bool) *starlark.Builtin {
		return builtin("copy."+name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var v starlark.Value
			if err := starlark.UnpackPositionalArgs("copy."+name, args, kwargs, 1, &v); err != nil {
				return nil, err
			}
			return starCopy(v, deep, 0)
		})
	}
	return starlark.StringDict{"copy": one("copy", false), "deepcopy": one("deepcopy", true)}
}

func starCopy(v starlark.Value, deep bool, depth int) (starlark.Value, error) {
	if depth > 1000 {
		return nil, fmt.Errorf("value nested too deep to copy")
	}
	elem := func(e starlark.Value) (starlark.Value, error) {
		if !deep {
			return e, nil
		}
		return starCopy(e, true, depth+1)
	}
	switch v := v.(type) {
	case *starlark.List:
		out := make([]starlark.Value, v.Len())
		for i := range out {
			e, err := elem(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return starlark.NewList(out), nil
	case starlark.Tuple:
		if !deep {
			return v, nil
		}
		out := make(starlark.Tuple, len(v))
		for i, x := range v {
			e, err := elem(x)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case *starlark.Dict:
		out := starlark.NewDict(v.Len())
		for _, it := range v.Items() {
			e, err := elem(it[1])
			if err != nil {
				return nil, err
			}
			if err := out.SetKey(it[0], e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

// starPlain converts a Starlark value to the plain values of package python,
// keeping dict order.
func starPlain(v starlark.Value, depth int) (any, error) {
	if depth > 1000 {
		return nil, fmt.Errorf("value nested too deep")
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return i, nil
		}
		return v.BigInt(), nil
	case starlark.Float:
		return float64(v), nil
	case starlark.String:
		return string(v), nil
	case *starlark.List:
		out := make([]any, v.Len())
		for i := range out {
			e, err := starPlain(v.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case starlark.Tuple:
		out := make(python.Tuple, len(v))
		for i, x := range v {
			e, err := starPlain(x, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case *starlark.Dict:
		out := make(python.Dict, 0, v.Len())
		for _, it := range v.Items() {
			k, err := starPlain(it[0], depth+1)
			if err != nil {
				return nil, err
			}
			e, err := starPlain(it[1], depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, python.Item{K: k, V: e})
		}
		return out, nil
	case *starlarkstruct.Struct:
		d := starlark.StringDict{}
		v.ToStringDict(d)
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(python.Dict, 0, len(d))
		for _, k := range keys {
			e, err := starPlain(d[k], depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, python.Item{K: k, V: e})
		}
		return out, nil
	}
	if r, ok, err := pyStringOf(v, true); ok && err == nil {
		s, _, err := pyStringOf(v, false)
		if err != nil {
			return nil, err
		}
		return objectText{str: string(s.(starlark.String)), repr: string(r.(starlark.String))}, nil
	}
	return v.String(), nil
}

// objectText is an object of a class as Python writes it: its __str__
// and __repr__.
type objectText struct{ str, repr string }

func (o objectText) String() string { return o.repr }
func (o objectText) PyStr() string  { return o.str }

// starPercent is `x % y`: Python's string formatting for a string x,
// Starlark's operator otherwise.
func starPercent(x, y starlark.Value, limit int) (starlark.Value, error) {
	s, ok := x.(starlark.String)
	if !ok {
		return starlark.Binary(syntax.PERCENT, x, y)
	}
	args, err := starPlain(y, 0)
	if err != nil {
		return nil, err
	}
	out, err := python.Percent(string(s), args, limit)
	if err != nil {
		return nil, err
	}
	return starlark.String(out), nil
}

// jsonDumps is Python's json.dumps with indent, sort_keys and separators.
func jsonDumps(limit int) *starlark.Builtin {
	return builtin("json.dumps", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("json.dumps: want one value")
		}
		o := python.NewJSON(limit)
		var seps starlark.Value = starlark.None
		for _, kw := range kwargs {
			switch name := string(kw[0].(starlark.String)); name {
			case "indent":
				switch ind := kw[1].(type) {
				case starlark.Int:
					n, _ := ind.Int64()
					o.SetIndent(int(n), nil)
				case starlark.String:
					s := string(ind)
					o.SetIndent(0, &s)
				case starlark.NoneType:
				default:
					return nil, fmt.Errorf("json.dumps: indent must be an int or a string")
				}
			case "sort_keys":
				o.SortKeys = bool(kw[1].Truth())
			case "separators":
				seps = kw[1]
			case "ensure_ascii", "allow_nan", "default", "cls", "skipkeys", "check_circular":
				// Python's defaults are what dm does.
			default:
				return nil, fmt.Errorf("json.dumps: unexpected keyword argument %s", name)
			}
		}
		if seps != starlark.None {
			t, ok := seps.(starlark.Indexable)
			if !ok || t.Len() != 2 {
				return nil, fmt.Errorf("json.dumps: separators must be a pair of strings")
			}
			a, ok1 := starlark.AsString(t.Index(0))
			b, ok2 := starlark.AsString(t.Index(1))
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("json.dumps: separators must be a pair of strings")
			}
			o.ItemSep, o.KeySep = a, b
		}
		v, err := starPlain(args[0], 0)
		if err != nil {
			return nil, fmt.Errorf("json.dumps: %w", err)
		}
		s, err := o.Dumps(v)
		if err != nil {
			return nil, fmt.Errorf("json.dumps: %w", err)
		}
		return starlark.String(s), nil
	})
}

// materialise returns an iterable as an indexable sequence, refusing
// ones longer than limit allows.
func materialise(th *starlark.Thread, v starlark.Value, limit int) (starlark.Indexable, error) {
	if s, ok := v.(starlark.Sequence); ok && 16*s.Len() > limit {
		return nil, engine.Limit("MaxOutputBytes", limit, "a sequence of %d elements would make a value of %d bytes", s.Len(), 16*s.Len())
	}
	if ix, ok := v.(starlark.Indexable); ok {
		if _, isStr := v.(starlark.String); !isStr {
			return ix, nil
		}
	}
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("%s is not iterable", v.Type())
	}
	var out []starlark.Value
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		out = append(out, x)
		if 16*len(out) > limit {
			return nil, engine.Limit("MaxOutputBytes", limit, "a sequence of more than %d elements", limit/16)
		}
	}
	return starlark.NewList(out), nil
}

// encodeString is Python 3's str.encode: the UTF-8 (or ASCII) bytes of s.
func encodeString(s starlark.String, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	encoding, errs := "utf-8", "strict"
	if err := starlark.UnpackArgs("encode", args, kwargs, "encoding?", &encoding, "errors?", &errs); err != nil {
		return nil, err
	}
	switch strings.ReplaceAll(strings.ToLower(encoding), "_", "-") {
	case "utf-8", "utf8":
		return starlark.Bytes(s), nil
	case "ascii", "us-ascii":
		for i, r := range string(s) {
			if r >= utf8.RuneSelf {
				return nil, fmt.Errorf("encode: 'ascii' codec can't encode character %q in position %d", r, i)
			}
		}
		return starlark.Bytes(s), nil
	}
	return nil, fmt.Errorf("encode: dm encodes to utf-8 and ascii only, not %s", encoding)
}

// decodeBytes is Python 3's bytes.decode from UTF-8 (or ASCII).
func decodeBytes(b starlark.Bytes, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	encoding, errs := "utf-8", "strict"
	if err := starlark.UnpackArgs("decode", args, kwargs, "encoding?", &encoding, "errors?", &errs); err != nil {
		return nil, err
	}
	switch strings.ReplaceAll(strings.ToLower(encoding), "_", "-") {
	case "utf-8", "utf8":
		if !utf8.ValidString(string(b)) {
			return nil, fmt.Errorf("decode: the bytes are not valid UTF-8")
		}
		return starlark.String(b), nil
	case "ascii", "us-ascii":
		for i := 0; i < len(b); i++ {
			if b[i] >= utf8.RuneSelf {
				return nil, fmt.Errorf("decode: 'ascii' codec can't decode byte 0x%02x in position %d", b[i], i)
			}
		}
		return starlark.String(b), nil
	}
	return nil, fmt.Errorf("decode: dm decodes utf-8 and ascii only, not %s", encoding)
}

// strMethod is Python's str.swapcase, casefold, isdecimal, isnumeric
// or isidentifier.
func strMethod(s, name string) starlark.Value {
	switch name {
	case "swapcase":
		return starlark.String(strings.Map(func(r rune) rune {
			switch {
			case unicode.IsUpper(r):
				return unicode.ToLower(r)
			case unicode.IsLower(r):
				return unicode.ToUpper(r)
			}
			return r
		}, s))
	case "casefold":
		return starlark.String(strings.ReplaceAll(strings.ToLower(s), "ß", "ss"))
	case "isdecimal", "isnumeric":
		if s == "" {
			return starlark.False
		}
		for _, r := range s {
			if name == "isdecimal" && !unicode.Is(unicode.Nd, r) || name == "isnumeric" && !unicode.IsNumber(r) {
				return starlark.False
			}
		}
		return starlark.True
	}
	// isidentifier
	if s == "" {
		return starlark.False
	}
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return starlark.False
		}
	}
	return starlark.True
}

// padString is Python's str.zfill, ljust, rjust and center, refusing
// widths over limit.
func padString(s, name string, args starlark.Tuple, limit int) (starlark.Value, error) {
	if len(args) < 1 || len(args) > 2 || name == "zfill" && len(args) != 1 {
		return nil, fmt.Errorf("%s: wrong number of arguments", name)
	}
	w, err := starlark.AsInt32(args[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if w > limit {
		return nil, python.SizeErr(fmt.Sprintf("%s(%d)", name, w), w, limit)
	}
	fill := " "
	if len(args) == 2 {
		f, ok := starlark.AsString(args[1])
		if !ok || utf8.RuneCountInString(f) != 1 {
			return nil, fmt.Errorf("%s: the fill character must be exactly one character long", name)
		}
		fill = f
	}
	n := w - utf8.RuneCountInString(s)
	if n <= 0 {
		return starlark.String(s), nil
	}
	switch name {
	case "zfill":
		sign := ""
		if s != "" && (s[0] == '-' || s[0] == '+') {
			sign, s = s[:1], s[1:]
		}
		return starlark.String(sign + strings.Repeat("0", n) + s), nil
	case "ljust":
		return starlark.String(s + strings.Repeat(fill, n)), nil
	case "rjust":
		return starlark.String(strings.Repeat(fill, n) + s), nil
	}
	// center: Python puts the extra character on the right when the
	// width and the string differ in parity and the string is even.
	left := n / 2
	if n%2 == 1 && w%2 == 1 {
		left++
	}
	return starlark.String(strings.Repeat(fill, left) + s + strings.Repeat(fill, n-left)), nil
}

// pythonNotation reports whether a format argument prints differently
// in Python than in Starlark (a list, dict, tuple, float or None).
func pythonNotation(args starlark.Tuple, kwargs []starlark.Tuple) bool {
	differs := func(v starlark.Value) bool {
		switch v.(type) {
		case *starlark.List, starlark.Tuple, *starlark.Dict, starlark.Float, starlark.NoneType:
			return true
		}
		return false
	}
	for _, a := range args {
		if differs(a) {
			return true
		}
	}
	for _, kw := range kwargs {
		if differs(kw[1]) {
			return true
		}
	}
	return false
}

// starFormat is str.format with Python's format specs.
func starFormat(format string, args starlark.Tuple, kwargs []starlark.Tuple, limit int) (starlark.Value, error) {
	pos := make([]any, len(args))
	for i, a := range args {
		v, err := starPlain(a, 0)
		if err != nil {
			return nil, err
		}
		pos[i] = v
	}
	named := make(map[string]any, len(kwargs))
	for _, kw := range kwargs {
		v, err := starPlain(kw[1], 0)
		if err != nil {
			return nil, err
		}
		named[string(kw[0].(starlark.String))] = v
	}
	out, err := python.StrFormat(format, pos, named, limit)
	if err != nil {
		return nil, fmt.Errorf("format: %w", err)
	}
	return starlark.String(out), nil
}

// listMethod is Python's list.copy, sort, reverse and count, which
// Starlark's lists lack; ok is false for other names.
func listMethod(th *starlark.Thread, l *starlark.List, name string, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, ok bool, err error) {
	switch name {
	case "copy":
		v, err = starCopy(l, false, 0)
		return v, true, err
	case "count":
		if len(args) != 1 {
			return nil, true, fmt.Errorf("count takes one argument")
		}
		n := 0
		for i := 0; i < l.Len(); i++ {
			eq, err := starlark.Equal(l.Index(i), args[0])
			if err != nil {
				return nil, true, err
			}
			if eq {
				n++
			}
		}
		return starlark.MakeInt(n), true, nil
	case "reverse":
		for i, j := 0, l.Len()-1; i < j; i, j = i+1, j-1 {
			a, b := l.Index(i), l.Index(j)
			if err := l.SetIndex(i, b); err != nil {
				return nil, true, err
			}
			if err := l.SetIndex(j, a); err != nil {
				return nil, true, err
			}
		}
		return starlark.None, true, nil
	case "sort":
		if len(args) > 0 {
			return nil, true, fmt.Errorf("sort takes only keyword arguments (key, reverse)")
		}
		sorted, err := starlark.Call(th, starlark.Universe["sorted"], starlark.Tuple{l}, kwargs)
		if err != nil {
			return nil, true, err
		}
		s := sorted.(*starlark.List)
		for i := 0; i < s.Len(); i++ {
			if err := l.SetIndex(i, s.Index(i)); err != nil {
				return nil, true, err
			}
		}
		return starlark.None, true, nil
	}
	return nil, false, nil
}
