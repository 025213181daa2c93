package index_test

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/index/indextest"
)

func build(files map[string]string) *index.Snapshot {
	meta := []byte(nil)
	if m, ok := files[index.MetadataFile]; ok {
		meta = []byte(m)
	}
	return index.Build("github.com/acme/t", indextest.Tree(files), meta)
}

func TestBuildCollections(t *testing.T) {
	s := build(map[string]string{
		"README.md":                       "x",
		"registry.yaml":                   "collections:\n  apps: stacks/apps\n",
		"redis/v1/redis.jinja":            "",
		"redis/v1/redis.jinja.schema":     "",
		"redis/v1/redis.yaml":             "resources: []", // DM-style example configuration
		"redis/v1/example.yaml":           "",
		"redis/v1.0.2/redis.jinja":        "a",
		"redis/v1.0.2/example.yaml":       "",
		"common/web/v1.2.3/web.gotmpl":    "",
		"common/web/v1.2.3/example.yaml":  "",
		"common/web/v1.2.3/helpers/h.tpl": "",
		"stacks/apps/gb/v1/gb.py":         "",
		"stacks/apps/gb/v1/example.yaml":  "",
		"pg/v2.0.0-rc.1/pg.yaml":          "kind: Template",
		"pg/v2.0.0-rc.1/example.yaml":     "",
	})
	if got := strings.Join(s.CollectionNames(), ","); got != ",apps,common" {
		t.Errorf("collections = %q, want \",apps,common\"", got)
	}
	redis, ok := s.Template("", "redis")
	if !ok || len(redis.Versions) != 2 {
		t.Fatalf("redis = %+v", redis)
	}
	v := redis.Versions[0]
	if v.Name != "v1" || v.Semver != "v1.0.0" || v.Template != "redis.jinja" || v.Language != index.Jinja || v.Schema != "redis.jinja.schema" || v.Example != "example.yaml" {
		t.Errorf("redis v1 = %+v", v)
	}
	if v.Ref != "github.com/acme/t/redis:v1.0.0" {
		t.Errorf("ref = %q", v.Ref)
	}
	web, _ := s.Template("common", "web")
	if web == nil || web.Versions[0].Language != index.GoTmpl || len(web.Versions[0].Files) != 3 {
		t.Errorf("web = %+v", web)
	}
	if gb, ok := s.Template("apps", "gb"); !ok || gb.Versions[0].Language != index.Python {
		t.Errorf("apps/gb not indexed through registry.yaml")
	}
	if pg, ok := s.Template("", "pg"); !ok || pg.Versions[0].Language != index.OpenShift || !pg.Versions[0].Prerelease() {
		t.Errorf("pg = %+v", pg)
	}
	if s.Errors() != 0 {
		t.Errorf("unexpected findings: %v", s.Findings)
	}
	if s.Templates != 4 || s.Versions != 5 {
		t.Errorf("counts = %d templates, %d versions", s.Templates, s.Versions)
	}
}

func TestBuildFindings(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // "path: severity: message part"
	}{
		{"two template files", map[string]string{"t/v1/t.jinja": "", "t/v1/t.py": "a", "t/v1/example.yaml": ""},
			[]string{"t/v1: error: several template files: t.jinja, t.py"}},
		{"no template file", map[string]string{"t/v1/other.jinja": "", "t/v1/example.yaml": ""},
			[]string{"t/v1: error: no template file (want t.jinja"}},
		{"bad version name", map[string]string{"t/v1/t.jinja": "", "t/v1/example.yaml": "", "t/latest/t.jinja": "x"},
			[]string{`t/latest: error: version directory name "latest" is not a version`}},
		{"schema for another file", map[string]string{"t/v1/t.jinja": "", "t/v1/x.jinja.schema": "", "t/v1/example.yaml": ""},
			[]string{"t/v1: error: schema x.jinja.schema is named for x.jinja, not for the template file t.jinja"}},
		{"missing example", map[string]string{"t/v1/t.jinja": ""},
			[]string{"t/v1: warning: no example.yaml"}},
		{"duplicate versions", map[string]string{"t/v1/t.jinja": "", "t/v1/example.yaml": "", "t/v1.0.0/t.jinja": "x", "t/v1.0.0/example.yaml": ""},
			[]string{"t/v1: error: duplicate version: v1 and v1.0.0 are both v1.0.0", "t/v1.0.0: error: duplicate version: v1 and v1.0.0 are both v1.0.0"}},
		{"undiscoverable", map[string]string{"a/b/t/v1/t.jinja": "", "a/b/t/v1/example.yaml": ""},
			[]string{"a/b/t: warning: template directory t is not at the root of a collection"}},
		{"bad registry.yaml", map[string]string{"registry.yaml": "collections: [1", "t/v1/t.jinja": "", "t/v1/example.yaml": ""},
			[]string{"registry.yaml: error: cannot parse"}},
		{"registry.yaml path missing", map[string]string{"registry.yaml": "collections:\n  x: nowhere\n", "t/v1/t.jinja": "", "t/v1/example.yaml": ""},
			[]string{`registry.yaml: warning: collection "x": path "nowhere" does not exist`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := build(tt.files)
			var got []string
			for _, f := range s.Findings {
				got = append(got, f.String())
			}
			for _, w := range tt.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("findings %q lack %q", got, w)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %d findings %q, want %d", len(got), got, len(tt.want))
			}
		})
	}
}

