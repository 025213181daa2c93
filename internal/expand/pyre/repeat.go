package pyre

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxRepeat is the largest repeat count Go's regexp takes (RE2's limit).
const maxRepeat = 1000

// maxSplitRepeat is the largest count splitRepeats splits.
const maxSplitRepeat = 10 * maxRepeat

// compileRE2 compiles a translated pattern with Go's regexp; a repeat
// count over RE2's limit of 1000 (`^.{0,1023}$`, the Cloud Foundation
// Toolkit's limit on a description's length) is split into repeats of at
// most 1000 that match the same strings (`.{0,1000}.{0,23}`).
func compileRE2(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(s)
	if err == nil {
		return re, nil
	}
	if r, ok := splitRepeats(s); ok {
		if re2, err2 := regexp.Compile(r); err2 == nil {
			return re2, nil
		}
	}
	return nil, err
}

// repeatRE is a counted repeat: {m}, {m,} or {m,n}.
var repeatRE = regexp.MustCompile(`^\{(\d+)(,(\d*))?\}`)

// splitRepeats rewrites each counted repeat of pattern s whose count is
// over maxRepeat as a run of repeats of the same atom within it; ok is
// false when there is none to rewrite.
func splitRepeats(s string) (out string, ok bool) {
	var b strings.Builder
	atom := -1 // offset in b of the last atom, -1 if none
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			atom = b.Len()
			j := min(i+2, len(s))
			if j < len(s) && (s[i+1] == 'p' || s[i+1] == 'P' || s[i+1] == 'x') && s[j] == '{' {
				if k := strings.IndexByte(s[j:], '}'); k >= 0 {
					j += k + 1
				}
			}
			b.WriteString(s[i:j])
			i = j
		case c == '[':
			atom = b.Len()
			j := classEnd(s, i)
			b.WriteString(s[i:j])
			i = j
		case c == '(':
			j := groupEnd(s, i)
			inner, changed := splitRepeats(s[i+1 : max(i+1, j-1)])
			atom = b.Len()
			if changed {
				ok = true
				b.WriteString("(" + inner + ")")
			} else {
				b.WriteString(s[i:j])
			}
			i = j
		case c == '{' && atom >= 0 && repeatRE.MatchString(s[i:]):
			m := repeatRE.FindStringSubmatch(s[i:])
			i += len(m[0])
			lazy := ""
			if i < len(s) && s[i] == '?' {
				lazy, i = "?", i+1
			}
			lo, _ := strconv.Atoi(m[1])
			hi := lo
			if m[2] != "" {
				hi = -1 // unbounded
				if m[3] != "" {
					hi, _ = strconv.Atoi(m[3])
				}
			}
			if lo <= maxRepeat && hi <= maxRepeat {
				b.WriteString(m[0] + lazy)
				atom = -1
				continue
			}
			if lo > maxSplitRepeat || hi > maxSplitRepeat {
				// Split, it would make a pattern too large to compile in
				// reasonable time: the backtracking engine counts instead.
				return s, false
			}
			ok = true
			rest, a := b.String()[:atom], b.String()[atom:]
			b.Reset()
			b.WriteString(rest)
			b.WriteString(repeatRun(a, lo, hi, lazy))
			atom = -1
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			atom = b.Len()
			if strings.IndexByte("|^$*+?)", c) >= 0 {
				atom = -1
			}
			b.WriteString(s[i : i+n])
			i += n
		}
	}
	return b.String(), ok
}

// repeatRun is atom a repeated lo to hi times (hi -1: unbounded) as
// repeats of at most maxRepeat each.
func repeatRun(a string, lo, hi int, lazy string) string {
	var b strings.Builder
	if hi < 0 {
		for lo > 0 {
			n := min(lo, maxRepeat)
			b.WriteString(a + "{" + strconv.Itoa(n) + "}" + lazy)
			lo -= n
		}
		return b.String() + a + "*" + lazy
	}
	for hi > 0 {
		mx := min(hi, maxRepeat)
		mn := min(lo, mx)
		b.WriteString(a + "{" + strconv.Itoa(mn) + "," + strconv.Itoa(mx) + "}" + lazy)
		lo -= mn
		hi -= mx
	}
	return b.String()
}

// classEnd returns the offset after the character class opening at s[i].
func classEnd(s string, i int) int {
	j := i + 1
	if j < len(s) && s[j] == '^' {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for j < len(s) {
		switch {
		case s[j] == '\\':
			j += 2
			continue
		case strings.HasPrefix(s[j:], "[:"):
			if k := strings.Index(s[j+2:], ":]"); k >= 0 {
				j += k + 4
				continue
			}
		case s[j] == ']':
			return j + 1
		}
		j++
	}
	return len(s)
}

// groupEnd returns the offset after the group opening at s[i].
func groupEnd(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '[':
			j = classEnd(s, j) - 1
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}
