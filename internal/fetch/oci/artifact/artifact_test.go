package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
)

func sample() (Metadata, []Content) {
	meta := Metadata{Name: "redis", Collection: "db", Version: "v1.2.3", Title: "Redis", Description: "A cache.\nSecond line.",
		Source: "https://github.com/acme/templates", Revision: strings.Repeat("a", 40), Created: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	return meta, []Content{
		{Path: "redis.jinja", Data: []byte("resources: []\n")},
		{Path: "redis.jinja.schema", Data: []byte("info: {title: Redis}\n")},
		{Path: "example.yaml", Data: []byte("resources: []\n")},
		{Path: "helpers/lib.py", Data: []byte("def f(): pass\n")},
	}
}

// TestPackReproducible: the same files and metadata, in any order, give
// the same bytes; the config's digest is the one index computes from a
// listing of the same files, so a version has one content digest
// whatever it is read from.
func TestPackReproducible(t *testing.T) {
	meta, files := sample()
	a, err := Pack(meta, files)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		shuffled := append([]Content(nil), files...)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b, err := Pack(meta, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if a.ManifestDigest != b.ManifestDigest || !bytes.Equal(a.Layer, b.Layer) || !bytes.Equal(a.Config, b.Config) {
			t.Fatalf("pack %d differs: %s vs %s", i, a.ManifestDigest, b.ManifestDigest)
		}
	}
	var entries []fetch.Entry
	for _, f := range files {
		entries = append(entries, fetch.Entry{Path: f.Path, SHA: fetch.BlobSHA(f.Data), Size: int64(len(f.Data))})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	if want := index.Digest(entries); a.Digest != want {
		t.Errorf("content digest %s, index says %s", a.Digest, want)
	}

	m, err := ParseManifest(a.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != ArtifactType || m.Config.MediaType != ConfigMediaType || m.Layers[0].MediaType != LayerMediaType {
		t.Errorf("types: %+v", m)
	}
	if m.Annotations[AnnotationVersion] != "v1.2.3" || m.Annotations[AnnotationTitle] != "redis" ||
		m.Annotations[AnnotationCreated] != "2024-01-02T03:04:05Z" || m.Annotations[AnnotationDescription] != "A cache." ||
		m.Annotations[AnnotationRevision] != meta.Revision || m.Annotations[AnnotationSource] != meta.Source {
		t.Errorf("annotations: %v", m.Annotations)
	}
	if m.Config.Digest != a.ConfigDigest || m.Layers[0].Digest != a.LayerDigest || m.Layers[0].Size != int64(len(a.Layer)) {
		t.Errorf("descriptors: %+v", m)
	}
	c, err := ParseConfig(a.Config)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "redis" || c.Collection != "db" || c.Version != "v1.2.3" || c.Digest != a.Digest || len(c.Files) != 4 {
		t.Errorf("config: %+v", c)
	}
	u, err := Unpack(bytes.NewReader(a.Layer), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Match(c); err != nil {
		t.Error(err)
	}
	for _, f := range files {
		if !bytes.Equal(u.Data[f.Path], f.Data) {
			t.Errorf("%s: %q", f.Path, u.Data[f.Path])
		}
	}
	// Another revision is another manifest of the same content.
	meta.Revision = strings.Repeat("b", 40)
	b, _ := Pack(meta, files)
	if b.ManifestDigest == a.ManifestDigest || b.LayerDigest != a.LayerDigest || b.Digest != a.Digest {
		t.Errorf("revision: manifest %s/%s layer %s/%s", a.ManifestDigest, b.ManifestDigest, a.LayerDigest, b.LayerDigest)
	}
}

// TestPackRegistryExample packs every version of the example registry
// and unpacks it again: what goes in comes out, listed as the directory
// lists it.
func TestPackRegistryExample(t *testing.T) {
	root := "../../../../registry-example"
	tree, err := fetch.NewLocal(os.DirFS(root)).Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := index.Build("github.com/acme/templates", tree, nil)
	n := 0
	for _, tm := range snap.AllTemplates() {
		for _, v := range tm.Versions {
			var files []Content
			for _, f := range v.Files {
				b, err := os.ReadFile(filepath.Join(root, v.Path, f.Path))
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, Content{Path: f.Path, Data: b})
			}
			p, err := Pack(Metadata{Name: tm.Name, Collection: tm.Collection, Version: v.Semver}, files)
			if err != nil {
				t.Fatalf("%s: %v", v.Ref, err)
			}
			if p.Digest != v.Digest {
				t.Errorf("%s: packed digest %s, indexed %s", v.Ref, p.Digest, v.Digest)
			}
			u, err := Unpack(bytes.NewReader(p.Layer), 0)
			if err != nil {
				t.Fatalf("%s: %v", v.Ref, err)
			}
			if ContentDigest(u.Files) != v.Digest {
				t.Errorf("%s: unpacked digest differs", v.Ref)
			}
			n++
		}
	}
	if n < 5 {
		t.Fatalf("packed only %d versions", n)
	}
}

func TestPackRefusals(t *testing.T) {
	meta, files := sample()
	tests := []struct {
		name  string
		meta  func(*Metadata)
		files []Content
		kind  error
		want  string
	}{
		{name: "bad name", meta: func(m *Metadata) { m.Name = "a/b" }, kind: derrors.InvalidArgument, want: "template name"},
		{name: "bad version", meta: func(m *Metadata) { m.Version = "1.2.3" }, kind: derrors.InvalidArgument, want: "version"},
		{name: "build metadata", meta: func(m *Metadata) { m.Version = "v1.2.3+b1" }, kind: derrors.InvalidArgument, want: "version"},
		{name: "no files", files: []Content{}, kind: derrors.InvalidArgument, want: "no files"},
		{name: "dotdot", files: []Content{{Path: "../x", Data: nil}}, kind: derrors.InvalidArgument, want: "../x"},
		{name: "hidden", files: []Content{{Path: ".git/config"}}, kind: derrors.InvalidArgument, want: "hidden"},
		{name: "twice", files: []Content{{Path: "a"}, {Path: "a"}}, kind: derrors.InvalidArgument, want: "twice"},
		{name: "too big", files: []Content{{Path: "a", Data: make([]byte, MaxFileBytes+1)}}, kind: derrors.LimitExceeded, want: "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, f := meta, files
			if tt.meta != nil {
				tt.meta(&m)
			}
			if tt.files != nil {
				f = tt.files
			}
			_, err := Pack(m, f)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.kind, tt.want)
			}
		})
	}
}

