// Package sigstore signs template versions and verifies their bundles with
// sigstore-go: the signature.Checker of registryd, dm-controller and the
// dm-sigstore program.
package sigstore

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	sigsig "github.com/sigstore/sigstore/pkg/signature"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/signature"
)

// Type names of the package signature, in this package's words.
type (
	Subject = signature.Subject
	Reason  = signature.Reason
	Error   = signature.Error
	Signer  = signature.Signer
	Result  = signature.Result
)

const (
	NoSignature           = signature.NoSignature
	OtherContent          = signature.OtherContent
	KeyNotTrusted         = signature.KeyNotTrusted
	IdentityOutsidePolicy = signature.IdentityOutsidePolicy
	UntrustedCertificate  = signature.UntrustedCertificate
	InvalidSignature      = signature.InvalidSignature
)

// Policy is a compiled signature.PolicyConfig. It is immutable and safe
// for concurrent use.
type Policy struct {
	cfg    *signature.PolicyConfig
	keys   []*ecdsa.PublicKey
	keyIDs []string
	ids    []verify.CertificateIdentity
	root   *root.TrustedRoot
}

// NewPolicy compiles c; c.Check's errors, and a trusted root sigstore-go
// does not read, are derrors.InvalidArgument.
func NewPolicy(c signature.PolicyConfig) (*Policy, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	p := &Policy{cfg: &c}
	for _, k := range c.Keys {
		pub, _ := signature.ParsePublicKey(k) // Check parsed it
		p.keys = append(p.keys, pub)
		p.keyIDs = append(p.keyIDs, signature.KeyID(pub))
	}
	for _, id := range c.Identities {
		ci, err := verify.NewShortCertificateIdentity("", signature.Anchor(id.Issuer), "", signature.Anchor(id.Subject))
		if err != nil {
			return nil, derrors.Errorf(derrors.InvalidArgument, "identity %s: %v", id, err)
		}
		p.ids = append(p.ids, ci)
	}
	if len(c.TrustedRoot) > 0 {
		tr, err := root.NewTrustedRootFromJSON(c.TrustedRoot)
		if err != nil {
			return nil, derrors.Errorf(derrors.InvalidArgument, "trusted root: %v", err)
		}
		p.root = tr
	}
	return p, nil
}

// String describes the policy for messages.
func (p *Policy) String() string { return p.cfg.String() }

// Checker is the signature.Checker of sigstore-go: it compiles each
// policy once (by its ID) and verifies in-process.
type Checker struct {
	mu       sync.Mutex
	policies map[string]*Policy
}

// maxPolicies bounds the compiled policies a Checker keeps: past it they
// are compiled again.
const maxPolicies = 1024

// Check verifies bundles of s against p.
func (c *Checker) Check(_ context.Context, p *signature.PolicyConfig, s Subject, bundles [][]byte) (*Result, error) {
	id := p.ID()
	c.mu.Lock()
	cp := c.policies[id]
	c.mu.Unlock()
	if cp == nil {
		var err error
		if cp, err = NewPolicy(*p); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.policies == nil || len(c.policies) >= maxPolicies {
			c.policies = map[string]*Policy{}
		}
		c.policies[id] = cp
		c.mu.Unlock()
	}
	return cp.Verify(s, bundles)
}

func (p *Policy) Verify(s Subject, bundles [][]byte) (*Result, error) {
	if len(bundles) == 0 {
		if p.cfg.Required {
			return nil, &Error{Version: s.String(), Reason: NoSignature, Detail: "the version has no signature, and the registry's policy requires one (" + p.String() + ")"}
		}
		return &Result{}, nil
	}
	var first *Error
	for _, b := range bundles {
		signer, err := p.verifyOne(s, b)
		if err == nil {
			return &Result{Signed: true, Signer: signer}, nil
		}
		// The most telling failure: a bundle over other content says
		// less about the version than one over it that failed.
		if first == nil || (first.Reason == OtherContent && err.Reason != OtherContent) || first.Reason == InvalidSignature {
			first = err
		}
	}
	if len(bundles) > 1 {
		first.Detail += fmt.Sprintf(" (and %d more signatures, none verified)", len(bundles)-1)
	}
	return nil, first
}

