// Package sigproxytest builds dm-sigstore for tests that verify or sign
// through package sigproxy, as a user's dm does.
package sigproxytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Program is dm-sigstore built once for a test binary: its first test
// that asks builds it, the others share it. A package declares one and
// has its TestMain call Remove after m.Run.
type Program struct {
	once sync.Once
	dir  string
	err  error
}

// Path builds dm-sigstore on first use and returns its path.
func (p *Program) Path(t testing.TB) string {
	t.Helper()
	p.once.Do(func() {
		if p.dir, p.err = os.MkdirTemp("", "dm-sigstore-test-"); p.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", p.dir+string(filepath.Separator), "github.com/dmhq/dm/cmd/dm-sigstore")
		if out, err := cmd.CombinedOutput(); err != nil {
			p.err = fmt.Errorf("building dm-sigstore: %w\n%s", err, out)
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return filepath.Join(p.dir, "dm-sigstore")
}

// Remove deletes the built program.
func (p *Program) Remove() {
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}
