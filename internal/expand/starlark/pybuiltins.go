package starlark

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/python"
)

// Python's numeric builtins that Starlark lacks: pow (and the ** that
// rewriteOperators turns into it), round, divmod, hex, oct and bin; and
// setattr, callable and frozenset. limit bounds the integers pow makes.
func numericBuiltins(limit int) starlark.StringDict {
	power := builtin("pow", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x, y, mod starlark.Value
		if err := starlark.UnpackPositionalArgs("pow", args, kwargs, 2, &x, &y, &mod); err != nil {
			return nil, err
		}
		return pyPow(x, y, mod, limit)
	})
	return starlark.StringDict{
		starPow: power,
		"pow":   power,
		"round": builtin("round", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var x, nd starlark.Value = nil, starlark.None
			if err := starlark.UnpackArgs("round", args, kwargs, "number", &x, "ndigits?", &nd); err != nil {
				return nil, err
			}
			digits := 0
			if nd != starlark.None {
				if err := starlark.AsInt(nd, &digits); err != nil {
					return nil, fmt.Errorf("round: ndigits: %v", err)
				}
			}
			switch v := x.(type) {
			case starlark.Int:
				return starlark.MakeBigInt(python.RoundInt(v.BigInt(), digits)), nil
			case starlark.Bool:
				return starlark.MakeBigInt(python.RoundInt(big.NewInt(b2i(v)), digits)), nil
			case starlark.Float:
				f := float64(v)
				if nd != starlark.None {
					return starlark.Float(python.Round(f, digits)), nil
				}
				if math.IsInf(f, 0) {
					return nil, errors.New("round: cannot convert float infinity to integer")
				}
				if math.IsNaN(f) {
					return nil, errors.New("round: cannot convert float NaN to integer")
				}
				return starlark.NumberToInt(starlark.Float(math.RoundToEven(f)))
			}
			return nil, fmt.Errorf("type %s doesn't define __round__ method", x.Type())
		}),
		"divmod": builtin("divmod", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var x, y starlark.Value
			if err := starlark.UnpackPositionalArgs("divmod", args, kwargs, 2, &x, &y); err != nil {
				return nil, err
			}
			q, err := starlark.Binary(syntax.SLASHSLASH, x, y)
			if err != nil {
				return nil, err
			}
			m, err := starlark.Binary(syntax.PERCENT, x, y)
			if err != nil {
				return nil, err
			}
			return starlark.Tuple{q, m}, nil
		}),
		"hex": intFormat("hex", 16, "0x"),
		"oct": intFormat("oct", 8, "0o"),
		"bin": intFormat("bin", 2, "0b"),
		"setattr": builtin("setattr", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var obj, v starlark.Value
			var name string
			if err := starlark.UnpackPositionalArgs("setattr", args, kwargs, 3, &obj, &name, &v); err != nil {
				return nil, err
			}
			o, ok := obj.(starlark.HasSetField)
			if !ok {
				return nil, fmt.Errorf("setattr: cannot set attributes of %s", obj.Type())
			}
			return starlark.None, o.SetField(name, v)
		}),
		"callable": builtin("callable", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var v starlark.Value
			if err := starlark.UnpackPositionalArgs("callable", args, kwargs, 1, &v); err != nil {
				return nil, err
			}
			_, ok := v.(starlark.Callable)
			return starlark.Bool(ok), nil
		}),
		// iter(x) is what a for loop over x walks (an object's __iter__
		// returns it), as a list: Starlark has no iterator values.
		"iter": builtin("iter", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var v starlark.Value
			if err := starlark.UnpackPositionalArgs("iter", args, kwargs, 1, &v); err != nil {
				return nil, err
			}
			ix, err := materialise(th, byCharacter(v, true), limit)
			if err != nil {
				return nil, fmt.Errorf("iter: '%s' object is not iterable", v.Type())
			}
			return ix, nil
		}),
		"frozenset": starlark.Universe["set"],
		"int":       trimmedNumber("int"),
		"float":     trimmedNumber("float"),
		"str":       pyStrBuiltin("str", python.Str),
		"repr":      pyStrBuiltin("repr", python.Repr),
	}
}

// pyStrBuiltin is str or repr as Python writes values: lists, tuples,
// dicts, floats and None in Python's notation (['a'], where Starlark
// writes ["a"]); other values as Starlark writes them.
func pyStrBuiltin(name string, f func(any) string) *starlark.Builtin {
	orig := starlark.Universe[name].(*starlark.Builtin)
	return builtin(name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 1 && len(kwargs) == 0 {
			switch v := args[0].(type) {
			case *starlark.List, starlark.Tuple, *starlark.Dict, starlark.Float, starlark.NoneType:
				p, err := starPlain(v, 0)
				if err == nil {
					return starlark.String(f(p)), nil
				}
			case starlark.String:
				if name == "str" {
					return v, nil
				}
				return starlark.String(f(string(v))), nil
			default:
				if s, ok, err := pyStringOf(v, name == "repr"); ok {
					return s, err
				}
			}
		}
		return starlark.Call(th, orig, args, kwargs)
	})
}

