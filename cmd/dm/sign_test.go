package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/signature/sigstoretest"
)

// keyPair makes an ECDSA P-256 key pair with openssl, as a user would.
func keyPair(t *testing.T) (priv, pub string) {
	t.Helper()
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	for _, args := range [][]string{
		{"ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", priv},
		{"ec", "-in", priv, "-pubout", "-out", pub},
	} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	return priv, pub
}

func writeTempFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSignLocal signs versions of a directory registry with dm sign (a
// key from openssl, and keylessly against a loopback Fulcio and Rekor)
// and resolves, expands and refuses them by policy: every refusal is
// exit 1, naming the version and why.
func TestSignLocal(t *testing.T) {
	dir := writeTree(t, fixture)
	local := []string{"--registry-dir", "github.com/acme/tpl=" + dir}
	env := map[string]string{"DM_SIGSTORE": sigstoreProgram.Path(t)}
	dmRun := func(t *testing.T, _ map[string]string, args ...string) result {
		t.Helper()
		return dmRun(t, maps.Clone(env), args...)
	}
	priv, pub := keyPair(t)
	_, otherPub := keyPair(t)
	ss := sigstoretest.New(t)
	root := writeTempFile(t, "trusted_root.json", string(ss.TrustedRoot))
	token := writeTempFile(t, "token", sigstoretest.Token("https://token.actions.githubusercontent.com", "https://github.com/acme/tpl/.github/workflows/publish.yml@refs/heads/main"))

	before := dmRun(t, nil, append(local, "-o", "json", "resolve", "redis:v1.0")...)
	r := dmRun(t, nil, append(local, "sign", "redis:v1.0", "--key", priv)...)
	if r.code != 0 || !strings.Contains(r.stdout, "signed github.com/acme/tpl/redis:v1.0.3@sha256:") {
		t.Fatalf("sign: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "redis/v1.0.3", index.SignatureFile)); err != nil {
		t.Fatal(err)
	}
	// The signature file is not content: the digest is unchanged.
	after := dmRun(t, nil, append(local, "-o", "json", "resolve", "redis:v1.0")...)
	var b, a struct{ Digest string }
	json.Unmarshal([]byte(before.stdout), &b)
	json.Unmarshal([]byte(after.stdout), &a)
	if b.Digest == "" || a.Digest != b.Digest {
		t.Fatalf("digest before signing %s, after %s", b.Digest, a.Digest)
	}
	r = dmRun(t, nil, append(local, "sign", "redis:v1.1.0", "--identity-token", token, "--fulcio-url", ss.FulcioURL, "--rekor-url", ss.RekorURL)...)
	if r.code != 0 {
		t.Fatalf("keyless sign: %d %s", r.code, r.stderr)
	}
	// A signature of redis:v1.0.3 copied into another version: over
	// other content.
	sig, _ := os.ReadFile(filepath.Join(dir, "redis/v1.0.3", index.SignatureFile))
	os.WriteFile(filepath.Join(dir, "stacks/apps/shop/v2.1.0", index.SignatureFile), sig, 0o644)

	keyPolicy := append(local, "--verify-key", pub, "--require-signature")
	idPolicy := append(local, "--verify-identity", "https://token.actions.githubusercontent.com=https://github.com/acme/tpl/.*", "--trusted-root", root, "--require-signature")
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"key", append(keyPolicy, "resolve", "redis:v1.0"), 0, "signed by key SHA256:"},
		{"key, show", append(keyPolicy, "show", "redis:v1.0"), 0, ""},
		{"keyless", append(idPolicy, "resolve", "redis:v1.1"), 0, "signed by https://github.com/acme/tpl/.github/workflows/publish.yml@refs/heads/main (https://token.actions.githubusercontent.com)"},
		{"no signature", append(keyPolicy, "resolve", "redis:v2.0.0-rc.1"), 1, "redis:v2.0.0-rc.1@sha256:"},
		{"no signature, reason", append(keyPolicy, "resolve", "redis:v2.0.0-rc.1"), 1, "(NoSignature)"},
		{"other content", append(keyPolicy, "resolve", "apps/shop:v2.1"), 1, "(OtherContent)"},
		{"key not trusted", append(local, "--verify-key", otherPub, "resolve", "redis:v1.0"), 1, "(KeyNotTrusted)"},
		{"keyless under a key policy", append(keyPolicy, "resolve", "redis:v1.1"), 1, "(KeyNotTrusted)"},
		{"identity outside", append(local, "--verify-identity", "https://token.actions.githubusercontent.com=https://github.com/other/.*", "--trusted-root", root, "resolve", "redis:v1.1"), 1, "(IdentityOutsidePolicy)"},
		{"untrusted root", append(local, "--verify-identity", "https://token.actions.githubusercontent.com=.*", "--trusted-root", writeTempFile(t, "other.json", string(sigstoretest.New(t).TrustedRoot)), "resolve", "redis:v1.1"), 1, "(UntrustedCertificate)"},
		{"unsigned passes when not required", append(local, "--verify-key", pub, "resolve", "redis:v2.0.0-rc.1"), 0, ""},
		{"expand refuses", append(keyPolicy, "expand", "redis:v2.0.0-rc.1", "--properties", "name=x"), 1, "(NoSignature)"},
		{"identities need a root", append(local, "--verify-identity", "https://x=.*", "resolve", "redis:v1.1"), 2, "trusted root"},
		{"not with --server", append(keyPolicy, "--server", "http://127.0.0.1:1", "resolve", "redis:v1.1"), 2, "in-process"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := dmRun(t, nil, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d; stderr %q, want %q", r.code, tt.code, r.stderr, tt.want)
			}
		})
	}
}

