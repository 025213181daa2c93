package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
)

// Pusher writes template versions to an OCI repository prefix.
type Pusher struct {
	c *client
}

// NewPusher returns a Pusher for opts. It sends nothing yet.
func NewPusher(opts Options) (*Pusher, error) {
	c, err := newClient(opts)
	if err != nil {
		return nil, err
	}
	return &Pusher{c: c}, nil
}

// Location returns where the pusher writes.
func (p *Pusher) Location() Location { return p.c.loc }

// PushResult says what a push did.
type PushResult struct {
	// Repository and Tag are where the version is: HOST/PATH/[COLL/]NAME
	// and its tag.
	Repository, Tag string
	// ManifestDigest is the digest of the manifest the tag holds.
	ManifestDigest string
	// Pushed is false when the tag held the same content already: a
	// push never overwrites a tag.
	Pushed bool
}

// Ref returns REPOSITORY:TAG@DIGEST.
func (r *PushResult) Ref() string { return r.Repository + ":" + r.Tag + "@" + r.ManifestDigest }

// ConflictError is a tag that holds other content than the version
// pushed to it: never overwritten. It wraps derrors.Conflict.
type ConflictError struct {
	Repository, Tag string
	// Have is the content digest the tag holds ("" when it holds no dm
	// template version); Want the pushed version's.
	Have, Want string
}

func (e *ConflictError) Error() string {
	if e.Have == "" {
		return fmt.Sprintf("%s:%s holds another kind of artifact, not a dm template version; not overwritten", e.Repository, e.Tag)
	}
	return fmt.Sprintf("%s:%s holds content %s, but the version pushed has content %s; a tag is never overwritten (publish a new version)", e.Repository, e.Tag, e.Have, e.Want)
}

// Unwrap returns derrors.Conflict.
func (e *ConflictError) Unwrap() error { return derrors.Conflict }

// Repository returns the repository of a template, checked: OCI
// repository names are lower case, as template names need not be.
func (p *Pusher) Repository(collection, tmpl string) (string, error) {
	repo := p.c.loc.Repository(collection, tmpl)
	if err := checkRepository(repo); err != nil {
		return "", fmt.Errorf("%s: template %s cannot be stored: %w", p.c.loc, joinName(collection, tmpl), err)
	}
	return repo, nil
}

// Existing returns the content digest and manifest digest a version's tag
// holds, derrors.NotFound when there is no such tag, a *ConflictError
// when it holds no template version.
func (p *Pusher) Existing(ctx context.Context, collection, tmpl, version string) (contentDigest, manifestDigest string, err error) {
	repo, err := p.Repository(collection, tmpl)
	if err != nil {
		return "", "", err
	}
	tag := artifact.Tag(version)
	src := &Source{c: p.c, maxBytes: artifact.DefaultMaxLayerBytes, configs: map[string]*artifact.Config{}}
	b, _, err := p.c.get(ctx, fmt.Sprintf("%s: reading %s:%s", p.c.loc, repo, tag), "/v2/"+repo+"/manifests/"+tag,
		artifact.MaxManifestBytes, http.Header{"Accept": {manifestAccept}})
	if err != nil {
		return "", "", err
	}
	digest := artifact.Digest(b)
	m, err := artifact.ParseManifest(b)
	if err != nil {
		return "", digest, &ConflictError{Repository: p.c.loc.Host + "/" + repo, Tag: tag}
	}
	cb, err := src.blob(ctx, repo, m.Config, artifact.MaxConfigBytes)
	if err != nil {
		return "", digest, err
	}
	c, err := artifact.ParseConfig(cb)
	if err != nil {
		return "", digest, &ConflictError{Repository: p.c.loc.Host + "/" + repo, Tag: tag}
	}
	return c.Digest, digest, nil
}

// Push writes a packed version as [COLLECTION/]TEMPLATE:TAG. A tag that
// holds the same content already is left as it is (Pushed false); one
// that holds other content is a *ConflictError.
func (p *Pusher) Push(ctx context.Context, packed *artifact.Packed, collection, tmpl, version string) (*PushResult, error) {
	repo, err := p.Repository(collection, tmpl)
	if err != nil {
		return nil, err
	}
	tag := artifact.Tag(version)
	res := &PushResult{Repository: p.c.loc.Host + "/" + repo, Tag: tag}
	have, digest, err := p.Existing(ctx, collection, tmpl, version)
	switch {
	case err == nil && have == packed.Digest:
		res.ManifestDigest = digest
		return res, nil
	case err == nil:
		return nil, &ConflictError{Repository: res.Repository, Tag: tag, Have: have, Want: packed.Digest}
	case !errors.Is(err, derrors.NotFound):
		return nil, err
	}
	if err := p.write(ctx, repo, tag, packed.Manifest, artifact.ManifestMediaType,
		static.NewLayer(packed.Layer, artifact.LayerMediaType), static.NewLayer(packed.Config, artifact.ConfigMediaType)); err != nil {
		return nil, err
	}
	res.ManifestDigest, res.Pushed = packed.ManifestDigest, true
	return res, nil
}