type entry struct {
	h    tar.Header
	data string
}

func tgz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.h
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.data))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestUnpackRefusals(t *testing.T) {
	bomb := func() []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big", Size: 2 << 20, Mode: 0o644})
		tw.Write(make([]byte, 2<<20))
		tw.Close()
		zw.Close()
		return buf.Bytes()
	}()
	tests := []struct {
		name  string
		layer []byte
		max   int64
		kind  error
		want  string
	}{
		{name: "not gzip", layer: []byte("plain"), kind: derrors.InvalidArgument, want: "not gzip"},
		{name: "symlink", layer: tgz(t, entry{h: tar.Header{Name: "a", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}), kind: derrors.InvalidArgument, want: "not a regular file"},
		{name: "hard link", layer: tgz(t, entry{h: tar.Header{Name: "a", Typeflag: tar.TypeLink, Linkname: "b"}}), kind: derrors.InvalidArgument, want: "not a regular file"},
		{name: "escape", layer: tgz(t, entry{h: tar.Header{Name: "../../x"}, data: "x"}), kind: derrors.InvalidArgument, want: "../../x"},
		{name: "absolute", layer: tgz(t, entry{h: tar.Header{Name: "/etc/x"}, data: "x"}), kind: derrors.InvalidArgument, want: "/etc/x"},
		{name: "hidden", layer: tgz(t, entry{h: tar.Header{Name: "a/.hidden"}, data: "x"}), kind: derrors.InvalidArgument, want: "hidden"},
		{name: "duplicate", layer: tgz(t, entry{h: tar.Header{Name: "a"}, data: "x"}, entry{h: tar.Header{Name: "./a"}, data: "y"}), kind: derrors.InvalidArgument, want: "twice"},
		{name: "empty", layer: tgz(t), kind: derrors.InvalidArgument, want: "no files"},
		{name: "over bound", layer: bomb, max: 1 << 20, kind: derrors.LimitExceeded, want: "bound"},
		{name: "truncated", layer: tgz(t, entry{h: tar.Header{Name: "a"}, data: "xyz"})[:30], kind: derrors.InvalidArgument, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Unpack(bytes.NewReader(tt.layer), tt.max)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.kind, tt.want)
			}
		})
	}
	// Directory entries and ./ prefixes are what tar of a directory
	// writes: read, not refused.
	u, err := Unpack(bytes.NewReader(tgz(t, entry{h: tar.Header{Name: "./", Typeflag: tar.TypeDir}}, entry{h: tar.Header{Name: "./a.jinja"}, data: "x"})), 0)
	if err != nil || len(u.Files) != 1 || u.Files[0].Path != "a.jinja" {
		t.Fatalf("tar of a directory: %+v %v", u, err)
	}
}

