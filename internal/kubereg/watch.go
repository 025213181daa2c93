package kubereg

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reachability remembers whether the apiserver answered the last list or
// watch, learnt from the informers' own requests: knowing costs no request.
type reachability struct {
	mu    sync.Mutex
	since time.Time // zero while reachable
	err   string
}

func (r *reachability) observe(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.since, r.err = time.Time{}, ""
		return
	}
	if r.since.IsZero() {
		r.since = time.Now()
	}
	r.err = err.Error()
}

// note describes an unreachable apiserver, or "".
func (r *reachability) note() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since.IsZero() {
		return ""
	}
	return fmt.Sprintf("apiserver unreachable since %s (%s): serving the registries' last snapshots", r.since.UTC().Format(time.RFC3339), r.err)
}

// informer lists and watches objects of list's kind in namespace ("" for
// all, or a cluster-scoped kind), restricted by a field selector, and wakes
// the sync loop on every change.
func (w *Watcher) informer(ctx context.Context, list client.ObjectList, obj runtime.Object, namespace, fieldSelector string) toolscache.SharedIndexInformer {
	inf := w.selected(ctx, list, obj, namespace, fieldSelector, "")
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.wake() },
		UpdateFunc: func(any, any) { w.wake() },
		DeleteFunc: func(any) { w.wake() },
	})
	return inf
}

// selected is an informer of the objects the selectors select, without
// handlers.
func (w *Watcher) selected(ctx context.Context, list client.ObjectList, obj runtime.Object, namespace, fieldSelector, labelSelector string) toolscache.SharedIndexInformer {
	lw := &toolscache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector, o.LabelSelector = fieldSelector, labelSelector
			l := list.DeepCopyObject().(client.ObjectList)
			err := w.client.List(ctx, l, &client.ListOptions{Namespace: namespace, Raw: &o})
			w.reach.observe(err)
			return l, err
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector, o.LabelSelector = fieldSelector, labelSelector
			l := list.DeepCopyObject().(client.ObjectList)
			wi, err := w.client.Watch(ctx, l, &client.ListOptions{Namespace: namespace, Raw: &o})
			w.reach.observe(err)
			return wi, err
		},
	}
	// No resync: every change arrives as an event, and a resync would only
	// wake the sync loop for nothing.
	inf := toolscache.NewSharedIndexInformer(lw, obj, 0, toolscache.Indexers{})
	// registryd never reads managedFields, and they are a third of a
	// small object (each result ConfigMap of the examples holds its own).
	// An update sent without them leaves them as the apiserver has them.
	_ = inf.SetTransform(stripManagedFields)
	_ = inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) {
		w.reach.observe(err)
		w.log.Debug("watch ended", "kind", fmt.Sprintf("%T", obj), "err", err)
	})
	return inf
}

// secretWatches watches each Secret the objects name, by name: registryd
// needs only get and watch on those (RBAC resourceNames), never a list of
// a namespace's Secrets.
type secretWatches struct {
	w       *Watcher
	mu      sync.Mutex
	watches map[string]*secretWatch // namespace/name -> its watch
}

type secretWatch struct {
	inf    toolscache.SharedIndexInformer
	cancel context.CancelFunc
}

func newSecretWatches(w *Watcher) *secretWatches {
	return &secretWatches{w: w, watches: map[string]*secretWatch{}}
}

// ensure watches exactly the Secrets of keys (namespace/name).
func (s *secretWatches) ensure(ctx context.Context, keys map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sw := range s.watches {
		if !keys[k] {
			sw.cancel()
			delete(s.watches, k)
		}
	}
	for k := range keys {
		if _, ok := s.watches[k]; ok {
			continue
		}
		ns, name := splitKey(k)
		sctx, cancel := context.WithCancel(ctx)
		inf := s.w.informer(sctx, &corev1.SecretList{}, &corev1.Secret{}, ns, fields.OneTermEqualSelector("metadata.name", name).String())
		s.watches[k] = &secretWatch{inf: inf, cancel: cancel}
		go inf.Run(sctx.Done())
	}
}

// get returns a Secret's key; ok is false when the Secret or the key is
// not (yet) known.
func (s *secretWatches) get(namespace, name, key string) (string, bool, bool) {
	s.mu.Lock()
	sw, ok := s.watches[namespace+"/"+name]
	s.mu.Unlock()
	if !ok {
		return "", false, false
	}
	synced := sw.inf.HasSynced()
	o, exists, err := sw.inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return "", false, synced
	}
	v, ok := o.(*corev1.Secret).Data[key]
	return string(v), ok, synced
}

func splitKey(k string) (string, string) {
	for i := range len(k) {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return "", k
}

// stripManagedFields is an informer's transform: it drops an object's
// managedFields before the informer stores it.
func stripManagedFields(o any) (any, error) {
	if m, err := apimeta.Accessor(o); err == nil {
		m.SetManagedFields(nil)
	}
	return o, nil
}
