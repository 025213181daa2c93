package pyre

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// translation is a Python pattern in the two syntaxes: Go's (RE2), when
// the pattern needs nothing RE2 lacks, and regexp2's (.NET's), and what
// decides which engine a match may use.
type translation struct {
	re2    string // "" when the pattern needs a backtracking engine
	net    string
	groups int
	names  map[string]int
	// unicode: \d, \w, \s, \b or case folding, which Go reads as ASCII
	// and Python as Unicode: RE2 is exact on ASCII input only.
	unicode bool
	// dollar: a $ outside MULTILINE, which in Python also matches before
	// a final newline and in Go only at the end: RE2 is exact on input
	// without a newline only.
	dollar bool
	// verbose is set when the pattern turned VERBOSE on with (?x).
	verbose bool
}

// parseError is a pattern Python's re refuses, with the position it
// names.
type parseError struct {
	msg string
	pos int
}

func (e *parseError) Error() string { return fmt.Sprintf("%s at position %d", e.msg, e.pos) }

// translator walks a Python pattern once, writing both syntaxes.
type translator struct {
	src     string
	flags   int
	i       int
	re2     strings.Builder
	net     strings.Builder
	t       translation
	backtrk bool // needs regexp2: lookaround, backreferences, conditionals, atomic groups
	depth   int
}

// translate reads pattern with flags (Python's values) as Python's re
// (3.11) does.
func translate(pattern string, flags int) (*translation, error) {
	tr := &translator{src: pattern, flags: flags}
	tr.t.names = map[string]int{}
	if flags&Locale != 0 {
		return nil, &parseError{"cannot use LOCALE flag with a str pattern", 0}
	}
	if flags&ASCII != 0 && flags&Unicode != 0 {
		return nil, &parseError{"ASCII and UNICODE flags are incompatible", 0}
	}
	if err := tr.leadingFlags(); err != nil {
		return nil, err
	}
	if tr.flags&IgnoreCase != 0 && tr.flags&ASCII == 0 {
		tr.t.unicode = true
	}
	prefix := ""
	for _, f := range []struct {
		bit int
		c   string
	}{{IgnoreCase, "i"}, {Multiline, "m"}, {DotAll, "s"}} {
		if tr.flags&f.bit != 0 {
			prefix += f.c
		}
	}
	if prefix != "" {
		tr.re2.WriteString("(?" + prefix + ")")
		tr.net.WriteString("(?" + prefix + ")")
	}
	if err := tr.sequence(); err != nil {
		return nil, err
	}
	if tr.i < len(tr.src) {
		return nil, &parseError{"unbalanced parenthesis", tr.i}
	}
	t := tr.t
	t.net = tr.net.String()
	if !tr.backtrk {
		t.re2 = tr.re2.String()
	}
	return &t, nil
}

// leadingFlags reads the global inline flags at the start of the pattern
// ((?i), (?x), ...), which Python 3.11 allows only there.
func (tr *translator) leadingFlags() error {
	for strings.HasPrefix(tr.src[tr.i:], "(?") {
		j := tr.i + 2
		for j < len(tr.src) && strings.IndexByte("aiLmsux", tr.src[j]) >= 0 {
			j++
		}
		if j == tr.i+2 || j >= len(tr.src) || tr.src[j] != ')' {
			return nil
		}
		for _, c := range tr.src[tr.i+2 : j] {
			switch c {
			case 'a':
				tr.flags |= ASCII
			case 'i':
				tr.flags |= IgnoreCase
			case 'L':
				return &parseError{"bad inline flags: cannot use 'L' flag with a str pattern", tr.i + 2}
			case 'm':
				tr.flags |= Multiline
			case 's':
				tr.flags |= DotAll
			case 'u':
				tr.flags |= Unicode
			case 'x':
				tr.flags |= Verbose
				tr.t.verbose = true
			}
		}
		if tr.flags&ASCII != 0 && tr.flags&Unicode != 0 {
			return &parseError{"bad inline flags: flags 'a', 'u' and 'L' are incompatible", tr.i + 2}
		}
		tr.i = j + 1
	}
	return nil
}

func (tr *translator) both(s string) {
	tr.re2.WriteString(s)
	tr.net.WriteString(s)
}