func TestMatch(t *testing.T) {
	meta, files := sample()
	p, _ := Pack(meta, files)
	c, _ := ParseConfig(p.Config)
	other := append([]Content(nil), files...)
	other[0].Data = []byte("changed")
	q, _ := Pack(meta, other)
	u, _ := Unpack(bytes.NewReader(q.Layer), 0)
	if err := u.Match(c); err == nil || !strings.Contains(err.Error(), "hashes to") {
		t.Errorf("changed file: %v", err)
	}
	fewer, _ := Pack(meta, files[1:])
	u, _ = Unpack(bytes.NewReader(fewer.Layer), 0)
	if err := u.Match(c); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
	// A config without a listing is matched by its digest.
	c.Files = nil
	if err := u.Match(c); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("digest: %v", err)
	}
}

func TestParseRefusals(t *testing.T) {
	meta, files := sample()
	p, _ := Pack(meta, files)
	var m map[string]any
	json.Unmarshal(p.Manifest, &m)
	mutate := func(f func(map[string]any)) []byte {
		var c map[string]any
		json.Unmarshal(p.Manifest, &c)
		f(c)
		b, _ := json.Marshal(c)
		return b
	}
	manifests := []struct {
		name string
		b    []byte
		want string
	}{
		{"not json", []byte("{"), "not JSON"},
		{"schema 1", mutate(func(c map[string]any) { c["schemaVersion"] = 1 }), "schemaVersion"},
		{"an image", mutate(func(c map[string]any) {
			delete(c, "artifactType")
			c["config"].(map[string]any)["mediaType"] = "application/vnd.oci.image.config.v1+json"
		}), "not a dm template"},
		{"index", mutate(func(c map[string]any) { c["mediaType"] = IndexMediaType }), "not an OCI image manifest"},
		{"two layers", mutate(func(c map[string]any) { c["layers"] = append(c["layers"].([]any), c["layers"].([]any)[0]) }), "2 layers"},
		{"bad digest", mutate(func(c map[string]any) { c["config"].(map[string]any)["digest"] = "sha256:../../x" }), "digest"},
		{"layer type", mutate(func(c map[string]any) { c["layers"].([]any)[0].(map[string]any)["mediaType"] = "application/x-tar" }), "layer media type"},
	}
	for _, tt := range manifests {
		if _, err := ParseManifest(tt.b); !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("manifest %s: %v", tt.name, err)
		}
	}
	// Without artifactType, a config of dm's media type still says what
	// the manifest is (clients of OCI 1.0).
	if _, err := ParseManifest(mutate(func(c map[string]any) { delete(c, "artifactType") })); err != nil {
		t.Errorf("no artifactType: %v", err)
	}

	cfg := func(f func(*Config)) []byte {
		c, _ := ParseConfig(p.Config)
		f(c)
		b, _ := json.Marshal(c)
		return b
	}
	configs := []struct {
		name string
		b    []byte
		want string
	}{
		{"name", cfg(func(c *Config) { c.Name = "" }), "template name"},
		{"version", cfg(func(c *Config) { c.Version = "latest" }), "version"},
		{"digest", cfg(func(c *Config) { c.Digest = "md5:x" }), "digest"},
		{"other digest", cfg(func(c *Config) { c.Digest = "sha256:" + strings.Repeat("0", 64) }), "hash to"},
		{"unsorted", cfg(func(c *Config) { c.Files[0], c.Files[1] = c.Files[1], c.Files[0] }), "sorted"},
		{"path", cfg(func(c *Config) { c.Files[0].Path = "/abs" }), "path"},
		{"sha", cfg(func(c *Config) { c.Files[0].SHA = "x" }), "SHA-1"},
	}
	for _, tt := range configs {
		if _, err := ParseConfig(tt.b); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config %s: %v", tt.name, err)
		}
	}
}

