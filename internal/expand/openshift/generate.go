package openshift

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Character sets of the generator's class escapes. \w follows PCRE and \a
// follows the OpenShift documentation (seed 004, section 3.8.2): letters
// only. \A, punctuation, follows the OpenShift implementation.
const (
	lowerChars  = "abcdefghijklmnopqrstuvwxyz"
	upperChars  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digitChars  = "0123456789"
	wordChars   = lowerChars + upperChars + digitChars + "_"
	alphaChars  = lowerChars + upperChars
	symbolChars = "~!@#$%^&*()-_+={}[]\\|<,>.?/\"';:`"
)

// maxQuantifier bounds the numbers in {n} and {n,m} while parsing, so that
// length arithmetic cannot overflow; Options.MaxGeneratedLength is the
// limit users see.
const maxQuantifier = 1 << 30

// generator is a compiled `generate: expression` pattern: a sequence of
// literal runs and character classes, each repeated between min and max
// times.
type generator struct {
	from   string
	atoms  []genAtom
	maxLen int // longest possible output, in bytes
}

// genAtom is a literal (class empty) or a character class.
type genAtom struct {
	lit      string
	class    string // distinct ASCII characters to pick from
	min, max int
}

// compileGenerator parses an expression in OpenShift's pseudo regular
// expression syntax: literal characters, classes in brackets with ranges
// (`[a-zA-Z0-9_]`) and the escapes \w, \d, \a and \A, inside or outside
// brackets, each optionally followed by {n} or {n,m}. A backslash before
// any other character makes it literal.
func compileGenerator(from string) (*generator, error) {
	if from == "" {
		return nil, errors.New("empty expression")
	}
	g := &generator{from: from}
	for i := 0; i < len(from); {
		c := from[i]
		switch {
		case c == '[':
			class, n, err := parseClass(from[i:])
			if err != nil {
				return nil, fmt.Errorf("%q at offset %d: %w", from, i, err)
			}
			g.atoms = append(g.atoms, genAtom{class: class, min: 1, max: 1})
			i += n
		case c == '\\':
			if i+1 == len(from) {
				return nil, fmt.Errorf("%q: trailing backslash", from)
			}
			if set := escapeClass(from[i+1]); set != "" {
				g.atoms = append(g.atoms, genAtom{class: set, min: 1, max: 1})
				i += 2
				continue
			}
			_, size := utf8.DecodeRuneInString(from[i+1:])
			g.atoms = append(g.atoms, genAtom{lit: from[i+1 : i+1+size], min: 1, max: 1})
			i += 1 + size
		case c == '{' && i+1 < len(from) && isDigit(from[i+1]):
			lo, hi, n, err := parseQuantifier(from[i:])
			if err != nil {
				return nil, fmt.Errorf("%q at offset %d: %w", from, i, err)
			}
			if len(g.atoms) == 0 {
				return nil, fmt.Errorf("%q at offset %d: quantifier without a preceding character", from, i)
			}
			last := &g.atoms[len(g.atoms)-1]
			if last.min != 1 || last.max != 1 {
				return nil, fmt.Errorf("%q at offset %d: repeated quantifier", from, i)
			}
			last.min, last.max = lo, hi
			i += n
		default:
			_, size := utf8.DecodeRuneInString(from[i:])
			g.atoms = append(g.atoms, genAtom{lit: from[i : i+size], min: 1, max: 1})
			i += size
		}
	}
	g.atoms = mergeLiterals(g.atoms)
	for _, a := range g.atoms {
		unit := 1
		if a.class == "" {
			unit = len(a.lit)
		}
		g.maxLen = satAdd(g.maxLen, satMul(unit, a.max))
	}
	return g, nil
}

