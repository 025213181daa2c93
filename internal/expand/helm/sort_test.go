package helm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// sameAsHelm fails t unless sortManifests gives Helm's SortManifests'
// result on files: the same error, manifests and hooks in the same order.
func sameAsHelm(t *testing.T, files map[string]string) {
	t.Helper()
	if msg := diffFromHelm(files); msg != "" {
		t.Fatalf("%s, files:\n%s", msg, dump(files))
	}
}

// diffFromHelm sorts files with sortManifests and with Helm's
// SortManifests and says how the results differ ("" when they do not):
// the same manifests in the same order with the same heads and hooks, or
// the same error.
func diffFromHelm(files map[string]string) string {
	// SortManifests sorts in place: each gets its own copy of the map.
	cp := func() map[string]string {
		m := make(map[string]string, len(files))
		for k, v := range files {
			m[k] = v
		}
		return m
	}
	wantHooks, wantMan, wantErr := releaseutil.SortManifests(cp(), nil, releaseutil.InstallOrder)
	gotHooks, gotMan, gotErr := sortManifests(cp())
	if (wantErr == nil) != (gotErr == nil) {
		return fmt.Sprintf("error %v, Helm's %v", gotErr, wantErr)
	}
	if wantErr != nil {
		if gotErr.Error() != wantErr.Error() {
			return fmt.Sprintf("error %q, Helm's %q", gotErr, wantErr)
		}
		return ""
	}
	if len(gotMan) != len(wantMan) {
		return fmt.Sprintf("%d manifests, Helm %d", len(gotMan), len(wantMan))
	}
	for i := range wantMan {
		g, w := gotMan[i], wantMan[i]
		if g.Name != w.Name || g.Content != w.Content || headKey(g.Head) != headKey(w.Head) {
			return fmt.Sprintf("manifest %d: %s %q, Helm's %s %q", i, g.Name, headKey(g.Head), w.Name, headKey(w.Head))
		}
	}
	if (len(gotHooks) != 0 || len(wantHooks) != 0) && !reflect.DeepEqual(gotHooks, wantHooks) {
		return fmt.Sprintf("hooks\n%s\nHelm's\n%s", hooksString(gotHooks), hooksString(wantHooks))
	}
	return ""
}

func headKey(h *releaseutil.SimpleHead) string {
	s := h.Version + "|" + h.Kind
	if h.Metadata != nil {
		s += "|" + h.Metadata.Name
		for _, a := range []string{release.HookAnnotation, release.HookWeightAnnotation, release.HookDeleteAnnotation} {
			if v, ok := h.Metadata.Annotations[a]; ok {
				s += "|" + a + "=" + v
			}
		}
	}
	return s
}

func hooksString(hs []*release.Hook) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "%s %s %s w=%d %v %v\n", h.Path, h.Kind, h.Name, h.Weight, h.Events, h.DeletePolicies)
	}
	return b.String()
}

func dump(files map[string]string) string {
	var b strings.Builder
	for k, v := range files {
		fmt.Fprintf(&b, "== %s\n%s\n", k, v)
	}
	return b.String()
}

