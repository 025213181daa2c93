// Package python is what the Jinja and Starlark engines share to behave
// as Python does: str() and repr() of plain values, float formatting,
// %-formatting and str.format with format specs, and json.dumps, each
// bounded by the output limit. Values are plain decoded values plus Tuple
// and Dict (an ordered mapping).
package python

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Python's printf-style string formatting (`'%05.1f' % x`) and str()/repr()
// of plain values, shared by the Jinja `%` operator and the Starlark one
// (whose own % has no width or precision). Values are plain Go values:
// nil, bool, int64, *big.Int, float64, string, []any, Tuple, Dict and
// map[string]any.

// Tuple is a Python tuple (repr with parentheses; a tuple on the right
// of % supplies several arguments).
type Tuple []any

// Dict is a Python dict in insertion order.
type Dict []Item

type Item struct{ K, V any }

// SizeErr is the limit error of a value of n bytes over limit
// (Options.MaxOutputBytes).
func SizeErr(what string, n, limit int) error {
	return engine.Limit("MaxOutputBytes", limit, "%s would make a value of %d bytes", what, n)
}

func (d Dict) get(key string) (any, bool) {
	for _, it := range d {
		if k, ok := it.K.(string); ok && k == key {
			return it.V, true
		}
	}
	return nil, false
}

// Object is a value of a Python class: its repr is String, its str
// PyStr.
type Object interface {
	String() string
	PyStr() string
}

// Str is Python's str(v).
func Str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case Object:
		return v.PyStr()
	}
	return pyRepr(v)
}

// Repr is Python's repr(v).
func Repr(v any) string { return pyRepr(v) }

// pyRepr is Python's repr(v).
func pyRepr(v any) string {
	var sb strings.Builder
	writeRepr(&sb, v)
	return sb.String()
}

func writeRepr(sb *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		sb.WriteString("None")
	case bool:
		if v {
			sb.WriteString("True")
		} else {
			sb.WriteString("False")
		}
	case int:
		sb.WriteString(strconv.Itoa(v))
	case int64:
		sb.WriteString(strconv.FormatInt(v, 10))
	case *big.Int:
		sb.WriteString(v.String())
	case float64:
		sb.WriteString(Float(v))
	case string:
		sb.WriteString(pyQuote(v))
	case []any:
		sb.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeRepr(sb, e)
		}
		sb.WriteByte(']')
	case Tuple:
		sb.WriteByte('(')
		for i, e := range v {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeRepr(sb, e)
		}
		if len(v) == 1 {
			sb.WriteByte(',')
		}
		sb.WriteByte(')')
	case Dict:
		sb.WriteByte('{')
		for i, it := range v {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeRepr(sb, it.K)
			sb.WriteString(": ")
			writeRepr(sb, it.V)
		}
		sb.WriteByte('}')
	case map[string]any:
		d := make(Dict, 0, len(v))
		for _, k := range mapKeys(v) {
			d = append(d, Item{k, v[k]})
		}
		writeRepr(sb, d)
	default:
		fmt.Fprint(sb, v)
	}
}

// pyQuote is Python 3's repr of a string: single quotes unless the string
// holds a single quote and no double quote.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var sb strings.Builder
	sb.WriteByte(q)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&sb, `\x%02x`, s[i])
		case r == '\\' || r == rune(q):
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, r)
		case r > 0x7f && !unicode.IsPrint(r):
			switch {
			case r <= 0xff:
				fmt.Fprintf(&sb, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&sb, `\u%04x`, r)
			default:
				fmt.Fprintf(&sb, `\U%08x`, r)
			}
		default:
			sb.WriteRune(r)
		}
		i += n
	}
	sb.WriteByte(q)
	return sb.String()
}

