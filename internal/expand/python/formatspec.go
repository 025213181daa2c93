package python

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Python's str.format with format specs ('{:02d}', '{:>8}', '{:,.2f}'),
// which Starlark's format lacks. Fields without a spec or conversion are
// left to Starlark's own format (UsesFormatSpec reports which).

// UsesFormatSpec reports whether a format string has a replacement field
// with a ':' spec or a '!' conversion.
func UsesFormatSpec(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			if i+1 < len(s) && s[i+1] == '{' {
				i++
				continue
			}
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return false
			}
			if strings.ContainsAny(s[i:i+end], ":!") {
				return true
			}
			i += end
		}
	}
	return false
}

// StrFormat is format.format(*args, **kwargs) over plain values.
func StrFormat(format string, args []any, kwargs map[string]any, limit int) (string, error) {
	var sb strings.Builder
	auto := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '{' && i+1 < len(format) && format[i+1] == '{', c == '}' && i+1 < len(format) && format[i+1] == '}':
			sb.WriteByte(c)
			i++
			continue
		case c == '}':
			return "", errors.New("single '}' encountered in format string")
		case c != '{':
			sb.WriteByte(c)
			continue
		}
		end := strings.IndexByte(format[i:], '}')
		if end < 0 {
			return "", errors.New("single '{' encountered in format string")
		}
		field := format[i+1 : i+end]
		i += end
		name, spec, _ := strings.Cut(field, ":")
		name, conv, hasConv := strings.Cut(name, "!")
		var v any
		switch n, err := strconv.Atoi(name); {
		case name == "":
			if auto >= len(args) {
				return "", fmt.Errorf("Replacement index %d out of range for positional args tuple", auto)
			}
			v = args[auto]
			auto++
		case err == nil:
			if n < 0 || n >= len(args) {
				return "", fmt.Errorf("Replacement index %d out of range for positional args tuple", n)
			}
			v = args[n]
		default:
			x, ok := kwargs[name]
			if !ok {
				return "", fmt.Errorf("KeyError: %s", pyQuote(name))
			}
			v = x
		}
		if hasConv {
			switch conv {
			case "s":
				v = Str(v)
			case "r", "a":
				v = pyRepr(v)
			default:
				return "", fmt.Errorf("Unknown conversion specifier %s", conv)
			}
		}
		out, err := pyFormatSpec(v, spec, limit)
		if err != nil {
			return "", err
		}
		sb.WriteString(out)
		if sb.Len() > limit {
			return "", SizeErr("format", sb.Len(), limit)
		}
	}
	return sb.String(), nil
}

