package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci/artifact"
)

// IndexTag is the tag of the index artifact at HOST/PATH that lists a
// registry's templates where the registry has no catalog API.
const IndexTag = "dm-index"

// SourceOptions configure a Source.
type SourceOptions struct {
	Options
	// MaxEntries bounds the versions (tags) a listing holds, and the
	// repositories it reads: past it Tree fails with a *fetch.BoundError.
	// Zero means fetch.DefaultMaxEntries.
	MaxEntries int
	// MaxBytes bounds one version's unpacked files; zero means
	// artifact.DefaultMaxLayerBytes.
	MaxBytes int64
	// CacheDir, if set, keeps manifests, configs and layers by digest
	// (content-addressed: never stale, checked when read).
	CacheDir string
	// MemoryBytes bounds the unpacked layers kept in memory; zero means
	// 32 MiB.
	MemoryBytes int64
}

// Version is one version a listing found: where it is and what it holds.
type Version struct {
	// Repository and Tag name it in the registry; Dir is its version
	// directory in the listing ([COLLECTION/]TEMPLATE/TAG).
	Repository, Tag, Dir string
	// ManifestDigest is the digest of its manifest: what signatures of
	// it sign, and what a verified result is cached by.
	ManifestDigest string
	Manifest       *artifact.Manifest
	Config         *artifact.Config
}

// Source is a fetch.Source over an OCI repository prefix. A listing costs
// one catalog request (or the index artifact's manifest and config), one
// tags request per template and one manifest request per version, sent
// with If-None-Match so that a registry that honours it answers an
// unchanged tag with 304; configs and layers are fetched once per digest.
// File contents are read from a version's layer, fetched and unpacked
// on the first Blob of one of its files.
type Source struct {
	c          *client
	maxEntries int
	maxBytes   int64
	cacheDir   string

	mu sync.Mutex
	// versions of the last listing, by Dir; blobs maps a file's SHA to
	// the version holding it.
	versions map[string]*Version
	blobs    map[string]string
	// etags are the manifest digests of the last listing by
	// repository:tag, sent as If-None-Match.
	etags    map[string]string
	configs  map[string]*artifact.Config // by config digest
	layers   *lru.LRU[string, *artifact.Unpacked]
	layerMem int64
	memBytes int64
	listed   bool
}

// NewSource returns a Source for opts. It reads nothing yet.
func NewSource(opts SourceOptions) (*Source, error) {
	c, err := newClient(opts.Options)
	if err != nil {
		return nil, err
	}
	s := &Source{c: c, maxEntries: opts.MaxEntries, maxBytes: opts.MaxBytes, cacheDir: opts.CacheDir,
		etags: map[string]string{}, configs: map[string]*artifact.Config{}, memBytes: opts.MemoryBytes}
	if s.maxEntries <= 0 {
		s.maxEntries = fetch.DefaultMaxEntries
	}
	if s.maxBytes <= 0 {
		s.maxBytes = artifact.DefaultMaxLayerBytes
	}
	if s.memBytes <= 0 {
		s.memBytes = 32 << 20
	}
	s.layers, _ = lru.NewLRU[string, *artifact.Unpacked](1<<20, func(_ string, u *artifact.Unpacked) { s.layerMem -= unpackedSize(u) })
	return s, nil
}

// String names the registry.
func (s *Source) String() string { return s.c.loc.String() }

// Location returns where the source reads.
func (s *Source) Location() Location { return s.c.loc }

