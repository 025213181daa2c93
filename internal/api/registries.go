package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/signature"
)

// Registry kinds, as reported in Registry.Kind.
const (
	KindGitHub   = "github"
	KindLocal    = "local"
	KindEmbedded = "embedded"
	KindOCI      = "oci"
)

// RegistrySpec says where one registry is read; registryd and dm build
// their registries from specs.
type RegistrySpec struct {
	// Prefix is the reference prefix the registry answers to
	// (github.com/owner/repo).
	Prefix string
	// Exactly one of Dir (a local directory), FS (an in-memory or embedded
	// file system), GitHub and OCI is set.
	Dir    string
	FS     fs.FS
	GitHub *GitHubSpec
	OCI    *OCISpec
	// Namespace confines the registry to one Kubernetes namespace: that of
	// the Registry object that configures it (registryd
	// --watch-registries). "" is visible everywhere. Object is the name of
	// that Registry object (or ClusterRegistry) and UID its uid: a
	// registry of another object never shares its caches.
	Namespace, Object, UID string
	// MaxEntries and MaxBytes bound the registry's listing: its entries,
	// and the bytes of its files (index.Registry); zero means no bound
	// beyond the source's own (fetch.DefaultMaxEntries for GitHub).
	MaxEntries int
	MaxBytes   int64
	// Verify, if set, is the registry's signature policy: every version
	// resolved from it is verified first (package signature).
	Verify *signature.PolicyConfig
}

