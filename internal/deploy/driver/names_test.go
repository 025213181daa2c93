package driver

import (
	"regexp"
	"strings"
	"testing"
)

func TestSecretNames(t *testing.T) {
	long := strings.Repeat("a", 250) + ".b"
	for _, tc := range []struct {
		name      string
		revision  int
		wantHead  string
		wantLabel string
	}{
		{"web", 1, "dm.v1.web.v1", "web"},
		{"my.app", 12, "dm.v1.my.app.v12", "my.app"},
		{strings.Repeat("x", 63), 1, "dm.v1." + strings.Repeat("x", 63) + ".v1", strings.Repeat("x", 63)},
		{strings.Repeat("x", 64), 1, "dm.v1." + strings.Repeat("x", 64) + ".v1", ""},
		{long, maxRevision, "", ""},
		{strings.Repeat("a.", 120) + "a", 3, "", ""},
	} {
		head := HeadName(tc.name, tc.revision)
		chunk := head + ".0123abcd.9999"
		if tc.wantHead != "" && head != tc.wantHead {
			t.Errorf("HeadName(%q, %d) = %q, want %q", tc.name, tc.revision, head, tc.wantHead)
		}
		for _, n := range []string{head, chunk} {
			if len(n) > 253 || !dnsSubdomain.MatchString(n) {
				t.Errorf("Secret name %q (%d characters) of %q is not a valid object name", n, len(n), tc.name)
			}
		}
		label := DeploymentLabel(tc.name)
		if tc.wantLabel != "" && label != tc.wantLabel {
			t.Errorf("DeploymentLabel(%q) = %q, want %q", tc.name, label, tc.wantLabel)
		}
		if len(label) > 63 || !labelValue.MatchString(label) {
			t.Errorf("DeploymentLabel(%q) = %q is not a valid label value", tc.name, label)
		}
	}
	if HeadName(long, 1) == HeadName(long[:len(long)-1]+"c", 1) {
		t.Error("two long names share a Secret name")
	}
}

var labelValue = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
