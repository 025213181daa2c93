package kubereg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch"
)

// Run watches the objects and serves their registries through srv until
// ctx ends. It returns at once with an error only when it cannot start;
// an unreachable apiserver is retried, and what is served stays served.
func (w *Watcher) Run(ctx context.Context, srv Server) error {
	if srv == nil {
		return errNoServer
	}
	w.srv = srv
	lease, err := coordinationv1client.NewForConfig(w.opts.Config)
	if err != nil {
		return err
	}
	regs := w.informer(ctx, &v1alpha1.RegistryList{}, &v1alpha1.Registry{}, "", "")
	cregs := w.informer(ctx, &v1alpha1.ClusterRegistryList{}, &v1alpha1.ClusterRegistry{}, "", "")
	results := w.selected(ctx, &corev1.ConfigMapList{}, &corev1.ConfigMap{}, w.opts.Namespace, "", resultsLabel+"=true")
	// The results go to the tester as the watch delivers them; the cache
	// keeps the shards' metadata.
	_ = results.SetTransform(w.takeResults)
	_, _ = results.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: w.forgetResults,
	})
	// Another replica's push wakes the sync loop, which refreshes.
	pushes := w.informer(ctx, &corev1.ConfigMapList{}, &corev1.ConfigMap{}, w.opts.Namespace, "metadata.name="+pushesName)
	w.pushStore = pushes.GetStore()
	go pushes.Run(ctx.Done())
	go regs.Run(ctx.Done())
	go cregs.Run(ctx.Done())
	go results.Run(ctx.Done())
	go w.storeResults(ctx)
	go w.recordPushes(ctx)
	go w.elect(ctx, lease)
	go w.writeStatuses(ctx, regs.GetStore(), cregs.GetStore(), results.GetStore())
	cleaning := false
	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			for key, r := range w.running {
				w.stop(key, r, false) // kept for the next start
			}
			w.mu.Unlock()
			return nil
		case <-w.kick:
		}
		// Until both kinds are listed, an object missing from a store may
		// only be unread: nothing is removed before.
		if !regs.HasSynced() || !cregs.HasSynced() || !pushes.HasSynced() {
			go func() {
				if toolscache.WaitForCacheSync(ctx.Done(), regs.HasSynced, cregs.HasSynced, pushes.HasSynced) {
					w.wake()
				}
			}()
			continue
		}
		w.sync(ctx, regs.GetStore(), cregs.GetStore())
		if !cleaning {
			cleaning = true
			go w.cleanCacheAfter(ctx)
		}
	}
}

// cleanCacheAfter removes, once, the cache directories that no registry
// served uses, CacheGCDelay after the first full view of the objects: the
// directories of objects deleted while registryd was down, which no
// deletion removed. A directory of an object that is not served then (a
// Secret not readable yet) goes too; its registry indexes anew.
func (w *Watcher) cleanCacheAfter(ctx context.Context) {
	dir := w.opts.Setup.CacheDir
	if dir == "" {
		return
	}
	delay := w.opts.CacheGCDelay
	if delay <= 0 {
		delay = time.Minute
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(delay):
	}
	keep := map[string]bool{}
	for _, id := range w.opts.StaticIdentities {
		keep[id] = true
	}
	w.mu.Lock()
	for _, r := range w.running {
		keep[r.g.ID()] = true
	}
	w.mu.Unlock()
	entries, err := os.ReadDir(filepath.Join(dir, "registries"))
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || keep[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, "registries", e.Name())); err != nil {
			w.log.Warn("cannot remove an unused registry cache directory", "dir", e.Name(), "err", err)
			continue
		}
		w.log.Info("removed the cache directory of a registry no longer served", "dir", e.Name())
	}
}

// elect takes part in the election of the replica that writes status,
// until ctx ends.
func (w *Watcher) elect(ctx context.Context, c coordinationv1client.CoordinationV1Interface) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: w.opts.Namespace, Name: LeaseName},
		Client:     c,
		LockConfig: resourcelock.ResourceLockConfig{Identity: w.opts.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   w.opts.LeaseDuration,
			RenewDeadline:   w.opts.RenewDeadline,
			RetryPeriod:     w.opts.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					w.log.Info("holding the Lease: this replica writes the registries' status", "lease", w.opts.Namespace+"/"+LeaseName, "identity", w.opts.Identity)
					w.leader.Store(true)
					// The tester of examples too: it goes on with what
					// the previous holder left untested.
					w.srv.Examples().Resume()
				},
				OnStoppedLeading: func() {
					w.leader.Store(false)
				},
			},
		})
		if err != nil {
			w.log.Error("leader election", "err", err)
			return
		}
		le.Run(ctx)
	}
}

