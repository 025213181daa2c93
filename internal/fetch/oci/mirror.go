package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
)

// Candidate is one version of a source registry to mirror.
type Candidate struct {
	// Ref names the version in its source registry, for messages.
	Ref  string
	Meta artifact.Metadata
	// Digest is the content digest the source lists for it.
	Digest string
	// Read reads its files and the metadata to push them with (Meta's
	// name, collection and version, and what the source says besides).
	// It is called only for a version to push.
	Read func(ctx context.Context) (artifact.Metadata, []artifact.Content, error)
	// Signatures, if set, reads the version's Sigstore bundles in its
	// source (a signature file, or an OCI registry's referrers), each
	// stored as a referrer of the pushed version when the target lacks
	// it.
	Signatures func(ctx context.Context) ([][]byte, error)
}

// MirrorStep is what Mirror did with one candidate.
type MirrorStep struct {
	Candidate *Candidate
	// Result is set when the version is in the target: Pushed, or there
	// already.
	Result *PushResult
	// Err is the version's error: a *ConflictError for a tag holding
	// other content.
	Err error
}

// MirrorResult counts what Mirror did.
type MirrorResult struct {
	// Pushed and Present count versions pushed and versions the target
	// held already.
	Pushed, Present int
	// Conflicts are the tags holding other content than their source's
	// version: never overwritten.
	Conflicts []*ConflictError
	// IndexWritten reports that the index artifact was written.
	IndexWritten bool
	// Signatures counts the signatures stored as referrers.
	Signatures int
}

// Mirror pushes every candidate the target lacks: a version whose tag
// holds the same content is left as it is, one whose tag holds other
// content is a conflict (counted, never overwritten, the others still
// pushed), and the index artifact lists every template. step, if set,
// is called after each candidate. An error that is not one version's
// (the target unreachable, a refusal of credentials) stops the mirror.
// Conflicts make a *MirrorConflictError.
func (p *Pusher) Mirror(ctx context.Context, cands []Candidate, step func(i, n int, s MirrorStep)) (*MirrorResult, error) {
	res := &MirrorResult{}
	names := map[string]bool{}
	for i := range cands {
		c := &cands[i]
		s := MirrorStep{Candidate: c}
		s.Result, s.Err = p.mirrorOne(ctx, c)
		if s.Err == nil && c.Signatures != nil {
			var stored int
			stored, s.Err = p.mirrorSignatures(ctx, c, s.Result.ManifestDigest)
			res.Signatures += stored
		}
		var ce *ConflictError
		switch {
		case errors.As(s.Err, &ce):
			res.Conflicts = append(res.Conflicts, ce)
		case s.Err != nil:
			if step != nil {
				step(i, len(cands), s)
			}
			return res, fmt.Errorf("mirroring %s: %w", c.Ref, s.Err)
		case s.Result.Pushed:
			res.Pushed++
			names[joinName(c.Meta.Collection, c.Meta.Name)] = true
		default:
			res.Present++
			names[joinName(c.Meta.Collection, c.Meta.Name)] = true
		}
		if step != nil {
			step(i, len(cands), s)
		}
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	written, err := p.AddToIndex(ctx, list...)
	if err != nil {
		return res, err
	}
	res.IndexWritten = written
	if len(res.Conflicts) > 0 {
		return res, &MirrorConflictError{Conflicts: res.Conflicts}
	}
	return res, nil
}

func (p *Pusher) mirrorOne(ctx context.Context, c *Candidate) (*PushResult, error) {
	repo, err := p.Repository(c.Meta.Collection, c.Meta.Name)
	if err != nil {
		return nil, err
	}
	tag := artifact.Tag(c.Meta.Version)
	have, digest, err := p.Existing(ctx, c.Meta.Collection, c.Meta.Name, c.Meta.Version)
	switch {
	case err == nil && have == c.Digest:
		return &PushResult{Repository: p.c.loc.Host + "/" + repo, Tag: tag, ManifestDigest: digest}, nil
	case err == nil:
		return nil, &ConflictError{Repository: p.c.loc.Host + "/" + repo, Tag: tag, Have: have, Want: c.Digest}
	case !errors.Is(err, derrors.NotFound):
		return nil, err
	}
	meta, files, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	if meta.Name != c.Meta.Name || meta.Collection != c.Meta.Collection || meta.Version != c.Meta.Version {
		return nil, derrors.Errorf(derrors.Conflict, "%s read as %s:%s: the source changed: mirror again", c.Ref, joinName(meta.Collection, meta.Name), meta.Version)
	}
	packed, err := artifact.Pack(meta, files)
	if err != nil {
		return nil, err
	}
	if packed.Digest != c.Digest {
		return nil, derrors.Errorf(derrors.Conflict, "%s changed while it was read (listed %s, read %s): mirror again", c.Ref, c.Digest, packed.Digest)
	}
	return p.Push(ctx, packed, c.Meta.Collection, c.Meta.Name, c.Meta.Version)
}

// mirrorSignatures stores each of c's signatures the target lacks as a
// referrer of its pushed manifest, and returns how many it stored.
func (p *Pusher) mirrorSignatures(ctx context.Context, c *Candidate, manifestDigest string) (int, error) {
	bundles, err := c.Signatures(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: reading its signatures: %w", c.Ref, err)
	}
	if len(bundles) == 0 {
		return 0, nil
	}
	_, have, err := p.Signatures(ctx, c.Meta.Collection, c.Meta.Name, c.Meta.Version)
	if err != nil {
		return 0, err
	}
	stored := 0
	for _, b := range bundles {
		if slices.ContainsFunc(have, func(h []byte) bool { return bytes.Equal(h, b) }) {
			continue
		}
		if _, err := p.PushSignature(ctx, c.Meta.Collection, c.Meta.Name, c.Meta.Version, manifestDigest, b); err != nil {
			return stored, fmt.Errorf("%s: storing its signature: %w", c.Ref, err)
		}
		have = append(have, b)
		stored++
	}
	return stored, nil
}

// MirrorConflictError lists the tags a mirror found holding other
// content than their source's versions. It wraps derrors.Conflict.
type MirrorConflictError struct {
	Conflicts []*ConflictError
}

func (e *MirrorConflictError) Error() string {
	if len(e.Conflicts) == 1 {
		return e.Conflicts[0].Error()
	}
	msg := fmt.Sprintf("%d tags hold other content than their source's versions (never overwritten):", len(e.Conflicts))
	for _, c := range e.Conflicts {
		msg += "\n  " + c.Error()
	}
	return msg
}

// Unwrap returns derrors.Conflict.
func (e *MirrorConflictError) Unwrap() error { return derrors.Conflict }
