package kube

import (
	"strings"
	"testing"
)

// FuzzExportParam checks that any --param path parses or fails cleanly, and
// that lifting it from exported objects never panics and leaves a
// reference to the parameter wherever it lifted a value.
func FuzzExportParam(f *testing.F) {
	for _, s := range []string{"{.spec.replicas}", ".spec.template.spec.containers[0].image",
		"metadata.labels['app']", `$.data["a.b"]`, ".a[", "[0]", ".spec.ports[99999999999999999999]", "{}", "...", ".a['']"} {
		f.Add(s)
	}
	objs := liveList(f) // Export copies what it changes
	f.Fuzz(func(t *testing.T, path string) {
		p, err := ParseExportParam("P=" + path)
		if err != nil {
			return
		}
		tmpl, err := Export("x", objs, []ExportParam{p})
		if err != nil {
			if !strings.Contains(err.Error(), "--param P") {
				t.Fatalf("error %q does not name the parameter", err)
			}
			return
		}
		if _, ok := tmpl["parameters"]; !ok {
			t.Fatalf("Export of %q succeeded without a parameter", path)
		}
	})
}
