package pyre

import (
	"strings"
	"testing"
)

// DM read a schema's patterns with Python's re, whose repeat counts go
// past RE2's 1000: such a repeat is split into repeats that match the same
// strings.
func TestSplitRepeats(t *testing.T) {
	tests := []struct {
		pattern, want string
		match         []string
		noMatch       []string
	}{
		{pattern: `^.{0,1023}$`, want: `^.{0,1000}.{0,23}$`,
			match: []string{"", strings.Repeat("x", 1023)}, noMatch: []string{strings.Repeat("x", 1024)}},
		{pattern: `^a{1500}$`, want: `^a{1000,1000}a{500,500}$`,
			match: []string{strings.Repeat("a", 1500)}, noMatch: []string{strings.Repeat("a", 1499), strings.Repeat("a", 1501)}},
		{pattern: `^(ab|c){1001,}$`, want: `^(ab|c){1000}(ab|c){1}(ab|c)*$`,
			match: []string{strings.Repeat("ab", 1001), strings.Repeat("c", 2000)}, noMatch: []string{strings.Repeat("c", 1000)}},
		{pattern: `^[a-z\]]{2,1200}?-\d{3}$`, want: `^[a-z\]]{2,1000}?[a-z\]]{0,200}?-\d{3}$`,
			match: []string{"ab-123", strings.Repeat("]", 1200) + "-123"}, noMatch: []string{"a-123", strings.Repeat("q", 1201) + "-123"}},
		{pattern: `^((x){0,2000})$`, want: `^((x){0,1000}(x){0,1000})$`,
			match: []string{strings.Repeat("x", 2000)}, noMatch: []string{strings.Repeat("x", 2001)}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			got, ok := splitRepeats(tt.pattern)
			if !ok || got != tt.want {
				t.Fatalf("splitRepeats = %q, %v; want %q", got, ok, tt.want)
			}
			re, err := Compile(tt.pattern, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if re.String() != tt.pattern {
				t.Errorf("String() = %q, want the pattern as written", re.String())
			}
			if !re.UsesRE2() {
				t.Errorf("%s does not match with RE2", tt.pattern)
			}
			for _, s := range tt.match {
				if ok, _ := re.MatchString(s); !ok {
					t.Errorf("does not match a string of %d bytes", len(s))
				}
			}
			for _, s := range tt.noMatch {
				if ok, _ := re.MatchString(s); ok {
					t.Errorf("matches a string of %d bytes", len(s))
				}
			}
		})
	}
	for _, p := range []string{`^a{2,3}$`, `x{1000}`, `\{1001}`, `[{]1001}`} {
		if got, ok := splitRepeats(p); ok {
			t.Errorf("splitRepeats(%q) = %q, want it left alone", p, got)
		}
	}
	if _, err := Compile(`a{2000`, 0, 0); err != nil {
		t.Errorf("a brace that is no repeat: %v", err)
	}
	if _, err := Compile(`(a`, 0, 0); err == nil {
		t.Error("an invalid pattern compiled")
	}
}
