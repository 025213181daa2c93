// Command registryd serves template registries over HTTP: an HTML catalog
// at /, a JSON API under /v1/ (see package server), /healthz, /readyz and
// /metrics.
//
// Usage:
//
//	registryd [--config FILE] [--addr HOST:PORT]
//	          [--registry-dir PREFIX=DIR ...] [--github OWNER/REPO[@BRANCH] ...]
//	          [--github-api URL] [--refresh DURATION] [--cache-dir DIR]
//	          [--default-registry [HOST/]OWNER/REPO[/COLLECTION]] [--admin-token TOKEN]
//	          [--webhook-secret SECRET] [--webhook-max-body BYTES]
//
// With no registry configured it serves the embedded example registry as
// github.com/acme/templates. GITHUB_TOKEN is the token for GitHub
// registries; REGISTRYD_ADMIN_TOKEN (or --admin-token) the bearer token of
// POST /v1/registries/{name}/refresh; REGISTRYD_WEBHOOK_SECRET (or
// --webhook-secret) the secret of GitHub webhooks at
// POST /v1/webhooks/github. Each registry's persisted snapshot is
// loaded from the cache directory at start, so a restart serves at once;
// registries without one are indexed before the server listens (for at
// most --ready-wait). SIGINT and SIGTERM shut down gracefully.
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm/helmlint"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/kubereg"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/version"
)

