package main

import (
	"context"
	"crypto/ecdsa"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// opensslKey makes a P-256 key pair with openssl in dir.
func opensslKey(t *testing.T, dir, name string) (*ecdsa.PrivateKey, string) {
	t.Helper()
	priv, pub := filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	for _, args := range [][]string{
		{"ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", priv},
		{"ec", "-in", priv, "-pubout", "-out", pub},
	} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	b, _ := os.ReadFile(priv)
	k, err := sigstore.ParsePrivateKey(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k, pub
}

// signDir signs version ver of template tmpl of the directory registry
// dir with key, as dm sign does, writing its signature file.
func signDir(t *testing.T, dir, tmpl, ver string, key *ecdsa.PrivateKey) {
	t.Helper()
	tree, err := fetch.NewLocalDir(dir, nil).Tree(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := index.Build("github.com/acme/tpl", tree, nil)
	coll, name, _ := strings.Cut(tmpl, "/")
	if name == "" {
		coll, name = "", tmpl
	}
	tp, ok := snap.Template(coll, name)
	if !ok {
		t.Fatalf("no template %s", tmpl)
	}
	for _, v := range tp.Versions {
		if v.Semver == ver {
			b, err := sigstore.Sign(context.Background(), signature.SubjectOf(tp, v, ""), sigstore.SignOptions{Key: key})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, v.Path, index.SignatureFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no version %s of %s", ver, tmpl)
}

// TestVerifyPolicy: a registry of registryd's configuration file with a
// signature policy serves signed versions (naming their signer) and
// answers 422 for the others, naming the version and why; a registry
// without one serves them all.
func TestVerifyPolicy(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "reg")
	writeTree(t, dir, fixture)
	key, pub := opensslKey(t, base, "acme")
	other, _ := opensslKey(t, base, "other")
	signDir(t, dir, "redis", "v1.0.3", key)
	signDir(t, dir, "redis", "v1.1.0", other)
	cfg := filepath.Join(base, "registryd.yaml")
	os.WriteFile(cfg, []byte(`registries:
- dir: reg
  prefix: github.com/acme/tpl
  verify:
    keys: [`+filepath.Base(pub)+`]
    required: true
- dir: reg
  prefix: github.com/acme/open
`), 0o644)
	d := start(t, []string{"--config", cfg}, nil)
	for _, tt := range []struct {
		ref  string
		code int
		want string
	}{
		{"github.com/acme/tpl/redis:v1.0", 200, `"signer":"key SHA256:`},
		{"github.com/acme/tpl/redis:v1.1", 422, "github.com/acme/tpl/redis:v1.1.0@sha256:"},
		{"github.com/acme/tpl/redis:v1.1", 422, "(KeyNotTrusted)"},
		{"github.com/acme/tpl/apps/shop:v2", 422, "(NoSignature)"},
		{"github.com/acme/open/apps/shop:v2", 200, `"resolved":"github.com/acme/open/apps/shop:v2.0.0"`},
	} {
		var out map[string]any
		code := d.get(t, "/v1/resolve?ref="+tt.ref, &out)
		body := ""
		for k, v := range out {
			body += `"` + k + `":"` + strings.ReplaceAll(toString(v), `"`, `'`) + `" `
		}
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s; want %d %q", tt.ref, code, body, tt.code, tt.want)
		}
	}
	// A policy that cannot hold is refused at start, naming where.
	os.WriteFile(cfg, []byte("registries:\n- dir: reg\n  prefix: github.com/acme/tpl\n  verify: {required: true}\n"), 0o644)
	var out syncBuffer
	if err := run(context.Background(), []string{"--config", cfg, "--addr", "127.0.0.1:0"}, env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }}); err == nil || !strings.Contains(err.Error(), "registries[0]: verify") {
		t.Errorf("a policy without keys: %v", err)
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