func TestDigestStable(t *testing.T) {
	files := map[string]string{"t/v1/t.jinja": "a", "t/v1/example.yaml": "b", "other/v1/other.py": "c"}
	a, b := build(files), build(files)
	ta, _ := a.Template("", "t")
	tb, _ := b.Template("", "t")
	if ta.Versions[0].Digest != tb.Versions[0].Digest || !strings.HasPrefix(ta.Versions[0].Digest, "sha256:") {
		t.Fatalf("digests differ: %s %s", ta.Versions[0].Digest, tb.Versions[0].Digest)
	}
	files["t/v1/t.jinja"] = "changed"
	tc, _ := build(files).Template("", "t")
	if tc.Versions[0].Digest == ta.Versions[0].Digest {
		t.Fatal("digest did not change with content")
	}
}

// BenchmarkBuild10k indexes a listing of 10,000 template versions (30,000
// files): the target is 100 ms.
func BenchmarkBuild10k(b *testing.B) {
	tree := indextest.Tree(indextest.Files(4, 250, 10))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := index.Build("github.com/acme/t", tree, nil)
		if s.Versions != 10000 {
			b.Fatalf("versions = %d", s.Versions)
		}
	}
}

// TestSignatureFile: a version's signature file is not part of the
// version: not among its files, not in its digest, not a template file
// (a template named signature keeps its own), and recorded apart.
func TestSignatureFile(t *testing.T) {
	files := map[string]string{
		"redis/v1.0.0/redis.jinja":         "kind: a\n",
		"redis/v1.0.0/example.yaml":        "resources: []\n",
		"signature/v1.0.0/signature.jinja": "kind: s\n",
		"signature/v1.0.0/example.yaml":    "resources: []\n",
	}
	before := build(files)
	files["redis/v1.0.0/"+index.SignatureFile] = `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`
	files["signature/v1.0.0/"+index.SignatureFile] = "{}"
	after := build(files)
	for _, name := range []string{"redis", "signature"} {
		b, _ := before.Template("", name)
		a, _ := after.Template("", name)
		vb, va := b.Versions[0], a.Versions[0]
		if va.Digest != vb.Digest || len(va.Files) != len(vb.Files) {
			t.Errorf("%s: signing changed the version: digest %s -> %s, %d -> %d files", name, vb.Digest, va.Digest, len(vb.Files), len(va.Files))
		}
		if _, ok := va.File(index.SignatureFile); ok {
			t.Errorf("%s: the signature file is among the version's files", name)
		}
		if va.Signature == nil || va.Signature.Path != index.SignatureFile || vb.Signature != nil {
			t.Errorf("%s: Signature %+v (before %+v)", name, va.Signature, vb.Signature)
		}
		if va.Problem != "" || va.Template != name+".jinja" {
			t.Errorf("%s: template file %q, problem %q", name, va.Template, va.Problem)
		}
	}
}

// TestFindingMessagesShared checks that a finding many versions get keeps
// one copy of its text, not one per version.
func TestFindingMessagesShared(t *testing.T) {
	snap := build(map[string]string{
		"web/v1.0.0/web.jinja": "resources: []\n",
		"web/v1.0.1/web.jinja": "resources: []\n",
		"web/v1.1.0/web.jinja": "resources: []\n",
	})
	var msgs []string
	for _, f := range snap.Findings {
		if strings.HasPrefix(f.Message, "no "+index.ExampleFile) {
			msgs = append(msgs, f.Message)
		}
	}
	if len(msgs) != 3 {
		t.Fatalf("findings %v: want three of a missing %s", snap.Findings, index.ExampleFile)
	}
	for _, m := range msgs[1:] {
		if unsafe.StringData(m) != unsafe.StringData(msgs[0]) {
			t.Errorf("the message %q is held once per version", m)
		}
	}
}