// pyFormatSpec is format(v, spec): [[fill]align][sign][#][0][width][,][.precision][type].
func pyFormatSpec(v any, spec string, limit int) (string, error) {
	rs := []rune(spec)
	i := 0
	fill, align := " ", rune(0)
	if len(rs) >= 2 && strings.ContainsRune("<>^=", rs[1]) {
		fill, align, i = string(rs[0]), rs[1], 2
	} else if len(rs) >= 1 && strings.ContainsRune("<>^=", rs[0]) {
		align, i = rs[0], 1
	}
	sign := '-'
	if i < len(rs) && strings.ContainsRune("+- ", rs[i]) {
		sign = rs[i]
		i++
	}
	alt := false
	if i < len(rs) && rs[i] == '#' {
		alt = true
		i++
	}
	if i < len(rs) && rs[i] == '0' {
		if align == 0 {
			fill, align = "0", '='
		}
		i++
	}
	num := func() int {
		start := i
		for i < len(rs) && rs[i] >= '0' && rs[i] <= '9' {
			i++
		}
		if start == i {
			return -1
		}
		n, _ := strconv.Atoi(string(rs[start:i]))
		return n
	}
	width := num()
	if width > limit {
		return "", SizeErr(fmt.Sprintf("format width %d", width), width, limit)
	}
	group := ""
	if i < len(rs) && (rs[i] == ',' || rs[i] == '_') {
		group = string(rs[i])
		i++
	}
	prec := -1
	if i < len(rs) && rs[i] == '.' {
		i++
		if prec = num(); prec < 0 {
			return "", errors.New("Format specifier missing precision")
		}
	}
	typ := rune(0)
	if i < len(rs) {
		typ = rs[i]
		i++
	}
	if i != len(rs) {
		return "", fmt.Errorf("Invalid format specifier '%s' for object of type '%s'", spec, TypeName(v))
	}
	if b, ok := v.(bool); ok && typ != 0 && typ != 's' {
		v = int64(0)
		if b {
			v = int64(1)
		}
	}
	var signStr, body string
	numeric := true
	switch x := v.(type) {
	case string:
		if typ != 0 && typ != 's' {
			return "", fmt.Errorf("Unknown format code '%c' for object of type 'str'", typ)
		}
		numeric = false
		body = x
		if prec >= 0 && prec < utf8.RuneCountInString(body) {
			body = string([]rune(body)[:prec])
		}
	case int64, int, *big.Int:
		n, _ := pyToInt(x)
		switch typ {
		case 0, 'd', 'n', 'b', 'o', 'x', 'X', 'c':
			if prec >= 0 {
				return "", errors.New("Precision not allowed in integer format specifier")
			}
			base, prefix := 10, ""
			switch typ {
			case 'b':
				base, prefix = 2, "0b"
			case 'o':
				base, prefix = 8, "0o"
			case 'x':
				base, prefix = 16, "0x"
			case 'X':
				base, prefix = 16, "0X"
			case 'c':
				if !n.IsInt64() || n.Int64() < 0 || n.Int64() > 0x10ffff {
					return "", errors.New("%c arg not in range(0x110000)")
				}
				body, numeric = string(rune(n.Int64())), false
			}
			if typ != 'c' {
				if n.Sign() < 0 {
					signStr = "-"
				}
				body = new(big.Int).Abs(n).Text(base)
				if typ == 'X' {
					body = strings.ToUpper(body)
				}
				if group != "" && base == 10 {
					body = groupDigits(body, group)
				}
				if alt {
					signStr += prefix
				}
			}
		default:
			f, _ := pyToFloat(n)
			return pyFormatSpec(f, spec, limit)
		}
	case float64:
		if math.Signbit(x) && !math.IsNaN(x) {
			signStr = "-"
		}
		a := math.Abs(x)
		p := prec
		if p < 0 {
			p = 6
		}
		switch {
		case math.IsInf(a, 0):
			body = "inf"
		case math.IsNaN(a):
			body = "nan"
		default:
			switch typ {
			case 'f', 'F', 'e', 'E', 'g', 'G':
				body = pyFloatBody(a, byte(typ|0x20), p, alt) // upper case below, after grouping
			case '%':
				body = pyFloatBody(a*100, 'f', p, alt) + "%"
			case 0:
				if prec >= 0 {
					body = strconv.FormatFloat(a, 'g', max(prec, 1), 64)
				} else {
					body = Float(a)
				}
			default:
				return "", fmt.Errorf("Unknown format code '%c' for object of type 'float'", typ)
			}
			if group != "" {
				// Only the integer digits: not an exponent's (1e+20).
				end := strings.IndexAny(body, ".e%")
				if end < 0 {
					end = len(body)
				}
				body = groupDigits(body[:end], group) + body[end:]
			}
		}
		if typ == '%' && (math.IsInf(a, 0) || math.IsNaN(a)) {
			body += "%" // Python's inf%
		}
		if typ == 'E' || typ == 'G' || typ == 'F' {
			body = strings.ToUpper(body)
		}
	default:
		if spec != "" {
			return "", fmt.Errorf("unsupported format string passed to %s.__format__", TypeName(v))
		}
		return Str(v), nil
	}
	if numeric && signStr == "" || numeric && signStr != "" && signStr[0] != '-' {
		switch sign {
		case '+':
			signStr = "+" + signStr
		case ' ':
			signStr = " " + signStr
		}
	}
	if align == 0 {
		align = '<'
		if numeric {
			align = '>'
		}
	}
	n := width - utf8.RuneCountInString(signStr) - utf8.RuneCountInString(body)
	if n <= 0 {
		return signStr + body, nil
	}
	switch align {
	case '<':
		return signStr + body + strings.Repeat(fill, n), nil
	case '^':
		return strings.Repeat(fill, n/2) + signStr + body + strings.Repeat(fill, n-n/2), nil
	case '=':
		return signStr + strings.Repeat(fill, n) + body, nil
	}
	return strings.Repeat(fill, n) + signStr + body, nil
}

// groupDigits puts sep between every three digits.
func groupDigits(d, sep string) string {
	if len(d) <= 3 {
		return d
	}
	var sb strings.Builder
	pre := len(d) % 3
	if pre > 0 {
		sb.WriteString(d[:pre])
	}
	for i := pre; i < len(d); i += 3 {
		if sb.Len() > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(d[i : i+3])
	}
	return sb.String()
}