// trimmedNumber is int or float reading a string as Python does:
// surrounded by whitespace, with underscores between digits.
func trimmedNumber(name string) *starlark.Builtin {
	orig := starlark.Universe[name].(*starlark.Builtin)
	return builtin(name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok {
				t := strings.TrimSpace(string(s))
				if strings.Contains(t, "_") && !strings.HasPrefix(t, "_") && !strings.HasSuffix(t, "_") && !strings.Contains(t, "__") {
					t = strings.ReplaceAll(t, "_", "")
				}
				args = append(starlark.Tuple{starlark.String(t)}, args[1:]...)
			}
		}
		return starlark.Call(th, orig, args, kwargs)
	})
}

func b2i(b starlark.Bool) int64 {
	if b {
		return 1
	}
	return 0
}

// intFormat is hex, oct or bin.
func intFormat(name string, base int, prefix string) *starlark.Builtin {
	return builtin(name, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var v starlark.Value
		if err := starlark.UnpackPositionalArgs(name, args, kwargs, 1, &v); err != nil {
			return nil, err
		}
		var i *big.Int
		switch x := v.(type) {
		case starlark.Int:
			i = x.BigInt()
		case starlark.Bool:
			i = big.NewInt(b2i(x))
		default:
			return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", v.Type())
		}
		s := i.Text(base)
		if strings.HasPrefix(s, "-") {
			return starlark.String("-" + prefix + s[1:]), nil
		}
		return starlark.String(prefix + s), nil
	})
}

// pyPow is Python's x ** y (pow(x, y, mod) with mod).
func pyPow(x, y, mod starlark.Value, limit int) (starlark.Value, error) {
	num := func(v starlark.Value) (starlark.Value, bool) {
		switch n := v.(type) {
		case starlark.Int, starlark.Float:
			return n, true
		case starlark.Bool:
			return starlark.MakeInt64(b2i(n)), true
		}
		return nil, false
	}
	a, ok1 := num(x)
	b, ok2 := num(y)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("unsupported operand type(s) for ** or pow(): '%s' and '%s'", x.Type(), y.Type())
	}
	ai, aInt := a.(starlark.Int)
	bi, bInt := b.(starlark.Int)
	if mod != nil && mod != starlark.None {
		m, ok := mod.(starlark.Int)
		if !aInt || !bInt || !ok {
			return nil, errors.New("pow() 3rd argument not allowed unless all arguments are integers")
		}
		if m.Sign() == 0 {
			return nil, errors.New("pow() 3rd argument cannot be 0")
		}
		if bi.Sign() < 0 {
			return nil, errors.New("pow(): a negative exponent with a modulus is not supported")
		}
		r := new(big.Int).Exp(ai.BigInt(), bi.BigInt(), new(big.Int).Abs(m.BigInt()))
		if r.Sign() != 0 && m.Sign() < 0 {
			r.Add(r, m.BigInt()) // the sign of the modulus, as Python's
		}
		return starlark.MakeBigInt(r), nil
	}
	if aInt && bInt && bi.Sign() >= 0 {
		base, exp := ai.BigInt(), bi.BigInt()
		if base.CmpAbs(big.NewInt(1)) > 0 {
			// The result has about exp * bitlen(base) bits.
			bits := new(big.Int).Mul(exp, big.NewInt(int64(base.BitLen())))
			if !bits.IsInt64() || bits.Int64() > 8*int64(limit) {
				return nil, engine.Limit("MaxOutputBytes", limit, "%s ** %s would be an integer of more than %d bytes", base, exp, limit)
			}
		}
		return starlark.MakeBigInt(new(big.Int).Exp(base, exp, nil)), nil
	}
	af, _ := starlark.AsFloat(a)
	bf, _ := starlark.AsFloat(b)
	if af == 0 && bf < 0 {
		return nil, errors.New("0.0 cannot be raised to a negative power")
	}
	if af < 0 && bf != math.Trunc(bf) {
		return nil, errors.New("a negative number to a fractional power is a complex number, which dm does not have")
	}
	r := math.Pow(af, bf)
	if math.IsInf(r, 0) && !math.IsInf(af, 0) && !math.IsInf(bf, 0) {
		return nil, errors.New("(34, 'Numerical result out of range')")
	}
	return starlark.Float(r), nil
}