// skipVerbose skips the whitespace and comments VERBOSE ignores.
func (tr *translator) skipVerbose() {
	if tr.flags&Verbose == 0 {
		return
	}
	for tr.i < len(tr.src) {
		c := tr.src[tr.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			tr.i++
		case c == '#':
			for tr.i < len(tr.src) && tr.src[tr.i] != '\n' {
				tr.i++
			}
		default:
			return
		}
	}
}

// sequence reads alternatives up to an unmatched ) or the end.
func (tr *translator) sequence() error {
	atom := false // the last thing written can take a quantifier
	atomAt := 0   // where in tr.net the last atom starts
	for {
		if !atom {
			atomAt = tr.net.Len()
		}
		tr.skipVerbose()
		if tr.i >= len(tr.src) {
			return nil
		}
		c := tr.src[tr.i]
		switch c {
		case ')':
			if tr.depth == 0 {
				return &parseError{"unbalanced parenthesis", tr.i}
			}
			return nil
		case '|':
			tr.both("|")
			tr.i++
			atom = false
		case '(':
			if err := tr.group(); err != nil {
				return err
			}
			atom = true
		case '[':
			if err := tr.class(); err != nil {
				return err
			}
			atom = true
		case '\\':
			a, err := tr.escape()
			if err != nil {
				return err
			}
			atom = a
		case '*', '+', '?':
			if !atom {
				return &parseError{"nothing to repeat", tr.i}
			}
			tr.both(string(c))
			tr.i++
			if err := tr.quantifierSuffix(atomAt); err != nil {
				return err
			}
			atom = false
		case '{':
			rep, ok := tr.repeat()
			if !ok {
				tr.both(`\{`)
				tr.i++
				atom = true
				continue
			}
			if !atom {
				return &parseError{"nothing to repeat", tr.i}
			}
			if err := tr.writeRepeat(rep); err != nil {
				return err
			}
			if err := tr.quantifierSuffix(atomAt); err != nil {
				return err
			}
			atom = false
		case '$':
			if tr.flags&Multiline == 0 {
				tr.t.dollar = true
			}
			tr.both("$")
			tr.i++
			atom = false
		case '^':
			tr.both("^")
			tr.i++
			atom = false
		case '.':
			tr.both(".")
			tr.i++
			atom = true
		default:
			r, n := utf8.DecodeRuneInString(tr.src[tr.i:])
			tr.literal(r, false)
			tr.i += n
			atom = true
		}
	}
}

// quantifierSuffix reads what may follow a quantifier: ? (lazy) or +
// (possessive, Python 3.11's: the atom and its quantifier as an atomic
// group, which the atom starting at atomAt in tr.net becomes); another
// repeat is an error.
func (tr *translator) quantifierSuffix(atomAt int) error {
	tr.skipVerbose()
	if tr.i < len(tr.src) && tr.src[tr.i] == '?' {
		tr.both("?")
		tr.i++
		tr.skipVerbose()
	} else if tr.i < len(tr.src) && tr.src[tr.i] == '+' {
		net := tr.net.String()
		tr.net.Reset()
		tr.net.WriteString(net[:atomAt] + "(?>" + net[atomAt:] + ")")
		tr.backtrk = true
		tr.i++
		tr.skipVerbose()
	}
	if tr.i < len(tr.src) {
		switch c := tr.src[tr.i]; c {
		case '*', '+', '?':
			return &parseError{"multiple repeat", tr.i}
		case '{':
			if _, ok := tr.repeat(); ok {
				return &parseError{"multiple repeat", tr.i}
			}
		}
	}
	return nil
}

// repeatCount is {lo,hi}; hi -1 is unbounded.
type repeatCount struct {
	lo, hi int
	end    int // offset after the }
}

// repeat reads a counted repeat at tr.i as Python's parser does: {m},
// {m,}, {,n}, {m,n} and {,}; anything else is a literal {.
func (tr *translator) repeat() (repeatCount, bool) {
	s := tr.src[tr.i+1:]
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	lo := s[:j]
	hi := lo
	comma := false
	if j < len(s) && s[j] == ',' {
		comma = true
		k := j + 1
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		hi = s[j+1 : k]
		j = k
	}
	if j >= len(s) || s[j] != '}' || (lo == "" && !comma) {
		return repeatCount{}, false
	}
	r := repeatCount{hi: -1, end: tr.i + 1 + j + 1}
	if lo != "" {
		r.lo, _ = strconv.Atoi(lo)
	}
	if hi != "" {
		r.hi, _ = strconv.Atoi(hi)
	}
	return r, true
}

