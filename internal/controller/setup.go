package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy/driver"
)

// Setup adds the TemplateInstance reconciler to mgr. Registry changes
// reported to n (nil: none) reconcile the instances that resolve through
// the registry.
func Setup(mgr ctrl.Manager, opts Options, n *Notifier) error {
	if opts.Expander == nil {
		return errors.New("controller: Options.Expander is required")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dyn, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	r := &InstanceReconciler{
		client:  mgr.GetClient(),
		history: driver.NewSecrets(dyn),
		clients: newClients(mgr.GetConfig()),
		opts:    opts,
		log:     log,
		kind:    templateInstances{client: mgr.GetClient()},
	}
	events := make(chan event.GenericEvent, 1024)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("templateinstance").
		// Status writes (the controller's own) do not reconcile again.
		For(&v1alpha1.TemplateInstance{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{})).
		// Names are unique per process, not per manager: tests run two
		// controllers (leader election) in one process.
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Concurrency, SkipNameValidation: ptr(true)}).
		Build(r)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	registerMetrics(mgr.GetClient())
	if err := setupDefinitions(mgr, r, n); err != nil {
		return err
	}
	r.drift = &driftWatcher{ctrl: c, cache: mgr.GetCache(), log: log, watched: map[schema.GroupVersionKind]bool{}}
	if n != nil {
		err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			n.run(ctx, mgr.GetClient(), events, log)
			return nil
		}))
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
	}
	return nil
}

// CacheSynced is a readiness check: it answers once the manager's caches
// have synced (or fails when the request ends first).
func CacheSynced(mgr ctrl.Manager) func(*http.Request) error {
	return func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}
}
