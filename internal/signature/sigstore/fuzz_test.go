package sigstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/dmhq/dm/internal/signature"
)

// FuzzVerify: no bundle panics or verifies under a key that did not sign
// it, and every failure is an *Error naming the version.
func FuzzVerify(f *testing.F) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s := signature.Subject{Template: "redis", Version: "v1.0.0", Digest: "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}
	good, err := Sign(context.Background(), s, SignOptions{Key: key})
	if err != nil {
		f.Fatal(err)
	}
	bySomeoneElse, _ := Sign(context.Background(), s, SignOptions{Key: other})
	f.Add(good)
	f.Add(bySomeoneElse)
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	p, err := NewPolicy(signature.PolicyConfig{Keys: [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, Required: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := p.Verify(s, [][]byte{b})
		if err == nil {
			if string(b) == string(bySomeoneElse) {
				t.Fatal("a bundle of an untrusted key verified")
			}
			if res == nil || !res.Signed {
				t.Fatalf("verified without a signer: %+v", res)
			}
			return
		}
		var ve *signature.Error
		if !errors.As(err, &ve) || ve.Version == "" || ve.Reason == "" {
			t.Fatalf("error %v is not a named *Error", err)
		}
	})
}
