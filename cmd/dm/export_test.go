package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The export round trip against a real apiserver is tested in
// internal/deploy/kube (TestExportRoundTrip); these are the command's
// checks before it reaches a cluster.
func TestExportUsage(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.kubeconfig")
	for _, tt := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"export", "--param", "NOEQUALS"}, 2, "want NAME=JSONPATH"},
		{[]string{"export", "--param", "X=.a[b]"}, 2, "neither an index nor a quoted key"},
		{[]string{"export", "-o", "table"}, 2, "want yaml or json"},
		{[]string{"export", "extra"}, 2, `export takes no arguments, got "extra"`},
		{[]string{"--kubeconfig", missing, "-n", "shop", "export"}, 1, "nope.kubeconfig"},
	} {
		r := dmRun(t, nil, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.inStderr) {
			t.Errorf("dm %v: exit %d, stderr %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.inStderr)
		}
	}
}
