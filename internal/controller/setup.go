package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	lru "github.com/hashicorp/golang-lru/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/resolve"
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
	r := &InstanceReconciler{
		client:  mgr.GetClient(),
		clients: newClients(mgr.GetConfig()),
		caps:    newCapabilities(mgr.GetConfig(), log),
		opts:    opts,
		log:     log,
		kind:    templateInstances{client: mgr.GetClient()},
	}
	if opts.DefaultRegistry != "" {
		def, err := resolve.ParseRegistry(opts.DefaultRegistry)
		if err != nil {
			return fmt.Errorf("controller: the default registry: %w", err)
		}
		r.defRegistry = def
	}
	r.secretPaths, _ = lru.New[string, [][]string](1024) // fails only for size <= 0
	r.taints = newTaints()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.TemplateInstance{}, sourceIndex, sourcesOf); err != nil {
		return fmt.Errorf("controller: indexing propertiesFrom: %w", err)
	}
	// The ConfigMap sources' informer exists before the manager starts,
	// so that /readyz (the cache synced) waits for it too. Secrets are
	// never read with the controller's own account: those propertiesFrom
	// names are watched as the instance's account (accountWatches).
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if _, err := mgr.GetCache().GetInformer(context.Background(), m, cache.BlockUntilSynced(false)); err != nil {
		return fmt.Errorf("controller: watching ConfigMaps: %w", err)
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	r.accounts = newAccountWatches(r.clients, mgr.GetRESTMapper(), newOwnAccess(cs), log)
	if err := mgr.Add(r.accounts); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	accountEvents := make(chan event.GenericEvent, 1024)
	r.accounts.subscribe(accountEvents)
	if err := watchCRDs(mgr, r.caps); err != nil {
		return err
	}
	events := make(chan event.GenericEvent, 1024)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(instanceController).
		// Status writes (the controller's own) do not reconcile again.
		For(&v1alpha1.TemplateInstance{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{})).
		// A propertiesFrom source changed: its instances apply anew.
		// Metadata only: the controller caches no Secret's content.
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(readersOf(mgr.GetClient(), "ConfigMap"))).
		// What the impersonated watches see: drift, and the Secrets
		// propertiesFrom names.
		WatchesRawSource(source.Channel(accountEvents, handler.EnqueueRequestsFromMapFunc(driftOrSource(mgr.GetClient())))).
		// Names are unique per process, not per manager: tests run two
		// controllers (leader election) in one process.
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Concurrency, SkipNameValidation: ptr(true)}).
		Build(r)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	registerMetrics(mgr.GetClient())
	kinds, err := setupDefinitions(mgr, r, n)
	if err != nil {
		return err
	}
	if err := setupRollouts(mgr, r, kinds, events, n); err != nil {
		return err
	}
	r.drift = &driftWatcher{ctrl: c, cache: mgr.GetCache(), accounts: r.accounts, log: log, watched: map[schema.GroupVersionKind]bool{}}
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

// instanceController names the TemplateInstance controller (its queue and
// metrics).
const instanceController = "templateinstance"

// queueStarted reports whether controller-runtime's workqueue of the
// controller name exists, by its workqueue_depth metric, which the
// controller registers when it starts.
func queueStarted(name string) bool {
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		return false
	}
	for _, mf := range mfs {
		if mf.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == name {
					return true
				}
			}
		}
	}
	return false
}

// sourceIndex indexes instances by the Secrets and ConfigMaps their
// spec.propertiesFrom reads, as "Secret/NAME" and "ConfigMap/NAME".
const sourceIndex = "spec.propertiesFrom"

// sourcesOf is sourceIndex's function.
func sourcesOf(o client.Object) []string {
	ti, ok := o.(*v1alpha1.TemplateInstance)
	if !ok {
		return nil
	}
	var keys []string
	for _, s := range ti.Spec.PropertiesFrom {
		if s.SecretRef != nil {
			keys = append(keys, "Secret/"+s.SecretRef.Name)
		}
		if s.ConfigMapRef != nil {
			keys = append(keys, "ConfigMap/"+s.ConfigMapRef.Name)
		}
	}
	return keys
}

// readersOf maps a Secret or ConfigMap (kind) to the instances in its
// namespace whose propertiesFrom names it.
func readersOf(c client.Reader, kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.TemplateInstanceList
		if err := c.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{sourceIndex: kind + "/" + o.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}

// driftOrSource maps an object an impersonated watch saw to the instances
// it concerns: the one that rendered it, and for a Secret those whose
// propertiesFrom names it.
func driftOrSource(c client.Reader) handler.MapFunc {
	sources := readersOf(c, "Secret")
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := instanceOf(ctx, o)
		if o.GetObjectKind().GroupVersionKind() == secretKind {
			reqs = append(reqs, sources(ctx, o)...)
		}
		return reqs
	}
}

// secretSources are the watches of the Secrets ti's propertiesFrom names,
// as user.
func (r *InstanceReconciler) secretSources(user string, ti *v1alpha1.TemplateInstance) []watchKey {
	for _, s := range ti.Spec.PropertiesFrom {
		if s.SecretRef != nil {
			return []watchKey{{user: user, namespace: ti.Namespace, gvk: secretKind}}
		}
	}
	return nil
}

// CacheSynced is a readiness check: it answers once the manager's caches
// have synced (or fails when the request ends first) and, for the
// controller that leads (every controller when leaderElect is false), once
// its controller has started.
func CacheSynced(mgr ctrl.Manager, leaderElect bool) func(*http.Request) error {
	return func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		// Without an election the manager closes Elected only as it starts
		// the controllers, a moment after the caches sync: a controller
		// that elects nobody is never a standby.
		if leaderElect {
			select {
			case <-mgr.Elected():
			default:
				return nil // a standby: synced, ready to take over
			}
		}
		// The cache syncs before the manager starts the controller: ready
		// also means the controller's queue exists (its metrics say so).
		if !queueStarted(instanceController) {
			return errors.New("the controller has not started")
		}
		return nil
	}
}