// TestSignOCI signs versions pushed to OCI registries with and without the
// referrers API (the sha256-<hex> tag fallback) and verifies them as
// dm resolves them from there.
func TestSignOCI(t *testing.T) {
	priv, pub := keyPair(t)
	env := map[string]string{"DM_SIGSTORE": sigstoreProgram.Path(t)}
	dmRun := func(t *testing.T, _ map[string]string, args ...string) result {
		t.Helper()
		return dmRun(t, maps.Clone(env), args...)
	}
	for _, noRef := range []bool{false, true} {
		t.Run(map[bool]string{false: "referrers", true: "tag fallback"}[noRef], func(t *testing.T) {
			dir := writeTree(t, fixture)
			reg := ocitest.New(t, ocitest.Options{NoReferrers: noRef})
			target := reg.URL + "/acme/tpl"
			local := []string{"--registry-dir", "github.com/acme/tpl=" + dir, "--plain-http"}
			for _, ref := range []string{"redis:v1.0", "redis:v1.1.0"} {
				if r := dmRun(t, nil, append(local, "push", ref, target)...); r.code != 0 {
					t.Fatalf("push: %s", r.stderr)
				}
			}
			viaOCI := []string{"--registry-oci", "github.com/acme/tpl=" + target, "--plain-http"}
			r := dmRun(t, nil, append(viaOCI, "-o", "json", "sign", "redis:v1.0", "--key", priv)...)
			if r.code != 0 {
				t.Fatalf("sign: %d %s", r.code, r.stderr)
			}
			var sr signResult
			if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || !strings.Contains(sr.Stored, "/acme/tpl/redis@sha256:") || sr.ManifestDigest == "" {
				t.Fatalf("sign: %s %v", r.stdout, err)
			}
			if tags := tagsOf(t, reg.Host, "acme/tpl/redis"); noRef != strings.Contains(strings.Join(tags, " "), "sha256-") {
				t.Errorf("tags %v (no referrers API: %t)", tags, noRef)
			}
			policy := append(viaOCI, "--verify-key", pub, "--require-signature")
			if r := dmRun(t, nil, append(policy, "resolve", "redis:v1.0")...); r.code != 0 || !strings.Contains(r.stderr, "signed by key") {
				t.Fatalf("resolve signed: %d %s", r.code, r.stderr)
			}
			if r := dmRun(t, nil, append(policy, "resolve", "redis:v1.1")...); r.code != 1 || !strings.Contains(r.stderr, "github.com/acme/tpl/redis:v1.1.0@sha256:") || !strings.Contains(r.stderr, "(NoSignature)") {
				t.Fatalf("resolve unsigned: %d %s", r.code, r.stderr)
			}
			// Signed in the directory, the same content verifies from OCI
			// when the bundle is mirrored (content digest, no manifest).
			if r := dmRun(t, nil, append(local, "sign", "redis:v1.1.0", "--key", priv, "--output-file", filepath.Join(t.TempDir(), "b.json"))...); r.code != 0 {
				t.Fatalf("sign to a file: %s", r.stderr)
			}
		})
	}
}