// Tree lists every version of every template repository under the
// prefix. It returns prev and derrors.NotModified when no tag moved.
func (s *Source) Tree(ctx context.Context, prev *fetch.Tree) (*fetch.Tree, error) {
	repos, err := s.repositories(ctx)
	if err != nil {
		return nil, err
	}
	type tagged struct{ repo, coll, name, tag string }
	var all []tagged
	var mu sync.Mutex
	err = parallel(ctx, len(repos), func(ctx context.Context, i int) error {
		r := repos[i]
		tags, err := s.tags(ctx, r.repo)
		if errors.Is(err, derrors.NotFound) {
			return nil // gone since the catalog listed it
		}
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, t := range tags {
			if _, ok := artifact.VersionOfTag(t); ok {
				all = append(all, tagged{r.repo, r.coll, r.name, t})
			}
		}
		if len(all) > s.maxEntries {
			return fmt.Errorf("%s: listing tags: %w", s, &fetch.BoundError{Bound: "entries", Limit: int64(s.maxEntries), Got: int64(len(all))})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].repo+":"+all[i].tag < all[j].repo+":"+all[j].tag })

	found := make([]*Version, len(all))
	err = parallel(ctx, len(all), func(ctx context.Context, i int) error {
		t := all[i]
		v, err := s.version(ctx, t.repo, t.coll, t.name, t.tag)
		if err != nil {
			var skip *skipError
			if errors.As(err, &skip) {
				s.c.log.WarnContext(ctx, "skipping a tag that is not a version of its template", "registry", s.String(), "repository", t.repo, "tag", t.tag, "reason", skip.Error())
				return nil
			}
			if errors.Is(err, derrors.NotFound) {
				return nil // deleted since its repository was listed
			}
			return err
		}
		found[i] = v
		return nil
	})
	if err != nil {
		return nil, err
	}

	versions := map[string]*Version{}
	blobs := map[string]string{}
	etags := map[string]string{}
	var entries []fetch.Entry
	h := sha256.New()
	for _, v := range found {
		if v == nil {
			continue
		}
		versions[v.Dir] = v
		etags[v.Repository+":"+v.Tag] = v.ManifestDigest
		fmt.Fprintf(h, "%s:%s@%s\n", v.Repository, v.Tag, v.ManifestDigest)
		for _, f := range v.Config.Files {
			entries = append(entries, fetch.Entry{Path: v.Dir + "/" + f.Path, SHA: f.SHA, Size: f.Size})
			if _, ok := blobs[f.SHA]; !ok {
				blobs[f.SHA] = v.Dir
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	h.Write([]byte(fetch.ListingHash(entries)))
	version := hex.EncodeToString(h.Sum(nil))

	s.mu.Lock()
	s.versions, s.blobs, s.etags, s.listed = versions, blobs, etags, true
	s.mu.Unlock()
	s.c.log.InfoContext(ctx, "listed OCI registry", "registry", s.String(), "templates", len(repos), "versions", len(versions), "files", len(entries))
	if prev != nil && prev.Version == version {
		return prev, fmt.Errorf("%s unchanged: %w", s, derrors.NotModified)
	}
	return &fetch.Tree{Version: version, Entries: entries}, nil
}

// Versions returns the versions of the last listing, sorted by Dir.
func (s *Source) Versions() []*Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Version, 0, len(s.versions))
	for _, v := range s.versions {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// VersionAt returns the version of the last listing whose version
// directory is dir ([COLLECTION/]TEMPLATE/TAG).
func (s *Source) VersionAt(dir string) (*Version, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.versions[dir]
	return v, ok
}

// repo is one template repository.
type repo struct{ repo, coll, name string }

// repositories lists the template repositories under the prefix: from
// the catalog, else from the index artifact.
func (s *Source) repositories(ctx context.Context) ([]repo, error) {
	names, err := s.catalog(ctx)
	if err != nil {
		var te interface{ catalogUnsupported() }
		if !errors.As(err, &te) {
			return nil, err
		}
		idx, ierr := s.readIndex(ctx)
		if ierr != nil {
			if errors.Is(ierr, derrors.NotFound) {
				return nil, fmt.Errorf("%s: the registry lists no repositories (%v), and there is no index artifact %s:%s (dm push and dm mirror write it): %w",
					s, err, s.c.loc.Path, IndexTag, derrors.NotFound)
			}
			return nil, ierr
		}
		names = nil
		for _, t := range idx.Templates {
			names = append(names, s.c.loc.Repository("", t))
		}
	}
	var out []repo
	prefix := ""
	if s.c.loc.Path != "" {
		prefix = s.c.loc.Path + "/"
	}
	for _, n := range names {
		rel, ok := strings.CutPrefix(n, prefix)
		if !ok || rel == "" {
			continue
		}
		parts := strings.Split(rel, "/")
		var r repo
		switch len(parts) {
		case 1:
			r = repo{repo: n, name: parts[0]}
		case 2:
			r = repo{repo: n, coll: parts[0], name: parts[1]}
		default:
			continue // deeper than a collection: no reference names it
		}
		out = append(out, r)
		if len(out) > s.maxEntries {
			return nil, fmt.Errorf("%s: listing repositories: %w", s, &fetch.BoundError{Bound: "entries", Limit: int64(s.maxEntries), Got: int64(len(out))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].repo < out[j].repo })
	return out, nil
}

// pageSize is how many names a catalog or tags request asks for.
const pageSize = 1000

// maxListBytes bounds one page of a catalog or tags answer: a thousand
// names of up to 255 bytes, quoted.
const maxListBytes = pageSize*260 + 4096

// maxCatalog bounds the repositories a catalog lists, those outside
// the prefix included.
const maxCatalog = 100_000

// errCatalogUnsupported marks a catalog the registry does not serve.
type errCatalogUnsupported struct{ err error }

func (e *errCatalogUnsupported) Error() string       { return e.err.Error() }
func (e *errCatalogUnsupported) Unwrap() error       { return e.err }
func (e *errCatalogUnsupported) catalogUnsupported() {}

// catalog lists the registry's repositories, page by page.
func (s *Source) catalog(ctx context.Context) ([]string, error) {
	var names []string
	last := ""
	for page := 0; ; page++ {
		q := url.Values{"n": {strconv.Itoa(pageSize)}}
		if last != "" {
			q.Set("last", last)
		}
		b, _, err := s.c.get(ctx, s.String()+": listing repositories", "/v2/_catalog?"+q.Encode(), maxListBytes, nil)
		if err != nil {
			var re *fetch.RetryError
			var be *fetch.BoundError
			if errors.As(err, &re) || errors.As(err, &be) || errors.Is(err, context.Canceled) {
				return nil, err
			}
			// 404, 401, 403, 405, UNSUPPORTED: a registry that does not
			// list repositories (or not to this credential).
			return nil, &errCatalogUnsupported{err}
		}
		var resp struct {
			Repositories []string `json:"repositories"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			return nil, &errCatalogUnsupported{fmt.Errorf("%s: catalog answer is not JSON: %w", s, err)}
		}
		names = append(names, resp.Repositories...)
		if len(names) > max(s.maxEntries*4, maxCatalog) {
			// Repositories outside the prefix count too, but not for ever.
			return nil, fmt.Errorf("%s: listing repositories: %w", s, &fetch.BoundError{Bound: "entries", Limit: int64(s.maxEntries), Got: int64(len(names))})
		}
		if len(resp.Repositories) < pageSize || resp.Repositories[len(resp.Repositories)-1] <= last {
			return names, nil
		}
		last = resp.Repositories[len(resp.Repositories)-1]
	}
}

// tags lists a repository's tags, page by page.
func (s *Source) tags(ctx context.Context, repo string) ([]string, error) {
	var tags []string
	last := ""
	for {
		q := url.Values{"n": {strconv.Itoa(pageSize)}}
		if last != "" {
			q.Set("last", last)
		}
		b, _, err := s.c.get(ctx, fmt.Sprintf("%s: listing tags of %s", s, repo), "/v2/"+repo+"/tags/list?"+q.Encode(), maxListBytes, nil)
		if err != nil {
			return nil, err
		}
		var resp struct {
			Tags []string `json:"tags"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			return nil, derrors.Errorf(derrors.Unavailable, "%s: tags of %s: answer is not JSON: %v", s, repo, err)
		}
		tags = append(tags, resp.Tags...)
		if len(tags) > s.maxEntries+pageSize {
			return nil, fmt.Errorf("%s: listing tags of %s: %w", s, repo, &fetch.BoundError{Bound: "entries", Limit: int64(s.maxEntries), Got: int64(len(tags))})
		}
		if len(resp.Tags) < pageSize || resp.Tags[len(resp.Tags)-1] <= last {
			return tags, nil
		}
		last = resp.Tags[len(resp.Tags)-1]
	}
}

// skipError is a tag that holds no version of its template: another
// kind of artifact, or a version of another template.
type skipError struct{ msg string }

func (e *skipError) Error() string { return e.msg }

// manifestAccept is what dm asks a manifest request for.
var manifestAccept = strings.Join([]string{artifact.ManifestMediaType, artifact.IndexMediaType}, ", ")

// version reads the manifest a tag names and the config it points to.
func (s *Source) version(ctx context.Context, repo, coll, name, tag string) (*Version, error) {
	dir := joinName(coll, name) + "/" + tag
	s.mu.Lock()
	prevDigest := s.etags[repo+":"+tag]
	prevV := s.versions[dir]
	s.mu.Unlock()
	if prevV == nil || prevV.ManifestDigest != prevDigest {
		prevDigest = ""
	}
	m, digest, err := s.manifest(ctx, repo, tag, prevDigest)
	if errors.Is(err, derrors.NotModified) && prevV != nil {
		return prevV, nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := s.config(ctx, repo, m)
	if err != nil {
		return nil, err
	}
	want, _ := artifact.VersionOfTag(tag)
	switch {
	case cfg.Name != name || cfg.Collection != coll:
		return nil, &skipError{fmt.Sprintf("its config is of %s, not of %s", joinName(cfg.Collection, cfg.Name), joinName(coll, name))}
	case cfg.Version != want:
		return nil, &skipError{fmt.Sprintf("its config is of version %s, not %s", cfg.Version, want)}
	}
	return &Version{Repository: repo, Tag: tag, Dir: dir, ManifestDigest: digest, Manifest: m, Config: cfg}, nil
}

func joinName(coll, name string) string {
	if coll == "" {
		return name
	}
	return coll + "/" + name
}

// Manifest reads the manifest at repo:ref (a tag or digest) and returns
// it with its digest. With etag, the request is conditional: a 304 returns
// derrors.NotModified.
func (s *Source) manifest(ctx context.Context, repo, ref, etag string) (*artifact.Manifest, string, error) {
	what := fmt.Sprintf("%s: reading %s:%s", s, repo, ref)
	h := http.Header{"Accept": {manifestAccept}}
	if etag != "" {
		h.Set("If-None-Match", `"`+etag+`"`)
	}
	b, hdr, err := s.c.get(ctx, what, "/v2/"+repo+"/manifests/"+ref, artifact.MaxManifestBytes, h)
	if err != nil {
		return nil, "", err
	}
	digest := artifact.Digest(b)
	if d := hdr.Get("Docker-Content-Digest"); d != "" && artifact.ValidDigest(d) && d != digest {
		return nil, "", derrors.Errorf(derrors.Unavailable, "%s: the manifest hashes to %s, the registry says %s", what, digest, d)
	}
	if artifact.ValidDigest(ref) && ref != digest {
		return nil, "", derrors.Errorf(derrors.Unavailable, "%s: the manifest hashes to %s", what, digest)
	}
	m, err := artifact.ParseManifest(b)
	if err != nil {
		return nil, "", &skipError{err.Error()}
	}
	return m, digest, nil
}

// config returns a manifest's config, listed: from memory, disk or the
// registry, and for a config without a listing, from its layer.
func (s *Source) config(ctx context.Context, repo string, m *artifact.Manifest) (*artifact.Config, error) {
	key := m.Config.Digest + " " + m.Layers[0].Digest
	s.mu.Lock()
	c, ok := s.configs[key]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	b, err := s.blob(ctx, repo, m.Config, artifact.MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	c, err = artifact.ParseConfig(b)
	if err != nil {
		return nil, &skipError{err.Error()}
	}
	if len(c.Files) == 0 {
		// Another tool's push: list the layer.
		u, err := s.unpack(ctx, repo, m.Layers[0])
		if err != nil {
			return nil, err
		}
		if err := u.Match(c); err != nil {
			return nil, &skipError{err.Error()}
		}
		c.Files = u.Files
	}
	s.mu.Lock()
	s.configs[key] = c
	s.mu.Unlock()
	return c, nil
}

// blob returns a blob's content, checked against its digest: from the
// disk cache, else from the registry (keeping it).
func (s *Source) blob(ctx context.Context, repo string, d artifact.Descriptor, limit int64) ([]byte, error) {
	if !artifact.ValidDigest(d.Digest) {
		return nil, derrors.Errorf(derrors.InvalidArgument, "blob digest %q is not sha256", d.Digest)
	}
	if d.Size > limit {
		return nil, fmt.Errorf("%s: blob %s of %s: %w", s, d.Digest, repo, &fetch.BoundError{Bound: "response", Limit: limit, Got: d.Size})
	}
	p := s.blobPath(d.Digest)
	if p != "" {
		if b, err := os.ReadFile(p); err == nil && artifact.Digest(b) == d.Digest {
			return b, nil
		}
	}
	what := fmt.Sprintf("%s: reading blob %s of %s", s, d.Digest, repo)
	b, _, err := s.c.get(ctx, what, "/v2/"+repo+"/blobs/"+d.Digest, limit, nil)
	if err != nil {
		return nil, err
	}
	if artifact.Digest(b) != d.Digest {
		return nil, derrors.Errorf(derrors.Unavailable, "%s: content hashes to %s", what, artifact.Digest(b))
	}
	if p != "" {
		_ = fetch.WriteFileAtomic(p, b)
	}
	return b, nil
}

func (s *Source) blobPath(digest string) string {
	if s.cacheDir == "" {
		return ""
	}
	return filepath.Join(s.cacheDir, "oci", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// unpack returns a layer's files: from memory, else fetched and unpacked.
func (s *Source) unpack(ctx context.Context, repo string, d artifact.Descriptor) (*artifact.Unpacked, error) {
	s.mu.Lock()
	u, ok := s.layers.Get(d.Digest)
	s.mu.Unlock()
	if ok {
		return u, nil
	}
	b, err := s.blob(ctx, repo, d, s.maxBytes)
	if err != nil {
		return nil, err
	}
	u, err = artifact.Unpack(bytes.NewReader(b), s.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: layer %s of %s: %w", s, d.Digest, repo, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := unpackedSize(u); n <= s.memBytes && !s.layers.Contains(d.Digest) {
		s.layers.Add(d.Digest, u)
		s.layerMem += n
		for s.layerMem > s.memBytes {
			s.layers.RemoveOldest()
		}
	}
	return u, nil
}

func unpackedSize(u *artifact.Unpacked) int64 {
	var n int64
	for _, f := range u.Files {
		n += f.Size + int64(len(f.Path)) + 64
	}
	return n
}

// Blob returns the file whose git blob SHA is sha, from the layer of a
// version of the last listing that holds it; the layer must hold exactly
// what its config lists.
func (s *Source) Blob(ctx context.Context, sha string) ([]byte, error) {
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	if !listed {
		if _, err := s.Tree(ctx, nil); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	dir, ok := s.blobs[sha]
	v := s.versions[dir]
	s.mu.Unlock()
	if !ok || v == nil {
		return nil, fmt.Errorf("%s: blob %s: %w", s, sha, fetch.ErrChanged)
	}
	u, err := s.unpack(ctx, v.Repository, v.Manifest.Layers[0])
	if err != nil {
		return nil, err
	}
	if err := u.Match(v.Config); err != nil {
		return nil, fmt.Errorf("%s: %s:%s: %w", s, v.Repository, v.Tag, err)
	}
	for _, f := range u.Files {
		if f.SHA == sha {
			return u.Data[f.Path], nil
		}
	}
	return nil, fmt.Errorf("%s: blob %s: %w", s, sha, fetch.ErrChanged)
}

// RegistryIndex is the index artifact's config: the templates of a
// registry without a catalog API, [COLLECTION/]NAME, sorted.
type RegistryIndex struct {
	Templates []string `json:"templates"`
}

// readIndex reads the index artifact at PATH:dm-index.
func (s *Source) readIndex(ctx context.Context) (*RegistryIndex, error) {
	return readIndex(ctx, s.c, s.blob)
}

func readIndex(ctx context.Context, c *client, blob func(context.Context, string, artifact.Descriptor, int64) ([]byte, error)) (*RegistryIndex, error) {
	repo := c.loc.Path
	if repo == "" {
		return nil, derrors.Errorf(derrors.NotFound, "%s: a registry at the root of its host has no index artifact", c.loc)
	}
	b, _, err := c.get(ctx, fmt.Sprintf("%s: reading %s:%s", c.loc, repo, IndexTag), "/v2/"+repo+"/manifests/"+IndexTag,
		artifact.MaxManifestBytes, http.Header{"Accept": {artifact.ManifestMediaType}})
	if err != nil {
		return nil, err
	}
	var m artifact.Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Config.MediaType != IndexConfigMediaType {
		return nil, derrors.Errorf(derrors.InvalidArgument, "%s: %s:%s is not a dm registry index", c.loc, repo, IndexTag)
	}
	cb, err := blob(ctx, repo, m.Config, artifact.MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	var idx RegistryIndex
	if err := json.Unmarshal(cb, &idx); err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "%s: index artifact config: %v", c.loc, err)
	}
	var ok []string
	for _, t := range idx.Templates {
		if checkRepository(t) == nil && strings.Count(t, "/") <= 1 {
			ok = append(ok, t)
		}
	}
	idx.Templates = ok
	return &idx, nil
}

// Media types of the index artifact.
const (
	IndexArtifactType    = "application/vnd.dm.registry.index.v1"
	IndexConfigMediaType = "application/vnd.dm.registry.index.v1+json"
	// EmptyMediaType is OCI's empty descriptor: an artifact's layer
	// when it has no content of its own.
	EmptyMediaType = "application/vnd.oci.empty.v1+json"
)

// parallel runs f for 0..n-1, a few at a time; the first error cancels
// the rest and is returned.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	const concurrency = 8
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				errs[i] = err
				cancel()
			}
		}()
	}
	wg.Wait()
	if err := fetch.FirstError(errs); err != nil {
		return err
	}
	return ctx.Err()
}
