package oci

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	for _, tt := range []struct {
		in, host, path string
		ok             bool
	}{
		{"oci://ghcr.io/acme/templates", "ghcr.io", "acme/templates", true},
		{"oci://127.0.0.1:5000/a", "127.0.0.1:5000", "a", true},
		{"oci://Registry.Example.com/a/b/", "registry.example.com", "a/b", true},
		{"oci://host", "host", "", true},
		{"oci://ghcr.io/a__b/c-d/e.f", "ghcr.io", "a__b/c-d/e.f", true},
		{"https://ghcr.io/a", "", "", false},
		{"oci://user:pw@ghcr.io/a", "", "", false},
		{"oci://ghcr.io/Acme", "", "", false},
		{"oci://ghcr.io/a//b", "", "", false},
		{"oci://ghcr.io/-a", "", "", false},
		{"oci://ghcr.io/a?x=1", "", "", false},
		{"oci://ghcr.io/a..b", "", "", false},
		{"oci://ghcr.io/a._b", "", "", false},
		{"oci://ghcr.io/a___b", "", "", false},
		{"oci://ghcr.io/a---b", "ghcr.io", "a---b", true},
		{"oci:///a", "", "", false},
	} {
		loc, err := ParseURL(tt.in)
		if (err == nil) != tt.ok || loc.Host != tt.host || loc.Path != tt.path {
			t.Errorf("ParseURL(%q) = %+v, %v", tt.in, loc, err)
		}
	}
}

// FuzzParseURL: no input panics, and an accepted URL names a host and a
// repository path the distribution spec allows, and prints back as it
// parses.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"oci://ghcr.io/acme/templates", "oci://127.0.0.1:5000/a", "oci://h/a__b/c", "oci://h/a.-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseURL(s)
		if err != nil {
			return
		}
		if loc.Host == "" || strings.ContainsAny(loc.Host, "/@?#") || loc.Path != "" && checkRepository(loc.Path) != nil {
			t.Fatalf("accepted %q as %+v", s, loc)
		}
		again, err := ParseURL(loc.String())
		if err != nil || again != loc {
			t.Fatalf("%q prints as %q, which parses as %+v, %v", s, loc.String(), again, err)
		}
	})
}
