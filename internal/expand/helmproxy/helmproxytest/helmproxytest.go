// Package helmproxytest builds dm-helm and dm-helm-render for tests that
// render charts through package helmproxy, as a user's dm would.
package helmproxytest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds cmd/dm-helm and cmd/dm-helm-render into a directory of the
// test and returns dm-helm's path, dm-helm-render beside it; -short skips
// the test.
func Build(t testing.TB) string {
	t.Helper()
	helm, _ := Programs(t)
	return helm
}

// Programs is Build returning both paths: dm-helm and dm-helm-render.
func Programs(t testing.TB) (helm, render string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds dm-helm")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/dmhq/dm/cmd/dm-helm", "github.com/dmhq/dm/cmd/dm-helm-render")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building dm-helm and dm-helm-render: %v\n%s", err, out)
	}
	return filepath.Join(dir, "dm-helm"), filepath.Join(dir, "dm-helm-render")
}