// TestSortManifestsCases holds the sorter to Helm's on documents picked
// for their YAML: each case is one file.
func TestSortManifestsCases(t *testing.T) {
	cases := map[string]string{
		"plain":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: y\n",
		"no kind":           "apiVersion: v1\nmetadata:\n  name: a\n",
		"null metadata":     "kind: Pod\nmetadata:\nspec: {}\n",
		"quoted":            "kind: \"Service\"\nmetadata:\n  name: 'a-b'\n",
		"comments":          "# c\nkind: Job # k\nmetadata:\n  # x\n  name: j # n\n",
		"hook":              "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install, Post-Install\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: hook-succeeded,before-hook-creation\n",
		"unknown hook":      "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-nothing\n",
		"test-success":      "kind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test-success\n",
		"weight word":       "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: post-install\n    helm.sh/hook-weight: heavy\n",
		"weight number":     "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: post-install\n    helm.sh/hook-weight: 3\n",
		"bool note":         "kind: Job\nmetadata:\n  name: j\n  annotations:\n    a: true\n",
		"number name":       "kind: Job\nmetadata:\n  name: 123\n",
		"yes kind":          "kind: yes\n",
		"scalar doc":        "just words",
		"list doc":          "- a\n- b\n",
		"bad indent":        "kind: Job\n  name: x\n",
		"mapping values":    "kind: a: b\n",
		"tab":               "kind: Job\nmetadata:\n\tname: j\n",
		"upper case":        "Kind: Job\nMETADATA:\n  Name: j\n",
		"flow metadata":     "kind: Job\nmetadata: {name: j, annotations: {helm.sh/hook: pre-install}}\n",
		"block note":        "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install\n    note: |\n      text\n",
		"quoted key":        "kind: Job\nmetadata:\n  name: j\n  annotations:\n    \"helm.sh/hook\": pre-install\n",
		"anchor":            "kind: &k Job\nmetadata:\n  name: *k\n",
		"undefined alias":   "kind: Job\nspec:\n  a: *nothing\n",
		"multi-line quote":  "kind: Job\nspec:\n  a: \"one\nkind: Pod\"\n",
		"seq at key level":  "kind: Role\nmetadata:\n  name: r\n  finalizers:\n  - a\nrules:\n- apiGroups: [\"\"]\n  verbs: [get]\n",
		"dup kind":          "kind: Job\nkind: Pod\n",
		"separators":        "---\nkind: A\n---\n---\nkind: B\n--- # c\nkind: C\n---kind: D\n",
		"crlf":              "kind: Job\r\nmetadata:\r\n  name: j\r\n",
		"empty annotations": "kind: Job\nmetadata:\n  annotations:\n  name: j\n",
		"labels then name":  "kind: Svc\nmetadata:\n  labels:\n    a: b\n    c: \"d\"\n  name: s\n",
		"partial":           "",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			sameAsHelm(t, map[string]string{"c/templates/a.yaml": doc, "c/templates/_p.tpl": "kind: [", "c/templates/b.yaml": "kind: Service\nmetadata:\n  name: b\n"})
		})
	}
}

// TestSortManifestsParity compares the sorter with Helm's on generated
// charts: kinds in and out of the install order, hooks of every event
// with weights and delete policies, and heads in YAML's many spellings,
// valid and not.
func TestSortManifestsParity(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 15))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		files := map[string]string{}
		for f := 0; f < 1+r.IntN(4); f++ {
			var docs []string
			for d := 0; d < r.IntN(5); d++ {
				docs = append(docs, genDoc(r))
			}
			files[fmt.Sprintf("c/templates/f%d.yaml", f)] = strings.Join(docs, pick(r, "\n---\n", "\n---\n", "---\n", "\n--- \n\n", "\n---\n---\n"))
		}
		sameAsHelm(t, files)
	}
}

func pick(r *rand.Rand, s ...string) string { return s[r.IntN(len(s))] }