// TestVersionFindings checks that each version's findings are those at
// its directory, held once: a part of the snapshot's, which appending to
// a version's cannot change.
func TestVersionFindings(t *testing.T) {
	snap := build(map[string]string{
		"web/v1/web.jinja":            "",
		"web/v1.0.0/web.jinja":        "",
		"web/v1.0.0/example.yaml":     "",
		"web/v1.1.0/web.jinja":        "",
		"web/v1.1.0/web.jinja.schema": "",
		"web/v1.1.0/other.schema":     "",
		"web/v1.2.0/web.jinja":        "",
		"web/v1.2.0/example.yaml":     "",
		"web/v1.3.0/web.jinja":        "",
		"web/v1.3.0/web.py":           "",
		"web/v1.3.0/example.yaml":     "",
	})
	tmpl, ok := snap.Template("", "web")
	if !ok {
		t.Fatalf("no template web; findings %v", snap.Findings)
	}
	want := map[string][]string{
		"web/v1":     {"error: duplicate version", "warning: no example.yaml"},
		"web/v1.0.0": {"error: duplicate version"},
		"web/v1.1.0": {"error: schema other.schema", "warning: no example.yaml"},
		"web/v1.2.0": nil,
		"web/v1.3.0": {"error: several template files"},
	}
	for _, v := range tmpl.Versions {
		var got []string
		for _, f := range v.Findings {
			if f.Path != v.Path {
				t.Errorf("%s: finding %v is not at the version's directory", v.Path, f)
			}
			got = append(got, string(f.Severity)+": "+f.Message)
		}
		slices.Sort(got)
		w := want[v.Path]
		if len(got) != len(w) {
			t.Errorf("%s: findings %q, want %d: %q", v.Path, got, len(w), w)
			continue
		}
		for i := range w {
			if !strings.HasPrefix(got[i], w[i]) {
				t.Errorf("%s: finding %q, want %q", v.Path, got[i], w[i])
			}
		}
		if len(v.Findings) > 0 {
			i := slices.IndexFunc(snap.Findings, func(f index.Finding) bool { return f.Path == v.Path })
			if &snap.Findings[i] != &v.Findings[0] {
				t.Errorf("%s: the findings are a copy of the snapshot's", v.Path)
			}
			before := slices.Clone(snap.Findings)
			_ = append(v.Findings, index.Finding{Path: "x", Message: "appended"})
			if !slices.Equal(before, snap.Findings) {
				t.Errorf("%s: appending to the version's findings changed the snapshot's", v.Path)
			}
		}
	}
}

func TestVersionByRef(t *testing.T) {
	snap := build(map[string]string{
		"web/v1.0.0/web.jinja":     "resources: []\n",
		"web/v1.1.0/web.jinja":     "resources: []\n",
		"db/redis/v2.0.1/redis.py": "def GenerateConfig(ctx):\n  return {'resources': []}\n",
	})
	for _, tc := range []struct {
		ref, path string
	}{
		{"github.com/acme/t/web:v1.1.0", "web/v1.1.0"},
		{"github.com/acme/t/web:v1.0.0", "web/v1.0.0"},
		{"github.com/acme/t/db/redis:v2.0.1", "db/redis/v2.0.1"},
		{"github.com/acme/t/web:v1.2.0", ""},
		{"github.com/acme/t/web", ""},
		{"github.com/acme/t/redis:v2.0.1", ""},
		{"github.com/acme/other/web:v1.1.0", ""},
		{"github.com/acme/tweb:v1.1.0", ""},
		{"", ""},
	} {
		v, ok := snap.VersionByRef(tc.ref)
		switch {
		case tc.path == "" && ok:
			t.Errorf("VersionByRef(%q) = %s, want none", tc.ref, v.Path)
		case tc.path != "" && !ok:
			t.Errorf("VersionByRef(%q): none, want %s", tc.ref, tc.path)
		case ok && v.Path != tc.path:
			t.Errorf("VersionByRef(%q) = %s, want %s", tc.ref, v.Path, tc.path)
		}
	}
}
