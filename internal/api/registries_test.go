package api

import (
	"errors"
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