func (tr *translator) writeRepeat(r repeatCount) error {
	if r.hi >= 0 && r.lo > r.hi {
		return &parseError{"min repeat greater than max repeat", tr.i}
	}
	if r.lo > maxPyRepeat || r.hi > maxPyRepeat {
		return &parseError{"the repetition number is too large", tr.i}
	}
	var s string
	switch {
	case r.hi < 0:
		s = fmt.Sprintf("{%d,}", r.lo)
	case r.lo == r.hi:
		s = fmt.Sprintf("{%d}", r.lo)
	default:
		s = fmt.Sprintf("{%d,%d}", r.lo, r.hi)
	}
	tr.both(s)
	tr.i = r.end
	return nil
}

// maxPyRepeat is Python's MAXREPEAT on 64-bit builds, less one.
const maxPyRepeat = 4294967294

// group reads a parenthesised group.
func (tr *translator) group() error {
	start := tr.i
	rest := tr.src[tr.i:]
	open := func(re2, net string, skip int) {
		tr.re2.WriteString(re2)
		tr.net.WriteString(net)
		tr.i += skip
	}
	switch {
	case !strings.HasPrefix(rest, "(?"):
		tr.t.groups++
		open("(", "(", 1)
	case strings.HasPrefix(rest, "(?:"):
		open("(?:", "(?:", 3)
	case strings.HasPrefix(rest, "(?P<"):
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return &parseError{"missing >, unterminated name", tr.i + 4}
		}
		name := rest[4:end]
		if !isIdent(name) {
			return &parseError{fmt.Sprintf("bad character in group name %q", name), tr.i + 4}
		}
		if _, dup := tr.t.names[name]; dup {
			return &parseError{fmt.Sprintf("redefinition of group name %q as group %d; was group %d", name, tr.t.groups+1, tr.t.names[name]), tr.i + 4}
		}
		tr.t.groups++
		tr.t.names[name] = tr.t.groups
		open("(?P<"+name+">", "(?<"+name+">", end+1)
	case strings.HasPrefix(rest, "(?P="):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return &parseError{"missing ), unterminated name", tr.i + 4}
		}
		name := rest[4:end]
		if _, ok := tr.t.names[name]; !ok {
			return &parseError{fmt.Sprintf("unknown group name %q", name), tr.i + 4}
		}
		tr.backtrk = true
		tr.net.WriteString(`\k<` + name + `>`)
		tr.i += end + 1
		return nil // an atom, no body
	case strings.HasPrefix(rest, "(?#"):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return &parseError{"missing ), unterminated comment", tr.i}
		}
		tr.i += end + 1
		tr.both("(?:)")
		return nil
	case strings.HasPrefix(rest, "(?="), strings.HasPrefix(rest, "(?!"):
		tr.backtrk = true
		open("", rest[:3], 3)
	case strings.HasPrefix(rest, "(?<="), strings.HasPrefix(rest, "(?<!"):
		tr.backtrk = true
		open("", rest[:4], 4)
	case strings.HasPrefix(rest, "(?>"):
		tr.backtrk = true
		open("", "(?>", 3)
	case strings.HasPrefix(rest, "(?("):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return &parseError{"missing ), unterminated name", tr.i + 3}
		}
		ref := rest[3:end]
		if n, err := strconv.Atoi(ref); err == nil {
			if n == 0 || n > tr.t.groups {
				return &parseError{"invalid group reference " + ref, tr.i + 3}
			}
		} else if _, ok := tr.t.names[ref]; !ok {
			return &parseError{fmt.Sprintf("unknown group name %q", ref), tr.i + 3}
		}
		tr.backtrk = true
		open("", "(?("+ref+")", end+1)
	default:
		// (?flags:...) or (?flags-flags:...), scoped.
		j := tr.i + 2
		on, off := "", ""
		minus := false
		for j < len(tr.src) && strings.IndexByte("aiLmsux-", tr.src[j]) >= 0 {
			if tr.src[j] == '-' {
				if minus {
					return &parseError{"bad inline flags", j}
				}
				minus = true
			} else if minus {
				off += string(tr.src[j])
			} else {
				on += string(tr.src[j])
			}
			j++
		}
		if j >= len(tr.src) {
			return &parseError{"missing -, : or )", j}
		}
		if tr.src[j] == ')' {
			if strings.HasPrefix(rest, "(?<") {
				return &parseError{"unknown extension ?<" + string(rest[3]), tr.i + 1}
			}
			return &parseError{"global flags not at the start of the expression", tr.i}
		}
		if tr.src[j] != ':' || j == tr.i+2 {
			if strings.HasPrefix(rest, "(?<") && len(rest) > 3 {
				return &parseError{"unknown extension ?<" + string(rest[3]), tr.i + 1}
			}
			return &parseError{"unknown extension " + rest[1:min(len(rest), 3)], tr.i + 1}
		}
		if strings.ContainsAny(on+off, "aLux") {
			return &parseError{"dm reads the scoped flags i, m and s; a, L, u and x apply to the whole pattern only ((?x) at its start)", tr.i + 2}
		}
		if strings.Contains(on, "i") {
			tr.t.unicode = true
		}
		spec := on
		if off != "" {
			spec += "-" + off
		}
		open("(?"+spec+":", "(?"+spec+":", j+1-tr.i)
	}
	saved := tr.flags
	tr.depth++
	if err := tr.sequence(); err != nil {
		return err
	}
	tr.depth--
	tr.flags = saved
	if tr.i >= len(tr.src) || tr.src[tr.i] != ')' {
		return &parseError{"missing ), unterminated subpattern", start}
	}
	tr.both(")")
	tr.i++
	return nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= utf8.RuneSelf || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return true
}

