package controller

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dmhq/dm/internal/deploy"
)

// accountWatches are the watches of kinds the controller does not read
// with its own account: Secrets (an instance's rendered Secrets, and the
// Secrets its propertiesFrom names) and every kind its ClusterRole does
// not let it list and watch across the cluster (custom resources). Each is
// a metadata-only informer impersonating the account of the instances
// that need it, one per account, namespace and kind, started when the
// first instance needs it and stopped when the last no longer does. What
// they see goes to every controller's queue (sinks), as the drift of the
// kinds the controller watches itself does.
//
// So the controller's own account needs no right on Secrets at all: it
// reads them only as the account an instance names, which may read them
// anyway.
type accountWatches struct {
	clients *clients
	mapper  meta.RESTMapper
	own     *ownAccess
	log     *slog.Logger
	// maxWatches and maxPerNamespace bound the informers running, in all
	// and of one namespace (MaxAccountWatches and
	// MaxAccountWatchesPerNamespace).
	maxWatches, maxPerNamespace int
	// ctx ends the informers; Start cancels it when the manager stops.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// holders are the keys each instance (its controller name) holds,
	// by part: its drift, its propertiesFrom sources.
	holders map[string]map[string][]watchKey
	refs    map[watchKey]int
	running map[watchKey]*accountWatch
	// denied are the keys whose account may not list and watch, until
	// when they are asked again.
	denied map[watchKey]time.Time
	sinks  []chan<- event.GenericEvent
}

// watchKey is one informer: an account, a namespace ("" for a
// cluster-scoped kind) and a kind.
type watchKey struct {
	user, namespace string
	gvk             schema.GroupVersionKind
}

func (k watchKey) String() string {
	return fmt.Sprintf("%s in %q as %s", k.gvk.Kind, k.namespace, k.user)
}

// accountWatch is a running informer.
type accountWatch struct {
	stop chan struct{}
}

// deniedRetry is how long an account that may not list and watch a kind
// is not asked again.
const deniedRetry = time.Minute

// Bounds of the impersonated watches: each is a watch connection to the
// apiserver, so that a namespace that makes many accounts and instances
// cannot make the controller hold as many. Past a bound, the drift of
// what the watch would have seen is restored at the interval.
const (
	// MaxAccountWatches bounds them all.
	MaxAccountWatches = 1024
	// MaxAccountWatchesPerNamespace bounds those of one namespace.
	MaxAccountWatchesPerNamespace = 32
)

func newAccountWatches(c *clients, mapper meta.RESTMapper, own *ownAccess, log *slog.Logger) *accountWatches {
	ctx, cancel := context.WithCancel(context.Background())
	return &accountWatches{clients: c, mapper: mapper, own: own, log: log, ctx: ctx, cancel: cancel,
		maxWatches: MaxAccountWatches, maxPerNamespace: MaxAccountWatchesPerNamespace,
		holders: map[string]map[string][]watchKey{}, refs: map[watchKey]int{},
		running: map[watchKey]*accountWatch{}, denied: map[watchKey]time.Time{}}
}

// Start waits for the manager to stop, then stops every informer.
func (w *accountWatches) Start(ctx context.Context) error {
	<-ctx.Done()
	w.cancel()
	return nil
}

// subscribe sends what every informer sees to ch.
func (w *accountWatches) subscribe(ch chan<- event.GenericEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sinks = append(w.sinks, ch)
}

// secretKind is the kind the controller never reads with its own account.
var secretKind = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// own tells whether the controller watches gvk with its own account (the
// manager's cache): never a Secret, and only a kind it may list and
// watch in every namespace.
func (w *accountWatches) ownKind(ctx context.Context, gvk schema.GroupVersionKind) bool {
	if gvk.GroupKind() == secretKind.GroupKind() {
		return false
	}
	m, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false
	}
	return w.own.may(ctx, "", m.Resource)
}