// tagsOf lists a repository's tags on a plain-HTTP registry.
func tagsOf(t *testing.T, host, repo string) []string {
	t.Helper()
	resp, err := http.Get("http://" + host + "/v2/" + repo + "/tags/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct{ Tags []string }
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	return l.Tags
}

// TestMirrorSignatures: dm mirror carries a directory's signature files
// to the OCI registry as referrers, so a policy there verifies the
// versions as it did at the source; a second run stores nothing again.
func TestMirrorSignatures(t *testing.T) {
	env := map[string]string{"DM_SIGSTORE": sigstoreProgram.Path(t)}
	run := func(args ...string) result { t.Helper(); return dmRun(t, maps.Clone(env), args...) }
	priv, pub := keyPair(t)
	dir := writeTree(t, fixture)
	local := []string{"--registry-dir", "github.com/acme/tpl=" + dir, "--plain-http"}
	if r := run(append(local, "sign", "redis:v1.0", "--key", priv)...); r.code != 0 {
		t.Fatalf("sign: %s", r.stderr)
	}
	reg := ocitest.New(t, ocitest.Options{NoReferrers: true})
	target := reg.URL + "/acme/tpl"
	if r := run(append(local, "mirror", "github.com/acme/tpl", target)...); r.code != 0 {
		t.Fatalf("mirror: %d %s %s", r.code, r.stdout, r.stderr)
	}
	policy := []string{"--registry-oci", "github.com/acme/tpl=" + target, "--plain-http", "--verify-key", pub, "--require-signature"}
	if r := run(append(policy, "resolve", "redis:v1.0")...); r.code != 0 || !strings.Contains(r.stderr, "signed by key") {
		t.Fatalf("the mirrored signature: %d %s", r.code, r.stderr)
	}
	if r := run(append(policy, "resolve", "redis:v1.1")...); r.code != 1 || !strings.Contains(r.stderr, "(NoSignature)") {
		t.Fatalf("an unsigned version: %d %s", r.code, r.stderr)
	}
	tags := len(tagsOf(t, reg.Host, "acme/tpl/redis"))
	if r := run(append(local, "mirror", "github.com/acme/tpl", target)...); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "nothing to push") {
		t.Fatalf("second mirror: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if got := len(tagsOf(t, reg.Host, "acme/tpl/redis")); got != tags {
		t.Errorf("a second mirror changed the tags: %d -> %d", tags, got)
	}

	// From that registry (its signatures under the tag fallback) to
	// another with the referrers API: the referrers go with the versions.
	reg2 := ocitest.New(t, ocitest.Options{})
	target2 := reg2.URL + "/mirror/tpl"
	fromOCI := []string{"--plain-http"}
	if r := run(append(fromOCI, "mirror", target, target2)...); r.code != 0 || !strings.Contains(r.stdout, "stored 1 signature\n") {
		t.Fatalf("mirror from OCI: %d %s %s", r.code, r.stdout, r.stderr)
	}
	policy2 := []string{"--registry-oci", "github.com/acme/tpl=" + target2, "--plain-http", "--verify-key", pub, "--require-signature"}
	if r := run(append(policy2, "resolve", "redis:v1.0")...); r.code != 0 || !strings.Contains(r.stderr, "signed by key") {
		t.Fatalf("the signature mirrored from OCI: %d %s", r.code, r.stderr)
	}
	if r := run(append(fromOCI, "mirror", target, target2)...); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "nothing to push") || strings.Contains(r.stdout+r.stderr, "signature") {
		t.Fatalf("second mirror from OCI: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
