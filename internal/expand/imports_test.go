package expand

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

// TestReadImportsURL: an import that is a URL (which gcloud downloaded for
// Deployment Manager; deploymentmanager-samples' igm-updater imports
// lb-l3.jinja so from a schema) is refused by name, in a configuration or
// a schema, before any import it lists is read; file imports are read,
// with their schemas' imports.
func TestReadImportsURL(t *testing.T) {
	files := map[string]string{
		"a.jinja":        "resources: []\n",
		"a.jinja.schema": "imports:\n- path: b.jinja\n",
		"b.jinja":        "resources: []\n",
		"u.jinja":        "resources: []\n",
		"u.jinja.schema": "imports:\n- path: missing.jinja\n- path: https://example.com/x/lb.jinja\n  name: lb.jinja\n",
	}
	for _, c := range []struct {
		name, config, want, err string
	}{
		{"files", "imports: [a.jinja]\nresources: []\n", "a.jinja a.jinja.schema b.jinja", ""},
		{"url in the configuration", "imports:\n- path: HTTPS://example.com/t.jinja\nresources: []\n", "",
			`config.yaml: import "HTTPS://example.com/t.jinja" is a URL, which gcloud downloaded`},
		{"url in a schema", "imports: [u.jinja]\nresources: []\n", "",
			`u.jinja.schema: import "https://example.com/x/lb.jinja" is a URL`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(c.config), "config.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadImports(cfg, "config.yaml", func(p string) ([]byte, error) {
				if strings.Contains(p, ":") {
					t.Errorf("read %q", p)
				}
				b, ok := files[p]
				if !ok {
					return nil, fs.ErrNotExist
				}
				return []byte(b), nil
			})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if keys := strings.Join(sortedKeys(got), " "); keys != c.want {
				t.Errorf("read %s, want %s", keys, c.want)
			}
		})
	}
}
