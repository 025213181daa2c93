package expand

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
)

func TestLintDir(t *testing.T) {
	dir := t.TempDir()
	for p, c := range map[string]string{
		"web/v1/web.jinja":     "resources: []\n",
		"web/v1/example.yaml":  "resources: [{name: w, type: web:v1}]\n",
		"bad/v1/bad.jinja":     "{% if %}\n",
		"broken/v1/broken.py":  "def GenerateConfig(context):\n  return {\n",
		"dup/v1/dup.jinja":     "resources: []\n",
		"dup/v1/example.yaml":  "resources: []\nresources: []\n",
		"loose/notaversion.md": "x\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := LintDir(context.Background(), dir, "github.com/lint/registry", true)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	errs, warns := 0, 0
	for _, f := range rep.Findings {
		paths = append(paths, f.Path)
		if f.Severity == index.Error {
			errs++
		} else {
			warns++
		}
	}
	if !slices.IsSorted(paths) {
		t.Errorf("findings not sorted by path: %q", paths)
	}
	if rep.Errors != errs || rep.Warnings != warns || rep.Errors < 2 || rep.Warnings < 1 {
		t.Errorf("report counts %d errors, %d warnings; the findings %d and %d (want errors for bad and broken, a warning for dup's repeated key):\n%v", rep.Errors, rep.Warnings, errs, warns, rep.Findings)
	}
	for _, want := range []string{"bad/v1", "broken/v1"} {
		if !slices.ContainsFunc(rep.Findings, func(f index.Finding) bool { return f.Path == want && f.Severity == index.Error }) {
			t.Errorf("no error finding at %s: %v", want, rep.Findings)
		}
	}
	if slices.ContainsFunc(rep.Findings, func(f index.Finding) bool { return f.Path == "web/v1" }) {
		t.Errorf("a finding for the clean web/v1: %v", rep.Findings)
	}
	if rep.Templates < 4 || rep.Versions < 4 {
		t.Errorf("%d templates, %d versions; want at least 4 of each", rep.Templates, rep.Versions)
	}

	file := filepath.Join(dir, "web", "v1", "web.jinja")
	for _, d := range []string{filepath.Join(dir, "nowhere"), file} {
		if _, err := LintDir(context.Background(), d, "github.com/lint/registry", false); !errors.Is(err, derrors.InvalidArgument) || !strings.HasPrefix(err.Error(), "linting") {
			t.Errorf("LintDir(%s): %v, want an InvalidArgument error about linting", d, err)
		}
	}
}
