package api

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
)

func TestLocalChoose(t *testing.T) {
	example := RegistrySpec{Prefix: "github.com/acme/templates", FS: fstest.MapFS{}}
	gh := GitHubSpec{APIURL: fetch.DefaultGitHubAPI, Token: "t0ken"}
	tests := []struct {
		name     string
		c        LocalChoice
		want     []string // spec.String() of each
		def      string
		wantFlag string // a ChoiceError's flag
		wantErr  bool
	}{
		{name: "nothing: the example", want: []string{"github.com/acme/templates=(embedded)"}, def: "github.com/acme/templates"},
		{name: "the example by name", c: LocalChoice{Registry: "acme/templates/web"}, want: []string{"github.com/acme/templates=(embedded)"}, def: "github.com/acme/templates/web"},
		{name: "one directory is the default", c: LocalChoice{Dirs: []string{"a/b=./d"}}, want: []string{"github.com/a/b=./d"}, def: "github.com/a/b"},
		{name: "two directories, no default", c: LocalChoice{Dirs: []string{"a/b=./d", "c/d=./e"}}, want: []string{"github.com/a/b=./d", "github.com/c/d=./e"}},
		{name: "a directory serves --registry", c: LocalChoice{Dirs: []string{"a/b=./d", "c/d=./e"}, Registry: "c/d"}, want: []string{"github.com/a/b=./d", "github.com/c/d=./e"}, def: "github.com/c/d"},
		{name: "GitHub for --registry", c: LocalChoice{Registry: "o/r/coll"}, want: []string{"github.com/o/r=github o/r via " + fetch.DefaultGitHubAPI}, def: "github.com/o/r/coll"},
		{name: "the example's name with a directory is GitHub", c: LocalChoice{Dirs: []string{"a/b=./d"}, Registry: "acme/templates"},
			want: []string{"github.com/a/b=./d", "github.com/acme/templates=github acme/templates via " + fetch.DefaultGitHubAPI}, def: "github.com/acme/templates"},
		{name: "GitHub Enterprise with its API", c: LocalChoice{Registry: "ghe.example.com/o/r", GitHub: GitHubSpec{APIURL: "https://ghe.example.com/api/v3/"}},
			want: []string{"ghe.example.com/o/r=github o/r via https://ghe.example.com/api/v3/"}, def: "ghe.example.com/o/r"},
		{name: "another host without its API", c: LocalChoice{Registry: "ghe.example.com/o/r"}, wantErr: true},
		{name: "bad directory", c: LocalChoice{Dirs: []string{"foo"}}, wantFlag: "registry-dir"},
		{name: "directory twice", c: LocalChoice{Dirs: []string{"a/b=./d", "github.com/a/b=./e"}}, wantFlag: "registry-dir"},
		{name: "bad registry", c: LocalChoice{Registry: "a/b/c/d/e"}, wantFlag: "registry"},
		{name: "an OCI registry", c: LocalChoice{OCI: []string{"acme/templates=oci://127.0.0.1:5000/acme/t"}}, want: []string{"github.com/acme/templates=oci://127.0.0.1:5000/acme/t"}, def: "github.com/acme/templates"},
		{name: "plain HTTP", c: LocalChoice{OCI: []string{"acme/templates=oci://127.0.0.1:5000/acme/t"}, PlainHTTP: true}, want: []string{"github.com/acme/templates=oci://127.0.0.1:5000/acme/t (plain HTTP)"}, def: "github.com/acme/templates"},
		{name: "--registry oci://", c: LocalChoice{Registry: "oci://ghcr.io/acme/templates"}, want: []string{"ghcr.io/acme/templates=oci://ghcr.io/acme/templates"}, def: "ghcr.io/acme/templates"},
		{name: "--registry oci:// with a port", c: LocalChoice{Registry: "oci://127.0.0.1:5000/acme/templates"}, want: []string{"127.0.0.1/acme/templates=oci://127.0.0.1:5000/acme/templates"}, def: "127.0.0.1/acme/templates"},
		{name: "--registry oci:// of another depth", c: LocalChoice{Registry: "oci://ghcr.io/acme"}, wantFlag: "registry"},
		{name: "OCI beside a directory", c: LocalChoice{Dirs: []string{"a/b=./d"}, OCI: []string{"c/d=oci://ghcr.io/c/d"}, Registry: "c/d"}, want: []string{"github.com/a/b=./d", "github.com/c/d=oci://ghcr.io/c/d"}, def: "github.com/c/d"},
		{name: "OCI twice", c: LocalChoice{Dirs: []string{"a/b=./d"}, OCI: []string{"a/b=oci://ghcr.io/c/d"}}, wantFlag: "registry-oci"},
		{name: "bad OCI URL", c: LocalChoice{OCI: []string{"a/b=https://ghcr.io/c/d"}}, wantFlag: "registry-oci"},
		{name: "upper case OCI path", c: LocalChoice{OCI: []string{"a/b=oci://ghcr.io/Acme/d"}}, wantFlag: "registry-oci"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			c.Example = example
			if c.GitHub.APIURL == "" {
				c.GitHub = gh
			}
			specs, def, err := c.Choose()
			var ce *ChoiceError
			switch {
			case tt.wantFlag != "":
				if !errors.As(err, &ce) || ce.Flag != tt.wantFlag || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("error %v, want a ChoiceError of --%s", err, tt.wantFlag)
				}
				return
			case tt.wantErr:
				if err == nil || errors.As(err, &ce) || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("error %v, want an InvalidArgument that is no ChoiceError", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			var got []string
			for _, s := range specs {
				got = append(got, s.String())
				if s.GitHub != nil && s.GitHub.Token != gh.Token && c.GitHub.Token == gh.Token {
					t.Errorf("%s: the token is not passed on", s)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("specs %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("spec %d: %q, want %q", i, got[i], tt.want[i])
				}
			}
			if def.String() != tt.def && !(def.IsZero() && tt.def == "") {
				t.Errorf("default %q, want %q", def.String(), tt.def)
			}
		})
	}
}

func TestForReference(t *testing.T) {
	c := LocalChoice{GitHub: GitHubSpec{APIURL: "http://127.0.0.1:1/", Token: "t"}}
	tests := []struct {
		ref, want string
		ok        bool
	}{
		{"github.com/o/r/web:v1", "github.com/o/r=github o/r via http://127.0.0.1:1/", true},
		{"github.com/o/r/coll/web@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "github.com/o/r=github o/r via http://127.0.0.1:1/", true},
		{"web:v1", "", false},
		{"ghe.example.com/o/r/web:v1", "", false},
		{"::bad", "", false},
	}
	for _, tt := range tests {
		spec, ok := c.ForReference(tt.ref)
		if ok != tt.ok || ok && spec.String() != tt.want {
			t.Errorf("ForReference(%q) = %q, %v; want %q, %v", tt.ref, spec.String(), ok, tt.want, tt.ok)
		}
		if ok && spec.GitHub.Token != "t" {
			t.Errorf("ForReference(%q): token %q not passed on", tt.ref, spec.GitHub.Token)
		}
	}
}

// brokenFS fails every read, as an unreachable source does.
type brokenFS struct{}

func (brokenFS) Open(string) (fs.File, error) { return nil, errors.New("source unreachable") }

func TestOpenAndIndexOnce(t *testing.T) {
	ctx := context.Background()
	if _, err := OpenRegistries([]RegistrySpec{{Prefix: "github.com/a/b"}}, Setup{}); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("a spec without a source: %v, want InvalidArgument", err)
	}
	cache := t.TempDir()
	open := func(fsys fs.FS, cacheDir string) []*index.Registry {
		t.Helper()
		regs, err := OpenRegistries([]RegistrySpec{{Prefix: "github.com/a/b", FS: fsys}}, Setup{})
		if err != nil {
			t.Fatal(err)
		}
		regs[0].CacheDir = cacheDir // embedded registries persist nothing by themselves
		return regs
	}
	good := fstest.MapFS{"web/v1/web.jinja": {Data: []byte("resources: []\n")}}
	if err := IndexOnce(ctx, open(good, cache), nil); err != nil {
		t.Fatal(err)
	}

	var stale []string
	regs := open(brokenFS{}, cache)
	err := IndexOnce(ctx, regs, func(g *index.Registry, err error) { stale = append(stale, g.Name+": "+err.Error()) })
	if err != nil || len(stale) != 1 || regs[0].Snapshot() == nil || regs[0].Snapshot().Templates != 1 {
		t.Errorf("unreachable with a persisted snapshot: %v, stale %q; want the snapshot served and stale told", err, stale)
	}
	if err := IndexOnce(ctx, open(brokenFS{}, ""), nil); err == nil {
		t.Errorf("unreachable without a snapshot: no error")
	}
}
