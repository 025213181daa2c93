package derrors

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNear(t *testing.T) {
	names := []string{"nginx", "redis", "redis-operator", "web", "postgres", "Redis"}
	tests := []struct {
		name string
		want []string
	}{
		{"ngnix", []string{"nginx"}},
		{"REDIS", []string{"Redis", "redis"}},
		{"rdis", []string{"Redis", "redis"}},
		{"wbe", []string{"web"}},
		{"xyz", nil},
		{"ab", nil}, // short names: case only
	}
	for _, tt := range tests {
		if got := Near(tt.name, names); !slices.Equal(got, tt.want) {
			t.Errorf("Near(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestErrorf(t *testing.T) {
	err := Errorf(NotFound, "x:v1.3 not found; try %s", "x:v1.1")
	if !errors.Is(err, NotFound) || err.Error() != "x:v1.3 not found; try x:v1.1" {
		t.Errorf("Errorf = %q (Is NotFound: %v)", err, errors.Is(err, NotFound))
	}
	if HTTPStatus(err) != 404 {
		t.Errorf("HTTPStatus = %d, want 404", HTTPStatus(err))
	}
}

func TestMessage(t *testing.T) {
	long := strings.Repeat("é", 1<<20) // 2 MB of two-byte runes
	tests := []struct {
		name string
		err  error
		want func(string) bool
	}{
		{"nil", nil, func(s string) bool { return s == "" }},
		{"short", errors.New("ref x: not found"), func(s string) bool { return s == "ref x: not found" }},
		{"long input kept at both ends", fmt.Errorf("reference %q: %w", "start"+long+"end", InvalidArgument), func(s string) bool {
			return len(s) <= MaxMessageBytes+64 && strings.HasPrefix(s, `reference "startéé`) &&
				strings.HasSuffix(s, `end": invalid argument`) && strings.Contains(s, "bytes left out") && utf8.ValidString(s)
		}},
	}
	for _, tt := range tests {
		if got := Message(tt.err); !tt.want(got) {
			t.Errorf("%s: Message = %.200q (%d bytes)", tt.name, got, len(got))
		}
	}
}
