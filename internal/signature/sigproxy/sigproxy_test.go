package sigproxy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigproxy"
	"github.com/dmhq/dm/internal/signature/sigproxy/sigproxytest"
)

var program sigproxytest.Program

func TestMain(m *testing.M) {
	code := m.Run()
	program.Remove()
	os.Exit(code)
}

// TestClient signs and verifies through a real dm-sigstore: a key's
// signature verifies, another content's is refused with its reason, one
// child serves every request, and a program that is not dm-sigstore is
// an error naming it.
func TestClient(t *testing.T) {
	c := &sigproxy.Client{Path: program.Path(t)}
	defer c.Close()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	ctx := context.Background()
	s := signature.Subject{Template: "redis", Version: "v1.0.0", Digest: "sha256:" + strings.Repeat("a", 64)}
	b, signer, err := c.Sign(ctx, s, sigproxy.SignRequest{Key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})})
	if err != nil || !strings.HasPrefix(signer, "key SHA256:") {
		t.Fatalf("Sign = %q, %v", signer, err)
	}
	p := &signature.PolicyConfig{Keys: [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})}, Required: true}
	res, err := c.Check(ctx, p, s, [][]byte{b})
	if err != nil || !res.Signed || res.Signer.KeyID == "" {
		t.Fatalf("Check = %+v, %v", res, err)
	}
	other := s
	other.Digest = "sha256:" + strings.Repeat("b", 64)
	var ve *signature.Error
	if _, err := c.Check(ctx, p, other, [][]byte{b}); !errors.As(err, &ve) || ve.Reason != signature.OtherContent || !errors.Is(err, derrors.VerificationFailed) {
		t.Fatalf("other content: %v", err)
	}
	if _, _, err := c.Sign(ctx, s, sigproxy.SignRequest{Key: []byte("not a key")}); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("a bad key: %v, want InvalidArgument", err)
	}
	// Still the same child, still answering.
	if _, err := c.Check(ctx, p, s, [][]byte{b}); err != nil {
		t.Fatal(err)
	}

	bad := &sigproxy.Client{Path: "/bin/true"}
	if _, err := bad.Check(ctx, p, s, nil); err == nil || !strings.Contains(err.Error(), "dm-sigstore") || !errors.Is(err, derrors.Unavailable) {
		t.Errorf("a program that answers nothing: %v", err)
	}
	missing := &sigproxy.Client{Getenv: func(k string) string {
		if k == "DM_SIGSTORE" {
			return filepath.Join(t.TempDir(), "nope")
		}
		return ""
	}}
	if _, err := missing.Check(ctx, p, s, nil); err == nil || !strings.Contains(err.Error(), "go install github.com/dmhq/dm/cmd/dm-sigstore") {
		t.Errorf("not installed: %v", err)
	}
}
