package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigproxy"
)

// globals are dm's global flags, resolved against the environment.
type globals struct {
	registry string   // --registry [host/]owner/repo[/collection]
	dirs     []string // --registry-dir PREFIX=DIR
	oci      []string // --registry-oci PREFIX=oci://HOST/PATH
	// plainHTTP lets OCI registries named on the command line be read
	// and written over plain HTTP (--plain-http).
	plainHTTP bool
	server    string // --server URL, or DM_SERVER
	// serverToken is --server-token, or DM_SERVER_TOKEN: the bearer
	// token sent to the server instead of the kubeconfig's.
	serverToken string
	githubAPI   string // --github-api
	cacheDir    string // --cache-dir
	output      string // -o table|json|yaml
	verbose     bool
	// properties are the --properties flags: KEY=VALUE[,KEY=VALUE...].
	properties []string
	// setStrings are the --set-string flags: values always strings.
	setStrings []string
	// allowURLs lets resource types be raw GitHub template URLs.
	allowURLs bool
	// noSandbox expands GitHub registries' templates in-process too.
	noSandbox bool
	// noPrompt: missing required properties are an error even on a
	// terminal.
	noPrompt bool
	// kube are the cluster flags (--kubeconfig, --context, -n).
	kube kubeFlags
	// charts are the Helm chart flags; helm renders charts in dm-helm,
	// started on the first chart.
	charts chartFlags
	helm   *helmproxy.Engine
	// verify is the signature policy of in-process registries;
	// signing (dm sign) resolves without it.
	verify  verifyFlags
	signing bool
	// sig is the dm-sigstore client of this run, started on the first
	// signature to verify or make.
	sig *sigproxy.Client

	getenv func(string) string
	stderr io.Writer
	// backend is the one backend of this run: a deploy asks it twice
	// (the schema for --properties, then the expansion), and each local
	// backend indexes its registries.
	be api.Backend
}

// backend returns where the commands get their answers: a registryd when
// --server (or DM_SERVER) is set, else the registries in-process.
func (g *globals) backend() (api.Backend, error) {
	if g.be != nil {
		return g.be, nil
	}
	server := g.server
	if server == "" {
		server = g.getenv("DM_SERVER")
	}
	if server != "" && g.verify.set() {
		return nil, &usageError{errors.New("--verify-key, --verify-identity, --trusted-root and --require-signature apply to registries read in-process; registryd verifies with its own per-registry policy")}
	}
	if server != "" {
		c, err := g.serverClient(server)
		if err != nil {
			return nil, err
		}
		g.be = c
		return c, nil
	}
	b, err := g.local()
	if err != nil {
		return nil, err
	}
	g.be = b
	return b, nil
}

// local builds the in-process backend over the registries the flags
// choose (api.LocalChoice): the --registry-dir directories, the
// --registry GitHub repository when no directory serves it, or with
// neither the embedded example registry.
func (g *globals) local() (*localBackend, error) {
	b := &localBackend{g: g, byPrefix: map[string]bool{}, choice: api.LocalChoice{
		Dirs: g.dirs, Registry: g.registry, OCI: g.oci, PlainHTTP: g.plainHTTP,
		GitHub:  api.GitHubSpec{APIURL: g.githubAPI, Token: g.getenv("GITHUB_TOKEN")},
		Example: api.RegistrySpec{Prefix: dm.ExampleRegistryPrefix, FS: dm.ExampleRegistry()},
	}}
	specs, def, err := b.choice.Choose()
	var ce *api.ChoiceError
	if errors.As(err, &ce) {
		return nil, &usageError{err}
	}
	if err != nil {
		return nil, err
	}
	for _, spec := range specs {
		if spec.OCI != nil {
			spec.OCI.DockerConfigDir = g.dockerConfigDir()
		}
		b.specs = append(b.specs, spec)
		b.byPrefix[spec.Prefix] = true
	}
	b.def = def
	if strings.HasPrefix(g.registry, "oci://") {
		// Commands name the registry by its prefix from here on.
		g.registry = def.String()
	}
	return b, nil
}

