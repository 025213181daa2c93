package oci_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/index"
)

// TestOras: a client dm did not write interoperates both ways. oras
// pushes a version (its layer made by tar, its config naming only what
// the format requires) that dm lists and reads with the content digest
// the directory has; oras pulls a version dm pushed, and gets the
// version's files and the manifest dm wrote.
func TestOras(t *testing.T) {
	oras := ocitest.Oras(t)
	reg := ocitest.New(t, ocitest.Options{})
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), oras, args...)
		cmd.Dir = dir
		// oras keeps its credentials in Docker's configuration: none here.
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("oras %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}

	// A version directory, tarred by tar, pushed by oras.
	work := t.TempDir()
	vdir := filepath.Join(work, "v1.4.0")
	files := map[string]string{"web.jinja": "resources: []\n", "web.jinja.schema": "info: {title: Web}\n", "example.yaml": "resources: []\n", "lib/helpers.jinja": "{% macro x() %}{% endmacro %}\n"}
	var entries []fetch.Entry
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(vdir, p)), 0o755)
		os.WriteFile(filepath.Join(vdir, p), []byte(c), 0o644)
		entries = append(entries, fetch.Entry{Path: p, SHA: fetch.BlobSHA([]byte(c)), Size: int64(len(c))})
	}
	sortEntries(entries)
	digest := index.Digest(entries)
	if out, err := exec.Command("tar", "-C", vdir, "-czf", filepath.Join(work, "web.tar.gz"), ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	cfg, _ := json.Marshal(map[string]string{"name": "web", "collection": "apps", "version": "v1.4.0", "digest": digest})
	os.WriteFile(filepath.Join(work, "config.json"), cfg, 0o644)
	run(work, "push", "--plain-http", reg.Host+"/acme/t/apps/web:v1.4.0",
		"--artifact-type", artifact.ArtifactType,
		"--config", "config.json:"+artifact.ConfigMediaType,
		"--annotation", artifact.AnnotationVersion+"=v1.4.0",
		"web.tar.gz:"+artifact.LayerMediaType)

	src := newSource(t, reg.URL+"/acme/t", nil)
	tree, err := src.Tree(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := index.Build("x.io/a/b", tree, nil)
	tm, ok := snap.Template("apps", "web")
	if !ok || len(tm.Versions) != 1 || tm.Versions[0].Digest != digest || tm.Versions[0].Template != "web.jinja" {
		t.Fatalf("oras's push listed as %+v", tm)
	}
	for _, e := range tree.Entries {
		b, err := src.Blob(t.Context(), e.SHA)
		if err != nil || fetch.BlobSHA(b) != e.SHA {
			t.Fatalf("%s: %v", e.Path, err)
		}
	}

	// dm pushes; oras pulls.
	p := ocitest.NewPusher(t, reg.URL+"/acme/t")
	content := []artifact.Content{{Path: "redis.jinja", Data: []byte("kind: x\n")}, {Path: "example.yaml", Data: []byte("resources: []\n")}}
	packed, err := artifact.Pack(artifact.Metadata{Name: "redis", Version: "v2.0.0-rc.1", Description: "A cache."}, content)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Push(t.Context(), packed, "", "redis", "v2.0.0-rc.1")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	run(out, "pull", "--plain-http", reg.Host+"/acme/t/redis:v2.0.0-rc.1", "-o", out)
	layer := filepath.Join(out, artifact.LayerFileName("redis", "v2.0.0-rc.1"))
	if _, err := os.Stat(layer); err != nil {
		t.Fatalf("oras pull wrote no %s: %v", filepath.Base(layer), err)
	}
	x := t.TempDir()
	if out, err := exec.Command("tar", "-C", x, "-xzf", layer).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v %s", err, out)
	}
	for _, c := range content {
		if b, _ := os.ReadFile(filepath.Join(x, c.Path)); !bytes.Equal(b, c.Data) {
			t.Errorf("%s as oras pulled it: %q", c.Path, b)
		}
	}
	manifest := run(out, "manifest", "fetch", "--plain-http", reg.Host+"/acme/t/redis:v2.0.0-rc.1")
	if artifact.Digest([]byte(manifest)) != res.ManifestDigest || !strings.Contains(manifest, artifact.ArtifactType) {
		t.Errorf("oras fetched manifest %s, dm pushed %s", manifest, res.ManifestDigest)
	}
	if tags := run(out, "repo", "tags", "--plain-http", reg.Host+"/acme/t/redis"); strings.TrimSpace(tags) != "v2.0.0-rc.1" {
		t.Errorf("oras lists tags %q", tags)
	}
}

func sortEntries(es []fetch.Entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Path < es[j-1].Path; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}
