package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
)

// Signatures returns the manifest digest of the version of the last
// listing at dir ([COLLECTION/]TEMPLATE/TAG) and the Sigstore bundles its
// referrers hold: from the referrers API, else (a registry without it)
// from the index tagged sha256-<hex>. A version without signatures has
// none, and no error.
func (s *Source) Signatures(ctx context.Context, dir string) (string, [][]byte, error) {
	v, ok := s.VersionAt(dir)
	if !ok {
		return "", nil, fmt.Errorf("%s: no version at %s: %w", s, dir, derrors.NotFound)
	}
	bundles, err := signatures(ctx, s.c, s.blob, v.Repository, v.ManifestDigest)
	return v.ManifestDigest, bundles, err
}

// ManifestDigestAt returns the manifest digest of the version of the last
// listing at dir, without a request.
func (s *Source) ManifestDigestAt(dir string) (string, bool) {
	v, ok := s.VersionAt(dir)
	if !ok {
		return "", false
	}
	return v.ManifestDigest, true
}

func signatures(ctx context.Context, c *client, blob func(context.Context, string, artifact.Descriptor, int64) ([]byte, error), repo, digest string) ([][]byte, error) {
	what := fmt.Sprintf("%s: signatures of %s@%s", c.loc, repo, digest)
	accept := http.Header{"Accept": {artifact.IndexMediaType}}
	b, _, err := c.get(ctx, what, "/v2/"+repo+"/referrers/"+digest+"?artifactType="+artifact.BundleMediaType, artifact.MaxManifestBytes, accept)
	if errors.Is(err, derrors.NotFound) || errors.Is(err, derrors.InvalidArgument) {
		// No referrers API: the tag fallback.
		tag, _ := artifact.FallbackTag(digest)
		b, _, err = c.get(ctx, what, "/v2/"+repo+"/manifests/"+tag, artifact.MaxManifestBytes, accept)
		if errors.Is(err, derrors.NotFound) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	refs, err := artifact.ParseReferrers(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var out [][]byte
	for _, d := range refs {
		mb, _, err := c.get(ctx, what, "/v2/"+repo+"/manifests/"+d.Digest, artifact.MaxManifestBytes, http.Header{"Accept": {artifact.ManifestMediaType}})
		if errors.Is(err, derrors.NotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		if artifact.Digest(mb) != d.Digest {
			return nil, derrors.Errorf(derrors.Unavailable, "%s: referrer manifest hashes to %s, not %s", what, artifact.Digest(mb), d.Digest)
		}
		layer, err := artifact.ParseSignatureManifest(mb, digest)
		if err != nil {
			continue // another kind of referrer
		}
		bb, err := blob(ctx, repo, layer, artifact.MaxBundleBytes)
		if err != nil {
			return nil, err
		}
		out = append(out, bb)
	}
	return out, nil
}

// PushSignature stores bundle as a referrer of the version at
// [COLLECTION/]TEMPLATE:VERSION, whose manifest must have digest
// manifestDigest (what the bundle signs). go-containerregistry writes the
// sha256-<hex> tag fallback where the registry has no referrers API. It
// returns the referrer's digest.
func (p *Pusher) PushSignature(ctx context.Context, collection, tmpl, version, manifestDigest string, bundle []byte) (string, error) {
	repo, err := p.Repository(collection, tmpl)
	if err != nil {
		return "", err
	}
	tag := artifact.Tag(version)
	mb, _, err := p.c.get(ctx, fmt.Sprintf("%s: reading %s:%s", p.c.loc, repo, tag), "/v2/"+repo+"/manifests/"+tag,
		artifact.MaxManifestBytes, http.Header{"Accept": {manifestAccept}})
	if err != nil {
		return "", err
	}
	if d := artifact.Digest(mb); d != manifestDigest {
		return "", derrors.Errorf(derrors.Conflict, "%s/%s:%s holds manifest %s, not the signed %s: sign it again", p.c.loc.Host, repo, tag, d, manifestDigest)
	}
	m, digest, err := artifact.SignatureManifest(artifact.Descriptor{MediaType: artifact.ManifestMediaType, Digest: manifestDigest, Size: int64(len(mb))}, bundle)
	if err != nil {
		return "", err
	}
	if err := p.write(ctx, repo, digest, m, artifact.ManifestMediaType,
		static.NewLayer([]byte("{}"), types.MediaType(artifact.EmptyMediaType)), static.NewLayer(bundle, types.MediaType(artifact.BundleMediaType))); err != nil {
		return "", err
	}
	return digest, nil
}

// Signatures returns the bundles stored as referrers of the version at
// [COLLECTION/]TEMPLATE:VERSION and its manifest digest.
func (p *Pusher) Signatures(ctx context.Context, collection, tmpl, version string) (string, [][]byte, error) {
	_, digest, err := p.Existing(ctx, collection, tmpl, version)
	if err != nil {
		return "", nil, err
	}
	repo, _ := p.Repository(collection, tmpl)
	src := &Source{c: p.c, maxBytes: artifact.DefaultMaxLayerBytes}
	bundles, err := signatures(ctx, p.c, src.blob, repo, digest)
	return digest, bundles, err
}