// localBackend answers in-process. Registries are indexed on first use; a
// full reference to a GitHub registry that is not configured adds it.
type localBackend struct {
	g        *globals
	choice   api.LocalChoice
	specs    []api.RegistrySpec
	byPrefix map[string]bool
	def      resolve.Registry
	// near holds, for a registry a full reference added, the reference
	// under the configured registries whose names are near its own: what
	// to suggest when it cannot be read (a typo in a prefix).
	near map[string][]string

	svc *api.Service
	// expanding is set by Expand before the service is made, so that
	// service starts the worker pool, if one is needed, early.
	expanding bool
	pool      *sandbox.Pool
}

// need makes sure a full reference's registry is configured: a github.com
// repository that no flag names is read through --github-api (see
// api.LocalChoice.ForReference).
func (b *localBackend) need(ref string) {
	spec, ok := b.choice.ForReference(ref)
	if !ok || b.byPrefix[spec.Prefix] {
		return
	}
	if r, err := resolve.Parse(ref); err == nil {
		if near := resolve.NearRegistries(r, slices.Collect(maps.Keys(b.byPrefix))); len(near) > 0 {
			if b.near == nil {
				b.near = map[string][]string{}
			}
			b.near[spec.Prefix] = near
		}
	}
	b.specs = append(b.specs, spec)
	b.byPrefix[spec.Prefix] = true
	b.svc = nil // indexed again, with it
}

