package driver

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDepsLeaveOutTemplateLanguages: history storage reads layouts and
// references only, so it must not link the expansion engine or the
// template languages (package layout holds those types apart).
func TestDepsLeaveOutTemplateLanguages(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/nikolalohinski/gonja",
		"go.starlark.net",
		"github.com/Masterminds/sprig",
		"github.com/dmhq/dm/internal/expand",
	}
	allowed := map[string]bool{"github.com/dmhq/dm/internal/expand/layout": true}
	for _, dep := range strings.Fields(string(out)) {
		if allowed[dep] {
			continue
		}
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("driver depends on %s", dep)
			}
		}
	}
}
