package pyre

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/expand/engine"
)

// FuzzTranslate compiles arbitrary patterns: no panic, and where a
// pattern takes RE2, RE2 and the backtracking engine find the same match
// (all groups) on input where RE2 is used, so that the two translations
// say the same thing.
func FuzzTranslate(f *testing.F) {
	for _, s := range [][2]string{
		{`^[a-z]([-a-z0-9]*[a-z0-9])?$`, "web-1"}, {`(?P<n>\w+)-(\d{2,})`, "ab-123"}, {`a{,3}b`, "aaab"},
		{`(?i)Web|db`, "WEB"}, {`[\]\-^a]+`, "-]^"}, {`\x41\101\0[\b]`, "AA\x00\b"}, {`(?x) a  b # c`, "ab"},
		{`(a)|b(c)?`, "bc"}, {`\bx\B`, "xx"}, {`[^\s\d]+$`, "ab 12 cd"}, {`(?s).+`, "a\nb"}, {`a{}{,}`, "a{}"},
		{`(?m)^a$`, "b\na"}, {`.{0,1023}`, "xyz"}, {`(?:a|ab)(c|bcd)(d*)`, "abcd"}, {`(?a)\w\s`, "a "},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, input string) {
		re, err := Compile(pattern, 0, 20*time.Millisecond)
		if err != nil || !re.onRE2(input) {
			return
		}
		if err := re.compileNet(); err != nil {
			t.Fatalf("%q takes RE2 (%q) but not regexp2 (%q): %v", pattern, re.t.re2, re.t.net, err)
		}
		want := re.re2.FindStringSubmatchIndex(input)
		m, err := re.net.FindStringMatch(input)
		var le *engine.LimitError
		if err != nil && (errors.As(re.matchError(err, input), &le)) {
			return // regexp2 took too long; RE2 is what runs
		}
		if err != nil {
			t.Fatalf("%q on %q: %v", pattern, input, err)
		}
		var got []int
		if m != nil {
			got = re.locations(m)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q on %q: regexp2 (%q) %v, RE2 (%q) %v", pattern, input, re.t.net, got, re.t.re2, want)
		}
	})
}