func main() {
	// A worker re-executes this binary; it serves expansions and exits.
	if sandbox.IsWorker() {
		sandbox.ServeWorker(engines()...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	if err != nil {
		fmt.Fprintln(os.Stderr, "registryd:", err)
		os.Exit(1)
	}
}

// engines are the attached languages' engines registryd renders, in
// process and in its workers: Helm charts, with the offline release
// options (helm.DefaultKubeVersion, Helm's default API versions, lookup
// empty), since registryd renders for no cluster. A long-running server
// pays Helm's start-up cost once.
func engines() []engine.Engine {
	return []engine.Engine{&helmlint.Engine{}}
}

// env is what run needs from the outside world, so tests run it in-process.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// onListen, if set, is called with the address once the server
	// listens.
	onListen func(addr string)
}

// run parses args and serves until ctx ends.
func run(ctx context.Context, args []string, e env) error {
	var s settings
	cmd := newCommand(e, &s)
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	return cmd.Execute()
}

func newCommand(e env, s *settings) *cobra.Command {
	var (
		configFile string
		dirs       []string
		githubs    []string
		ocis       []string
		mirrorTo   []string
		plainHTTP  bool
		githubAPI  string
		defaultReg string
		adminToken string
		hookSecret string
		hookMax    string
		refresh    time.Duration
		readyWait  time.Duration
		cacheDir   string
		chartRepos []string
		allowURLs  bool
		addr       string
		pprofAddr  string
		logLevel   string
		memory     string
		workers    int
		noSandbox  bool
		timeout    time.Duration
		total      time.Duration
		kube       kubeFlags
		settle     time.Duration
		proxies    []string
	)
	cmd := &cobra.Command{
		Use:           "registryd",
		Short:         "Serve template registries over HTTP",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := &Config{}
			if configFile != "" {
				c, err := loadConfig(configFile)
				if err != nil {
					return err
				}
				cfg = c
			}
			f := cmd.Flags()
			// Flags override the file.
			if f.Changed("addr") || cfg.Listen == "" {
				cfg.Listen = addr
			}
			if f.Changed("github-api") || cfg.GitHubAPI == "" {
				cfg.GitHubAPI = githubAPI
			}
			if f.Changed("default-registry") {
				cfg.DefaultRegistry = defaultReg
			}
			if f.Changed("cache-dir") {
				cfg.CacheDir = cacheDir
			}
			s.refresh = refresh
			if !f.Changed("refresh") && cfg.Refresh != "" {
				d, err := time.ParseDuration(cfg.Refresh)
				if err != nil || d < 0 {
					return derrors.Errorf(derrors.InvalidArgument, "configuration: refresh %q: want a duration such as 5m", cfg.Refresh)
				}
				s.refresh = d
			}
			s.mirrors = map[string]api.OCISpec{}
			if len(dirs) > 0 || len(githubs) > 0 || len(ocis) > 0 {
				cfg.Registries = nil
				specs, err := api.FlagSpecs(dirs, githubs, cfg.GitHubAPI, e.getenv("GITHUB_TOKEN"))
				if err != nil {
					return err
				}
				for _, o := range ocis {
					spec, err := api.ParseOCISpec(o)
					if err != nil {
						return fmt.Errorf("--registry-oci: %w", err)
					}
					spec.OCI.PlainHTTP = plainHTTP
					specs = append(specs, spec)
				}
				s.registries = specs
			} else {
				s.hookSecrets = map[string]string{}
				specs, err := cfg.specs(e.getenv, s.hookSecrets)
				if err != nil {
					return err
				}
				s.registries = specs
				if s.mirrors, err = cfg.mirrorTargets(specs); err != nil {
					return err
				}
			}
			for _, m := range mirrorTo {
				prefix, u, err := parseMirrorFlag(m)
				if err != nil {
					return err
				}
				s.mirrors[prefix] = api.OCISpec{URL: u, PlainHTTP: plainHTTP}
			}
			s.addr = cfg.Listen
			s.pprofAddr = pprofAddr
			s.readyWait = readyWait
			s.logLevel = logLevel
			s.allowURLs = allowURLs || cfg.AllowURLTypes
			s.adminToken = adminToken
			mem, err := sandbox.ParseBytes(memory)
			if err != nil {
				return fmt.Errorf("--expand-memory: %w", err)
			}
			s.sandbox = sandbox.Options{MaxMemory: mem, Workers: workers}
			s.noSandbox = noSandbox
			s.timeout, s.totalTimeout = timeout, total
			if !f.Changed("admin-token") {
				name := cfg.AdminTokenEnv
				if name == "" {
					name = "REGISTRYD_ADMIN_TOKEN"
				}
				s.adminToken = e.getenv(name)
			}
			s.webhookSecret = hookSecret
			maxBody, err := sandbox.ParseBytes(hookMax)
			if err != nil {
				return fmt.Errorf("--webhook-max-body: %w", err)
			}
			s.webhookMaxBody = int64(maxBody)
			if !f.Changed("webhook-secret") {
				name := cfg.WebhookSecretEnv
				if name == "" {
					name = "REGISTRYD_WEBHOOK_SECRET"
				}
				s.webhookSecret = e.getenv(name)
			}
			s.kube = kube
			if kube.watch {
				n, err := sandbox.ParseBytes(kube.maxBytes)
				if err != nil || n <= 0 {
					return derrors.Errorf(derrors.InvalidArgument, "--max-registry-bytes %q: want a size such as 256MiB", kube.maxBytes)
				}
				s.kube.maxRegistryBytes = int64(n)
				if kube.maxEntries <= 0 {
					return derrors.Errorf(derrors.InvalidArgument, "--max-tree-entries %d: want a positive number", kube.maxEntries)
				}
				if kube.reviewRate <= 0 {
					return derrors.Errorf(derrors.InvalidArgument, "--token-review-rate %g: want a positive number of reviews a second", kube.reviewRate)
				}
				if kube.maxNSRegistries <= 0 {
					return derrors.Errorf(derrors.InvalidArgument, "--max-namespace-registries %d: want a positive number", kube.maxNSRegistries)
				}
				if kube.maxListings <= 0 {
					return derrors.Errorf(derrors.InvalidArgument, "--max-listings %d: want a positive number", kube.maxListings)
				}
				if kube.maxNSListings <= 0 || kube.maxNSListings > kube.maxListings {
					return derrors.Errorf(derrors.InvalidArgument, "--max-namespace-listings %d: want a positive number no larger than --max-listings (%d)", kube.maxNSListings, kube.maxListings)
				}
				if n, err = sandbox.ParseBytes(kube.maxNSBytes); err != nil {
					return derrors.Errorf(derrors.InvalidArgument, "--max-namespace-bytes %q: want a size such as 1GiB", kube.maxNSBytes)
				}
				s.kube.maxNamespaceBytes = int64(n)
				s.kube.maxIndexBytes = defaultIndexBytes(debug.SetMemoryLimit(-1))
				if kube.maxAllBytes != "" {
					if n, err = sandbox.ParseBytes(kube.maxAllBytes); err != nil {
						return derrors.Errorf(derrors.InvalidArgument, "--max-index-bytes %q: want a size such as 4GiB", kube.maxAllBytes)
					}
					s.kube.maxIndexBytes = int64(n)
				}
			}
			for _, p := range proxies {
				prefix, err := parseProxy(p)
				if err != nil {
					return err
				}
				s.trustedProxies = append(s.trustedProxies, prefix)
			}
			s.exampleSettle = settle
			if settle == 0 {
				s.exampleSettle = -1 // none
			}
			s.githubAPI = cfg.GitHubAPI
			if s.kube.watch && s.kube.namespace == "" {
				s.kube.namespace = podNamespace(e.getenv)
			}
			if s.kube.watch && s.kube.namespace == "" {
				return derrors.Errorf(derrors.InvalidArgument, "--watch-registries needs --namespace: registryd's own namespace, which holds its Lease and the Secrets of ClusterRegistries")
			}
			s.chartRepos = cfg.ChartRepos
			if f.Changed("chart-repo") {
				s.chartRepos = chartRepos
			}
			s.cacheDir = cfg.CacheDir
			if s.cacheDir == "" {
				s.cacheDir = defaultCacheDir(e.getenv)
			}
			if err := s.finish(cfg.DefaultRegistry); err != nil {
				return err
			}
			return serve(cmd.Context(), s, e)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "YAML configuration `file` (flags override it)")
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "`address` to listen on")
	f.StringVar(&pprofAddr, "pprof-addr", "", "serve Go's profiles (net/http/pprof, unauthenticated) on this `address` of its own, such as 127.0.0.1:6060; off when empty")
	f.StringArrayVar(&dirs, "registry-dir", nil, "serve local directory DIR under reference prefix PREFIX, such as github.com/acme/templates=./registry-example (`PREFIX=DIR`, repeatable)")
	f.StringArrayVar(&githubs, "github", nil, "serve a GitHub repository (`OWNER/REPO[@BRANCH]`, repeatable) as registry github.com/OWNER/REPO, with GITHUB_TOKEN as token")
	f.StringArrayVar(&ocis, "registry-oci", nil, "serve OCI registry oci://HOST/PATH (templates at HOST/PATH/[COLLECTION/]TEMPLATE, tags their versions) under reference prefix PREFIX (`PREFIX=oci://HOST/PATH`, repeatable); credentials from Docker's configuration ($DOCKER_CONFIG)")
	f.StringArrayVar(&mirrorTo, "mirror-to", nil, "after each refresh of registry PREFIX, push its versions that OCI registry HOST/PATH lacks (`PREFIX=oci://HOST/PATH`, repeatable)")
	f.BoolVar(&plainHTTP, "plain-http", false, "speak plain HTTP to the hosts of --registry-oci and --mirror-to (a loopback or in-cluster registry)")
	f.StringVar(&githubAPI, "github-api", fetch.DefaultGitHubAPI, "GitHub REST API base `URL` (GitHub Enterprise: https://HOST/api/v3/)")
	f.DurationVar(&refresh, "refresh", 5*time.Minute, "refresh every registry this often (0: index once)")
	f.StringArrayVar(&chartRepos, "chart-repo", nil, "chart repository or OCI registry `URL` whose host type: helm resources may fetch charts from (repeatable; none by default)")
	f.StringVar(&cacheDir, "cache-dir", "", "`directory` for persisted snapshots and file contents (default $XDG_CACHE_HOME/registryd or ~/.cache/registryd)")
	f.StringVar(&defaultReg, "default-registry", "", "registry (and collection) short references resolve against, `[HOST/]OWNER/REPO[/COLLECTION]` (default: the only registry)")
	f.StringVar(&adminToken, "admin-token", "", "bearer `token` for POST /v1/registries/{name}/refresh (prefer the REGISTRYD_ADMIN_TOKEN environment variable)")
	f.StringVar(&hookSecret, "webhook-secret", "", "`secret` of GitHub webhooks (POST /v1/webhooks/github); pushes to a --github registry's branch refresh it (prefer REGISTRYD_WEBHOOK_SECRET)")
	f.StringVar(&hookMax, "webhook-max-body", "5MiB", "largest webhook body registryd reads (`BYTES`: 65536, 1MiB); larger deliveries get 413")
	f.DurationVar(&readyWait, "ready-wait", 30*time.Second, "at start, wait this long for registries without a persisted snapshot to be indexed before listening")
	f.StringVar(&logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	f.BoolVar(&allowURLs, "allow-url-types", false, "let POST /v1/expand accept raw GitHub URLs of template files as resource types")
	f.StringVar(&memory, "expand-memory", "512MiB", "memory limit of each expansion worker (`SIZE`: 512MiB, 1GiB)")
	f.IntVar(&workers, "expand-workers", max(2, runtime.GOMAXPROCS(0)), "expansion worker processes, and so expansions running at once")
	f.DurationVar(&timeout, "expand-timeout", expand.DefaultTimeout, "time limit of one template invocation")
	f.DurationVar(&total, "expand-total-timeout", expand.DefaultTotalTimeout, "time limit of one whole expansion")
	f.BoolVar(&noSandbox, "no-sandbox", false, "expand in registryd's own process, without worker processes or their limits (trusted templates only)")
	f.StringArrayVar(&proxies, "trusted-proxy", nil, "address or `CIDR` of a proxy (an ingress controller's pods) whose X-Forwarded-For names the client, for the per-client bounds (repeatable; default none: every client behind a proxy counts as the proxy)")
	f.DurationVar(&settle, "example-settle", time.Minute, "how long a GitHub registry's index must stay unchanged before the examples of its new versions are tested (0: at once)")
	f.BoolVar(&kube.watch, "watch-registries", false, "also serve every Registry and ClusterRegistry (dm.io/v1alpha1) the cluster lets registryd read, as they are created, changed and deleted")
	f.StringVar(&kube.kubeconfig, "kubeconfig", "", "kubeconfig `file` of --watch-registries (default: the in-cluster configuration of registryd's pod)")
	f.StringVar(&kube.namespace, "namespace", "", "registryd's own `namespace`, for --watch-registries: its Lease and the Secrets ClusterRegistries name (default: the pod's namespace)")
	f.DurationVar(&kube.lease, "lease-duration", 60*time.Second, "how long registryd's Lease lasts without renewal: a replica takes over the status writing within this of the holder's death")
	f.StringArrayVar(&kube.allowedAPIs, "allowed-github-api", nil, "GitHub API `URL` that Registry and ClusterRegistry objects may name in spec.github.apiURL (repeatable; default: the --github-api URL alone); an object naming another is Stalled (APINotAllowed) and sent nothing")
	f.StringArrayVar(&kube.allowedOCIHosts, "allowed-oci-host", nil, "OCI registry `HOST[:PORT]` that Registry and ClusterRegistry objects may name in spec.oci and spec.mirror (repeatable; default none); an object naming another is Stalled (HostNotAllowed) and sent nothing")
	f.DurationVar(&kube.minRefresh, "min-refresh-interval", time.Minute, "shortest refresh interval an object gets: a shorter spec.refreshInterval is raised to it, and its Ready condition says so")
	f.IntVar(&kube.maxEntries, "max-tree-entries", fetch.DefaultMaxEntries, "most entries an object's registry may list; a larger one is not served (Ready False, TooLarge)")
	f.StringVar(&kube.maxBytes, "max-registry-bytes", "256MiB", "most bytes the files of an object's registry may hold (`SIZE`); a larger one is not served (Ready False, TooLarge)")
	f.StringArrayVar(&kube.tokenIssuers, "token-issuer", nil, "issuer (`URL`) whose JWT bearer tokens are reviewed, besides the apiserver's service-account issuer and kubernetes/serviceaccount (repeatable: the apiserver's OIDC issuers); JWTs of others are refused without a TokenReview")
	f.StringArrayVar(&kube.tokenAudiences, "token-audience", nil, "audience a JWT bearer token must name to be reviewed (repeatable; default: the audiences of registryd's own ServiceAccount token in a pod, none checked outside one)")
	f.BoolVar(&kube.refuseOpaque, "refuse-opaque-tokens", false, "refuse bearer tokens that are not JWTs (a cloud's webhook tokens, static or bootstrap tokens) without a TokenReview")
	f.Float64Var(&kube.reviewRate, "token-review-rate", kubereg.DefaultClientRate, "TokenReviews a second one client address may cause with tokens the apiserver has not authenticated lately (bursts of 5 times as many); past it 429")
	f.IntVar(&kube.maxNSRegistries, "max-namespace-registries", defaultNamespaceRegistries, "most Registries of one namespace indexed; the newest beyond it are not (Ready False, NamespaceQuotaExceeded)")
	f.StringVar(&kube.maxNSBytes, "max-namespace-bytes", defaultNamespaceBytes, "most index bytes the Registries of one namespace may hold together (`SIZE`; 1.5 KiB per file listed, and the files' bytes up to the in-memory cache's 32 MiB); the newest beyond it are not indexed (Ready False, NamespaceQuotaExceeded)")
	f.IntVar(&kube.maxListings, "max-listings", defaultListings, "most listings of Registry and ClusterRegistry objects read at once, for the whole daemon (a listing is held whole in memory until it is indexed: up to --max-tree-entries entries); the others wait for a slot")
	f.IntVar(&kube.maxNSListings, "max-namespace-listings", defaultNamespaceListings, "most listings of one namespace's Registries read at once, within --max-listings, so that one namespace's Registries cannot hold every slot")
	f.StringVar(&kube.maxAllBytes, "max-index-bytes", "", "most index bytes every registry served may hold together (`SIZE`; default half of GOMEMLIMIT, or 4GiB without one); the newest Registries beyond it are not indexed (Ready False, DaemonQuotaExceeded)")
	cmd.SetVersionTemplate("registryd {{.Version}}\n")
	cmd.SetOut(e.stdout)
	cmd.SetErr(e.stderr)
	return cmd
}

// kubeFlags are the flags of --watch-registries.
type kubeFlags struct {
	watch       bool
	kubeconfig  string
	namespace   string
	lease       time.Duration
	allowedAPIs []string
	// allowedOCIHosts are the OCI hosts objects may name.
	allowedOCIHosts []string
	minRefresh      time.Duration
	maxEntries      int
	maxBytes        string
	// maxRegistryBytes is maxBytes parsed.
	maxRegistryBytes int64
	// tokenIssuers, tokenAudiences, refuseOpaque and reviewRate bound
	// the reviews of callers' bearer tokens (kubereg.AuthorizerOptions).
	tokenIssuers, tokenAudiences []string
	refuseOpaque                 bool
	reviewRate                   float64
	// maxNSRegistries, maxNSBytes and maxAllBytes are the namespaces' and
	// the daemon's bounds; maxNamespaceBytes and maxIndexBytes the sizes
	// parsed.
	maxNSRegistries                  int
	maxNSBytes, maxAllBytes          string
	maxNamespaceBytes, maxIndexBytes int64
	// maxListings and maxNSListings bound the listings in flight.
	maxListings, maxNSListings int
}

// parseProxy reads a --trusted-proxy: a CIDR, or one address.
func parseProxy(v string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(v); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	return netip.Prefix{}, derrors.Errorf(derrors.InvalidArgument, "--trusted-proxy %q: want an address or a CIDR such as 10.0.0.0/8", v)
}

// Defaults of the bounds of what the cluster's objects make registryd
// hold, for a node of 2 cores and 24 GiB (registryd's template asks for
// far less): 64 Registries of a namespace, which polls GitHub for each,
// and 1 GiB of index for them, some six registries at the largest
// --max-tree-entries allows; 4 GiB of index in all, whose collections
// and requests take as much again.
const (
	defaultNamespaceRegistries = 64
	// Four listings of the largest registry the per-registry bounds allow
	// hold some 200 MiB before they are indexed; two of them one
	// namespace's.
	defaultListings          = 4
	defaultNamespaceListings = 2
	defaultNamespaceBytes    = "1GiB"
	defaultDaemonBytes       = 4 << 30
)

// defaultIndexBytes is --max-index-bytes by default: half the memory
// limit the Go runtime was given (GOMEMLIMIT), the rest being for
// collecting and for requests, or defaultDaemonBytes without one.
func defaultIndexBytes(limit int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 {
		return defaultDaemonBytes
	}
	return limit / 2
}

// podNamespace is the namespace of registryd's pod: $POD_NAMESPACE (the
// downward API), else the service account's namespace file.
func podNamespace(getenv func(string) string) string {
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// defaultCacheDir is $XDG_CACHE_HOME/registryd or ~/.cache/registryd.
func defaultCacheDir(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "registryd")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "registryd")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "registryd")
	}
	return ""
}
