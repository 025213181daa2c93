package resolve

import (
	"errors"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func TestParse(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		in   string
		want Ref
	}{
		{"redis:v1", Ref{Template: "redis", Version: "v1"}},
		{"redis", Ref{Template: "redis"}},
		{"common/web:v1.2.3", Ref{Collection: "common", Template: "web", Version: "v1.2.3"}},
		{"dot.delimited.strings/web:v1", Ref{Collection: "dot.delimited.strings", Template: "web", Version: "v1"}},
		{"github.com/acme/templates/redis:v1.1", Ref{Host: "github.com", Owner: "acme", Repo: "templates", Template: "redis", Version: "v1.1"}},
		{"github.com/acme/templates/common/web:v2.0.0-rc.1", Ref{Host: "github.com", Owner: "acme", Repo: "templates", Collection: "common", Template: "web", Version: "v2.0.0-rc.1"}},
		{"github.com/o/r/a.b.c/t:v1", Ref{Host: "github.com", Owner: "o", Repo: "r", Collection: "a.b.c", Template: "t", Version: "v1"}},
		{"ghe.corp.example/o/r/t", Ref{Host: "ghe.corp.example", Owner: "o", Repo: "r", Template: "t"}},
		{"redis:v1@" + digest, Ref{Template: "redis", Version: "v1", Digest: digest}},
		{"redis@" + digest, Ref{Template: "redis", Digest: digest}},
		{"https://raw.githubusercontent.com/ownerA/repository2/master/templateA/v1/templateA.py", Ref{Host: "github.com", Owner: "ownerA", Repo: "repository2", Template: "templateA", Version: "v1"}},
		{"https://raw.githubusercontent.com/o/r/main/common/web/v1.2.3/web.jinja", Ref{Host: "github.com", Owner: "o", Repo: "r", Collection: "common", Template: "web", Version: "v1.2.3"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got != tt.want {
				t.Fatalf("Parse = %+v, want %+v", got, tt.want)
			}
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Fatalf("round trip of %q: %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, wantPart string }{
		{"", "template \"\": empty"},
		{"redis:1.2", `version "1.2"`},
		{"redis:v1.x", `version "v1.x"`},
		{"redis:", `version ""`},
		{"github.com/o/r/multiple/path/segments/t:v1", "path segments between repository and template; at most one (the collection)"},
		{"github.com/o/t:v1", "want github.com/<owner>/<repo>"},
		{"o/r/t:v1", "a short reference is"},
		{"redis:v1@sha256:abc", `digest "sha256:abc"`},
		{"redis:v1@md5:" + strings.Repeat("a", 64), "want sha256:"},
		{"re dis:v1", `character ' '`},
		{"../redis:v1", "not a name"},
		{"https://example.com/t.py", "URL references"},
		{"https://raw.githubusercontent.com/o/r/main/web/v1/other.jinja", "not the template file"},
		{"https://raw.githubusercontent.com/o/r/main/a/b/web/v1/web.jinja", "at most one"},
		{"http://raw.githubusercontent.com/0///t/v0/t", `segment "": empty`},
		{"https://raw.githubusercontent.com/o/r/main//t/v1/t.py", `segment "": empty`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tt.in)
			}
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Errorf("error %v is not InvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tt.wantPart) {
				t.Errorf("error %q does not name %q", err, tt.wantPart)
			}
		})
	}
}

func TestParseRegistry(t *testing.T) {
	tests := []struct {
		in      string
		want    Registry
		wantErr bool
	}{
		{"acme/templates", Registry{Host: "github.com", Owner: "acme", Repo: "templates"}, false},
		{"github.com/acme/templates/common", Registry{Host: "github.com", Owner: "acme", Repo: "templates", Collection: "common"}, false},
		{"acme/templates/a.b", Registry{Host: "github.com", Owner: "acme", Repo: "templates", Collection: "a.b"}, false},
		{"acme", Registry{}, true},
		{"a/b/c/d", Registry{}, true},
	}
	for _, tt := range tests {
		got, err := ParseRegistry(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRegistry(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"redis:v1", "common/web:v1.2.3", "github.com/o/r/c/t:v1.0.0-rc.1@sha256:" + strings.Repeat("0", 64),
		"https://raw.githubusercontent.com/o/r/main/t/v1/t.py", "a.b/c", "x/y/z", "::", "@", "t:v1.2.3+meta",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("Parse(%q): error %v is not InvalidArgument", s, err)
			}
			return
		}
		again, err := Parse(r.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", s, r.String(), err)
		}
		if again != r {
			t.Fatalf("round trip: %+v -> %q -> %+v", r, r.String(), again)
		}
	})
}
