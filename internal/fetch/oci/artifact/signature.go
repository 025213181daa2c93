package artifact

import (
	"encoding/json"
	"fmt"

	"github.com/dmhq/dm/internal/derrors"
)

// A version's signature is an OCI 1.1 referrer of its manifest, as cosign
// stores Sigstore bundles: an image manifest of artifactType
// BundleMediaType, the empty config, one layer holding the bundle, and
// the version's manifest as its subject. A registry without the referrers
// API lists it in the image index tagged sha256-<hex> of the subject.
const (
	// BundleMediaType is a Sigstore bundle v0.3's media type: the
	// referrer's artifactType and its layer's media type.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// EmptyMediaType is the OCI empty descriptor's media type, the
	// referrer's config; EmptyDigest the digest of its content, "{}".
	EmptyMediaType = "application/vnd.oci.empty.v1+json"
	EmptyDigest    = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	// MaxReferrers bounds the referrers of one version dm reads.
	MaxReferrers = 64
	// MaxBundleBytes bounds one bundle.
	MaxBundleBytes = 256 << 10
)

// SignatureManifest returns the referrer manifest that stores bundle for
// the manifest subject, and the manifest's digest.
func SignatureManifest(subject Descriptor, bundle []byte) ([]byte, string, error) {
	if !ValidDigest(subject.Digest) {
		return nil, "", derrors.Errorf(derrors.InvalidArgument, "subject digest %q is not sha256", subject.Digest)
	}
	m := Manifest{
		SchemaVersion: 2,
		MediaType:     ManifestMediaType,
		ArtifactType:  BundleMediaType,
		Config:        Descriptor{MediaType: EmptyMediaType, Digest: EmptyDigest, Size: 2},
		Layers: []Descriptor{{MediaType: BundleMediaType, Digest: Digest(bundle), Size: int64(len(bundle)),
			Annotations: map[string]string{"dev.sigstore.bundle.content": "dsse-envelope"}}},
		Subject: &Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "", err
	}
	return b, Digest(b), nil
}

// Index is an OCI image index: a referrers answer or its tag fallback.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// ParseReferrers parses a referrers answer (or the index at the fallback
// tag) and returns the descriptors that may hold a bundle: those of
// artifactType BundleMediaType, and those without one (a tag fallback
// written by a client that records the config's media type instead),
// at most MaxReferrers.
func ParseReferrers(b []byte) ([]Descriptor, error) {
	if len(b) > MaxManifestBytes {
		return nil, derrors.Errorf(derrors.LimitExceeded, "referrers index of %d bytes, over %d", len(b), MaxManifestBytes)
	}
	var idx Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "referrers index is not JSON: %v", err)
	}
	if idx.SchemaVersion != 2 || (idx.MediaType != "" && idx.MediaType != IndexMediaType) {
		return nil, derrors.Errorf(derrors.InvalidArgument, "referrers answer is not an OCI image index (schemaVersion %d, mediaType %q)", idx.SchemaVersion, idx.MediaType)
	}
	var out []Descriptor
	for _, d := range idx.Manifests {
		if d.ArtifactType != BundleMediaType && d.ArtifactType != EmptyMediaType && d.ArtifactType != "" {
			continue
		}
		if d.MediaType != ManifestMediaType || !ValidDigest(d.Digest) {
			continue
		}
		if len(out) == MaxReferrers {
			return out, nil
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseSignatureManifest parses a referrer's manifest and returns the
// descriptor of its bundle layer. subject is the digest the referrer must
// refer to.
func ParseSignatureManifest(b []byte, subject string) (Descriptor, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Descriptor{}, derrors.Errorf(derrors.InvalidArgument, "signature manifest is not JSON: %v", err)
	}
	switch {
	case m.SchemaVersion != 2 || m.MediaType != ManifestMediaType:
		return Descriptor{}, derrors.Errorf(derrors.InvalidArgument, "signature manifest is not an OCI image manifest")
	case m.ArtifactType != BundleMediaType:
		return Descriptor{}, derrors.Errorf(derrors.InvalidArgument, "referrer of artifactType %q is not a Sigstore bundle", m.ArtifactType)
	case m.Subject == nil || m.Subject.Digest != subject:
		return Descriptor{}, derrors.Errorf(derrors.InvalidArgument, "signature manifest refers to another manifest than %s", subject)
	case len(m.Layers) != 1 || m.Layers[0].MediaType != BundleMediaType:
		return Descriptor{}, derrors.Errorf(derrors.InvalidArgument, "signature manifest has %d layers, want one of %s", len(m.Layers), BundleMediaType)
	case !ValidDigest(m.Layers[0].Digest):
		return Descriptor{}, derrors.Errorf(derrors.InvalidArgument, "bundle layer digest %q is not sha256", m.Layers[0].Digest)
	case m.Layers[0].Size < 0 || m.Layers[0].Size > MaxBundleBytes:
		return Descriptor{}, derrors.Errorf(derrors.LimitExceeded, "bundle layer of %d bytes, over %d", m.Layers[0].Size, MaxBundleBytes)
	}
	return m.Layers[0], nil
}

// FallbackTag is the referrers tag fallback of a manifest digest:
// sha256-<hex>.
func FallbackTag(digest string) (string, error) {
	if !ValidDigest(digest) {
		return "", fmt.Errorf("digest %q is not sha256", digest)
	}
	return "sha256-" + digest[len("sha256:"):], nil
}