// mergeLiterals joins runs of single literals so that generation copies
// them in one step.
func mergeLiterals(atoms []genAtom) []genAtom {
	out := atoms[:0]
	for _, a := range atoms {
		if a.class == "" && a.min == 1 && a.max == 1 && len(out) > 0 {
			prev := &out[len(out)-1]
			if prev.class == "" && prev.min == 1 && prev.max == 1 {
				prev.lit += a.lit
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// escapeClass returns the characters of the class escape \c, or "".
func escapeClass(c byte) string {
	switch c {
	case 'w':
		return wordChars
	case 'd':
		return digitChars
	case 'a':
		return alphaChars
	case 'A':
		return symbolChars
	}
	return ""
}

// parseClass parses a bracketed class at the start of s and returns its
// distinct characters and the number of bytes consumed.
func parseClass(s string) (string, int, error) {
	var set [128]bool
	add := func(chars string) {
		for i := 0; i < len(chars); i++ {
			set[chars[i]] = true
		}
	}
	i := 1
	if i < len(s) && s[i] == '^' {
		return "", 0, errors.New("negated classes are not supported")
	}
	closed := false
	for i < len(s) {
		c := s[i]
		if c == ']' {
			closed = true
			i++
			break
		}
		if c == '\\' {
			if i+1 == len(s) {
				break
			}
			if cls := escapeClass(s[i+1]); cls != "" {
				add(cls)
				i += 2
				continue
			}
			c = s[i+1]
			i++
		}
		if c >= utf8.RuneSelf || c < ' ' {
			return "", 0, fmt.Errorf("character %q in class: only printable ASCII is supported", c)
		}
		// A range: c-d, unless the dash is the last character of the class.
		if i+2 < len(s) && s[i+1] == '-' && s[i+2] != ']' {
			d := s[i+2]
			if d == '\\' {
				return "", 0, errors.New("escaped range end is not supported")
			}
			if d >= utf8.RuneSelf || d < ' ' {
				return "", 0, fmt.Errorf("character %q in class: only printable ASCII is supported", d)
			}
			if d < c {
				return "", 0, fmt.Errorf("invalid range %c-%c", c, d)
			}
			for x := c; x <= d; x++ {
				set[x] = true
			}
			i += 3
			continue
		}
		set[c] = true
		i++
	}
	if !closed {
		return "", 0, errors.New("missing ]")
	}
	var b strings.Builder
	for c, ok := range set {
		if ok {
			b.WriteByte(byte(c))
		}
	}
	if b.Len() == 0 {
		return "", 0, errors.New("empty class")
	}
	return b.String(), i, nil
}

// parseQuantifier parses {n} or {n,m} at the start of s.
func parseQuantifier(s string) (lo, hi, n int, err error) {
	i := 1
	num := func() (int, bool) {
		start, v := i, 0
		for i < len(s) && isDigit(s[i]) {
			v = min(v*10+int(s[i]-'0'), maxQuantifier+1)
			i++
		}
		return v, i > start
	}
	lo, _ = num()
	hi = lo
	if i < len(s) && s[i] == ',' {
		i++
		var ok bool
		if hi, ok = num(); !ok {
			return 0, 0, 0, errors.New("open-ended quantifier {n,} is not supported")
		}
	}
	if i >= len(s) || s[i] != '}' {
		return 0, 0, 0, errors.New("malformed quantifier")
	}
	if hi > maxQuantifier {
		return 0, 0, 0, fmt.Errorf("quantifier larger than %d", maxQuantifier)
	}
	if hi < lo {
		return 0, 0, 0, fmt.Errorf("quantifier {%d,%d}: maximum below minimum", lo, hi)
	}
	return lo, hi, i + 1, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

// generate returns a random value matching the expression. The caller has
// checked maxLen against the configured limit.
func (g *generator) generate(r *randSource) (string, error) {
	var b strings.Builder
	b.Grow(g.maxLen)
	for _, a := range g.atoms {
		n := a.min
		if a.max > a.min {
			k, err := r.intn(a.max - a.min + 1)
			if err != nil {
				return "", err
			}
			n += k
		}
		if a.class == "" {
			for range n {
				b.WriteString(a.lit)
			}
			continue
		}
		for range n {
			k, err := r.intn(len(a.class))
			if err != nil {
				return "", err
			}
			b.WriteByte(a.class[k])
		}
	}
	return b.String(), nil
}

// randSource hands out uniformly distributed integers from crypto/rand,
// reading random bytes in batches because one read per character would
// dominate processing time.
type randSource struct {
	buf [256]byte
	n   int // bytes of buf still unused, at the end
}

func (r *randSource) byte() (byte, error) {
	if r.n == 0 {
		if _, err := rand.Read(r.buf[:]); err != nil {
			return 0, fmt.Errorf("generate: crypto/rand: %w", err)
		}
		r.n = len(r.buf)
	}
	r.n--
	return r.buf[r.n], nil
}

// intn returns a uniform integer in [0, n), using rejection sampling so
// that no value is favoured by modulo bias.
func (r *randSource) intn(n int) (int, error) {
	if n <= 0 || n > maxQuantifier+1 {
		return 0, fmt.Errorf("generate: bad range %d", n)
	}
	if n <= 256 {
		limit := 256 - 256%n
		for {
			b, err := r.byte()
			if err != nil {
				return 0, err
			}
			if int(b) < limit {
				return int(b) % n, nil
			}
		}
	}
	const span = 1 << 32
	limit := span - span%n
	for {
		var v int
		for range 4 {
			b, err := r.byte()
			if err != nil {
				return 0, err
			}
			v = v<<8 | int(b)
		}
		if v < limit {
			return v % n, nil
		}
	}
}
