package derrors

import (
	"errors"
	"slices"
	"testing"
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
