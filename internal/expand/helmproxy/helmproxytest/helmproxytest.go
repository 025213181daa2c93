// Package helmproxytest builds dm-helm for tests that render charts
// through package helmproxy, as a user's dm would.
package helmproxytest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds cmd/dm-helm into a directory of the test and returns its
// path; -short skips the test.
func Build(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds dm-helm")
	}
	p := filepath.Join(t.TempDir(), "dm-helm")
	if out, err := exec.Command("go", "build", "-o", p, "github.com/dmhq/dm/cmd/dm-helm").CombinedOutput(); err != nil {
		t.Fatalf("building dm-helm: %v\n%s", err, out)
	}
	return p
}