// Identity returns who reads what for the registry spec describes: the
// object, the source and a hash of the credential. Two specs of one
// identity may share cached content; no others do (index.Registry).
func (s RegistrySpec) Identity() string {
	h := sha256.New()
	fmt.Fprintf(h, "prefix\x00%s\x00namespace\x00%s\x00object\x00%s\x00uid\x00%s\x00", s.Prefix, s.Namespace, s.Object, s.UID)
	switch {
	case s.GitHub != nil:
		gh := s.GitHub
		api := gh.APIURL
		if api == "" {
			api = fetch.DefaultGitHubAPI
		}
		tok := sha256.Sum256([]byte(gh.Token))
		fmt.Fprintf(h, "github\x00%s\x00%s\x00%s\x00%s\x00%x", strings.TrimSuffix(api, "/"), gh.Owner, gh.Repo, gh.Branch, tok)
	case s.OCI != nil:
		cred := sha256.Sum256(s.OCI.DockerConfig)
		fmt.Fprintf(h, "oci\x00%s\x00%t\x00%t\x00%x\x00%s", s.OCI.URL, s.OCI.PlainHTTP, s.OCI.DockerConfig != nil, cred, s.OCI.DockerConfigDir)
	case s.Dir != "":
		abs, _ := filepath.Abs(s.Dir)
		fmt.Fprintf(h, "dir\x00%s", abs)
	default:
		fmt.Fprint(h, "embedded")
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// GitHubSpec names a GitHub repository and how to reach it.
type GitHubSpec struct {
	Owner, Repo, Branch string
	// APIURL is the REST API base URL; "" for api.github.com.
	APIURL string
	// Token is sent as a bearer token when set. It is never logged.
	Token string
}

// OCISpec names an OCI repository prefix and how to reach it.
type OCISpec struct {
	// URL is oci://HOST[:PORT]/PATH.
	URL string
	// PlainHTTP lets dm speak plain HTTP to the host of URL.
	PlainHTTP bool
	// DockerConfig, if set, is a Docker configuration (a Secret's
	// .dockerconfigjson) holding the registry's credential; nil reads
	// Docker's configuration file and credential helpers. It is never
	// logged.
	DockerConfig []byte
	// DockerConfigDir is the directory of Docker's configuration file
	// when DockerConfig is nil; "" is Docker's default ($DOCKER_CONFIG,
	// else ~/.docker).
	DockerConfigDir string
}

// String describes the spec without the credential.
func (o OCISpec) String() string {
	s := o.URL
	if o.PlainHTTP {
		s += " (plain HTTP)"
	}
	return s
}

// GoString is String, so that %#v does not print the credential either.
func (o OCISpec) GoString() string { return o.String() }

// LogValue is String, so that slog does not print the credential either.
func (o OCISpec) LogValue() slog.Value { return slog.StringValue(o.String()) }

// options are the client options of o: its credential from
// DockerConfig, else from Docker's configuration in DockerConfigDir.
func (o OCISpec) options(log *slog.Logger) (oci.Options, error) {
	opts := oci.Options{URL: o.URL, PlainHTTP: o.PlainHTTP, Logger: log}
	if o.DockerConfig == nil {
		opts.Keychain = oci.DockerKeychain(o.DockerConfigDir)
		return opts, nil
	}
	loc, err := oci.ParseURL(o.URL)
	if err != nil {
		return opts, err
	}
	if opts.Auth, err = oci.DockerConfigAuth(o.DockerConfig, loc.Host); err != nil {
		return opts, fmt.Errorf("%s: credentials: %w", o.URL, err)
	}
	return opts, nil
}

// ParseOCISpec parses PREFIX=oci://HOST/PATH, as given to
// --registry-oci.
func ParseOCISpec(s string) (RegistrySpec, error) {
	prefix, u, ok := strings.Cut(s, "=")
	if !ok || prefix == "" || u == "" {
		return RegistrySpec{}, derrors.Errorf(derrors.InvalidArgument, "OCI registry %q: want PREFIX=oci://HOST/PATH, such as github.com/acme/templates=oci://ghcr.io/acme/templates", s)
	}
	p, err := ParsePrefix(prefix)
	if err != nil {
		return RegistrySpec{}, err
	}
	if _, err := oci.ParseURL(u); err != nil {
		return RegistrySpec{}, err
	}
	return RegistrySpec{Prefix: p, OCI: &OCISpec{URL: u}}, nil
}

// OCIPrefix returns the reference prefix of oci://HOST[:PORT]/OWNER/REPO
// named alone (dm --registry oci://...): HOST/OWNER/REPO, references
// naming no port. Another depth of path needs a prefix of its own
// (--registry-oci PREFIX=URL).
func OCIPrefix(u string) (string, error) {
	loc, err := oci.ParseURL(u)
	if err != nil {
		return "", err
	}
	host := loc.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	parts := strings.Split(loc.Path, "/")
	if loc.Path == "" || len(parts) != 2 || !strings.Contains(host, ".") {
		return "", derrors.Errorf(derrors.InvalidArgument, "OCI registry %s: only oci://HOST/OWNER/REPO (a host with a dot) answers to a prefix of its own; give one with --registry-oci PREFIX=%s", u, u)
	}
	return ParsePrefix(host + "/" + loc.Path)
}

// String describes the spec without secrets.
func (s RegistrySpec) String() string {
	switch {
	case s.GitHub != nil:
		return s.Prefix + "=" + s.GitHub.location()
	case s.OCI != nil:
		return s.Prefix + "=" + s.OCI.String()
	case s.Dir != "":
		return s.Prefix + "=" + s.Dir
	default:
		return s.Prefix + "=(embedded)"
	}
}

// String describes the repository without the token.
func (g GitHubSpec) String() string { return g.location() }

// GoString is String, so that %#v does not print the token either.
func (g GitHubSpec) GoString() string { return g.location() }

// LogValue is String, so that slog does not print the token either.
func (g GitHubSpec) LogValue() slog.Value { return slog.StringValue(g.location()) }

func (g GitHubSpec) location() string {
	loc := "github " + g.Owner + "/" + g.Repo
	if g.Branch != "" {
		loc += "@" + g.Branch
	}
	api := g.APIURL
	if api == "" {
		api = fetch.DefaultGitHubAPI
	}
	return loc + " via " + api
}

// ParseDirSpec parses PREFIX=DIR, as given to --registry-dir; PREFIX is
// [github.com/]owner/repo.
func ParseDirSpec(s string) (RegistrySpec, error) {
	prefix, dir, ok := strings.Cut(s, "=")
	if !ok || prefix == "" || dir == "" {
		return RegistrySpec{}, derrors.Errorf(derrors.InvalidArgument, "registry directory %q: want PREFIX=DIR, such as github.com/acme/templates=./registry-example", s)
	}
	p, err := ParsePrefix(prefix)
	if err != nil {
		return RegistrySpec{}, err
	}
	return RegistrySpec{Prefix: p, Dir: dir}, nil
}

// ParsePrefix normalises a registry name, [host/]owner/repo, to
// host/owner/repo.
func ParsePrefix(s string) (string, error) {
	g, err := resolve.ParseRegistry(s)
	if err != nil {
		return "", err
	}
	if g.Collection != "" {
		return "", derrors.Errorf(derrors.InvalidArgument, "registry prefix %q: want [%s/]owner/repo, without a collection", s, resolve.DefaultHost)
	}
	return g.Prefix(), nil
}

// ParseGitHubSpec parses OWNER/REPO[@BRANCH], as given to --github; the
// registry answers to github.com/OWNER/REPO.
func ParseGitHubSpec(s string) (RegistrySpec, error) {
	repo, branch, _ := strings.Cut(s, "@")
	repo = strings.TrimPrefix(repo, resolve.DefaultHost+"/")
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") || strings.HasSuffix(s, "@") {
		return RegistrySpec{}, derrors.Errorf(derrors.InvalidArgument, "GitHub registry %q: want OWNER/REPO[@BRANCH]", s)
	}
	prefix, err := ParsePrefix(owner + "/" + name)
	if err != nil {
		return RegistrySpec{}, err
	}
	return RegistrySpec{Prefix: prefix, GitHub: &GitHubSpec{Owner: owner, Repo: name, Branch: branch}}, nil
}

// Hooks connect registries to metrics; every field may be nil. Each
// hook receives the registry's key (index.Registry.Key): its name, or
// NAMESPACE/NAME for a namespace's registry.
type Hooks struct {
	OnIndex func(registry, result string, d time.Duration)
	// GitHubRequest and CacheLookup return the hook for one registry.
	GitHubRequest func(registry string) func(endpoint string, status int)
	// OCIRequest is GitHubRequest for OCI registries' requests.
	OCIRequest  func(registry string) func(endpoint string, status int)
	CacheLookup func(registry string) func(where string)
}

// Setup is what every registry of a process shares.
type Setup struct {
	// CacheDir holds persisted snapshots and GitHub blobs; "" keeps
	// nothing on disk.
	CacheDir string
	// MemoryBytes bounds each registry's in-memory blob cache; zero means
	// 32 MiB.
	MemoryBytes int64
	Logger      *slog.Logger
	Hooks       Hooks
	// Signatures, if set, holds the verified results of every registry's
	// policy (one bound for the process); nil gives each registry its own.
	Signatures *signature.Cache
	// Checker verifies signatures for the registries with a policy
	// (package signature/sigstore, or dm's dm-sigstore); without one such
	// a registry cannot be opened.
	Checker signature.Checker
}

// OpenRegistry builds the registry spec describes. It reads nothing yet:
// call Load and Refresh (or Run).
func OpenRegistry(spec RegistrySpec, setup Setup) (*index.Registry, error) {
	log := setup.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mem := setup.MemoryBytes
	if mem <= 0 {
		mem = 32 << 20
	}
	g := &index.Registry{Name: spec.Prefix, Namespace: spec.Namespace, Object: spec.Object, Identity: spec.Identity(),
		MaxEntries: spec.MaxEntries, MaxBytes: spec.MaxBytes, CachedBytes: mem, Logger: log, OnIndex: setup.Hooks.OnIndex}
	// Each registry has a directory of its own: nothing one registry
	// fetched or listed is read by another.
	dir := ""
	if setup.CacheDir != "" {
		dir = RegistryCacheDir(setup.CacheDir, g.Identity)
	}
	var src fetch.Source
	blobDir := ""
	switch {
	case spec.GitHub != nil:
		gh := spec.GitHub
		opts := fetch.GitHubOptions{Owner: gh.Owner, Repo: gh.Repo, Branch: gh.Branch, BaseURL: gh.APIURL, Token: gh.Token, Logger: log, MaxEntries: spec.MaxEntries}
		if setup.Hooks.GitHubRequest != nil {
			opts.OnRequest = setup.Hooks.GitHubRequest(g.Key())
		}
		s, err := fetch.NewGitHub(opts)
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", spec.Prefix, err)
		}
		src, g.Kind, g.Location = s, KindGitHub, gh.location()
		g.CacheDir, blobDir = dir, dir
	case spec.OCI != nil:
		o := spec.OCI
		co, err := o.options(log)
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", spec.Prefix, err)
		}
		opts := oci.SourceOptions{Options: co, MaxEntries: spec.MaxEntries, MaxBytes: spec.MaxBytes, CacheDir: dir, MemoryBytes: mem}
		if setup.Hooks.OCIRequest != nil {
			opts.OnRequest = setup.Hooks.OCIRequest(g.Key())
		}
		s, err := oci.NewSource(opts)
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", spec.Prefix, err)
		}
		src, g.Kind, g.Location = s, KindOCI, o.String()
		g.CacheDir, blobDir = dir, dir
	case spec.Dir != "":
		abs, err := filepath.Abs(spec.Dir)
		if err != nil {
			return nil, fmt.Errorf("registry %s: directory %s: %w", spec.Prefix, spec.Dir, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w: %w", spec.Prefix, err, derrors.InvalidArgument)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("registry %s: %s is not a directory: %w", spec.Prefix, abs, derrors.InvalidArgument)
		}
		src, g.Kind, g.Location = fetch.NewLocalDir(abs, setup.Logger), KindLocal, abs
		// Snapshots persist; blobs are read from the directory.
		g.CacheDir = dir
	case spec.FS != nil:
		src, g.Kind, g.Location = fetch.NewLocal(spec.FS), KindEmbedded, "embedded registry-example"
	default:
		return nil, fmt.Errorf("registry %s: no source: %w", spec.Prefix, derrors.InvalidArgument)
	}
	if spec.Verify != nil {
		v, err := signature.NewVerifier(spec.Verify, setup.Checker, setup.Signatures)
		if err != nil {
			return nil, fmt.Errorf("registry %s: signature policy: %w", spec.Prefix, err)
		}
		g.Verifier = v
	}
	c := fetch.NewCache(src, blobDir, mem)
	if setup.Hooks.CacheLookup != nil {
		c.OnLookup = setup.Hooks.CacheLookup(g.Key())
	}
	g.Source = c
	return g, nil
}