// key is the informer that watches gvk in namespace as user: the
// namespace is dropped for a cluster-scoped kind.
func (w *accountWatches) key(user, namespace string, gvk schema.GroupVersionKind) (watchKey, bool) {
	m, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return watchKey{}, false
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	return watchKey{user: user, namespace: namespace, gvk: gvk}, true
}

// hold makes holder's part need exactly keys, starting the informers no
// one needed before and stopping those no one needs now.
func (w *accountWatches) hold(ctx context.Context, holder, part string, keys []watchKey) {
	w.mu.Lock()
	before := w.union(holder)
	parts := w.holders[holder]
	if parts == nil {
		parts = map[string][]watchKey{}
		w.holders[holder] = parts
	}
	if len(keys) == 0 {
		delete(parts, part)
	} else {
		parts[part] = slices.Clone(keys)
	}
	if len(parts) == 0 {
		delete(w.holders, holder)
	}
	start := w.change(before, w.union(holder))
	w.mu.Unlock()
	for _, k := range start {
		w.start(ctx, k)
	}
}

// release drops everything holder held (its instance is gone).
func (w *accountWatches) release(holder string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.union(holder)
	delete(w.holders, holder)
	w.change(before, nil)
}

// union is the set of keys holder holds; w.mu is held.
func (w *accountWatches) union(holder string) map[watchKey]bool {
	out := map[watchKey]bool{}
	for _, keys := range w.holders[holder] {
		for _, k := range keys {
			out[k] = true
		}
	}
	return out
}

// change counts the keys a holder moved from before to after, stops the
// informers no one holds any more and returns the keys to start; w.mu is
// held.
func (w *accountWatches) change(before, after map[watchKey]bool) []watchKey {
	var start []watchKey
	for k := range after {
		if !before[k] {
			w.refs[k]++
		}
		if w.running[k] == nil {
			start = append(start, k)
		}
	}
	for k := range before {
		if after[k] {
			continue
		}
		if w.refs[k]--; w.refs[k] > 0 {
			continue
		}
		delete(w.refs, k)
		if aw := w.running[k]; aw != nil {
			close(aw.stop)
			delete(w.running, k)
			w.log.Debug("stopped an impersonated watch", "watch", k.String())
		}
	}
	return start
}

// start starts k's informer, unless it runs or k's account may not list
// and watch (then the drift of what it holds is restored at the
// interval, as an account that may not watch would have it).
func (w *accountWatches) start(ctx context.Context, k watchKey) {
	m, err := w.mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
	if err != nil {
		return
	}
	w.mu.Lock()
	until, denied := w.denied[k]
	w.mu.Unlock()
	if denied && time.Now().Before(until) {
		return
	}
	rc := w.clients.config(k.user)
	if may, err := mayListWatch(ctx, rc, k.namespace, m.Resource); err != nil || !may {
		w.mu.Lock()
		w.denied[k] = time.Now().Add(deniedRetry)
		w.mu.Unlock()
		w.log.Info("not watching a rendered kind: its account may not list and watch it; drift is restored at the interval", "watch", k.String(), "err", err)
		return
	}
	mc, err := metadata.NewForConfig(rc)
	if err != nil {
		w.log.Warn("not watching a rendered kind", "watch", k.String(), "err", err)
		return
	}
	tweak := func(o *metav1.ListOptions) {
		// A Secret propertiesFrom names is not dm's; other kinds are
		// watched for the objects dm applied only.
		if k.gvk != secretKind {
			o.LabelSelector = deploy.LabelManagedBy + "=" + deploy.ManagedBy
		}
	}
	inf := metadatainformer.NewFilteredMetadataInformer(mc, m.Resource, k.namespace, 0, toolscache.Indexers{}, tweak).Informer()
	_ = inf.SetTransform(func(o any) (any, error) { return bareMetadata(o, k.gvk), nil })
	_ = inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) {
		w.log.Debug("impersonated watch", "watch", k.String(), "err", err)
	})
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: w.send,
		UpdateFunc: func(old, o any) {
			if a, b := old.(client.Object), o.(client.Object); a != nil && b != nil && a.GetResourceVersion() == b.GetResourceVersion() {
				return
			}
			w.send(o)
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			w.send(o)
		},
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[k] != nil || w.refs[k] == 0 {
		return // started meanwhile, or no longer needed
	}
	inNamespace := 0
	for r := range w.running {
		if r.namespace == k.namespace {
			inNamespace++
		}
	}
	if len(w.running) >= w.maxWatches || inNamespace >= w.maxPerNamespace {
		w.denied[k] = time.Now().Add(deniedRetry)
		w.log.Warn("not watching a rendered kind: too many impersonated watches; drift is restored at the interval",
			"watch", k.String(), "MaxAccountWatches", MaxAccountWatches, "MaxAccountWatchesPerNamespace", MaxAccountWatchesPerNamespace)
		return
	}
	aw := &accountWatch{stop: make(chan struct{})}
	w.running[k] = aw
	stop := make(chan struct{})
	go func() {
		select {
		case <-aw.stop:
		case <-w.ctx.Done():
		}
		close(stop)
	}()
	go inf.Run(stop)
	w.log.Debug("started an impersonated watch", "watch", k.String())
}

