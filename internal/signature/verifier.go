package signature

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
)

// DefaultCacheEntries bounds the verified results a Cache keeps.
const DefaultCacheEntries = 8192

// Cache holds verified results, shared by the verifiers of a process (a
// bound for the whole daemon, not one per registry). A result is a pure
// function of its key (the policy, the digests and the signature), so
// registries of different tenants may share it.
type Cache struct{ lru *lru.Cache[string, verdict] }

// NewCache returns a Cache of at most n results (DefaultCacheEntries when
// n <= 0).
func NewCache(n int) *Cache {
	if n <= 0 {
		n = DefaultCacheEntries
	}
	c, _ := lru.New[string, verdict](n) // fails only for size <= 0
	return &Cache{lru: c}
}

// Len returns how many results c holds.
func (c *Cache) Len() int { return c.lru.Len() }

// Verifier checks versions against one policy (index.Verifier). Results
// are cached by the policy and what was verified, never by a tag or a
// name: the content digest and, from an OCI registry, the manifest digest
// (a verified signature over a manifest stays verified); from a GitHub or
// local registry also the signature file's hash, so that a changed
// signature is verified again. A warm resolve verifies nothing and, from
// OCI, asks the registry for nothing.
type Verifier struct {
	policy  *PolicyConfig
	id      string
	checker Checker
	cache   *Cache
	// memo holds the verdicts of the versions of the snapshots being
	// served, by *index.Version: a warm resolve's check is one map load.
	// A new listing makes new versions, so what a memo says is of the
	// listing it was made of. memoN counts its entries, for its bound.
	memo  sync.Map // *index.Version -> *memo
	memoN atomic.Int64
}

type memo struct {
	signer string
	err    error
	// until, if set, is when a failure read from OCI is asked again.
	until time.Time
}

// maxMemo bounds a Verifier's memo: past it the memo starts over (the
// cache still holds the verdicts by digest).
const maxMemo = 16384

// negativeTTL is how long a failure read from an OCI registry is kept: a
// signature may be added to a manifest later, but a version refused on
// every resolve should not cost the registry a request each time.
const negativeTTL = 30 * time.Second

type verdict struct {
	signer string
	err    error
}

// NewVerifier returns a Verifier of p that verifies with checker and
// keeps its results in c (a cache of its own when c is nil). It checks p
// (PolicyConfig.Check).
func NewVerifier(p *PolicyConfig, checker Checker, c *Cache) (*Verifier, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if checker == nil {
		return nil, errors.New("this program verifies no signatures: no checker")
	}
	if c == nil {
		c = NewCache(0)
	}
	return &Verifier{policy: p, id: p.ID(), checker: checker, cache: c}, nil
}

// Policy returns the verifier's policy.
func (v *Verifier) Policy() *PolicyConfig { return v.policy }

// ociSigned is an OCI source: its versions' signatures are referrers.
type ociSigned interface {
	ManifestDigestAt(dir string) (string, bool)
	Signatures(ctx context.Context, dir string) (string, [][]byte, error)
}

func ociSource(src fetch.Source) (ociSigned, bool) {
	for src != nil {
		if o, ok := src.(ociSigned); ok {
			return o, true
		}
		u, ok := src.(interface{ Unwrap() fetch.Source })
		if !ok {
			return nil, false
		}
		src = u.Unwrap()
	}
	return nil, false
}

// SubjectOf returns what a signature of version ver of template t signs.
func SubjectOf(t *index.Template, ver *index.Version, manifestDigest string) Subject {
	return Subject{Template: path.Join(t.Collection, t.Name), Version: ver.Semver, Digest: ver.Digest, ManifestDigest: manifestDigest}
}

