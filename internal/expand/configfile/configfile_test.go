package configfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

// tree writes files under a new directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRead(t *testing.T) {
	root := tree(t, map[string]string{
		".git/HEAD":               "ref: refs/heads/main\n",
		"deploy/app.yaml":         "imports: [../lib/web.jinja]\nresources: [{name: a, type: ../lib/web.jinja}]\n",
		"deploy/abs.yaml":         "imports: [/etc/passwd]\nresources: []\n",
		"deploy/missing.yaml":     "imports: [nope.jinja]\nresources: []\n",
		"deploy/template.yaml":    "apiVersion: v1\nkind: Template\nobjects: []\n",
		"lib/web.jinja":           "resources: []\n",
		"lib/web.jinja.schema":    "imports: [{path: helpers/m.jinja, name: m}]\n",
		"lib/helpers/m.jinja":     "{% macro x() %}{% endmacro %}\n",
		"lib/link.yaml":           "imports: [link.jinja]\nresources: []\n",
		"outside.jinja":           "resources: []\n",
		"deploy/sub/nested.yaml":  "imports: [../../lib/web.jinja]\nresources: []\n",
		"deploy/sub/plain.yaml":   "resources: []\n",
		"deploy/sub/helper.jinja": "resources: []\n",
		"deploy/sub/sibling.yaml": "imports: [helper.jinja]\nresources: []\n",
		"deploy/sub/escapes.yaml": "imports: [../../outside.jinja]\nresources: []\n",
		"deploy/sub/above.yaml":   "imports: [outside.jinja]\nresources: []\n",
		// The Cloud Foundation Toolkit's layout, its example read in place.
		"cft/templates/net/net.py":            "def generate_config(c):\n  return {'resources': []}\n",
		"cft/templates/net/net.py.schema":     "imports: [{path: helper.py}]\n",
		"cft/templates/net/helper.py":         "X = 1\n",
		"cft/templates/net/examples/net.yaml": "imports: [{path: templates/net/net.py}]\nresources: [{name: n, type: net.py}]\n",
	})
	if err := os.Symlink(filepath.Join(root, "outside.jinja"), filepath.Join(root, "lib", "link.jinja")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, config, importRoot string
		wantImports              []string
		wantErr                  string
		wantIs                   error
	}{
		{name: "../ inside the git work tree, with the schema and its imports", config: "deploy/app.yaml",
			wantImports: []string{"../lib/helpers/m.jinja", "../lib/web.jinja", "../lib/web.jinja.schema"}},
		{name: "no imports", config: "deploy/sub/plain.yaml"},
		{name: "a sibling", config: "deploy/sub/sibling.yaml", wantImports: []string{"helper.jinja"}},
		{name: "two levels up", config: "deploy/sub/nested.yaml",
			wantImports: []string{"../../lib/helpers/m.jinja", "../../lib/web.jinja", "../../lib/web.jinja.schema"}},
		{name: "a Template is not a configuration", config: "deploy/template.yaml"},
		{name: "missing beside the configuration, found in a parent directory", config: "cft/templates/net/examples/net.yaml",
			wantImports: []string{"templates/net/helper.py", "templates/net/net.py", "templates/net/net.py.schema"}},
		{name: "parent directories beyond the import root are not searched", config: "deploy/sub/above.yaml", importRoot: "deploy",
			wantErr: "nor in the parent directories up to the import root", wantIs: os.ErrNotExist},
		{name: "found in a parent directory inside the work tree", config: "deploy/sub/above.yaml", wantImports: []string{"outside.jinja"}},
		{name: "the import root is the configuration's directory", config: "deploy/sub/above.yaml", importRoot: "deploy/sub",
			wantErr: "--import-root DIR lets dm look for it in the parent directories", wantIs: os.ErrNotExist},
		{name: "import root narrower than the tree", config: "deploy/app.yaml", importRoot: "deploy",
			wantErr: "outside the import root", wantIs: derrors.InvalidArgument},
		{name: "symlink leaving the root", config: "lib/link.yaml", importRoot: "lib",
			wantErr: "outside the import root", wantIs: derrors.InvalidArgument},
		{name: "absolute import", config: "deploy/abs.yaml", wantErr: "relative to the configuration", wantIs: derrors.InvalidArgument},
		{name: "missing import", config: "deploy/missing.yaml", wantErr: "nope.jinja", wantIs: os.ErrNotExist},
		{name: "import root that is not there", config: "deploy/app.yaml", importRoot: "nowhere", wantErr: "--import-root", wantIs: os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ir := tt.importRoot
			if ir != "" {
				ir = filepath.Join(root, ir)
			}
			f, err := Read(filepath.Join(root, tt.config), nil, ir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tt.wantIs) {
					t.Fatalf("error %v, want one saying %q and wrapping %v", err, tt.wantErr, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for k := range f.Imports {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.wantImports) {
				t.Errorf("imports %q, want %q", got, tt.wantImports)
			}
			if f.Name != filepath.Base(tt.config) || len(f.Content) == 0 {
				t.Errorf("name %q, %d bytes", f.Name, len(f.Content))
			}
		})
	}
}

func TestReadStdin(t *testing.T) {
	f, err := Read("-", strings.NewReader("resources: []\n"), "")
	if err != nil || f.Name != StdinName || string(f.Content) != "resources: []\n" || f.Imports != nil {
		t.Fatalf("Read(-) = %+v, %v", f, err)
	}
	big := strings.NewReader(strings.Repeat("#", MaxFileSize+1))
	if _, err := Read("-", big, ""); !errors.Is(err, derrors.LimitExceeded) {
		t.Errorf("standard input over the limit: %v, want LimitExceeded", err)
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		size int
		want error
	}{{MaxFileSize, nil}, {MaxFileSize + 1, derrors.LimitExceeded}} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, make([]byte, tt.size), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFile(p)
		if !errors.Is(err, tt.want) || tt.want == nil && len(b) != tt.size {
			t.Errorf("%d bytes: %d read, %v; want %v", tt.size, len(b), err, tt.want)
		}
	}
}

func TestImportRoot(t *testing.T) {
	root := tree(t, map[string]string{".git/HEAD": "x\n", "a/b/c.yaml": "resources: []\n"})
	real, _ := filepath.EvalSymlinks(root)
	plain := t.TempDir()
	realPlain, _ := filepath.EvalSymlinks(plain)
	for _, tt := range []struct{ dir, root, want string }{
		{filepath.Join(root, "a", "b"), "", real},                                           // the enclosing work tree
		{filepath.Join(root, "a", "b"), filepath.Join(root, "a"), filepath.Join(real, "a")}, // given
		{plain, "", realPlain}, // no work tree: the directory
	} {
		got, err := ImportRoot(tt.dir, tt.root)
		if err != nil || got != tt.want {
			t.Errorf("ImportRoot(%q, %q) = %q, %v; want %q", tt.dir, tt.root, got, err, tt.want)
		}
	}
}