// service indexes the registries (once) and returns the service over them.
// A registry that cannot be refreshed is served from its persisted
// snapshot when there is one.
func (b *localBackend) service(ctx context.Context) (*api.Service, error) {
	if b.svc != nil {
		return b.svc, nil
	}
	log := slog.New(slog.DiscardHandler)
	if b.g.verbose {
		log = slog.New(slog.NewTextHandler(b.g.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	setup := api.Setup{CacheDir: b.g.cacheDirOrDefault(), Logger: log, Signatures: signature.NewCache(0), Checker: b.g.sigstore()}
	specs := b.specs
	if pc, err := b.g.verify.config(); err != nil {
		return nil, err
	} else if pc != nil && !b.g.signing {
		// The policy of the flags holds for every registry, those a full
		// reference adds included.
		specs = slices.Clone(specs)
		for i := range specs {
			specs[i].Verify = pc
		}
	}
	regs, err := api.OpenRegistries(specs, setup)
	if err != nil {
		return nil, err
	}
	for _, reg := range regs {
		if reg.Kind != api.KindGitHub && reg.Kind != api.KindOCI {
			// Listing a directory is quicker than loading a snapshot,
			// and dm leaves no snapshots of directories behind.
			reg.CacheDir = ""
		}
	}
	resolver := resolve.New(b.def, regs...)
	if b.sandboxed() {
		// The worker starts while the registries are indexed.
		pool, err := sandbox.New(sandbox.Options{Resolver: resolver, Expand: expand.Options{AllowURLs: b.g.allowURLs, Engines: b.g.engines(), Charts: b.g.chartFetcher()}, Workers: 1, Logger: log})
		if err != nil {
			return nil, err
		}
		if b.pool != nil {
			b.pool.Close() // of an index made before a registry was added
		}
		b.pool = pool
		go pool.Warm(ctx)
	}
	err = api.IndexOnce(ctx, regs, func(reg *index.Registry, err error) {
		fmt.Fprintf(b.g.stderr, "dm: warning: %v; using the cached index of %s\n", err, reg.Name)
	})
	if err != nil {
		for prefix, near := range b.near {
			if strings.Contains(err.Error(), prefix) {
				return nil, fmt.Errorf("%w; did you mean %s, of a configured registry?", err, strings.Join(near, " or "))
			}
		}
		return nil, err
	}
	b.svc = api.NewService(resolver, expand.Options{AllowURLs: b.g.allowURLs, Logger: log, Engines: b.g.engines(), Charts: b.g.chartFetcher()})
	return b.svc, nil
}

// sandboxed tells whether expansions run in a worker process: when a
// GitHub or OCI registry is configured (its templates are other people's
// code) and --no-sandbox is not given.
func (b *localBackend) sandboxed() bool {
	return b.expanding && !b.g.noSandbox && slices.ContainsFunc(b.specs, func(s api.RegistrySpec) bool { return s.GitHub != nil || s.OCI != nil })
}

var _ api.Backend = (*localBackend)(nil)

// spec returns the spec of the registry of prefix.
func (b *localBackend) spec(prefix string) (api.RegistrySpec, bool) {
	for _, s := range b.specs {
		if s.Prefix == prefix {
			return s, true
		}
	}
	return api.RegistrySpec{}, false
}

// Registries lists the in-process registries.
func (b *localBackend) Registries(ctx context.Context) (*api.RegistryList, error) {
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.Registries(ctx)
}

// Templates lists templates.
func (b *localBackend) Templates(ctx context.Context, q api.TemplateQuery) (*api.TemplateList, error) {
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.Templates(ctx, q)
}

// Versions lists a template's versions.
func (b *localBackend) Versions(ctx context.Context, ref, registry string) (*api.Template, error) {
	b.need(ref)
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.Versions(ctx, ref, registry)
}

// Template describes one version.
func (b *localBackend) Template(ctx context.Context, ref, registry string) (*api.TemplateVersion, error) {
	b.need(ref)
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.Template(ctx, ref, registry)
}

// TemplateInputs describes one version without its language's lint
// rules (a chart's would start dm-helm to lint it).
func (b *localBackend) TemplateInputs(ctx context.Context, ref, registry string) (*api.TemplateVersion, error) {
	b.need(ref)
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.TemplateInputs(ctx, ref, registry)
}

// Resolve resolves a reference.
func (b *localBackend) Resolve(ctx context.Context, ref, registry string) (*api.Resolution, error) {
	b.need(ref)
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.Resolve(ctx, ref, registry)
}

// Search finds templates.
func (b *localBackend) Search(ctx context.Context, q, registry string) (*api.SearchResults, error) {
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.Search(ctx, q, registry)
}

// ReadFile reads a file of a version.
func (b *localBackend) ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error) {
	b.need(ref)
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.ReadFile(ctx, ref, registry, path)
}

// VersionSignatures reads a version's signatures where its registry
// keeps them (api.SignatureReader), for dm mirror.
func (b *localBackend) VersionSignatures(ctx context.Context, ref, registry string) ([][]byte, error) {
	b.need(ref)
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	return s.VersionSignatures(ctx, ref, registry)
}

// Expand expands in-process, or in a sandboxed worker process when a
// GitHub registry is configured: its templates are other people's code.
// The user's own files and directories and the embedded example run
// in-process.
func (b *localBackend) Expand(ctx context.Context, req *api.ExpandRequest) (*api.ExpandResult, error) {
	if req.Ref != "" {
		b.need(req.Ref)
	}
	b.expanding = true
	s, err := b.service(ctx)
	if err != nil {
		return nil, err
	}
	if b.pool == nil && b.sandboxed() {
		// The service was made before Expand was called.
		pool, err := sandbox.New(sandbox.Options{Resolver: s.Resolver(), Expand: expand.Options{AllowURLs: b.g.allowURLs, Engines: b.g.engines(), Charts: b.g.chartFetcher()}, Workers: 1})
		if err != nil {
			return nil, err
		}
		b.pool = pool
	}
	if b.pool == nil {
		return s.Expand(ctx, req)
	}
	defer func() {
		b.pool.Close()
		b.pool = nil
	}()
	return b.pool.Expand(ctx, req)
}

// sigstore returns the run's dm-sigstore client: dm links no Sigstore
// library.
func (g *globals) sigstore() *sigproxy.Client {
	if g.sig == nil {
		g.sig = &sigproxy.Client{Getenv: g.getenv}
	}
	return g.sig
}

// cacheDirOrDefault is --cache-dir, else $XDG_CACHE_HOME/dm or ~/.cache/dm,
// else none.
func (g *globals) cacheDirOrDefault() string {
	if g.cacheDir != "" {
		return g.cacheDir
	}
	if d := g.getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "dm")
	}
	if h := g.getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "dm")
	}
	return ""
}

// exitCode maps an error to dm's exit status: 2 for usage errors, 1
// otherwise.
func exitCode(err error) int {
	var ue *usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra reports unknown commands with a plain error.
		return 2
	}
	return 1
}

// usageError is a mistake on the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }
