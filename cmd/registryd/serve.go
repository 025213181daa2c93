package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/expand/helmserve"
	"github.com/dmhq/dm/internal/kubereg"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/server"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

const (
	// shutdownTimeout bounds the graceful shutdown.
	shutdownTimeout = 15 * time.Second
)

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// serve runs registryd with s until ctx ends.
func serve(ctx context.Context, s *settings, e env) error {
	log, err := newLogger(e.stderr, s.logLevel)
	if err != nil {
		return err
	}
	metrics := server.NewMetrics()
	setup := api.Setup{
		CacheDir: s.cacheDir,
		Logger:   log,
		// One bound on verified results for the whole daemon.
		Signatures: signature.NewCache(0),
		Checker:    &sigstore.Checker{},
		Hooks: api.Hooks{
			OnIndex:       metrics.ObserveIndex,
			GitHubRequest: metrics.GitHubRequestFunc,
			OCIRequest:    metrics.OCIRequestFunc,
			CacheLookup:   metrics.CacheLookupFunc,
		},
	}
	regs, err := api.OpenRegistries(s.registries, setup)
	if err != nil {
		return err
	}
	for _, g := range regs {
		log.Info("registry", "registry", g.Name, "kind", g.Kind, "location", g.Location)
	}
	resolver := resolve.New(s.def, regs...)

	// Bind first, so that a taken address fails at once.
	l, err := net.Listen("tcp", s.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listening on %s: another program serves that address already (a registryd still running?): give another with --addr HOST:PORT (make run ADDR=127.0.0.1:8081): %w", s.addr, err)
	}
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.addr, err)
	}
	defer l.Close()
	if s.pprofAddr != "" {
		stop, err := servePprof(s.pprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}

	// Persisted snapshots of remote registries are served at once; the
	// others are indexed before serving, for at most readyWait.
	bg, stopBg := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopBg()
		wg.Wait()
	}()
	// Mirrors push after their registry's refreshes: hooked before
	// the registries are kept indexed.
	if len(s.mirrors) > 0 {
		svc := api.NewService(resolver, expand.Options{Logger: log})
		for _, g := range regs {
			t, ok := s.mirrors[g.Name]
			if !ok {
				continue
			}
			p, err := api.NewPusher(t, log)
			if err != nil {
				return fmt.Errorf("mirror of %s: %w", g.Name, err)
			}
			log.Info("mirroring", "registry", g.Name, "to", t.String())
			api.KeepMirrored(bg, &wg, g, svc, p, log, nil)
		}
		for prefix := range s.mirrors {
			if _, ok := resolver.ByKey(prefix); !ok {
				return derrors.Errorf(derrors.InvalidArgument, "--mirror-to %s: no such registry is configured", prefix)
			}
		}
	}
	var pending []<-chan struct{}
	for _, g := range regs {
		loaded := false
		if g.CacheDir != "" {
			switch err := g.Load(); {
			case err == nil:
				loaded = true
				snap := g.Snapshot()
				log.Info("serving persisted snapshot", "registry", g.Name, "version", snap.Tree.Version, "templates", snap.Templates, "versions", snap.Versions)
			case !errors.Is(err, derrors.NotFound):
				log.Warn("cannot load persisted snapshot; indexing anew", "registry", g.Name, "err", err)
			}
		}
		first := api.KeepIndexed(bg, &wg, g, s.refresh, log)
		// A local directory is listed in milliseconds: serve its current
		// state from the start, the snapshot only if listing fails.
		if !loaded || g.Kind == api.KindLocal {
			pending = append(pending, first)
		}
	}
	waitFirst(ctx, pending, s.readyWait)
	if err := ctx.Err(); err != nil {
		return nil
	}

	eo := expand.Options{AllowURLs: s.allowURLs, Logger: log, Timeout: s.timeout, TotalTimeout: s.totalTimeout, Engines: engines(), Charts: chartFetcher(s)}
	var expander, examples api.Expander
	// With workers, only as many expansions run at once as there are
	// workers: the others wait in the server's queue, which answers 503
	// with Retry-After when it is full, not in the pool until the
	// request's deadline.
	maxExpansions := 0
	if s.noSandbox {
		log.Warn("--no-sandbox: templates run inside registryd, without worker processes or their memory, CPU, file and network limits")
	} else {
		// Interactive expansions get --expand-workers workers; the
		// background tests of examples one of their own, so that slow
		// examples cannot hold the others' workers.
		for _, p := range []struct {
			workers int
			out     *api.Expander
		}{{s.sandbox.Workers, &expander}, {1, &examples}} {
			so := s.sandbox
			so.Workers = p.workers
			so.Resolver, so.Expand, so.Logger, so.OnExit = resolver, eo, log, metrics.WorkerExit
			pool, err := sandbox.New(so)
			if err != nil {
				return err
			}
			if p.out == &expander {
				maxExpansions = pool.Workers()
			}
			defer pool.Close()
			// Workers start in the background: serving (and readiness)
			// does not wait for them; a request that comes first starts
			// its own.
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := pool.Warm(bg); err != nil {
					log.Error("starting expansion workers", "err", err)
				}
			}()
			*p.out = pool
		}
	}
	hooks := server.WebhookOptions{Secret: s.webhookSecret, MaxBody: s.webhookMaxBody}
	for _, spec := range s.registries {
		if gh := spec.GitHub; gh != nil {
			hooks.Registries = append(hooks.Registries, server.WebhookRegistry{Registry: spec.Prefix, Owner: gh.Owner, Repo: gh.Repo, Branch: gh.Branch, Secret: s.hookSecrets[spec.Prefix]})
		}
	}
	opts := server.Options{Resolver: resolver, AdminToken: s.adminToken, Logger: log, Metrics: metrics,
		Expand: eo, Expander: expander, ExampleExpander: examples, MaxExpansions: maxExpansions, ExampleSettle: s.exampleSettle,
		TrustedProxies: s.trustedProxies}
	var watcher *kubereg.Watcher
	if s.kube.watch {
		watcher, err = newWatcher(s, setup, resolver, hooks.Registries, metrics, log)
		if err != nil {
			return err
		}
		hooks.OnPush = watcher.Pushed
		opts.ReadyNotes, opts.ReadyOptional = watcher.ReadyNotes, watcher.Serves
		// A namespace's registries answer only callers that may get
		// their objects; the apiserver says who those are.
		authz, err := kubereg.NewAuthorizer(watcher.Config(), kubereg.AuthorizerOptions{Logger: log,
			Issuers: s.kube.tokenIssuers, Audiences: s.kube.tokenAudiences, RefuseOpaque: s.kube.refuseOpaque,
			ClientRate: s.kube.reviewRate, ClientBurst: max(1, int(5*s.kube.reviewRate)),
			OnReview: metrics.TokenReview, OnRefuse: metrics.TokenUnreviewed})
		if err != nil {
			return err
		}
		// The apiserver's issuer, read before the first request: without
		// it, tokens' issuers are checked once it has been read.
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = authz.Learn(lctx)
		cancel()
		opts.Authorizer = authz
		// The Lease holder tests the examples for every replica.
		opts.ExampleActive, opts.ExampleResult = watcher.Leader, watcher.ExampleResult
	}
	opts.Webhooks = hooks
	handler := server.New(opts)
	if watcher != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := watcher.Run(bg, handler); err != nil {
				log.Error("watching registries in the cluster", "err", err)
			}
		}()
	}
	// Examples are tested in the background: serving does not wait.
	wg.Add(1)
	go func() {
		defer wg.Done()
		handler.Run(bg)
	}()
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A refresh over HTTP answers when it is done: up to the server's
		// refresh timeout (50s).
		WriteTimeout:   90 * time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: server.MaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:    server.ConnContext,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(l) }()
	ready, missing := handler.Ready()
	log.Info("listening", "addr", l.Addr().String(), "registries", len(regs), "default", s.def.String(),
		"cache_dir", s.cacheDir, "refresh", s.refresh, "ready", ready, "not_ready", missing, "admin_token_set", s.adminToken != "", "webhooks", len(hooks.Registries) > 0 && (s.webhookSecret != "" || len(s.hookSecrets) > 0))
	if e.onListen != nil {
		e.onListen(l.Addr().String())
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

// newWatcher builds the watcher of --watch-registries.
func newWatcher(s *settings, setup api.Setup, resolver *resolve.Resolver, hooks []server.WebhookRegistry, metrics *server.Metrics, log *slog.Logger) (*kubereg.Watcher, error) {
	cfg, err := kubereg.LoadConfig(s.kube.kubeconfig)
	if err != nil {
		return nil, err
	}
	static := make([]string, 0, len(s.registries))
	var ids []string
	for _, spec := range s.registries {
		static = append(static, spec.Prefix)
		ids = append(ids, spec.Identity())
	}
	lease := s.kube.lease
	return kubereg.New(kubereg.Options{
		Config: cfg, Namespace: s.kube.namespace, Resolver: resolver, Setup: setup,
		GitHubAPI: s.githubAPI, Refresh: s.refresh, Static: static, StaticWebhooks: hooks,
		AllowedAPIs: s.kube.allowedAPIs, AllowedOCIHosts: s.kube.allowedOCIHosts, MinRefresh: s.kube.minRefresh, StaticIdentities: ids,
		MaxTreeEntries: s.kube.maxEntries, MaxRegistryBytes: s.kube.maxRegistryBytes,
		MaxNamespaceRegistries: s.kube.maxNSRegistries, MaxNamespaceBytes: s.kube.maxNamespaceBytes, MaxIndexBytes: s.kube.maxIndexBytes,
		MaxListings: s.kube.maxListings, MaxNamespaceListings: s.kube.maxNSListings,
		LeaseDuration: lease, RenewDeadline: lease * 2 / 3, RetryPeriod: lease / 4,
		Logger: log,
	})
}

// waitFirst waits until every channel is closed, ctx ends or max passes.
func waitFirst(ctx context.Context, chans []<-chan struct{}, max time.Duration) {
	timer := time.NewTimer(max)
	defer timer.Stop()
	for _, c := range chans {
		select {
		case <-c:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// chartFetcher downloads the charts of type: helm resources in process,
// from the hosts of --chart-repo (or the configuration's chart_repos)
// only, caching them by digest under the cache directory. Without any,
// nil: such resources are refused naming the missing configuration.
func chartFetcher(s *settings) engine.ChartFetcher {
	if len(s.chartRepos) == 0 {
		return nil
	}
	f := &helmproxy.Fetcher{Engine: (&helmserve.Handler{}).Downloader(), Repos: s.chartRepos}
	if s.cacheDir != "" {
		f.CacheDir = filepath.Join(s.cacheDir, "charts")
	}
	return f
}
