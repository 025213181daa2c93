// Package signature signs template versions and verifies their signatures
// against a registry's policy, with sigstore-go.
//
// A version is signed over its content digest (index.Digest: the same from
// GitHub, a directory or OCI) and, when it is read from an OCI registry, its
// manifest digest. The signature is a Sigstore bundle (v0.3) whose DSSE
// envelope holds an in-toto statement: its subjects are the version,
// "[COLLECTION/]TEMPLATE:VERSION" with the content digest, and the OCI
// manifest. Keyless bundles carry a Fulcio certificate for an OIDC identity
// and a Rekor entry; key-based ones name the key by a hint.
//
// This package holds what needs no Sigstore library: the statement, the
// policy as configured, the verdicts, and the Verifier that finds a
// version's bundles and caches verdicts. Verifying and signing are a
// Checker's: package signature/sigstore (sigstore-go) in registryd and
// dm-controller, and the dm-sigstore program for dm (signature/sigproxy),
// so that dm's commands do not pay sigstore-go's start-up cost.
package signature

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

const (
	// BundleMediaType is the media type of a Sigstore bundle v0.3: the
	// artifact type of an OCI referrer holding one, as cosign writes it.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// PredicateType is the predicate type of dm's statements.
	PredicateType = "https://github.com/dmhq/dm/signature/v1"
	// StatementType is the in-toto statement type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// ManifestSubject names the OCI manifest's subject in a statement.
	ManifestSubject = "oci-manifest"
	// MaxBundleBytes bounds a bundle: a keyless one with its certificate
	// chain and Rekor entry is a few KiB.
	MaxBundleBytes = 256 << 10
)

// Public-good Sigstore's Fulcio and Rekor, the keyless defaults.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
)

// Subject is what a signature is over: one version of one template.
type Subject struct {
	// Template is "[COLLECTION/]TEMPLATE", Version the version as the
	// registry names it (v1.2.3).
	Template, Version string
	// Digest is the content digest, "sha256:<hex>".
	Digest string
	// ManifestDigest is the OCI manifest's digest when the version was
	// read from (or pushed to) an OCI registry, else "".
	ManifestDigest string
}

// Name is the statement subject's name: "[COLLECTION/]TEMPLATE:VERSION".
func (s Subject) Name() string { return s.Template + ":" + s.Version }

// String names the version and its digest for messages.
func (s Subject) String() string { return s.Name() + "@" + s.Digest }

type statement struct {
	Type          string        `json:"_type"`
	Subject       []subjectJSON `json:"subject"`
	PredicateType string        `json:"predicateType"`
	Predicate     predicateJSON `json:"predicate"`
}

type subjectJSON struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type predicateJSON struct {
	Template       string `json:"template"`
	Version        string `json:"version"`
	Digest         string `json:"digest"`
	ManifestDigest string `json:"manifestDigest,omitempty"`
}

// sha256Hex returns the hex of a "sha256:<hex>" digest.
func sha256Hex(d string) (string, error) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", d)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", d)
	}
	return h, nil
}

// Statement returns the in-toto statement signed for s.
func Statement(s Subject) ([]byte, error) {
	h, err := sha256Hex(s.Digest)
	if err != nil {
		return nil, err
	}
	st := statement{
		Type:          StatementType,
		Subject:       []subjectJSON{{Name: s.Name(), Digest: map[string]string{"sha256": h}}},
		PredicateType: PredicateType,
		Predicate:     predicateJSON{Template: s.Template, Version: s.Version, Digest: s.Digest, ManifestDigest: s.ManifestDigest},
	}
	if s.ManifestDigest != "" {
		mh, err := sha256Hex(s.ManifestDigest)
		if err != nil {
			return nil, fmt.Errorf("manifest %w", err)
		}
		st.Subject = append(st.Subject, subjectJSON{Name: ManifestSubject, Digest: map[string]string{"sha256": mh}})
	}
	return json.Marshal(st)
}

// ParseStatement reads what a statement says it is over.
func ParseStatement(payload []byte) (Subject, error) {
	var st statement
	if err := json.Unmarshal(payload, &st); err != nil {
		return Subject{}, fmt.Errorf("the statement is not JSON: %v", err)
	}
	if st.Type != StatementType {
		return Subject{}, fmt.Errorf("the statement's type is %q, not %q", st.Type, StatementType)
	}
	if st.PredicateType != PredicateType {
		return Subject{}, fmt.Errorf("the statement's predicate type is %q, not dm's %q", st.PredicateType, PredicateType)
	}
	var s Subject
	for _, sub := range st.Subject {
		h := sub.Digest["sha256"]
		switch {
		case sub.Name == ManifestSubject:
			s.ManifestDigest = "sha256:" + h
		case s.Digest == "":
			tmpl, ver, ok := strings.Cut(sub.Name, ":")
			if !ok {
				return Subject{}, fmt.Errorf("the statement's subject %q is not TEMPLATE:VERSION", sub.Name)
			}
			s.Template, s.Version, s.Digest = tmpl, ver, "sha256:"+h
		default:
			return Subject{}, fmt.Errorf("the statement names two versions (%s and %s)", s.Name(), sub.Name)
		}
	}
	if s.Digest == "" {
		return Subject{}, fmt.Errorf("the statement names no version")
	}
	if p := st.Predicate; p.Digest != s.Digest || p.Template != s.Template || p.Version != s.Version || p.ManifestDigest != s.ManifestDigest {
		return Subject{}, fmt.Errorf("the statement's predicate (%s:%s@%s) disagrees with its subjects (%s)", p.Template, p.Version, p.Digest, s)
	}
	return s, nil
}
