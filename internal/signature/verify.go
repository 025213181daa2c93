package signature

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/derrors"
)

// Reason says why a version failed verification, one word as
// dm-controller's conditions and registryd's answers carry it.
type Reason string

// The reasons a version fails verification.
const (
	// NoSignature: the policy requires a signature and the version has none.
	NoSignature Reason = "NoSignature"
	// OtherContent: the signature is over another version or other content.
	OtherContent Reason = "OtherContent"
	// KeyNotTrusted: signed with a key the policy does not name (or
	// keylessly, where the policy trusts only keys).
	KeyNotTrusted Reason = "KeyNotTrusted"
	// IdentityOutsidePolicy: a keyless signature whose certificate's
	// issuer and subject match none of the policy's identities.
	IdentityOutsidePolicy Reason = "IdentityOutsidePolicy"
	// UntrustedCertificate: a certificate not issued by the trusted root's
	// Fulcio, or used outside its validity.
	UntrustedCertificate Reason = "UntrustedCertificate"
	// InvalidSignature: a bundle that does not parse, or whose signature,
	// transparency log entry or timestamps do not verify.
	InvalidSignature Reason = "InvalidSignature"
)

// Error is a version that failed verification. It wraps
// derrors.VerificationFailed.
type Error struct {
	// Version names the version ([COLLECTION/]TEMPLATE:VERSION@DIGEST, or
	// the full reference when the caller knows it).
	Version string `json:"version"`
	Reason  Reason `json:"reason"`
	// Detail says why, in words.
	Detail string `json:"detail"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: signature verification failed (%s): %s", e.Version, e.Reason, e.Detail)
}

// Unwrap makes an Error match derrors.VerificationFailed.
func (e *Error) Unwrap() error { return derrors.VerificationFailed }

// Identity is a keyless signer the policy trusts: the OIDC issuer and the
// certificate's subject (its SAN: an email, a workflow URI), each a
// regular expression matched against the whole value, as Flux's
// matchOIDCIdentity matches them.
type Identity struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

// String is ISSUER=SUBJECT, the form of --verify-identity.
func (i Identity) String() string { return i.Issuer + "=" + i.Subject }

// ParseIdentity parses ISSUER=SUBJECT-REGEXP, split at the first '='.
func ParseIdentity(s string) (Identity, error) {
	iss, sub, ok := strings.Cut(s, "=")
	if !ok || iss == "" || sub == "" {
		return Identity{}, derrors.Errorf(derrors.InvalidArgument, "identity %q is not ISSUER=SUBJECT-REGEXP (https://token.actions.githubusercontent.com=https://github.com/acme/templates/.*)", s)
	}
	id := Identity{Issuer: iss, Subject: sub}
	if err := id.check(); err != nil {
		return Identity{}, err
	}
	return id, nil
}

func (i Identity) check() error {
	for _, re := range []string{i.Issuer, i.Subject} {
		if re == "" {
			return derrors.Errorf(derrors.InvalidArgument, "identity %s: issuer and subject are both required", i)
		}
		if _, err := regexp.Compile(re); err != nil {
			return derrors.Errorf(derrors.InvalidArgument, "identity %s: %q is not a regular expression: %v", i, re, err)
		}
	}
	return nil
}

// Anchor makes re match a whole value: an unanchored
// "https://github.com/acme/" would match any URL that contains it.
func Anchor(re string) string { return "^(?:" + re + ")$" }

// PolicyConfig is a registry's signature policy as configured: flags, a
// configuration file or a Registry object's spec.verify with its Secrets
// read.
type PolicyConfig struct {
	// Keys are PEM public keys (ECDSA P-256).
	Keys [][]byte `json:"keys,omitempty"`
	// Identities are the keyless signers trusted.
	Identities []Identity `json:"identities,omitempty"`
	// TrustedRoot is a Sigstore trusted_root.json: the Fulcio CAs, Rekor
	// logs (and CT logs, timestamp authorities) keyless signatures chain
	// to. Required with Identities.
	TrustedRoot []byte `json:"trustedRoot,omitempty"`
	// Required refuses a version without a signature. Without it a
	// version that has none passes (unsigned), but one whose signature
	// fails never does.
	Required bool `json:"required,omitempty"`
}

// Check reports what makes c a policy that cannot hold: a key that is
// not a PEM ECDSA P-256 public key, an identity whose expressions do not
// compile, identities without a trusted root, a requirement with nothing
// to trust. The trusted root's content is checked by the verifier.
func (c *PolicyConfig) Check() error {
	for i, k := range c.Keys {
		if _, err := ParsePublicKey(k); err != nil {
			return derrors.Errorf(derrors.InvalidArgument, "verification key %d: %v", i+1, err)
		}
	}
	for _, id := range c.Identities {
		if err := id.check(); err != nil {
			return err
		}
	}
	switch {
	case len(c.Identities) > 0 && len(c.TrustedRoot) == 0:
		return derrors.Errorf(derrors.InvalidArgument, "identities need a trusted root to chain their certificates to (--trusted-root FILE, a Sigstore trusted_root.json)")
	case len(c.TrustedRoot) > 0 && !json.Valid(c.TrustedRoot):
		return derrors.Errorf(derrors.InvalidArgument, "trusted root: not JSON (want a Sigstore trusted_root.json)")
	case len(c.Identities) == 0 && len(c.Keys) == 0:
		return derrors.Errorf(derrors.InvalidArgument, "a policy that verifies signatures needs a key or an identity to trust (--verify-key FILE or --verify-identity ISSUER=SUBJECT-REGEXP)")
	}
	return nil
}

// ID identifies the policy: what it trusts and requires. Verified results
// are cached by it and the version's digests.
func (c *PolicyConfig) ID() string {
	h := sha256.New()
	fmt.Fprintf(h, "required=%t\n", c.Required)
	var ids []string
	for _, k := range c.Keys {
		if pub, err := ParsePublicKey(k); err == nil {
			ids = append(ids, KeyID(pub))
		} else {
			ids = append(ids, fmt.Sprintf("invalid:%x", sha256.Sum256(k)))
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(h, "key=%s\n", id)
	}
	for _, id := range c.Identities {
		fmt.Fprintf(h, "identity=%q %q\n", id.Issuer, id.Subject)
	}
	if len(c.TrustedRoot) > 0 {
		fmt.Fprintf(h, "root=%x\n", sha256.Sum256(c.TrustedRoot))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// String describes the policy for messages.
func (c *PolicyConfig) String() string {
	var parts []string
	for _, k := range c.Keys {
		if pub, err := ParsePublicKey(k); err == nil {
			parts = append(parts, "key "+KeyID(pub))
		}
	}
	for _, id := range c.Identities {
		parts = append(parts, "identity "+id.String())
	}
	s := strings.Join(parts, ", ")
	if c.Required {
		s += " (required)"
	}
	return s
}

// Equal reports whether c and d configure the same policy.
func (c *PolicyConfig) Equal(d *PolicyConfig) bool {
	if c == nil || d == nil {
		return c == d
	}
	if c.Required != d.Required || string(c.TrustedRoot) != string(d.TrustedRoot) || len(c.Keys) != len(d.Keys) || len(c.Identities) != len(d.Identities) {
		return false
	}
	for i := range c.Keys {
		if string(c.Keys[i]) != string(d.Keys[i]) {
			return false
		}
	}
	for i := range c.Identities {
		if c.Identities[i] != d.Identities[i] {
			return false
		}
	}
	return true
}

// PolicyFiles is a policy as the command lines of dm and dm-controller
// give it: files of public keys and of a trusted root, identities as
// ISSUER=SUBJECT-REGEXP.
type PolicyFiles struct {
	Keys        []string
	Identities  []string
	TrustedRoot string
	Required    bool
}

// Set reports whether f names anything.
func (f PolicyFiles) Set() bool {
	return len(f.Keys) > 0 || len(f.Identities) > 0 || f.TrustedRoot != "" || f.Required
}

// Config reads the files f names and checks the policy; nil when f names
// nothing. Errors name the flag (--verify-key, --verify-identity,
// --trusted-root).
func (f PolicyFiles) Config() (*PolicyConfig, error) {
	if !f.Set() {
		return nil, nil
	}
	c := &PolicyConfig{Required: f.Required}
	for _, k := range f.Keys {
		b, err := os.ReadFile(k)
		if err != nil {
			return nil, derrors.Errorf(derrors.InvalidArgument, "--verify-key: %v", err)
		}
		c.Keys = append(c.Keys, b)
	}
	for _, s := range f.Identities {
		id, err := ParseIdentity(s)
		if err != nil {
			return nil, fmt.Errorf("--verify-identity: %w", err)
		}
		c.Identities = append(c.Identities, id)
	}
	if f.TrustedRoot != "" {
		b, err := os.ReadFile(f.TrustedRoot)
		if err != nil {
			return nil, derrors.Errorf(derrors.InvalidArgument, "--trusted-root: %v", err)
		}
		c.TrustedRoot = b
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c, nil
}

// Signer is who signed a version, as verified.
type Signer struct {
	// KeyID is the key of a key-based signature.
	KeyID string `json:"keyID,omitempty"`
	// Issuer and Subject are a keyless signature's certificate identity.
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Time is when the transparency log saw the signature, if it did.
	Time time.Time `json:"time,omitzero"`
}

// String names the signer: "key SHA256:…" or "SUBJECT (ISSUER)".
func (s Signer) String() string {
	if s.KeyID != "" {
		return "key " + s.KeyID
	}
	return s.Subject + " (" + s.Issuer + ")"
}

// Result is a verified version.
type Result struct {
	// Signed is false for a version with no signature under a policy that
	// does not require one.
	Signed bool    `json:"signed"`
	Signer *Signer `json:"signer,omitempty"`
}

// A Checker verifies the bundles of a version against a policy (package
// signature/sigstore in-process, package signature/sigproxy in the
// dm-sigstore program). It passes when one bundle verifies, and returns
// an *Error naming s when none does, or when there is none and the policy
// requires one.
type Checker interface {
	Check(ctx context.Context, p *PolicyConfig, s Subject, bundles [][]byte) (*Result, error)
}

// ParsePublicKey reads an ECDSA P-256 public key from PEM (PUBLIC KEY, as
// `openssl ec -pubout` and cosign write it).
func ParsePublicKey(data []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM public key (want -----BEGIN PUBLIC KEY-----, as openssl ec -pubout writes it)")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the public key: %v", err)
	}
	ec, ok := key.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("the key is a %T, not an ECDSA P-256 key", key)
	}
	return ec, nil
}

// KeyID names a public key: "SHA256:" and the hex of the sha256 of its
// DER (SubjectPublicKeyInfo) encoding. It is the hint of a key-based
// bundle and what the catalog shows as its signer.
func KeyID(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "SHA256:?"
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + hex.EncodeToString(sum[:])
}
