package api

import (
	"errors"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func TestParseDirSpec(t *testing.T) {
	tests := []struct {
		in, prefix, dir string
		wantErr         bool
	}{
		{"github.com/acme/t=./reg", "github.com/acme/t", "./reg", false},
		{"acme/t=/abs/dir", "github.com/acme/t", "/abs/dir", false},
		{"ghe.example.com/acme/t=d", "ghe.example.com/acme/t", "d", false},
		{"acme/t=dir=with=equals", "github.com/acme/t", "dir=with=equals", false},
		{"./reg", "", "", true},
		{"acme=./reg", "", "", true},
		{"acme/t/coll=./reg", "", "", true},
		{"acme/t=", "", "", true},
	}
	for _, tt := range tests {
		s, err := ParseDirSpec(tt.in)
		if (err != nil) != tt.wantErr || s.Prefix != tt.prefix || s.Dir != tt.dir {
			t.Errorf("ParseDirSpec(%q) = %+v, %v", tt.in, s, err)
		}
		if err != nil && !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("ParseDirSpec(%q): error %v is not InvalidArgument", tt.in, err)
		}
	}
}

func TestParseGitHubSpec(t *testing.T) {
	tests := []struct {
		in, prefix, owner, repo, branch string
		wantErr                         bool
	}{
		{"acme/t", "github.com/acme/t", "acme", "t", "", false},
		{"acme/t@main", "github.com/acme/t", "acme", "t", "main", false},
		{"github.com/acme/t@release/1.x", "github.com/acme/t", "acme", "t", "release/1.x", false},
		{"acme", "", "", "", "", true},
		{"acme/t/x", "", "", "", "", true},
		{"acme/t@", "", "", "", "", true},
		{"/t", "", "", "", "", true},
	}
	for _, tt := range tests {
		s, err := ParseGitHubSpec(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseGitHubSpec(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && (s.Prefix != tt.prefix || s.GitHub.Owner != tt.owner || s.GitHub.Repo != tt.repo || s.GitHub.Branch != tt.branch) {
			t.Errorf("ParseGitHubSpec(%q) = %+v %+v", tt.in, s, s.GitHub)
		}
	}
}

// TestIdentity: registries of another object, source or credential never
// share an identity (nor their caches); a spec read again has the same.
func TestIdentity(t *testing.T) {
	base := func() RegistrySpec {
		return RegistrySpec{Prefix: "github.com/acme/t", Namespace: "team-a", Object: "t", UID: "u1",
			GitHub: &GitHubSpec{Owner: "acme", Repo: "t", Branch: "main", APIURL: "https://api.github.com/", Token: "tok"}}
	}
	id := base().Identity()
	if base().Identity() != id {
		t.Fatal("identity not stable")
	}
	same := base()
	same.GitHub.APIURL = "https://api.github.com" // without the slash
	if same.Identity() != id {
		t.Error("the API URL's trailing slash changed the identity")
	}
	for name, change := range map[string]func(*RegistrySpec){
		"namespace": func(s *RegistrySpec) { s.Namespace = "team-b" },
		"object":    func(s *RegistrySpec) { s.Object = "u" },
		"uid":       func(s *RegistrySpec) { s.UID = "u2" },
		"prefix":    func(s *RegistrySpec) { s.Prefix = "github.com/acme/u" },
		"token":     func(s *RegistrySpec) { s.GitHub.Token = "other" },
		"no token":  func(s *RegistrySpec) { s.GitHub.Token = "" },
		"api":       func(s *RegistrySpec) { s.GitHub.APIURL = "https://evil.example/" },
		"repo":      func(s *RegistrySpec) { s.GitHub.Repo = "u" },
		"branch":    func(s *RegistrySpec) { s.GitHub.Branch = "dev" },
	} {
		s := base()
		change(&s)
		if s.Identity() == id {
			t.Errorf("another %s, the same identity", name)
		}
	}
	if strings.Contains(id, "tok") {
		t.Error("the identity shows the token")
	}
}