// VerifyVersion verifies ver of g against the policy, with the bundles
// where ver lives: its SignatureFile, or its OCI referrers.
func (v *Verifier) VerifyVersion(ctx context.Context, g *index.Registry, t *index.Template, ver *index.Version) (string, error) {
	if m, ok := v.memo.Load(ver); ok {
		m := m.(*memo)
		if m.until.IsZero() || time.Now().Before(m.until) {
			return m.signer, m.err
		}
	}
	signer, err, until := v.verify(ctx, g, t, ver)
	if v.memoN.Add(1) > maxMemo {
		v.memo.Clear()
		v.memoN.Store(1)
	}
	v.memo.Store(ver, &memo{signer, err, until})
	return signer, err
}

func (v *Verifier) verify(ctx context.Context, g *index.Registry, t *index.Template, ver *index.Version) (string, error, time.Time) {
	oci, isOCI := ociSource(g.Source)
	subj := SubjectOf(t, ver, "")
	key := v.id + "\x00" + ver.Digest
	switch {
	case isOCI:
		md, ok := oci.ManifestDigestAt(ver.Path)
		if !ok {
			return "", fmt.Errorf("%s: the OCI registry no longer lists it", ver.Ref), time.Now().Add(negativeTTL)
		}
		subj.ManifestDigest = md
		key += "\x00oci\x00" + md
	case ver.Signature != nil:
		key += "\x00file\x00" + ver.Signature.SHA
	default:
		key += "\x00unsigned"
	}
	if got, ok := v.cache.lru.Get(key); ok {
		return got.signer, got.err, time.Time{}
	}
	var bundles [][]byte
	switch {
	case isOCI:
		_, bs, err := oci.Signatures(ctx, ver.Path)
		if err != nil {
			return "", fmt.Errorf("%s: reading its signatures: %w", ver.Ref, err), time.Now().Add(negativeTTL)
		}
		bundles = bs
	case ver.Signature != nil:
		if ver.Signature.Size > MaxBundleBytes {
			bundles = [][]byte{make([]byte, ver.Signature.Size)}
			break
		}
		b, err := g.Blob(ctx, ver.Signature.SHA)
		if err != nil {
			return "", fmt.Errorf("%s: reading %s: %w", ver.Ref, index.SignatureFile, err), time.Now().Add(negativeTTL)
		}
		bundles = [][]byte{b}
	}
	res, err := v.checker.Check(ctx, v.policy, subj, bundles)
	var ve *Error
	if errors.As(err, &ve) {
		ve.Version = ver.Ref + "@" + ver.Digest
	} else if err != nil {
		// Not a verdict (the checker's program failed): asked again.
		return "", fmt.Errorf("%s: verifying its signature: %w", ver.Ref, err), time.Now()
	}
	signer := ""
	if res != nil && res.Signer != nil {
		signer = res.Signer.String()
	}
	// From OCI only a success is kept for good: a signature may be added
	// to a manifest later, and no listing says so.
	if err != nil && isOCI {
		return signer, err, time.Now().Add(negativeTTL)
	}
	v.cache.lru.Add(key, verdict{signer, err})
	return signer, err, time.Time{}
}

// Bundles returns the Sigstore bundles of version ver of g where its
// source keeps them: an OCI registry's referrers of its manifest, else
// its SignatureFile; none for an unsigned version. A mirror copies them
// with the version, so that the target's policy verifies it as the
// source's did.
func Bundles(ctx context.Context, g *index.Registry, ver *index.Version) ([][]byte, error) {
	if oci, ok := ociSource(g.Source); ok {
		_, bs, err := oci.Signatures(ctx, ver.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: reading its signatures: %w", ver.Ref, err)
		}
		return bs, nil
	}
	if ver.Signature == nil {
		return nil, nil
	}
	if ver.Signature.Size > MaxBundleBytes {
		return nil, fmt.Errorf("%s: its %s holds %d bytes, more than a bundle may (%d)", ver.Ref, index.SignatureFile, ver.Signature.Size, MaxBundleBytes)
	}
	b, err := g.Blob(ctx, ver.Signature.SHA)
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", ver.Ref, index.SignatureFile, err)
	}
	return [][]byte{b}, nil
}

// Digest returns the sha256 of b as "sha256:<hex>".
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