func genDoc(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(10) == 0 {
		b.WriteString(pick(r, "# a comment\n", "\n", "#\n"))
	}
	top := []func(){
		func() { b.WriteString("apiVersion: " + pick(r, "v1", "apps/v1", "\"v1\"", "", "1") + "\n") },
		func() {
			b.WriteString(pick(r, "kind: ", "kind: ", "kind: ", "Kind: ", "kind:") + pick(r, "Deployment", "Service", "ConfigMap", "Job", "Namespace", "Foo", "Bar", "Secret", "'Pod'", "\"CronJob\"", "Role # c", "", "no", "5", "Job: x") + "\n")
		},
		func() {
			b.WriteString("metadata:" + pick(r, "", "", "", "", " {}", " # c") + "\n")
			ind := pick(r, "  ", "  ", "    ", " ")
			meta := []func(){
				func() {
					b.WriteString(ind + "name: " + pick(r, "a", "b", "c-1", "'q'", "\"d\"", "", "0", "on", "x y", "a # c") + "\n")
				},
				func() { b.WriteString(ind + "labels:\n" + ind + ind + "app: x\n" + ind + ind + "n: \"1\"\n") },
				func() {
					b.WriteString(ind + pick(r, "namespace: ns", "finalizers:\n"+ind+"- a", "Name: Z", "desc: |\n"+ind+ind+"name: hidden") + "\n")
				},
				func() {
					b.WriteString(ind + "annotations:" + pick(r, "", "", "", " {}") + "\n")
					ai := ind + pick(r, "  ", "  ", "    ")
					for k := 0; k < r.IntN(4); k++ {
						switch r.IntN(4) {
						case 0:
							b.WriteString(ai + "helm.sh/hook: " + pick(r, "pre-install", "post-install,post-upgrade", "pre-delete, Pre-Upgrade", "test", "test-success", "crash", "\"pre-rollback\"", "", "post-rollback ") + "\n")
						case 1:
							b.WriteString(ai + "helm.sh/hook-weight: " + pick(r, "\"1\"", "\"-3\"", "\"0\"", "'2'", "5", "x", "\"\"") + "\n")
						case 2:
							b.WriteString(ai + "helm.sh/hook-delete-policy: " + pick(r, "hook-succeeded", "before-hook-creation,Hook-Failed", "\"hook-failed\"") + "\n")
						default:
							b.WriteString(ai + pick(r, "note: text", "checksum/config: abc123", "n: 1", "b: true", "\"q\": x", "x: |\n"+ai+"  text", "y: 'it''s'") + "\n")
						}
					}
				},
			}
			r.Shuffle(len(meta), func(i, j int) { meta[i], meta[j] = meta[j], meta[i] })
			for _, f := range meta[:r.IntN(len(meta)+1)] {
				f()
			}
		},
		func() {
			b.WriteString(pick(r, "data:\n  a: b\n  c: |\n    x\n    y\n",
				"spec:\n  replicas: 2\n  ports: [{containerPort: 80}]\n  args: [\"a\", 'b']\n",
				"rules:\n- apiGroups: [\"\"]\n  verbs: [get, list]\n",
				"spec:\n  template:\n    metadata:\n      name: inner\n      annotations:\n        helm.sh/hook: pre-install\n",
				"stringData:\n  k: \"v: w\"\n",
				"spec:\n  a: \"open\n  still\"\n",
				"spec:\n  a: &x 1\n  b: *x\n",
				"spec:\n\ta: 1\n",
				"top: value\n  deeper: x\n",
				"type: Opaque\n",
				"data:\n  s: |\n    text\n   x: y\n",
				"spec:\n  template:\n    metadata:\n      labels:\n        a: b\n"+pick(r, "       ", "         ", "        ")+"c: d\n",
				"spec:\n  l:\n  - a: 1\n"+pick(r, "    ", "   ", "  ")+"b: 2\n  - c\n  m: x\n",
				"spec:\n    a: 1\n  b: 2\n",
			))
		},
	}
	r.Shuffle(len(top), func(i, j int) { top[i], top[j] = top[j], top[i] })
	for _, f := range top[:r.IntN(len(top)+1)] {
		f()
	}
	return b.String()
}

// BenchmarkSortManifests compares the sorter with Helm's on the thirty
// chart's rendered files.
func BenchmarkSortManifests(b *testing.B) {
	files := renderedThirty(b)
	b.Run("dm", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := sortManifests(files); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("helm", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func renderedThirty(b *testing.B) map[string]string {
	c := loadDir(b, "testdata/charts/thirty")
	vals, err := chartutil.ToRenderValues(c, map[string]any{}, chartutil.ReleaseOptions{Name: "bench", Namespace: "default", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		b.Fatal(err)
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// TestSplitManifestsParity compares the splitter with Helm's on strings
// made of separators, whitespace and text.
func TestSplitManifestsParity(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 15))
	parts := []string{"---", "-", "\n", " ", "\t", "\v", "\r", "a", "k: v", "\n---\n", "\n--- ", "--", "\u00a0"}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for j := 0; j < r.IntN(12); j++ {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		s := b.String()
		want := releaseutil.SplitManifests(s)
		got := splitManifests(s)
		ok := len(got) == len(want)
		for k := 0; ok && k < len(got); k++ {
			ok = want[fmt.Sprintf("manifest-%d", k)] == got[k]
		}
		if !ok {
			t.Fatalf("splitManifests(%q) = %q, Helm's %q", s, got, want)
		}
	}
}

// A body's characters are Helm's to judge: a control character, even in
// a comment, is refused with Helm's error.
func TestSortManifestsBodyCharacters(t *testing.T) {
	for _, doc := range []string{
		"kind: ConfigMap\nmetadata:\n  name: c\ndata:\n  s: a\x01b\n",
		"#\x00",
		"kind: ConfigMap\nmetadata:\n  name: c\ndata:\n  s: \xff\n",
		"kind: ConfigMap\nmetadata:\n  name: c\ndata:\n  s: caf\u00e9\n",
	} {
		sameAsHelm(t, map[string]string{"c/templates/a.yaml": doc, "c/templates/b.yaml": "0"})
		sameAsHelm(t, map[string]string{"c/templates/a.yaml": doc})
	}
}