// Float is Python's repr of a float: the shortest digits that read back,
// positional from 1e-4 to 1e16, with ".0" on integral values.
func Float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	if exp < -4 || exp >= 16 {
		return mant + "e" + exps
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// Percent is Python's `format % args`. args is the right operand: a
// Tuple supplies the arguments in turn, a Dict or map serves
// %(name)s, anything else is the single argument. Results longer than
// limit bytes are refused.
func Percent(format string, args any, limit int) (string, error) {
	var list []any
	var named func(string) (any, bool)
	switch a := args.(type) {
	case Tuple:
		list = a
	case Dict:
		named = a.get
		list = []any{a}
	case map[string]any:
		named = func(k string) (any, bool) { v, ok := a[k]; return v, ok }
		list = []any{a}
	default:
		list = []any{a}
	}
	_, isTuple := args.(Tuple)
	used, usedNamed := 0, false
	next := func() (any, error) {
		if used >= len(list) {
			return nil, errors.New("not enough arguments for format string")
		}
		used++
		return list[used-1], nil
	}
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		var arg any
		haveArg := false
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return "", errors.New("incomplete format key")
			}
			if named == nil {
				return "", errors.New("format requires a mapping")
			}
			key := format[i+1 : i+end]
			v, ok := named(key)
			if !ok {
				return "", fmt.Errorf("KeyError: %s", pyQuote(key))
			}
			arg, haveArg, usedNamed = v, true, true
			i += end + 1
		}
		var spec pySpec
	flags:
		for ; i < len(format); i++ {
			switch format[i] {
			case '-':
				spec.left = true
			case '0':
				spec.zero = true
			case '+':
				spec.plus = true
			case ' ':
				spec.space = true
			case '#':
				spec.alt = true
			default:
				break flags
			}
		}
		num := func() (int, error) {
			if i < len(format) && format[i] == '*' {
				i++
				v, err := next()
				if err != nil {
					return 0, err
				}
				n, ok := v.(int64)
				if !ok {
					return 0, errors.New("* wants int")
				}
				return int(n), nil
			}
			start := i
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			if start == i {
				return -1, nil
			}
			n, err := strconv.Atoi(format[start:i])
			if err != nil || n > 1<<20 {
				return 0, fmt.Errorf("width or precision %s is too big", format[start:i])
			}
			return n, nil
		}
		w, err := num()
		if err != nil {
			return "", err
		}
		if w < 0 && w != -1 {
			spec.left, w = true, -w
		}
		spec.width, spec.prec = max(w, 0), -1
		if i < len(format) && format[i] == '.' {
			i++
			p, err := num()
			if err != nil {
				return "", err
			}
			spec.prec = max(p, 0)
		}
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		spec.verb = format[i]
		if spec.verb == '%' {
			sb.WriteByte('%')
			continue
		}
		if !haveArg {
			if arg, err = next(); err != nil {
				return "", err
			}
		}
		s, err := spec.format(arg)
		if err != nil {
			return "", err
		}
		sb.WriteString(s)
		if sb.Len() > limit {
			return "", SizeErr("%-formatting", sb.Len(), limit)
		}
	}
	if used < len(list) && !usedNamed && (isTuple || named == nil) {
		return "", errors.New("not all arguments converted during string formatting")
	}
	return sb.String(), nil
}

type pySpec struct {
	left, zero, plus, space, alt bool
	width, prec                  int
	verb                         byte
}

func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int, int64, *big.Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case Tuple:
		return "tuple"
	case Dict, map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

func (s pySpec) format(v any) (string, error) {
	switch s.verb {
	case 's', 'r', 'a':
		str := Str(v)
		if s.verb != 's' {
			str = pyRepr(v)
		}
		if s.prec >= 0 && s.prec < utf8.RuneCountInString(str) {
			str = string([]rune(str)[:s.prec])
		}
		return s.pad("", str, false), nil
	case 'c':
		switch v := v.(type) {
		case string:
			if utf8.RuneCountInString(v) != 1 {
				return "", errors.New("%c requires int or char")
			}
			return s.pad("", v, false), nil
		case int64:
			if v < 0 || v > unicode.MaxRune {
				return "", errors.New("%c arg not in range(0x110000)")
			}
			return s.pad("", string(rune(v)), false), nil
		}
		return "", errors.New("%c requires int or char")
	case 'd', 'i', 'u', 'o', 'x', 'X':
		n, _ := pyToInt(v)
		switch x := v.(type) {
		case bool, int64, int, *big.Int:
		case float64:
			if s.verb == 'o' || s.verb == 'x' || s.verb == 'X' {
				return "", fmt.Errorf("%%%c format: an integer is required, not float", s.verb)
			}
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return "", fmt.Errorf("cannot convert float %s to integer", Float(x))
			}
			n, _ = new(big.Float).SetFloat64(math.Trunc(x)).Int(nil)
		default:
			what := "a real number"
			if s.verb == 'o' || s.verb == 'x' || s.verb == 'X' {
				what = "an integer"
			}
			return "", fmt.Errorf("%%%c format: %s is required, not %s", s.verb, what, TypeName(v))
		}
		base, prefix := 10, ""
		switch s.verb {
		case 'o':
			base, prefix = 8, "0o"
		case 'x':
			base, prefix = 16, "0x"
		case 'X':
			base, prefix = 16, "0X"
		}
		digits := new(big.Int).Abs(n).Text(base)
		if s.verb == 'X' {
			digits = strings.ToUpper(digits)
		}
		if s.prec > len(digits) {
			digits = strings.Repeat("0", s.prec-len(digits)) + digits
		}
		if s.alt && prefix != "" {
			digits = prefix + digits
		}
		return s.pad(s.sign(n.Sign() < 0), digits, true), nil
	case 'e', 'E', 'f', 'F', 'g', 'G':
		f, ok := pyToFloat(v)
		if !ok {
			return "", fmt.Errorf("must be real number, not %s", TypeName(v))
		}
		neg := math.Signbit(f) && !math.IsNaN(f)
		// Python pads inf and nan with zeros too: "%010.2f" % -inf is
		// "-000000inf".
		return s.pad(s.sign(neg), pyFloatBody(f, s.verb, s.prec, s.alt), true), nil
	}
	return "", fmt.Errorf("unsupported format character '%c' (0x%x)", s.verb, s.verb)
}