// send gives an object an informer saw to every sink.
func (w *accountWatches) send(o any) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	w.mu.Lock()
	sinks := slices.Clone(w.sinks)
	w.mu.Unlock()
	for _, s := range sinks {
		select {
		case s <- event.GenericEvent{Object: obj}:
		case <-w.ctx.Done():
			return
		}
	}
}

// bareMetadata keeps of an object's metadata what maps it to its
// instance (its name, namespace, labels and dm's namespace annotation):
// another annotation, such as kubectl's last-applied configuration of a
// Secret, would keep its data in the controller's memory.
func bareMetadata(o any, gvk schema.GroupVersionKind) any {
	p, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return o
	}
	out := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
		Generation: p.Generation, Labels: p.Labels,
	}}
	if ns, ok := p.Annotations[deploy.AnnotationNamespace]; ok {
		out.Annotations = map[string]string{deploy.AnnotationNamespace: ns}
	}
	out.SetGroupVersionKind(gvk)
	return out
}

// mayListWatch asks the apiserver whether the account rc acts as may list
// and watch resource in namespace (all namespaces when ""): a
// SelfSubjectAccessReview, which every account may make, made as that
// account.
func mayListWatch(ctx context.Context, rc *rest.Config, namespace string, gvr schema.GroupVersionResource) (bool, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return false, err
	}
	return mayListWatchWith(ctx, cs, namespace, gvr)
}

func mayListWatchWith(ctx context.Context, cs kubernetes.Interface, namespace string, gvr schema.GroupVersionResource) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("asking whether it may %s %s: %w", verb, gvr.Resource, err)
		}
		if !r.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// ownAccess remembers whether the controller's own account may list and
// watch a resource in every namespace, for ownAccessTTL: a role changed
// later is seen then.
type ownAccess struct {
	cs kubernetes.Interface
	mu sync.Mutex
	m  map[schema.GroupVersionResource]ownAnswer
}

type ownAnswer struct {
	may bool
	at  time.Time
}

// ownAccessTTL is how long an answer of ownAccess holds.
const ownAccessTTL = 10 * time.Minute

func newOwnAccess(cs kubernetes.Interface) *ownAccess {
	return &ownAccess{cs: cs, m: map[schema.GroupVersionResource]ownAnswer{}}
}

// may asks once per resource and ownAccessTTL; a failed review answers
// no, and is asked again next time.
func (o *ownAccess) may(ctx context.Context, namespace string, gvr schema.GroupVersionResource) bool {
	o.mu.Lock()
	a, ok := o.m[gvr]
	o.mu.Unlock()
	if ok && time.Since(a.at) < ownAccessTTL {
		return a.may
	}
	may, err := mayListWatchWith(ctx, o.cs, namespace, gvr)
	if err != nil {
		return false
	}
	o.mu.Lock()
	o.m[gvr] = ownAnswer{may: may, at: time.Now()}
	o.mu.Unlock()
	return may
}
