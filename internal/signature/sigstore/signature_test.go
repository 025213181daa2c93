package sigstore_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
	"github.com/dmhq/dm/internal/signature/sigstoretest"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	issuer  = "https://token.actions.githubusercontent.com"
	ci      = "https://github.com/acme/templates/.github/workflows/publish.yml@refs/heads/main"
)

// opensslKey makes a P-256 key pair with openssl, as a user would:
// ecparam writes SEC 1 (EC PRIVATE KEY), genpkey PKCS #8 (PRIVATE KEY).
func opensslKey(t testing.TB, pkcs8 bool) (priv, pub []byte) {
	t.Helper()
	dir := t.TempDir()
	key, pubf := filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	gen := []string{"ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key}
	if pkcs8 {
		gen = []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key}
	}
	for _, args := range [][]string{gen, {"ec", "-in", key, "-pubout", "-out", pubf}} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	priv, _ = os.ReadFile(key)
	pub, _ = os.ReadFile(pubf)
	return priv, pub
}

func mustPolicy(t *testing.T, c signature.PolicyConfig) *sigstore.Policy {
	t.Helper()
	p, err := sigstore.NewPolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func signWithKey(t *testing.T, priv []byte, s signature.Subject) []byte {
	t.Helper()
	k, err := sigstore.ParsePrivateKey(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sigstore.Sign(context.Background(), s, sigstore.SignOptions{Key: k})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func signKeyless(t *testing.T, ss *sigstoretest.Sigstore, iss, sub string, s signature.Subject) []byte {
	t.Helper()
	b, err := sigstore.Sign(context.Background(), s, sigstore.SignOptions{
		IDToken: sigstoretest.Token(iss, sub), FulcioURL: ss.FulcioURL, RekorURL: ss.RekorURL, Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerify(t *testing.T) {
	subj := signature.Subject{Template: "redis", Version: "v1.2.3", Digest: digestA}
	privA, pubA := opensslKey(t, false)
	privB, pubB := opensslKey(t, true)
	ss := sigstoretest.New(t)
	other := sigstoretest.New(t)

	keyA := signWithKey(t, privA, subj)
	keyB := signWithKey(t, privB, subj)
	keyOther := signWithKey(t, privA, signature.Subject{Template: "redis", Version: "v1.2.3", Digest: digestB})
	keyOtherVersion := signWithKey(t, privA, signature.Subject{Template: "redis", Version: "v1.2.4", Digest: digestA})
	keyless := signKeyless(t, ss, issuer, ci, subj)
	keylessStranger := signKeyless(t, ss, issuer, "https://github.com/evil/templates/.github/workflows/x.yml@refs/heads/main", subj)
	keylessOtherRoot := signKeyless(t, other, issuer, ci, subj)
	ss.SetCertValidity(func(now time.Time) (time.Time, time.Time) { return now.Add(-2 * time.Hour), now.Add(-time.Hour) })
	keylessExpired := signKeyless(t, ss, issuer, ci, subj)
	ss.SetCertValidity(nil)

	keys := signature.PolicyConfig{Keys: [][]byte{pubA}, Required: true}
	ids := signature.PolicyConfig{Identities: []signature.Identity{{Issuer: issuer, Subject: "https://github.com/acme/templates/.*"}}, TrustedRoot: ss.TrustedRoot, Required: true}
	both := signature.PolicyConfig{Keys: [][]byte{pubB}, Identities: ids.Identities, TrustedRoot: ss.TrustedRoot}

	tests := []struct {
		name    string
		policy  signature.PolicyConfig
		bundles [][]byte
		reason  signature.Reason
		signer  string
	}{
		{name: "key", policy: keys, bundles: [][]byte{keyA}, signer: "key SHA256:"},
		{name: "second key of two", policy: signature.PolicyConfig{Keys: [][]byte{pubB, pubA}}, bundles: [][]byte{keyA}, signer: "key SHA256:"},
		{name: "keyless", policy: ids, bundles: [][]byte{keyless}, signer: ci + " (" + issuer + ")"},
		{name: "either", policy: both, bundles: [][]byte{keyB}, signer: "key"},
		{name: "one of several verifies", policy: keys, bundles: [][]byte{keyB, keyOther, keyA}, signer: "key"},
		{name: "unsigned, not required", policy: signature.PolicyConfig{Keys: [][]byte{pubA}}},
		{name: "no signature", policy: keys, reason: signature.NoSignature},
		{name: "other content", policy: keys, bundles: [][]byte{keyOther}, reason: signature.OtherContent},
		{name: "other version", policy: keys, bundles: [][]byte{keyOtherVersion}, reason: signature.OtherContent},
		{name: "other content, not required", policy: signature.PolicyConfig{Keys: [][]byte{pubA}}, bundles: [][]byte{keyOther}, reason: signature.OtherContent},
		{name: "key not trusted", policy: keys, bundles: [][]byte{keyB}, reason: signature.KeyNotTrusted},
		{name: "keyless where only keys", policy: keys, bundles: [][]byte{keyless}, reason: signature.KeyNotTrusted},
		{name: "key where only identities", policy: ids, bundles: [][]byte{keyA}, reason: signature.KeyNotTrusted},
		{name: "identity outside", policy: ids, bundles: [][]byte{keylessStranger}, reason: signature.IdentityOutsidePolicy},
		{name: "identity issuer outside", policy: signature.PolicyConfig{Identities: []signature.Identity{{Issuer: "https://accounts.google.com", Subject: ".*"}}, TrustedRoot: ss.TrustedRoot}, bundles: [][]byte{keyless}, reason: signature.IdentityOutsidePolicy},
		{name: "identity regexp is anchored", policy: signature.PolicyConfig{Identities: []signature.Identity{{Issuer: issuer, Subject: "https://github.com/acme/templates"}}, TrustedRoot: ss.TrustedRoot}, bundles: [][]byte{keyless}, reason: signature.IdentityOutsidePolicy},
		{name: "certificate of another root", policy: ids, bundles: [][]byte{keylessOtherRoot}, reason: signature.UntrustedCertificate},
		{name: "expired certificate", policy: ids, bundles: [][]byte{keylessExpired}, reason: signature.UntrustedCertificate},
		{name: "not a bundle", policy: keys, bundles: [][]byte{[]byte(`{"mediaType":"nope"}`)}, reason: signature.InvalidSignature},
		{name: "tampered", policy: keys, bundles: [][]byte{[]byte(strings.Replace(string(keyA), `"sig":"M`, `"sig":"N`, 1))}, reason: signature.InvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.policy)
			res, err := p.Verify(subj, tt.bundles)
			if tt.reason != "" {
				var ve *signature.Error
				if !errors.As(err, &ve) || ve.Reason != tt.reason {
					t.Fatalf("Verify = %v, %v; want reason %s", res, err, tt.reason)
				}
				if !errors.Is(err, derrors.VerificationFailed) || derrors.HTTPStatus(err) != 422 {
					t.Errorf("%v does not match VerificationFailed (422)", err)
				}
				if !strings.Contains(err.Error(), "redis:v1.2.3") {
					t.Errorf("%v does not name the version", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.signer == "" {
				if res.Signed {
					t.Fatalf("unsigned version reported signed by %v", res.Signer)
				}
				return
			}
			if !res.Signed || !strings.Contains(res.Signer.String(), tt.signer) {
				t.Fatalf("signer = %+v, want %q", res.Signer, tt.signer)
			}
		})
	}
	if ss.Requests("fulcio") == 0 || ss.Requests("rekor") == 0 {
		t.Errorf("keyless signing sent no request to the test Fulcio or Rekor")
	}
}

func TestManifestDigest(t *testing.T) {
	priv, pub := opensslKey(t, false)
	m1 := "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	m2 := "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	s := signature.Subject{Template: "web/nginx", Version: "v2.0.0-rc.1", Digest: digestA, ManifestDigest: m1}
	b := signWithKey(t, priv, s)
	p := mustPolicy(t, signature.PolicyConfig{Keys: [][]byte{pub}, Required: true})
	if _, err := p.Verify(s, [][]byte{b}); err != nil {
		t.Fatal(err)
	}
	// The same content read from GitHub (no manifest) verifies.
	s.ManifestDigest = ""
	if _, err := p.Verify(s, [][]byte{b}); err != nil {
		t.Fatal(err)
	}
	s.ManifestDigest = m2
	var ve *signature.Error
	if _, err := p.Verify(s, [][]byte{b}); !errors.As(err, &ve) || ve.Reason != signature.OtherContent {
		t.Fatalf("other manifest: %v", err)
	}
}

func TestPolicyErrors(t *testing.T) {
	_, pub := opensslKey(t, false)
	for _, c := range []signature.PolicyConfig{
		{},
		{Required: true},
		{Keys: [][]byte{[]byte("not pem")}},
		{Identities: []signature.Identity{{Issuer: "x", Subject: "y"}}},
		{Identities: []signature.Identity{{Issuer: "x", Subject: "("}}, TrustedRoot: []byte("{}")},
		{Keys: [][]byte{pub}, TrustedRoot: []byte("{not json")},
	} {
		if _, err := sigstore.NewPolicy(c); !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("NewPolicy(%+v) = %v, want InvalidArgument", c, err)
		}
	}
	a := &signature.PolicyConfig{Keys: [][]byte{pub}}
	b := &signature.PolicyConfig{Keys: [][]byte{pub}, Required: true}
	if a.ID() == b.ID() || a.ID() != (&signature.PolicyConfig{Keys: [][]byte{pub}}).ID() {
		t.Error("a policy that requires signatures has the ID of one that does not")
	}
	for _, s := range []string{"", "=x", "x=", "https://a=("} {
		if _, err := signature.ParseIdentity(s); err == nil {
			t.Errorf("ParseIdentity(%q) passed", s)
		}
	}
	id, err := signature.ParseIdentity(issuer + "=https://github.com/acme/.*")
	if err != nil || id.Issuer != issuer || id.Subject != "https://github.com/acme/.*" {
		t.Fatalf("ParseIdentity = %+v, %v", id, err)
	}
}
