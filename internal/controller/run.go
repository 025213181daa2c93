package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/signature"
)

// RunConfig is what dm-controller runs with; cmd/dm-controller fills it
// from its flags.
type RunConfig struct {
	// REST is the connection to the cluster (--kubeconfig).
	REST *rest.Config
	// Server is a registryd URL that expands (--server); else Registries
	// are indexed in the controller and expanded in its sandbox workers.
	Server string
	// Checker verifies the signatures of Registries with a policy
	// (signature/sigstore's).
	Checker    signature.Checker
	Registries []api.RegistrySpec
	// DefaultRegistry is the registry short references resolve against
	// (--default-registry); "" means the only registry.
	DefaultRegistry string
	// CacheDir holds persisted snapshots of GitHub registries; "" none.
	CacheDir string
	// Refresh is how often every registry is refreshed; local directories
	// are also watched and re-indexed when they change.
	Refresh time.Duration
	// Sandbox configures the expansion workers (Workers, MaxMemory).
	Sandbox sandbox.Options
	// InstallCRDs installs or updates the controller's CRDs at start.
	InstallCRDs bool
	// LeaderElect elects one active controller by a Lease in
	// LeaderElectionNamespace.
	LeaderElect             bool
	LeaderElectionNamespace string
	// MetricsAddr and HealthAddr are where /metrics and /healthz, /readyz
	// are served; "0" turns them off.
	MetricsAddr, HealthAddr string
	// Options configure the reconciler; Expander, Server and
	// DefaultRegistry are set by Run.
	Options Options
}

// DefaultQPS and DefaultBurst bound the controller's own requests to the
// apiserver (the manager's client, the history); the impersonating clients
// that apply are not limited, as dm deploy's is not.
const (
	DefaultQPS   = 50
	DefaultBurst = 300
)

// LeaderElectionID is the name of the Lease the controllers elect by.
const LeaderElectionID = "dm-controller.dm.io"

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg RunConfig) error {
	log := cfg.Options.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
		cfg.Options.Logger = log
	}
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
	// client-go's default limit (20/s, bursts of 30) made 100 instances
	// wait seconds for their history and status writes; the limits are
	// Flux's controllers' defaults.
	cfg.REST = rest.CopyConfig(cfg.REST)
	if cfg.REST.QPS == 0 {
		cfg.REST.QPS, cfg.REST.Burst = DefaultQPS, DefaultBurst
	}
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	if cfg.InstallCRDs {
		c, err := client.New(cfg.REST, client.Options{Scheme: scheme})
		if err != nil {
			return fmt.Errorf("connecting to the cluster: %w", err)
		}
		if err := InstallCRDs(ctx, c); err != nil {
			return err
		}
		log.Info("CRDs installed")
	}
	mgr, err := ctrl.NewManager(cfg.REST, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:  cfg.HealthAddr,
		LeaderElection:          cfg.LeaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		// The Lease is given up on SIGTERM, so the standby takes over at
		// once.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr(30 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("starting the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("caches", CacheSynced(mgr, cfg.LeaderElect)); err != nil {
		return err
	}

	notifier := NewNotifier()
	opts := cfg.Options
	opts.DefaultRegistry, opts.Server = cfg.DefaultRegistry, cfg.Server
	var wg sync.WaitGroup
	bg, stopBg := context.WithCancel(ctx)
	defer func() {
		stopBg()
		wg.Wait()
	}()
	if cfg.Server != "" {
		c, err := serverClient(cfg.Server, cfg.REST)
		if err != nil {
			return err
		}
		opts.Expander, opts.Files, opts.Templates = c, c, c
		wg.Add(1)
		go func() {
			defer wg.Done()
			followServer(bg, c, notifier, log)
		}()
	} else {
		pool, resolver, err := openRegistries(bg, &wg, cfg, notifier, log)
		if err != nil {
			return err
		}
		defer pool.Close()
		// Files are read in-process; templates run only in the workers.
		svc := api.NewService(resolver, expand.Options{Logger: log})
		opts.Expander, opts.Files, opts.Templates = pool, svc, svc
	}
	if err := Setup(mgr, opts, notifier); err != nil {
		return err
	}
	log.Info("starting", "leader_elect", cfg.LeaderElect, "server", cfg.Server, "registries", len(cfg.Registries))
	if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("running: %w", err)
	}
	return nil
}

