package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy/release"
)

// The deploy commands' usage errors, found before any cluster is
// contacted (the end-to-end tests are in the repository root and
// internal/deploy).
func TestDeployUsageErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"deploy"}, 2, "accepts 1 arg"},
		{[]string{"deploy", "redis:v1", "--dry-run=bogus"}, 2, `--dry-run="bogus": want client or server`},
		{[]string{"rollback", "cache", "two"}, 2, `revision "two": want a positive number`},
		{[]string{"rollback", "cache", "0"}, 2, `revision "0"`},
		{[]string{"update"}, 2, "accepts between 1 and 2 arg"},
		{[]string{"get", "a", "b"}, 2, "accepts 1 arg"},
		{[]string{"--kubeconfig", missing, "list"}, 1, "kubeconfig"},
		{[]string{"--kubeconfig", missing, "deploy", "nosuch.yaml"}, 1, "configuration file"},
	} {
		r := dmRun(t, nil, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("dm %v = %d %q, want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}

// A deployment dm-controller manages is marked in list and history.
func TestStatusCellMarksController(t *testing.T) {
	for _, tt := range []struct {
		rec  release.Record
		want string
	}{
		{release.Record{Status: release.StatusDeployed}, "deployed"},
		{release.Record{Status: release.StatusDeployed, Controller: "TemplateInstance ns/web"}, "deployed (controller)"},
	} {
		if got := statusCell(&tt.rec); got != tt.want {
			t.Errorf("statusCell(%+v) = %q, want %q", tt.rec, got, tt.want)
		}
	}
}