func (p *Policy) verifyOne(s Subject, raw []byte) (*Signer, *Error) {
	fail := func(r Reason, format string, args ...any) *Error {
		return &Error{Version: s.String(), Reason: r, Detail: fmt.Sprintf(format, args...)}
	}
	if len(raw) > signature.MaxBundleBytes {
		return nil, fail(InvalidSignature, "the signature bundle is %d bytes, over the bound of %d", len(raw), signature.MaxBundleBytes)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, fail(InvalidSignature, "the signature is not a Sigstore bundle: %v", err)
	}
	env, err := b.Envelope()
	if err != nil || env == nil || env.RawEnvelope() == nil {
		return nil, fail(InvalidSignature, "the bundle holds no DSSE envelope (dm signs an in-toto statement; was it signed by dm sign?)")
	}
	raw0 := env.RawEnvelope()
	if raw0.PayloadType != signature.PayloadType {
		return nil, fail(InvalidSignature, "the bundle's payload type is %q, not %q", raw0.PayloadType, signature.PayloadType)
	}
	payload, err := raw0.DecodeB64Payload()
	if err != nil {
		return nil, fail(InvalidSignature, "the envelope's payload is not base64: %v", err)
	}
	got, err := signature.ParseStatement(payload)
	if err != nil {
		return nil, fail(OtherContent, "%v", err)
	}
	if got.Digest != s.Digest || got.Template != s.Template || got.Version != s.Version {
		return nil, fail(OtherContent, "the signature is over %s, not this version's content", got)
	}
	if got.ManifestDigest != "" && s.ManifestDigest != "" && got.ManifestDigest != s.ManifestDigest {
		return nil, fail(OtherContent, "the signature is over OCI manifest %s, not %s", got.ManifestDigest, s.ManifestDigest)
	}
	vc, err := b.VerificationContent()
	if err != nil {
		return nil, fail(InvalidSignature, "the bundle's verification material: %v", err)
	}
	digest, _ := hex.DecodeString(strings.TrimPrefix(s.Digest, "sha256:"))
	artifact := verify.WithArtifactDigest("sha256", digest)
	if cert := vc.Certificate(); cert != nil {
		return p.verifyKeyless(&b, cert, artifact, fail)
	}
	if len(p.keys) == 0 {
		return nil, fail(KeyNotTrusted, "signed with key %s; the registry's policy trusts no key, only identities", hint(vc))
	}
	for i, k := range p.keys {
		kv, err := sigsig.LoadVerifier(k, crypto.SHA256)
		if err != nil {
			return nil, fail(InvalidSignature, "loading key %s: %v", p.keyIDs[i], err)
		}
		// Every trusted key is tried, whatever the hint says: the hint is
		// the signer's claim, not a fact.
		material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(kv, time.Time{}, time.Time{}), nil
		})
		ver, err := verify.NewSignedEntityVerifier(material, verify.WithCurrentTime())
		if err != nil {
			return nil, fail(InvalidSignature, "%v", err)
		}
		if _, err := ver.Verify(&b, verify.NewPolicy(artifact, verify.WithKey())); err == nil {
			return &Signer{KeyID: p.keyIDs[i]}, nil
		}
	}
	h := hint(vc)
	for _, id := range p.keyIDs {
		if id == h {
			return nil, fail(InvalidSignature, "the signature does not verify with the trusted key %s it names: the signature or its statement was altered", h)
		}
	}
	return nil, fail(KeyNotTrusted, "signed with key %s, which is not a key the registry's policy trusts (%s)", h, p.String())
}

// issuedBy reports whether cert chains, by signatures, to the root of one
// of cas through its intermediates.
func issuedBy(cert *x509.Certificate, cas []root.CertificateAuthority) bool {
	for _, ca := range cas {
		f, ok := ca.(*root.FulcioCertificateAuthority)
		if !ok || f.Root == nil {
			continue
		}
		chain := append([]*x509.Certificate{cert}, f.Intermediates...)
		ok = true
		for i := 0; i+1 < len(chain); i++ {
			if chain[i].CheckSignatureFrom(chain[i+1]) != nil {
				ok = false
				break
			}
		}
		if ok && chain[len(chain)-1].CheckSignatureFrom(f.Root) == nil {
			return true
		}
	}
	return false
}

// hint names a bundle's key by its hint, as its signer gave it.
func hint(vc verify.VerificationContent) string {
	if pk := vc.PublicKey(); pk != nil && pk.Hint() != "" {
		return pk.Hint()
	}
	return "(unnamed)"
}

func (p *Policy) verifyKeyless(b *bundle.Bundle, cert *x509.Certificate, artifact verify.ArtifactPolicyOption, fail func(Reason, string, ...any) *Error) (*Signer, *Error) {
	sum, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return nil, fail(InvalidSignature, "reading the signing certificate: %v", err)
	}
	who := Signer{Issuer: sum.Issuer, Subject: sum.SubjectAlternativeName}
	if len(p.ids) == 0 {
		return nil, fail(KeyNotTrusted, "signed keylessly by %s; the registry's policy trusts only keys (%s)", who, p.String())
	}
	// Who issued it first: a certificate of another Sigstore says so,
	// rather than failing later on its log entry. Whether it was valid
	// when it signed is sigstore-go's check below, against the log's time.
	if !issuedBy(cert, p.root.FulcioCertificateAuthorities()) {
		return nil, fail(UntrustedCertificate, "the certificate of %s (issued by %q) was not issued by a certificate authority of the trusted root", who, cert.Issuer.String())
	}
	matched := false
	for _, id := range p.ids {
		if id.Verify(sum) == nil {
			matched = true
			break
		}
	}
	if !matched {
		return nil, fail(IdentityOutsidePolicy, "signed by %s, an identity outside the registry's policy (%s)", who, p.String())
	}
	opts := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
	if len(p.root.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	ver, err := verify.NewSignedEntityVerifier(p.root, opts...)
	if err != nil {
		return nil, fail(InvalidSignature, "%v", err)
	}
	var popts []verify.PolicyOption
	for _, id := range p.ids {
		popts = append(popts, verify.WithCertificateIdentity(id))
	}
	res, err := ver.Verify(b, verify.NewPolicy(artifact, popts...))
	if err != nil {
		msg := err.Error()
		var idErr *verify.ErrNoMatchingCertificateIdentity
		switch {
		case errors.As(err, &idErr):
			return nil, fail(IdentityOutsidePolicy, "signed by %s, an identity outside the registry's policy (%s)", who, p.String())
		case strings.Contains(msg, "leaf certificate"), strings.Contains(msg, "certificate timestamp"), strings.Contains(msg, "outside certificate validity"):
			return nil, fail(UntrustedCertificate, "the certificate of %s (valid %s to %s) was not valid under the trusted root when the signature was logged (expired, or its authority's validity over): %v",
				who, cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339), err)
		default:
			return nil, fail(InvalidSignature, "the signature of %s does not verify: %v", who, err)
		}
	}
	for _, ts := range res.VerifiedTimestamps {
		if who.Time.IsZero() || ts.Timestamp.Before(who.Time) {
			who.Time = ts.Timestamp
		}
	}
	return &who, nil
}