// openRegistries indexes the configured registries, keeps them indexed
// (a registry's new index reconciles the instances resolving through it)
// and returns the sandbox pool that expands with them and their resolver.
func openRegistries(ctx context.Context, wg *sync.WaitGroup, cfg RunConfig, n *Notifier, log *slog.Logger) (*sandbox.Pool, *resolve.Resolver, error) {
	if len(cfg.Registries) == 0 {
		return nil, nil, errors.New("no registry: give --server, --registry-dir or --github")
	}
	def, err := api.DefaultRegistry(cfg.Registries, cfg.DefaultRegistry)
	if err != nil {
		return nil, nil, err
	}
	setup := api.Setup{CacheDir: cfg.CacheDir, Logger: log, Checker: cfg.Checker, Signatures: signature.NewCache(0), Hooks: api.Hooks{
		OnIndex: func(registry, result string, _ time.Duration) {
			if result == "ok" {
				n.Changed(registry)
			}
		},
	}}
	regs, err := api.OpenRegistries(cfg.Registries, setup)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range regs {
		if g.CacheDir != "" {
			_ = g.Load() // a persisted snapshot serves until the first refresh
		}
		api.KeepIndexed(ctx, wg, g, cfg.Refresh, log)
	}
	so := cfg.Sandbox
	resolver := resolve.New(def, regs...)
	so.Resolver, so.Logger = resolver, log
	pool, err := sandbox.New(so)
	if err != nil {
		return nil, nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := pool.Warm(ctx); err != nil {
			log.Error("starting expansion workers", "err", err)
		}
	}()
	return pool, resolver, nil
}

// Waits of the long poll on registryd's GET /v1/index/changes: each
// request waits serverWait (within the client's 30-second timeout); after
// an error the next is sent serverRetry later, and serverAbsent later when
// the registryd is older than the endpoint.
const (
	serverWait   = 20 * time.Second
	serverRetry  = 5 * time.Second
	serverAbsent = time.Minute
)

// serverClient returns the client of the registryd at server, which sends
// the controller's own bearer token (from rc: its ServiceAccount's token
// file in a pod, re-read as it rotates) with every request: registryd
// reviews it and serves an instance's namespace's registries when the
// controller's account may get them. The controller never sends an
// instance's credentials; it has none.
func serverClient(server string, rc *rest.Config) (*api.Client, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	if auth := kube.BearerAuth(rc); auth != nil {
		rt, err := rest.HTTPWrappersForConfig(auth, http.DefaultTransport)
		if err != nil {
			return nil, fmt.Errorf("the controller's token for --server: %w", err)
		}
		hc.Transport = rt
	}
	c, err := api.NewClient(server, hc)
	if err != nil {
		return nil, fmt.Errorf("--server: %w", err)
	}
	return c, nil
}

// followServer long-polls registryd for changes of its index and reports
// each registry whose indexed version moved to n, until ctx ends: a new
// patch version reaches the instances resolving through it in seconds,
// with one request in flight whatever the number of instances. The
// controller's token lets registryd include every namespace's registries
// the controller may get, keyed NAMESPACE/NAME.
func followServer(ctx context.Context, c *api.Client, n *Notifier, log *slog.Logger) {
	var seen *api.IndexChanges
	for ctx.Err() == nil {
		since := ""
		if seen != nil {
			since = seen.Token
		}
		st, err := c.IndexChanges(ctx, since, serverWait)
		if err != nil {
			pause := serverRetry
			if errors.Is(err, derrors.NotFound) {
				pause = serverAbsent
			}
			if ctx.Err() == nil {
				log.Warn("following registryd's index; instances still resync at their interval", "err", err, "retry_in", pause)
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			continue
		}
		if seen != nil {
			for name, v := range st.Registries {
				if seen.Registries[name] != v {
					n.Changed(name)
				}
			}
		}
		seen = st
	}
}

func ptr[T any](v T) *T { return &v }