// RegistryCacheDir is the directory of the registry of identity id under
// a process's cache directory: its snapshot and its blobs.
func RegistryCacheDir(cacheDir, id string) string {
	return filepath.Join(cacheDir, "registries", id)
}

// LocalDebounce is how long a local registry must be quiet after a change
// before KeepIndexed lists it again.
const LocalDebounce = 200 * time.Millisecond

// KeepIndexed refreshes g now and then every refresh until ctx ends and,
// for a local directory, soon after a file in it changes: people edit a
// local registry while it is served, and expect the change at once, not at
// the next poll. The returned channel is closed after the first refresh;
// wg counts the goroutines started. registryd and dm-controller keep their
// registries indexed with it.
func KeepIndexed(ctx context.Context, wg *sync.WaitGroup, g *index.Registry, refresh time.Duration, log *slog.Logger) <-chan struct{} {
	first := make(chan struct{})
	// A local directory is watched before its first listing: a change
	// between the two would otherwise wait for the next refresh.
	watching := make(chan struct{})
	watched := sync.OnceFunc(func() { close(watching) })
	if g.Kind == KindLocal {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fetch.WatchDir(ctx, g.Location, LocalDebounce, watched, func() { _ = g.Refresh(ctx) })
			watched() // when it could not watch
			if err != nil && log != nil {
				log.Warn("not watching the directory; changes are seen at the next refresh", "registry", g.Name, "err", err)
			}
		}()
	} else {
		watched()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-watching
		g.Run(ctx, refresh, func() { close(first) })
	}()
	return first
}

