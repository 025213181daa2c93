package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// BenchmarkVerifiedResolve is BenchmarkRegistrySources' warm resolve and
// read from OCI with every version signed and a policy that requires
// signatures: the first resolve verifies (referrers, bundle, signature),
// and every warm one verifies nothing again and sends no request.
func BenchmarkVerifiedResolve(b *testing.B) {
	s := exampleSources(b)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p, err := oci.NewPusher(oci.Options{URL: s.reg.URL + "/acme/templates", PlainHTTP: true, Keychain: oci.DockerKeychain(b.TempDir())})
	if err != nil {
		b.Fatal(err)
	}
	snap := ocitest.PushFS(b, p, dm.ExampleRegistry())
	ctx := context.Background()
	for _, t := range snap.AllTemplates() {
		for _, v := range t.Versions {
			cd, md, err := p.Existing(ctx, t.Collection, t.Name, v.Semver)
			if err != nil {
				continue // a version PushFS skipped
			}
			bundle, err := sigstore.Sign(ctx, signature.Subject{Template: signature.SubjectOf(t, v, "").Template, Version: v.Semver, Digest: cd, ManifestDigest: md}, sigstore.SignOptions{Key: key})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.PushSignature(ctx, t.Collection, t.Name, v.Semver, md, bundle); err != nil {
				b.Fatal(err)
			}
		}
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	spec := s.oci
	spec.Verify = &signature.PolicyConfig{Keys: [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, Required: true}
	b.Run("oci/first-verified", func(b *testing.B) {
		s.reg.Reset()
		for b.Loop() {
			b.StopTimer()
			_, r := open(b, spec, b.TempDir())
			_, before := s.reg.Requests()
			b.StartTimer()
			resolveRead(b, r)
			b.StopTimer()
			_, after := s.reg.Requests()
			b.ReportMetric(float64(after-before), "requests/op")
			b.StartTimer()
		}
	})
	// paired alternates a warm resolve from GitHub, from OCI and from OCI
	// with the policy in one loop, so that the machine's load (other
	// builds) weighs on the three alike, and reports each one's mean and
	// the ratios.
	b.Run("paired", func(b *testing.B) {
		_, gh := open(b, s.ghSpec, b.TempDir())
		_, plain := open(b, s.oci, b.TempDir())
		_, verified := open(b, spec, b.TempDir())
		rs := []*resolve.Resolver{gh, plain, verified}
		for _, r := range rs {
			resolveRead(b, r)
		}
		var took [3]time.Duration
		for b.Loop() {
			for i, r := range rs {
				t0 := time.Now()
				resolveRead(b, r)
				took[i] += time.Since(t0)
			}
		}
		n := float64(b.N)
		b.ReportMetric(float64(took[0].Nanoseconds())/n, "github-ns/op")
		b.ReportMetric(float64(took[1].Nanoseconds())/n, "oci-ns/op")
		b.ReportMetric(float64(took[2].Nanoseconds())/n, "verified-ns/op")
		b.ReportMetric(float64(took[2])/float64(took[0]), "verified/github")
		b.ReportMetric(float64(took[2])/float64(took[1]), "verified/oci")
	})
	for _, tt := range []struct {
		name string
		spec api.RegistrySpec
	}{{"github/warm", s.ghSpec}, {"oci/warm", s.oci}, {"oci/warm-verified", spec}} {
		b.Run(tt.name, func(b *testing.B) {
			_, r := open(b, tt.spec, b.TempDir())
			resolveRead(b, r)
			s.reg.Reset()
			s.gh.ResetCounts()
			for b.Loop() {
				resolveRead(b, r)
			}
			_, n := s.reg.Requests()
			b.ReportMetric(float64(n+s.gh.Requests())/float64(b.N), "requests/op")
		})
	}
}
