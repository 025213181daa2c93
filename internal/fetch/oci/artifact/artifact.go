// Package artifact is the OCI artifact a template version is stored as: an
// OCI 1.1 image manifest of artifact type ArtifactType, one config blob
// (ConfigMediaType: the template's name, version, collection, content
// digest and file listing) and one layer (LayerMediaType: the version
// directory as a reproducible tar+gzip).
//
// Packing is reproducible: entries sorted, fixed modes and times, no
// owner names, gzip without a name or time, so the same directory and
// metadata always give the same manifest digest, whoever packs it. Parsing
// is strict and bounded: every manifest, config and layer read from a
// registry is someone else's bytes.
//
// The package uses the standard library only, so that what parses
// registry answers can be fuzzed alone and costs dm nothing at start.
package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
)

// Media and artifact types of a template version.
const (
	// ArtifactType is the manifest's artifactType.
	ArtifactType = "application/vnd.dm.template.v1"
	// ConfigMediaType is the config blob's media type: JSON, Config.
	ConfigMediaType = "application/vnd.dm.template.config.v1+json"
	// LayerMediaType is the one layer's: the version directory.
	LayerMediaType = "application/vnd.dm.template.content.v1.tar+gzip"
	// ManifestMediaType is the OCI image manifest's.
	ManifestMediaType = "application/vnd.oci.image.manifest.v1+json"
	// IndexMediaType is the OCI image index's (the referrers tag
	// fallback's, a multi-platform image's).
	IndexMediaType = "application/vnd.oci.image.index.v1+json"
)

// Annotation keys the manifest carries (OCI image spec, pre-defined
// annotation keys).
const (
	AnnotationTitle       = "org.opencontainers.image.title"
	AnnotationVersion     = "org.opencontainers.image.version"
	AnnotationDescription = "org.opencontainers.image.description"
	AnnotationSource      = "org.opencontainers.image.source"
	AnnotationRevision    = "org.opencontainers.image.revision"
	AnnotationCreated     = "org.opencontainers.image.created"
)

// Bounds on what is read from a registry before it is parsed.
const (
	// MaxManifestBytes bounds a manifest (distribution's own limit is 4 MiB).
	MaxManifestBytes = 4 << 20
	// MaxConfigBytes bounds a config blob: a listing of MaxFiles files
	// with long paths fits.
	MaxConfigBytes = 4 << 20
	// MaxFiles bounds the files of one version.
	MaxFiles = 10_000
	// MaxFileBytes bounds one file, as every other source does.
	MaxFileBytes = fetch.MaxLocalFileSize
	// DefaultMaxLayerBytes bounds a version's unpacked files when the
	// caller sets no bound of its own.
	DefaultMaxLayerBytes = 64 << 20
)

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// Manifest is an OCI image manifest, as much of it as dm reads and writes.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Subject       *Descriptor       `json:"subject,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// File is one file of a version directory in a config's listing.
type File struct {
	// Path is relative to the version directory, slash-separated.
	Path string `json:"path"`
	// SHA is the git blob SHA-1 of the content (fetch.BlobSHA): the hash
	// every dm source names content by.
	SHA  string `json:"sha"`
	Size int64  `json:"size"`
}