// FlagSpecs builds the registries of --registry-dir PREFIX=DIR and --github
// OWNER/REPO[@BRANCH] flags, as registryd and dm-controller take them;
// GitHub registries use apiURL and token.
func FlagSpecs(dirs, githubs []string, apiURL, token string) ([]RegistrySpec, error) {
	var specs []RegistrySpec
	for _, d := range dirs {
		spec, err := ParseDirSpec(d)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	for _, g := range githubs {
		spec, err := ParseGitHubSpec(g)
		if err != nil {
			return nil, err
		}
		spec.GitHub.APIURL = apiURL
		spec.GitHub.Token = token
		specs = append(specs, spec)
	}
	return specs, nil
}

// DefaultRegistry checks that no registry is configured twice and returns
// the registry short references resolve against: defaultRegistry, which
// must be configured, else the only registry, else none.
func DefaultRegistry(specs []RegistrySpec, defaultRegistry string) (resolve.Registry, error) {
	seen := map[string]bool{}
	var names []string
	for _, r := range specs {
		if seen[r.Prefix] {
			return resolve.Registry{}, fmt.Errorf("registry %s is configured twice: %w", r.Prefix, derrors.InvalidArgument)
		}
		seen[r.Prefix] = true
		names = append(names, r.Prefix)
	}
	if defaultRegistry == "" && len(specs) == 1 {
		defaultRegistry = specs[0].Prefix
	}
	if defaultRegistry == "" {
		return resolve.Registry{}, nil
	}
	def, err := resolve.ParseRegistry(defaultRegistry)
	if err != nil {
		return resolve.Registry{}, fmt.Errorf("default registry: %w", err)
	}
	if !seen[def.Prefix()] {
		return resolve.Registry{}, fmt.Errorf("default registry %s is not configured (configured: %s): %w", def.Prefix(), strings.Join(names, ", "), derrors.InvalidArgument)
	}
	return def, nil
}
