package controller

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/kube"
)

// driftWatcher watches the kinds instances rendered, metadata only, and
// maps a change of an object dm applied back to its instance, so that drift
// is restored (and readiness seen) without waiting for the interval.
//
// A kind the controller's own account may list and watch in every
// namespace (and that is not Secrets) is watched once, by the manager's
// cache; any other is watched as the account the instance applies as,
// in the objects' namespace (accountWatches).
type driftWatcher struct {
	ctrl     controller.Controller
	cache    cache.Cache
	accounts *accountWatches
	log      *slog.Logger

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// watch makes sure every kind of refs, the objects holder (an instance's
// controller name) applied as user, is watched.
func (d *driftWatcher) watch(ctx context.Context, holder, user string, refs []kube.ObjectRef) {
	var keys []watchKey
	for _, ref := range refs {
		gvk := ref.GroupVersionKind()
		if d.accounts != nil && !d.accounts.ownKind(ctx, gvk) {
			if k, ok := d.accounts.key(user, ref.Namespace, gvk); ok && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			continue
		}
		d.watchOwn(gvk)
	}
	if d.accounts != nil {
		d.accounts.hold(ctx, holder, "drift", keys)
	}
}

// watchOwn watches gvk with the manager's cache, once.
func (d *driftWatcher) watchOwn(gvk schema.GroupVersionKind) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watched[gvk] {
		return
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	src := source.Kind[client.Object](d.cache, obj, handler.EnqueueRequestsFromMapFunc(instanceOf))
	if err := d.ctrl.Watch(src); err != nil {
		// Drift of this kind is then restored at the interval.
		d.log.Warn("not watching a rendered kind", "kind", gvk.String(), "err", err)
		return
	}
	d.watched[gvk] = true
}

// instanceOf maps an object dm applied to the instance that rendered it:
// the deployment's namespace and name, from dm's annotation and label. A
// deployment name longer than a label holds is a hash; such an object
// waits for the interval.
func instanceOf(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[deploy.LabelManagedBy] != deploy.ManagedBy {
		return nil
	}
	name, ns := l[deploy.LabelDeployment], o.GetAnnotations()[deploy.AnnotationNamespace]
	if name == "" || ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// Notifier tells the controller that a registry was indexed anew, so that
// the instances resolving through it are reconciled at once (a new patch
// release) rather than at their interval. It is made before the
// registries, whose index hook calls Changed.
type Notifier struct {
	ch chan string
	// defs carries the same changes to the TemplateDefinitions, and
	// policies to the roll-out policies.
	defs, policies chan string
}

// NewNotifier returns a Notifier.
func NewNotifier() *Notifier {
	return &Notifier{ch: make(chan string, 64), defs: make(chan string, 64), policies: make(chan string, 64)}
}

// Changed reports that registry has a new index: its key
// (index.Registry.Key), a prefix such as github.com/acme/t, or
// NAMESPACE/PREFIX for a namespace's registry, which only that
// namespace's instances resolve through. It never blocks: a burst of
// changes needs one pass.
func (n *Notifier) Changed(registry string) {
	for _, ch := range []chan string{n.ch, n.defs, n.policies} {
		select {
		case ch <- registry:
		default:
		}
	}
}

// splitRegistryKey splits a registry key into its namespace ("" for a
// registry visible everywhere) and prefix.
func splitRegistryKey(key string) (ns, prefix string) {
	if strings.Count(key, "/") == 3 {
		ns, prefix, _ = strings.Cut(key, "/")
		return ns, prefix
	}
	return "", key
}

// run turns registry changes into events for the instances that resolve
// through the registry (or have not resolved yet), until ctx ends.
func (n *Notifier) run(ctx context.Context, c client.Reader, out chan<- event.GenericEvent, log *slog.Logger) {
	for {
		var registry string
		select {
		case <-ctx.Done():
			return
		case registry = <-n.ch:
		}
		var list v1alpha1.TemplateInstanceList
		ns, prefix := splitRegistryKey(registry)
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			log.Warn("listing instances after a registry change", "registry", registry, "err", err)
			continue
		}
		for i := range list.Items {
			ti := &list.Items[i]
			if ti.Status.Resolved != "" && !strings.HasPrefix(ti.Status.Resolved, prefix+"/") {
				continue
			}
			select {
			case out <- event.GenericEvent{Object: ti}:
			case <-ctx.Done():
				return
			}
		}
	}
}
