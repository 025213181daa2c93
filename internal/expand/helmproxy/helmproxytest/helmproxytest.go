// Package helmproxytest builds dm-helm and dm-helm-render for tests that
// render charts through package helmproxy, as a user's dm would.
package helmproxytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Programs are dm-helm and dm-helm-render built once for a test binary:
// its first test that asks builds them, the others share them (a build
// links two programs, seconds each). A package declares one and has its
// TestMain call Remove after m.Run.
type Programs struct {
	once sync.Once
	dir  string
	err  error
}

// Paths builds the programs on first use and returns dm-helm's and
// dm-helm-render's paths; -short skips the test.
func (p *Programs) Paths(t testing.TB) (helm, render string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds dm-helm")
	}
	p.once.Do(func() {
		if p.dir, p.err = os.MkdirTemp("", "dm-helm-test-"); p.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", p.dir+string(filepath.Separator), "github.com/dmhq/dm/cmd/dm-helm", "github.com/dmhq/dm/cmd/dm-helm-render")
		if out, err := cmd.CombinedOutput(); err != nil {
			p.err = fmt.Errorf("building dm-helm and dm-helm-render: %w\n%s", err, out)
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return filepath.Join(p.dir, "dm-helm"), filepath.Join(p.dir, "dm-helm-render")
}

// Helm is Paths' dm-helm, dm-helm-render beside it.
func (p *Programs) Helm(t testing.TB) string {
	t.Helper()
	helm, _ := p.Paths(t)
	return helm
}

// Remove deletes the built programs.
func (p *Programs) Remove() {
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}