func TestTags(t *testing.T) {
	for _, tt := range []struct {
		tag, version string
		ok           bool
	}{
		{"v1.2.3", "v1.2.3", true},
		{"v2.0.0-rc.1", "v2.0.0-rc.1", true},
		{"v1", "v1", true},
		{"v1.2.3_build.5", "", false}, // build metadata: no dm version holds it
		{"latest", "", false},
		{"sha256-" + strings.Repeat("a", 64), "", false},
		{"1.2.3", "", false},
	} {
		v, ok := VersionOfTag(tt.tag)
		if v != tt.version || ok != tt.ok {
			t.Errorf("VersionOfTag(%q) = %q, %v", tt.tag, v, ok)
		}
	}
	if Tag("v1.2.3+b.1") != "v1.2.3_b.1" {
		t.Errorf("Tag: %s", Tag("v1.2.3+b.1"))
	}
}

// FuzzParseManifest: no input panics, and what parses is a template
// manifest with valid digests.
func FuzzParseManifest(f *testing.F) {
	meta, files := sample()
	p, _ := Pack(meta, files)
	f.Add(p.Manifest)
	f.Add([]byte(`{"schemaVersion":2,"layers":[{}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		if !IsTemplate(m) || len(m.Layers) != 1 || !ValidDigest(m.Config.Digest) || !ValidDigest(m.Layers[0].Digest) {
			t.Fatalf("accepted %q", b)
		}
	})
}

// FuzzParseConfig: what parses has a listing that hashes to its digest.
func FuzzParseConfig(f *testing.F) {
	meta, files := sample()
	p, _ := Pack(meta, files)
	f.Add(p.Config)
	f.Add([]byte(`{"name":"a","version":"v1","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if len(c.Files) > 0 && ContentDigest(c.Files) != c.Digest {
			t.Fatalf("accepted %q", b)
		}
		for _, f := range c.Files {
			if !fs.ValidPath(f.Path) {
				t.Fatalf("accepted path %q", f.Path)
			}
		}
	})
}

// FuzzUnpack: no layer panics or escapes its directory, and what unpacks
// is listed as its content hashes.
func FuzzUnpack(f *testing.F) {
	meta, files := sample()
	p, _ := Pack(meta, files)
	f.Add(p.Layer)
	f.Add(tgz(f, entry{h: tar.Header{Name: "a"}, data: "x"}, entry{h: tar.Header{Name: "b/../c"}, data: "y"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := Unpack(bytes.NewReader(b), 1<<20)
		if err != nil {
			return
		}
		for _, f := range u.Files {
			if !fs.ValidPath(f.Path) || strings.HasPrefix(f.Path, ".") || fetch.BlobSHA(u.Data[f.Path]) != f.SHA {
				t.Fatalf("unpacked %q", f.Path)
			}
		}
	})
}
