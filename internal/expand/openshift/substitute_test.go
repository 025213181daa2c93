package openshift

import (
	"regexp"
	"strings"
	"testing"
)

func TestSubstitute(t *testing.T) {
	s := &substituter{params: map[string]*param{
		"A":     {value: "1"},
		"LONG":  {value: "long value"},
		"EMPTY": {value: ""},
	}}
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"${A}", "1"},
		{"$(A)", "1"},
		{"${{A}}", "1"},
		{"x${A}y$(A)z${{A}}", "x1y1z1"},
		{"${A}${LONG}", "1long value"},
		{"${EMPTY}-", "-"},
		{"$${A}", "$1"},
		{"${B}", "${B}"},
		{"${A", "${A"},
		{"$(A", "$(A"},
		{"${{A}", "${{A}"},
		{"${}", "${}"},
		{"$", "$"},
		{"a$", "a$"},
		{"${ A}", "${ A}"},
		{"$(ref.A.b)", "$(ref.A.b)"},
		{"${A}$", "1$"},
	}
	for _, tt := range tests {
		if got := s.substitute(tt.in); got != tt.want {
			t.Errorf("substitute(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSubstitute checks that substitution never panics, leaves strings
// without '$' alone, and agrees with a regular-expression implementation.
func FuzzSubstitute(f *testing.F) {
	for _, seed := range []string{"", "plain", "${A}", "$(A)", "${{A}}", "x${A}y$(B)z", "$", "${", "$(", "${{", "${{A}", "$$$(A)", "${A}${{A}}"} {
		f.Add(seed, "value")
	}
	ref := regexp.MustCompile(`\$(\{\{(A|B)\}\}|\{(A|B)\}|\((A|B)\))`)
	f.Fuzz(func(t *testing.T, in, value string) {
		s := &substituter{
			params: map[string]*param{"A": {value: value, typed: value}, "B": {value: value, typed: value}},
			budget: 1 << 30, limit: 1 << 30,
		}
		out := s.substitute(in)
		if !strings.Contains(in, "$") && out != in {
			t.Fatalf("substitute(%q) = %q, want it unchanged", in, out)
		}
		if want := ref.ReplaceAllLiteralString(in, value); out != want {
			t.Fatalf("substitute(%q) = %q, want %q", in, out, want)
		}
		if _, err := s.substituteField(in); err != nil && !strings.Contains(err.Error(), "JSON") {
			t.Fatalf("substituteField(%q): %v", in, err)
		}
	})
}
