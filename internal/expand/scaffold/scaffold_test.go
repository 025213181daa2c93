package scaffold

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, lang string
		want       []string // files written, relative to dir
	}{
		{"web", "jinja", []string{"web/v0.1.0/web.jinja", "web/v0.1.0/web.jinja.schema", "web/v0.1.0/example.yaml"}},
		{"apps/api", "py", []string{"apps/api/v0.1.0/api.py", "apps/api/v0.1.0/api.py.schema", "apps/api/v0.1.0/example.yaml"}},
		{"db", "openshift", []string{"db/v0.1.0/db.yaml", "db/v0.1.0/example.yaml"}},
	}
	for _, tt := range tests {
		var got []string
		err := Write(dir, tt.name, tt.lang, func(p string) {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel))
		})
		if err != nil {
			t.Fatalf("Write(%q, %q): %v", tt.name, tt.lang, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Write(%q, %q) wrote %q, want %q", tt.name, tt.lang, got, tt.want)
		}
		ex, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tt.name), "v0.1.0", "example.yaml"))
		if err != nil || !strings.Contains(string(ex), tt.name+":v0.1") {
			t.Errorf("%s's example does not name %s:v0.1: %v\n%s", tt.name, tt.name, err, ex)
		}
	}
	if err := Write(dir, "web", "jinja", func(string) { t.Error("wrote over an existing template") }); !errors.Is(err, fs.ErrExist) {
		t.Errorf("an existing template: %v, want ErrExist", err)
	}
}

func TestRefused(t *testing.T) {
	for _, tt := range []struct{ name, lang, want string }{
		{"x", "ruby", `"ruby": want `},
		{"Bad_Name", "jinja", "not a valid name"},
		{"a/b/c", "jinja", "COLLECTION/TEMPLATE"},
		{"a/", "jinja", "not a valid name"},
	} {
		dir := t.TempDir()
		err := Write(dir, tt.name, tt.lang, func(p string) { t.Errorf("wrote %s", p) })
		if !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Write(%q, %q): %v, want InvalidArgument saying %q", tt.name, tt.lang, err, tt.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("Write(%q, %q) left %d entries", tt.name, tt.lang, len(entries))
		}
	}
}