// pyFloatBody is |f| as Python's e, f and g conversions write it, in
// the case of verb ("inf" and "nan" too), for both % formatting and
// format specs: prec < 0 means 6, g takes at least one digit, and alt
// (the # flag) keeps the decimal point, and with g the trailing zeros.
func pyFloatBody(f float64, verb byte, prec int, alt bool) string {
	a := math.Abs(f)
	lower := verb | 0x20
	if prec < 0 {
		prec = 6
	}
	var body string
	switch {
	case math.IsInf(a, 0):
		body = "inf"
	case math.IsNaN(a):
		body = "nan"
	case lower == 'g' && alt:
		// Go's g drops trailing zeros; Python's #g keeps prec
		// significant digits, in f or e form by the exponent.
		prec = max(prec, 1)
		e := strconv.FormatFloat(a, 'e', prec-1, 64)
		exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
		if exp >= -4 && exp < prec {
			body = strconv.FormatFloat(a, 'f', prec-1-exp, 64)
		} else {
			body = e
		}
		if !strings.Contains(body, ".") {
			body = strings.Replace(body, "e", ".e", 1)
			if !strings.Contains(body, ".") {
				body += "."
			}
		}
	default:
		if lower == 'g' && prec == 0 {
			prec = 1
		}
		body = strconv.FormatFloat(a, lower, prec, 64)
		switch {
		case alt && lower == 'f' && prec == 0:
			body += "."
		case alt && lower == 'e' && prec == 0:
			body = strings.Replace(body, "e", ".e", 1) // Python's %#.0e: 1.e+00
		}
	}
	if verb != lower {
		body = strings.ToUpper(body)
	}
	return body
}

func (s pySpec) sign(neg bool) string {
	switch {
	case neg:
		return "-"
	case s.plus:
		return "+"
	case s.space:
		return " "
	}
	return ""
}

// pad applies the width: zero padding goes between the sign and the
// digits of numbers.
func (s pySpec) pad(sign, body string, numeric bool) string {
	n := utf8.RuneCountInString(sign) + utf8.RuneCountInString(body)
	if n >= s.width {
		return sign + body
	}
	fill := s.width - n
	switch {
	case s.left:
		return sign + body + strings.Repeat(" ", fill)
	case s.zero && numeric:
		return sign + strings.Repeat("0", fill) + body
	}
	return strings.Repeat(" ", fill) + sign + body
}

// pyToInt is an int or bool as a big.Int.
func pyToInt(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return big.NewInt(1), true
		}
		return big.NewInt(0), true
	case int64:
		return big.NewInt(x), true
	case int:
		return big.NewInt(int64(x)), true
	case *big.Int:
		return x, true
	}
	return nil, false
}

// pyToFloat is a number or bool as a float64.
func pyToFloat(v any) (float64, bool) {
	if f, ok := v.(float64); ok {
		return f, true
	}
	if n, ok := pyToInt(v); ok {
		f, _ := new(big.Float).SetInt(n).Float64()
		return f, true
	}
	return 0, false
}

// Less orders keys as Python's sorted does: strings by code point,
// numbers (integers and floats alike) by value; keys of other types, which
// Python would refuse to compare, by type name.
func Less(a, b any) bool {
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return x < y
		}
	}
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			return x.Cmp(y) < 0
		}
	}
	return TypeName(a) < TypeName(b)
}

// number is an integer or a finite or infinite float as a big.Float,
// for comparison.
func number(v any) (*big.Float, bool) {
	switch n := v.(type) {
	case int:
		return new(big.Float).SetInt64(int64(n)), true
	case int64:
		return new(big.Float).SetInt64(n), true
	case *big.Int:
		return new(big.Float).SetInt(n), true
	case float64:
		if math.IsNaN(n) {
			return nil, false
		}
		return big.NewFloat(n), true
	}
	return nil, false
}

// mapKeys is the order in which a template sees a plain Go map's keys:
// sorted (deterministic, as JSON output is); see expand's keyOrder for
// mappings that keep their document order.
func mapKeys(m map[string]any) []string { return engine.SortedKeys(m) }
