package helm

import "testing"

// FuzzSortManifests holds dm's head scanner to Helm's SortManifests on
// arbitrary rendered text: never a panic; where Helm takes the files, the
// same manifests in the same order with the same heads and hooks; where
// Helm refuses them, the same error.
func FuzzSortManifests(f *testing.F) {
	for _, s := range []string{
		"kind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
		"kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: before-hook-creation\n",
		"kind: Pod\nmetadata:\n  name: t\n  annotations:\n    \"helm.sh/hook\": test\n",
		"kind: 'ConfigMap'\nmetadata: {name: c}\n",
		"# comment\n---\n---\nkind: Secret\nmetadata:\n  name: x\n",
		"kind: ConfigMap\nmetadata:\n  name: c\n data:\n  a: b\n",
		"Kind: ConfigMap\nmetadata:\n  name: c\n",
		"kind: ConfigMap\nmetadata:\n  name: &a c\n  labels: *a\n",
		"kind: ConfigMap\r\nmetadata:\r\n  name: c\r\n",
		"kind: [a\n",
		"kind: 1\nmetadata:\n  name: true\n",
	} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		files := map[string]string{"c/templates/a.yaml": a}
		if b != "" {
			files["c/templates/b.yaml"] = b
		}
		if msg := diffFromHelm(files); msg != "" {
			t.Fatalf("%s\nfiles: %q", msg, files)
		}
	})
}