// writeStatuses, while this replica holds the Lease, writes every
// object's status that differs from what it serves. It reads the
// informers' stores: with nothing changing it sends nothing.
func (w *Watcher) writeStatuses(ctx context.Context, regs, cregs, results toolscache.Store) {
	t := time.NewTicker(w.opts.StatusPeriod)
	defer t.Stop()
	for tick := 0; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !w.leader.Load() {
			continue
		}
		// At once after a registry goes: its results' ConfigMaps are
		// the largest part of what it leaves in every replica's memory
		// (their informers hold them).
		if w.collect.Swap(false) || tick%resultsGCTicks == 0 {
			w.collectResults(ctx, regs, cregs, results)
		}
		for _, o := range objects(regs, cregs) {
			st := w.status(o)
			if equality.Semantic.DeepEqual(st, o.status) {
				continue
			}
			if err := w.writeStatus(ctx, o, st); err != nil {
				w.log.Warn("cannot write the registry's status", "object", o.key, "err", err)
			}
		}
	}
}

func (w *Watcher) writeStatus(ctx context.Context, o object, st v1alpha1.RegistryStatus) error {
	obj := o.obj.DeepCopyObject().(client.Object)
	switch r := obj.(type) {
	case *v1alpha1.Registry:
		r.Status = st
	case *v1alpha1.ClusterRegistry:
		r.Status = st
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// An update, not a patch: a status computed from an older object is
	// refused (conflict) and written again from the newer one.
	return w.client.Status().Update(wctx, obj)
}

// status computes o's status from what this replica serves.
func (w *Watcher) status(o object) v1alpha1.RegistryStatus {
	st := v1alpha1.RegistryStatus{ObservedGeneration: o.gen, Conditions: append([]metav1.Condition(nil), o.status.Conditions...)}
	set := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: o.gen})
	}
	// A copy, taken under the lock: sync rewrites the running entry's
	// fields (its note, its hook secret) as objects change.
	var r running
	w.mu.Lock()
	rp, serving := w.running[o.key]
	if serving {
		r = *rp
	}
	pr, hasProblem := w.problems[o.key]
	w.mu.Unlock()
	switch {
	case hasProblem:
		set(v1alpha1.ConditionReady, false, pr.reason, pr.message)
		set(v1alpha1.ConditionStalled, pr.stalled, pr.reason, pr.message)
		return st
	case !serving:
		set(v1alpha1.ConditionReady, false, "Pending", "registryd has not read the object yet")
		set(v1alpha1.ConditionStalled, false, "Pending", "")
		return st
	}
	st.Prefix = r.prefix
	snap, gs := r.g.Snapshot(), r.g.Status()
	if !gs.LastSuccess.IsZero() {
		// The apiserver keeps seconds: compare what it keeps.
		t := metav1.NewTime(gs.LastSuccess.Truncate(time.Second))
		st.LastSuccessTime = &t
	} else if o.status.LastSuccessTime != nil {
		st.LastSuccessTime = o.status.LastSuccessTime
	}
	if snap != nil {
		st.Commit = snap.Tree.Version
		st.Templates, st.Versions = snap.Templates, snap.Versions
		errs := snap.Errors()
		st.Lint = v1alpha1.LintCounts{Errors: errs, Warnings: len(snap.Findings) - errs}
		if w.srv != nil {
			c := w.srv.Examples().CountsFor(r.key())
			st.Examples = v1alpha1.ExampleCounts{OK: c.OK, Error: c.Error, Pending: c.Pending}
		}
	}
	suspended := ""
	if r.suspend {
		suspended = " (suspended: not refreshed)"
	}
	suspended += r.note
	var bound *fetch.BoundError
	var quota *QuotaError
	switch {
	case errors.As(r.g.LastErr(), &quota):
		// Refused for a quota: the next sync leaves it out, saying so.
		set(v1alpha1.ConditionReady, false, quota.Reason(), quota.Error())
	case errors.As(r.g.LastErr(), &bound):
		// Over a bound the registry is not served (index.Registry drops
		// its snapshot): say which bound, and the flag that sets it.
		flag := "--max-tree-entries"
		if bound.Bound == "bytes" {
			flag = "--max-registry-bytes"
		}
		set(v1alpha1.ConditionReady, false, "TooLarge", fmt.Sprintf("not served: %s (registryd's %s)", bound.Error(), flag))
	case snap != nil && gs.LastError == "":
		set(v1alpha1.ConditionReady, true, "Indexed", "serving commit "+snap.Tree.Version+suspended)
	case snap != nil:
		set(v1alpha1.ConditionReady, false, "RefreshFailed", "serving commit "+snap.Tree.Version+suspended+"; the last refresh failed: "+gs.LastError)
	case gs.LastError != "":
		set(v1alpha1.ConditionReady, false, "IndexFailed", gs.LastError)
	default:
		set(v1alpha1.ConditionReady, false, "Indexing", "indexing the registry"+suspended)
	}
	set(v1alpha1.ConditionStalled, false, "Serving", "")
	return st
}