// literal writes rune r as a literal in both syntaxes.
func (tr *translator) literal(r rune, inClass bool) {
	switch {
	case r < 0x20 || r == 0x7f:
		tr.re2.WriteString(fmt.Sprintf(`\x{%x}`, r))
		tr.net.WriteString(fmt.Sprintf(`\x%02x`, r))
	case r < utf8.RuneSelf && strings.ContainsRune(`\.+*?()|[]{}^$#&~-/ '"`, r):
		// Escaped in both (\- and \# mean the character in both engines;
		// a blank is itself).
		if r == ' ' || r == '\'' || r == '"' || r == '/' {
			tr.both(string(r))
			return
		}
		tr.both(`\` + string(r))
	case r >= utf8.RuneSelf && r <= 0xffff:
		tr.re2.WriteRune(r)
		tr.net.WriteString(fmt.Sprintf(`\u%04x`, r))
	default:
		tr.both(string(r))
	}
}

// Python's classes under the ASCII flag.
const (
	asciiDigit = `0-9`
	asciiWord  = `a-zA-Z0-9_`
	asciiSpace = `\t\n\v\f\r\x20`
)

// escape reads a backslash escape outside a class; atom reports whether
// a quantifier may follow.
func (tr *translator) escape() (atom bool, err error) {
	if tr.i+1 >= len(tr.src) {
		return false, &parseError{"bad escape (end of pattern)", tr.i}
	}
	c := tr.src[tr.i+1]
	ascii := tr.flags&ASCII != 0
	switch c {
	case 'A':
		tr.both(`\A`)
	case 'Z':
		tr.both(`\z`)
	case 'b', 'B':
		if !ascii {
			tr.t.unicode = true
			tr.both(`\` + string(c))
		} else {
			tr.re2.WriteString(`\` + string(c))
			w := `[` + asciiWord + `]`
			if c == 'b' {
				tr.net.WriteString(`(?:(?<=` + w + `)(?!` + w + `)|(?<!` + w + `)(?=` + w + `))`)
			} else {
				tr.net.WriteString(`(?:(?<=` + w + `)(?=` + w + `)|(?<!` + w + `)(?!` + w + `))`)
			}
		}
		tr.i += 2
		return false, nil
	case 'd', 'D', 'w', 'W', 's', 'S':
		tr.classEscape(c, false)
	case 'a', 'f', 'n', 'r', 't', 'v':
		tr.both(`\` + string(c))
	case 'p', 'P':
		cls, err := tr.unicodeClass()
		if err != nil {
			return false, err
		}
		tr.both(cls)
		return true, nil
	case 'x', 'u', 'U', 'N':
		r, n, err := tr.codeEscape()
		if err != nil {
			return false, err
		}
		tr.literal(r, false)
		tr.i += n
		return true, nil
	case '0':
		r, n := tr.octal(tr.i + 1)
		tr.literal(r, false)
		tr.i += 1 + n
		return true, nil
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		// Three octal digits are a character; else a group number (one
		// or two digits).
		if tr.i+3 < len(tr.src) && isOctal(c) && isOctal(tr.src[tr.i+2]) && isOctal(tr.src[tr.i+3]) {
			r, n := tr.octal(tr.i + 1)
			if r > 0o377 {
				return false, &parseError{fmt.Sprintf(`octal escape value \%s outside of range 0-0o377`, tr.src[tr.i+1:tr.i+1+n]), tr.i}
			}
			tr.literal(r, false)
			tr.i += 1 + n
			return true, nil
		}
		j := tr.i + 2
		if j < len(tr.src) && tr.src[j] >= '0' && tr.src[j] <= '9' {
			j++
		}
		g, _ := strconv.Atoi(tr.src[tr.i+1 : j])
		if g > tr.t.groups {
			return false, &parseError{"invalid group reference " + strconv.Itoa(g), tr.i + 1}
		}
		tr.backtrk = true
		// (?:) ends the number: \1 followed by a digit stays group 1.
		tr.net.WriteString(`\` + strconv.Itoa(g) + `(?:)`)
		tr.i = j
		return true, nil
	default:
		if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false, &parseError{`bad escape \` + string(c), tr.i}
		}
		r, n := utf8.DecodeRuneInString(tr.src[tr.i+1:])
		tr.literal(r, false)
		tr.i += 1 + n
		return true, nil
	}
	tr.i += 2
	return true, nil
}

// classEscape writes \d, \D, \w, \W, \s or \S, inside a class (without
// its brackets) or out. Go's classes are ASCII, Python's Unicode: RE2
// matches for Python only on plain ASCII input (see plainASCII), where
// they agree. regexp2's \s lacks \x1c-\x1f, which Python's has.
func (tr *translator) classEscape(c byte, inClass bool) {
	lower := c | 0x20
	neg := c != lower
	var re2, net string
	if tr.flags&ASCII != 0 {
		set := map[byte]string{'d': asciiDigit, 'w': asciiWord, 's': asciiSpace}[lower]
		re2, net = set, set
	} else {
		tr.t.unicode = true
		if inClass {
			re2, net = `\`+string(c), `\`+string(c)
			if c == 's' {
				net = `\s\x1c-\x1f`
			}
			tr.re2.WriteString(re2)
			tr.net.WriteString(net)
			return
		}
		re2, net = `\`+string(lower), `\`+string(lower)
		if lower == 's' {
			net = `\s\x1c-\x1f`
		}
	}
	if inClass {
		tr.re2.WriteString(re2)
		tr.net.WriteString(net)
		return
	}
	if neg {
		tr.re2.WriteString("[^" + re2 + "]")
		tr.net.WriteString("[^" + net + "]")
		return
	}
	tr.re2.WriteString("[" + re2 + "]")
	tr.net.WriteString("[" + net + "]")
}

// unicodeClass reads \p{Name} or \pL at tr.i. Python's re has no Unicode
// classes (it refuses \p as a bad escape), but schemas written for RE2
// use them and dm read them before: both of dm's engines have them, so
// they are kept, written \p{Name} as both read it.
func (tr *translator) unicodeClass() (string, error) {
	c := tr.src[tr.i+1]
	rest := tr.src[tr.i+2:]
	var name string
	switch {
	case strings.HasPrefix(rest, "{"):
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", &parseError{`missing } in \` + string(c) + `{...}`, tr.i}
		}
		name = rest[1:end]
		tr.i += 2 + end + 1
	case rest != "":
		name = rest[:1]
		tr.i += 3
	default:
		return "", &parseError{`bad escape \` + string(c), tr.i}
	}
	if name == "" || !isIdent(name) {
		return "", &parseError{`bad Unicode class \` + string(c) + "{" + name + "}", tr.i}
	}
	tr.t.unicode = true
	return `\` + string(c) + "{" + name + "}", nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// octal reads up to three octal digits at j (the first may be 0).
func (tr *translator) octal(j int) (rune, int) {
	n, k := 0, 0
	for k < 3 && j+k < len(tr.src) && isOctal(tr.src[j+k]) {
		n = n*8 + int(tr.src[j+k]-'0')
		k++
	}
	return rune(n), k
}

// codeEscape reads \xhh, \uhhhh, \Uhhhhhhhh or \N{...} at tr.i: the rune
// and the escape's length.
func (tr *translator) codeEscape() (rune, int, error) {
	c := tr.src[tr.i+1]
	if c == 'N' {
		return 0, 0, &parseError{`dm does not know Unicode character names (\N{...}); write the character or \uXXXX`, tr.i}
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	end := tr.i + 2 + digits
	if end > len(tr.src) {
		return 0, 0, &parseError{`incomplete escape \` + tr.src[tr.i+1:], tr.i}
	}
	n, err := strconv.ParseUint(tr.src[tr.i+2:end], 16, 32)
	if err != nil {
		return 0, 0, &parseError{`incomplete escape \` + tr.src[tr.i+1:end], tr.i}
	}
	if n > utf8.MaxRune {
		return 0, 0, &parseError{`bad escape \` + tr.src[tr.i+1:end], tr.i}
	}
	return rune(n), 2 + digits, nil
}

// class reads a character class [...].
func (tr *translator) class() error {
	start := tr.i
	tr.i++
	tr.both("[")
	if tr.i < len(tr.src) && tr.src[tr.i] == '^' {
		tr.both("^")
		tr.i++
	}
	first, negated, notSpace := true, strings.HasSuffix(tr.net.String(), "[^"), false
	for {
		if tr.i >= len(tr.src) {
			return &parseError{"unterminated character set", start}
		}
		c := tr.src[tr.i]
		switch {
		case c == ']' && !first:
			if notSpace && !negated {
				// regexp2's \S has \x1c-\x1f, which Python's \s has.
				tr.net.WriteString(`-[\x1c-\x1f]`)
			}
			tr.both("]")
			tr.i++
			return nil
		case c == '\\':
			if tr.i+1 >= len(tr.src) {
				return &parseError{"bad escape (end of pattern)", tr.i}
			}
			e := tr.src[tr.i+1]
			switch e {
			case 'd', 'w', 's':
				tr.classEscape(e, true)
				tr.i += 2
			case 'D', 'W', 'S':
				if tr.flags&ASCII != 0 {
					return &parseError{`dm cannot read \` + string(e) + ` inside a character class under the ASCII flag; use a negated class ([^...])`, tr.i}
				}
				notSpace = notSpace || e == 'S'
				tr.classEscape(e, true)
				tr.i += 2
			case 'b':
				tr.literal('\b', true)
				tr.i += 2
			case 'a', 'f', 'n', 'r', 't', 'v':
				tr.both(`\` + string(e))
				tr.i += 2
			case 'p', 'P':
				cls, err := tr.unicodeClass()
				if err != nil {
					return err
				}
				tr.both(cls)
			case 'x', 'u', 'U', 'N':
				r, n, err := tr.codeEscape()
				if err != nil {
					return err
				}
				tr.literal(r, true)
				tr.i += n
			case '0', '1', '2', '3', '4', '5', '6', '7':
				r, n := tr.octal(tr.i + 1)
				if r > 0o377 {
					return &parseError{"octal escape value outside of range 0-0o377", tr.i}
				}
				tr.literal(r, true)
				tr.i += 1 + n
			default:
				if e < utf8.RuneSelf && (e >= 'a' && e <= 'z' || e >= 'A' && e <= 'Z' || e >= '0' && e <= '9') {
					return &parseError{`bad escape \` + string(e), tr.i}
				}
				r, n := utf8.DecodeRuneInString(tr.src[tr.i+1:])
				tr.literal(r, true)
				tr.i += 1 + n
			}
		case c == '-':
			tr.both("-")
			tr.i++
		default:
			r, n := utf8.DecodeRuneInString(tr.src[tr.i:])
			tr.literal(r, true)
			tr.i += n
		}
		first = false
	}
}
