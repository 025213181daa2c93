package sigstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
	"github.com/dmhq/dm/internal/signature/sigstoretest"
)

// BenchmarkVerify is the cost of verifying one version's signature, cold
// (what a Verifier's cache saves every later resolve of the version):
// key-based, and keyless with its certificate chain and Rekor entry.
func BenchmarkVerify(b *testing.B) {
	subj := signature.Subject{Template: "redis", Version: "v1.2.3", Digest: "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}
	priv, pub := opensslKey(b, false)
	ss := sigstoretest.New(b)
	k, err := sigstore.ParsePrivateKey(priv, nil)
	if err != nil {
		b.Fatal(err)
	}
	keyed, _ := sigstore.Sign(context.Background(), subj, sigstore.SignOptions{Key: k})
	keyless, err := sigstore.Sign(context.Background(), subj, sigstore.SignOptions{IDToken: sigstoretest.Token(issuer, ci), FulcioURL: ss.FulcioURL, RekorURL: ss.RekorURL, Timeout: 20 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		policy signature.PolicyConfig
		bundle []byte
	}{
		{"key", signature.PolicyConfig{Keys: [][]byte{pub}, Required: true}, keyed},
		{"keyless", signature.PolicyConfig{Identities: []signature.Identity{{Issuer: issuer, Subject: "https://github.com/acme/.*"}}, TrustedRoot: ss.TrustedRoot, Required: true}, keyless},
	} {
		b.Run(tt.name, func(b *testing.B) {
			p, err := sigstore.NewPolicy(tt.policy)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := p.Verify(subj, [][]byte{tt.bundle}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