// Config is the config blob: what the version is, without its content.
type Config struct {
	// Name is the template's name; Collection its collection ("" for the
	// root collection).
	Name       string `json:"name"`
	Collection string `json:"collection,omitempty"`
	// Version is the full semantic version (v1.2.3, v2.0.0-rc.1).
	Version string `json:"version"`
	// Digest is dm's content digest of the version directory
	// (sha256 over its sorted paths and git blob SHAs): the same whether
	// the version is read from GitHub, a directory or OCI.
	Digest      string `json:"digest"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Files lists the version directory, sorted by path: a registry is
	// indexed from its configs without downloading a layer. A config
	// without files (written by another tool) is listed from its layer.
	Files []File `json:"files,omitempty"`
}

// Metadata is what a pusher knows about a version besides its files.
type Metadata struct {
	Name, Collection, Version string
	Title, Description        string
	// Source is where the version was published from (a repository URL);
	// Revision its commit. Both may be empty.
	Source, Revision string
	// Created is when the version was made: the commit's time, never the
	// clock's, so that a push is reproducible. Zero leaves it out.
	Created time.Time
}

// Packed is a packed version: the three blobs and their digests.
type Packed struct {
	Manifest, Config, Layer []byte
	// ManifestDigest, ConfigDigest and LayerDigest are "sha256:<hex>".
	ManifestDigest, ConfigDigest, LayerDigest string
	// Digest is dm's content digest of the files.
	Digest string
}

// Content is one file to pack: its path relative to the version
// directory and its bytes.
type Content struct {
	Path string
	Data []byte
}

// ContentDigest returns dm's content digest of a listing, as
// index.Digest computes it.
func ContentDigest(files []File) string {
	entries := make([]fetch.Entry, len(files))
	for i, f := range files {
		entries[i] = fetch.Entry{Path: f.Path, SHA: f.SHA, Size: f.Size}
	}
	return fetch.ListingHashPrefixed("sha256:", entries)
}

// Pack packs a version directory's files with meta into the artifact.
// The same files and meta always give the same bytes.
func Pack(meta Metadata, files []Content) (*Packed, error) {
	if err := checkName("template name", meta.Name); err != nil {
		return nil, err
	}
	if meta.Collection != "" {
		if err := checkName("collection", meta.Collection); err != nil {
			return nil, err
		}
	}
	if !validVersion(meta.Version) {
		return nil, derrors.Errorf(derrors.InvalidArgument, "version %q: want a full semantic version such as v1.2.3", meta.Version)
	}
	if len(files) == 0 {
		return nil, derrors.Errorf(derrors.InvalidArgument, "%s:%s has no files", meta.Name, meta.Version)
	}
	if len(files) > MaxFiles {
		return nil, derrors.Errorf(derrors.LimitExceeded, "%s:%s has %d files, over the bound of %d", meta.Name, meta.Version, len(files), MaxFiles)
	}
	sorted := append([]Content(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	listing := make([]File, len(sorted))
	for i, f := range sorted {
		if err := checkPath(f.Path); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Path == f.Path {
			return nil, derrors.Errorf(derrors.InvalidArgument, "file %s is given twice", f.Path)
		}
		if len(f.Data) > MaxFileBytes {
			return nil, derrors.Errorf(derrors.LimitExceeded, "file %s: %d bytes is over the %d-byte limit for registry files", f.Path, len(f.Data), MaxFileBytes)
		}
		listing[i] = File{Path: f.Path, SHA: fetch.BlobSHA(f.Data), Size: int64(len(f.Data))}
	}
	layer, err := packLayer(sorted)
	if err != nil {
		return nil, err
	}
	cfg := Config{Name: meta.Name, Collection: meta.Collection, Version: meta.Version, Digest: ContentDigest(listing),
		Title: meta.Title, Description: meta.Description, Files: listing}
	cfgBytes, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	p := &Packed{Config: cfgBytes, Layer: layer, ConfigDigest: Digest(cfgBytes), LayerDigest: Digest(layer), Digest: cfg.Digest}
	ann := map[string]string{
		AnnotationTitle:   meta.Name,
		AnnotationVersion: meta.Version,
	}
	for k, v := range map[string]string{AnnotationDescription: oneLine(meta.Description), AnnotationSource: meta.Source, AnnotationRevision: meta.Revision} {
		if v != "" {
			ann[k] = v
		}
	}
	if !meta.Created.IsZero() {
		ann[AnnotationCreated] = meta.Created.UTC().Format(time.RFC3339)
	}
	m := Manifest{
		SchemaVersion: 2,
		MediaType:     ManifestMediaType,
		ArtifactType:  ArtifactType,
		Config:        Descriptor{MediaType: ConfigMediaType, Digest: p.ConfigDigest, Size: int64(len(cfgBytes))},
		Layers: []Descriptor{{MediaType: LayerMediaType, Digest: p.LayerDigest, Size: int64(len(layer)),
			Annotations: map[string]string{AnnotationTitle: LayerFileName(meta.Name, meta.Version)}}},
		Annotations: ann,
	}
	// encoding/json sorts map keys: the manifest's bytes are a function
	// of its content.
	if p.Manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	p.ManifestDigest = Digest(p.Manifest)
	return p, nil
}

// LayerFileName is the layer's title annotation: the file name oras
// pull writes it as.
func LayerFileName(name, version string) string { return name + "-" + version + ".tar.gz" }

// oneLine keeps an annotation to its first line: a description's
// paragraphs belong in the config.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// Digest returns the OCI digest of b: "sha256:<hex>".
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// ValidDigest reports whether d is "sha256:" and 64 lower-case hex digits,
// the only digests dm reads or writes: a digest reaches URLs and file
// names only after this check.
func ValidDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Tag returns the tag a version is stored under: the version itself, its
// build metadata's "+" written "_" (a tag cannot hold "+"), as Helm and
// Flux write it.
func Tag(version string) string { return strings.ReplaceAll(version, "+", "_") }

// VersionOfTag returns the version a tag stores and whether it is one:
// v, then a full or partial semantic version as dm's version directories
// name them. Tags that name no version (latest, sha256-... signature
// tags) are not versions.
func VersionOfTag(tag string) (string, bool) {
	v := strings.ReplaceAll(tag, "_", "+")
	if !validVersion(v) {
		return "", false
	}
	return v, true
}

// validVersion accepts what dm's version directories may be named:
// v MAJOR[.MINOR[.PATCH]][-PRERELEASE], no build metadata.
func validVersion(v string) bool {
	return len(v) <= 64 && strings.HasPrefix(v, "v") && semver.IsValid(v) && semver.Build(v) == ""
}

// checkName accepts what references accept in a collection or template.
func checkName(what, s string) error {
	if s == "" || s == "." || s == ".." || len(s) > 100 {
		return derrors.Errorf(derrors.InvalidArgument, "%s %q: want 1 to 100 letters, digits, '-', '_' and '.'", what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return derrors.Errorf(derrors.InvalidArgument, "%s %q: character %q is not allowed (letters, digits, '-', '_' and '.')", what, s, c)
		}
	}
	return nil
}

// checkPath accepts a relative, clean, slash-separated file path that no
// source would hide (no element starting with "." but .helmignore).
func checkPath(p string) error {
	if !fs.ValidPath(p) || p == "." || len(p) > 1024 || strings.ContainsAny(p, "\\\x00") {
		return derrors.Errorf(derrors.InvalidArgument, "file path %q: want a relative, clean, slash-separated path", p)
	}
	for _, el := range strings.Split(p, "/") {
		if strings.HasPrefix(el, ".") && el != ".helmignore" {
			return derrors.Errorf(derrors.InvalidArgument, "file path %q: hidden files are not part of a version", p)
		}
	}
	return nil
}

// ParseManifest parses a manifest that should be a template version's:
// an OCI image manifest of ArtifactType (or, from a client that writes no
// artifactType, of ConfigMediaType config) with exactly one layer of
// LayerMediaType. It returns derrors.InvalidArgument naming what is wrong.
func ParseManifest(b []byte) (*Manifest, error) {
	if len(b) > MaxManifestBytes {
		return nil, derrors.Errorf(derrors.LimitExceeded, "manifest: %d bytes is over the bound of %d", len(b), MaxManifestBytes)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "manifest: not JSON: %v", err)
	}
	if m.SchemaVersion != 2 {
		return nil, derrors.Errorf(derrors.InvalidArgument, "manifest: schemaVersion %d, want 2", m.SchemaVersion)
	}
	if m.MediaType != "" && m.MediaType != ManifestMediaType {
		return nil, derrors.Errorf(derrors.InvalidArgument, "manifest: media type %q is not an OCI image manifest", m.MediaType)
	}
	if !IsTemplate(&m) {
		return nil, derrors.Errorf(derrors.InvalidArgument, "manifest: artifact type %q and config media type %q: not a dm template version (want %s)", m.ArtifactType, m.Config.MediaType, ArtifactType)
	}
	if err := checkDescriptor("config", m.Config, MaxConfigBytes); err != nil {
		return nil, err
	}
	if len(m.Layers) != 1 {
		return nil, derrors.Errorf(derrors.InvalidArgument, "manifest: %d layers, want one of %s", len(m.Layers), LayerMediaType)
	}
	if m.Layers[0].MediaType != LayerMediaType {
		return nil, derrors.Errorf(derrors.InvalidArgument, "manifest: layer media type %q, want %s", m.Layers[0].MediaType, LayerMediaType)
	}
	if err := checkDescriptor("layer", m.Layers[0], 1<<40); err != nil {
		return nil, err
	}
	if m.Subject != nil {
		if err := checkDescriptor("subject", *m.Subject, MaxManifestBytes); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// IsTemplate reports whether m claims to be a template version.
func IsTemplate(m *Manifest) bool {
	return m.ArtifactType == ArtifactType || m.ArtifactType == "" && m.Config.MediaType == ConfigMediaType
}

func checkDescriptor(what string, d Descriptor, maxSize int64) error {
	if !ValidDigest(d.Digest) {
		return derrors.Errorf(derrors.InvalidArgument, "manifest: %s digest %q: want sha256:<64 hex digits>", what, d.Digest)
	}
	if d.Size < 0 || d.Size > maxSize {
		return derrors.Errorf(derrors.InvalidArgument, "manifest: %s size %d: want 0 to %d bytes", what, d.Size, maxSize)
	}
	return nil
}

// ParseConfig parses a config blob and checks it: name and collection are
// reference segments, version a full semantic version, digest dm's, the
// listing (if any) sorted, unique, of valid paths and SHAs, and hashing
// to digest.
func ParseConfig(b []byte) (*Config, error) {
	if len(b) > MaxConfigBytes {
		return nil, derrors.Errorf(derrors.LimitExceeded, "config: %d bytes is over the bound of %d", len(b), MaxConfigBytes)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&c); err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "config: not JSON: %v", err)
	}
	if err := checkName("config: template name", c.Name); err != nil {
		return nil, err
	}
	if c.Collection != "" {
		if err := checkName("config: collection", c.Collection); err != nil {
			return nil, err
		}
	}
	if !validVersion(c.Version) {
		return nil, derrors.Errorf(derrors.InvalidArgument, "config: version %q: want a semantic version such as v1.2.3", c.Version)
	}
	if !ValidDigest(c.Digest) {
		return nil, derrors.Errorf(derrors.InvalidArgument, "config: digest %q: want sha256:<64 hex digits>", c.Digest)
	}
	if len(c.Files) > 0 {
		if err := CheckListing(c.Files); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if got := ContentDigest(c.Files); got != c.Digest {
			return nil, derrors.Errorf(derrors.InvalidArgument, "config: its files hash to %s, not to its digest %s", got, c.Digest)
		}
	}
	return &c, nil
}

// CheckListing checks a version's listing: at most MaxFiles files,
// sorted by path, unique, each a valid path with a git blob SHA and a
// size within MaxFileBytes.
func CheckListing(files []File) error {
	if len(files) > MaxFiles {
		return derrors.Errorf(derrors.LimitExceeded, "%d files, over the bound of %d", len(files), MaxFiles)
	}
	for i, f := range files {
		if err := checkPath(f.Path); err != nil {
			return err
		}
		if i > 0 && files[i-1].Path >= f.Path {
			return derrors.Errorf(derrors.InvalidArgument, "files: %q after %q: want sorted, unique paths", f.Path, files[i-1].Path)
		}
		if !fetch.ValidSHA(f.SHA) {
			return derrors.Errorf(derrors.InvalidArgument, "file %s: sha %q is not a git blob SHA-1", f.Path, f.SHA)
		}
		if f.Size < 0 || f.Size > MaxFileBytes {
			return derrors.Errorf(derrors.InvalidArgument, "file %s: size %d: want 0 to %d bytes", f.Path, f.Size, MaxFileBytes)
		}
	}
	return nil
}
