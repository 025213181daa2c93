package helm

import (
	"reflect"
	"testing"

	"helm.sh/helm/v3/pkg/releaseutil"
)

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
		cp := func() map[string]string {
			m := make(map[string]string, len(files))
			for k, v := range files {
				m[k] = v
			}
			return m
		}
		wantHooks, wantMan, wantErr := releaseutil.SortManifests(cp(), nil, releaseutil.InstallOrder)
		gotHooks, gotMan, gotErr := sortManifests(cp())
		switch {
		case wantErr == nil && gotErr != nil:
			t.Fatalf("refused what Helm takes: %v\nfiles: %q", gotErr, files)
		case wantErr != nil && gotErr != nil:
			if gotErr.Error() != wantErr.Error() {
				t.Fatalf("error %q, Helm's %q\nfiles: %q", gotErr, wantErr, files)
			}
			return
		case wantErr != nil:
			t.Fatalf("took what Helm refuses (%v)\nfiles: %q", wantErr, files)
		}
		if len(gotMan) != len(wantMan) {
			t.Fatalf("%d manifests, Helm %d\nfiles: %q", len(gotMan), len(wantMan), files)
		}
		for i := range wantMan {
			g, w := gotMan[i], wantMan[i]
			if g.Name != w.Name || g.Content != w.Content || headKey(g.Head) != headKey(w.Head) {
				t.Fatalf("manifest %d: %s %q, Helm's %s %q\nfiles: %q", i, g.Name, headKey(g.Head), w.Name, headKey(w.Head), files)
			}
		}
		if (len(gotHooks) != 0 || len(wantHooks) != 0) && !reflect.DeepEqual(gotHooks, wantHooks) {
			t.Fatalf("hooks\n%s\nHelm's\n%s\nfiles: %q", hooksString(gotHooks), hooksString(wantHooks), files)
		}
	})
}