// write uploads blobs (skipping those the repository has) and then the
// manifest at ref, a tag or a digest.
func (p *Pusher) write(ctx context.Context, repo, ref string, manifest []byte, mediaType string, blobs ...layer) error {
	return p.writeBlobs(ctx, repo, ref, manifest, mediaType, blobs)
}

// layer is a blob to upload.
type layer = v1.Layer

// PutManifest writes raw manifest bytes at repo:ref after uploading the
// given blobs (raw bytes and media types).
func (p *Pusher) PutManifest(ctx context.Context, repo, ref string, manifest []byte, mediaType string, blobs ...Blob) error {
	var ls []layer
	for _, b := range blobs {
		ls = append(ls, static.NewLayer(b.Data, types.MediaType(b.MediaType)))
	}
	return p.writeBlobs(ctx, repo, ref, manifest, mediaType, ls)
}

// Blob is a blob to upload with a manifest.
type Blob struct {
	Data      []byte
	MediaType string
}

// AddToIndex adds templates ([COLLECTION/]NAME) to the index artifact at
// PATH:dm-index, which lists a registry's templates where the registry
// has no catalog API. It writes only when a template is missing. Two
// pushers adding at once may lose one's addition; its next push adds it
// again.
func (p *Pusher) AddToIndex(ctx context.Context, templates ...string) (bool, error) {
	repo := p.c.loc.Path
	if repo == "" {
		return false, nil
	}
	src := &Source{c: p.c, configs: map[string]*artifact.Config{}}
	idx, err := readIndex(ctx, p.c, src.blob)
	if errors.Is(err, derrors.NotFound) {
		idx, err = &RegistryIndex{}, nil
	}
	if err != nil {
		return false, err
	}
	have := map[string]bool{}
	for _, t := range idx.Templates {
		have[t] = true
	}
	changed := false
	for _, t := range templates {
		if !have[t] {
			have[t] = true
			idx.Templates = append(idx.Templates, t)
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	sort.Strings(idx.Templates)
	cfg, _ := json.Marshal(idx)
	empty := []byte("{}")
	m := artifact.Manifest{
		SchemaVersion: 2, MediaType: artifact.ManifestMediaType, ArtifactType: IndexArtifactType,
		Config: artifact.Descriptor{MediaType: IndexConfigMediaType, Digest: artifact.Digest(cfg), Size: int64(len(cfg))},
		Layers: []artifact.Descriptor{{MediaType: EmptyMediaType, Digest: artifact.Digest(empty), Size: int64(len(empty))}},
	}
	mb, _ := json.Marshal(m)
	if err := p.PutManifest(ctx, repo, IndexTag, mb, artifact.ManifestMediaType,
		Blob{Data: cfg, MediaType: IndexConfigMediaType}, Blob{Data: empty, MediaType: EmptyMediaType}); err != nil {
		return false, fmt.Errorf("%s: writing the index artifact: %w", p.c.loc, err)
	}
	return true, nil
}

// rawManifest is a manifest's bytes as remote.Put takes them.
type rawManifest struct {
	b  []byte
	mt string
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.b, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.MediaType(r.mt), nil }

func (p *Pusher) remoteOptions(ctx context.Context, repo string) ([]remote.Option, error) {
	rt, err := p.c.transport(ctx, repoScope(repo, true))
	if err != nil {
		return nil, err
	}
	return []remote.Option{remote.WithTransport(rt), remote.WithContext(ctx)}, nil
}

func (p *Pusher) repoName(repo string) (name.Repository, error) {
	var opts []name.Option
	if p.c.plainHTTP {
		opts = append(opts, name.Insecure)
	}
	r, err := name.NewRepository(p.c.loc.Host+"/"+repo, opts...)
	if err != nil {
		return name.Repository{}, derrors.Errorf(derrors.InvalidArgument, "repository %s/%s: %v", p.c.loc.Host, repo, err)
	}
	return r, nil
}

func (p *Pusher) writeBlobs(ctx context.Context, repo, ref string, manifest []byte, mediaType string, blobs []layer) error {
	opts, err := p.remoteOptions(ctx, repo)
	if err != nil {
		return err
	}
	r, err := p.repoName(repo)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%s: pushing %s:%s", p.c.loc, repo, ref)
	for _, b := range blobs {
		if err := remote.WriteLayer(r, b, opts...); err != nil {
			return p.c.mapError(what, err)
		}
	}
	var target name.Reference = r.Tag(ref)
	if strings.HasPrefix(ref, "sha256:") {
		target = r.Digest(ref)
	}
	if err := remote.Put(target, rawManifest{manifest, mediaType}, opts...); err != nil {
		return p.c.mapError(what, err)
	}
	return nil
}
