package kubereg

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/catalog"
	"github.com/dmhq/dm/internal/index"
)

// Example results live in ConfigMaps of registryd's namespace, one per
// registry and first hex digit of the version digest (16 shards): a result
// is about 130 bytes with its key, so a shard stays under the 1 MiB object
// limit up to some 7,000 versions, 110,000 per registry. Each data key is
// a version's digest ("sha256.HEX"), its value the result as JSON.
const (
	// resultsLabel marks registryd's result ConfigMaps.
	resultsLabel = "dm.io/registryd-examples"
	// resultsRegistry is the annotation naming a ConfigMap's registry.
	resultsRegistry = "dm.io/registry"
)

// maxShardBytes bounds the data of one result ConfigMap, under the
// apiserver's 1 MiB bound on an object.
const maxShardBytes = 900 << 10

// resultName is the ConfigMap holding digest's result in registry.
func resultName(registry, digest string) string {
	h := sha256.Sum256([]byte(registry))
	return "registryd-examples-" + hex.EncodeToString(h[:])[:12] + "-" + shardOf(digest)
}

// shardOf is the shard of a version's digest: its first hex digit.
func shardOf(digest string) string {
	if hexDigest := strings.TrimPrefix(digest, "sha256:"); hexDigest != "" {
		return hexDigest[:1]
	}
	return "0"
}

// resultKey is digest as a ConfigMap key.
func resultKey(digest string) string { return strings.Replace(digest, ":", ".", 1) }

// storedResult is a result as stored. Its reference is not: the digest
// names the version, and every replica's snapshot knows its reference
// (ConfigMaps written before carry a "ref" this ignores). Every replica
// receives every shard at each write of it, so each byte of a result is
// paid for once per version in each of them.
type storedResult struct {
	Title  string    `json:"title,omitempty"`
	Status string    `json:"status,omitempty"`
	Error  string    `json:"error,omitempty"`
	Uses   []string  `json:"uses,omitempty"`
	Tested time.Time `json:"tested"`
}

// pendingResult names a result to store: the tester holds it, and it is
// read from there when written (a queue of copies held every result of a
// registry's first test twice, and grouping them by shard a third time).
type pendingResult struct{ registry, digest string }

// ExampleResult is the tester's OnResult: the result is queued for the
// result ConfigMaps. It does not block.
func (w *Watcher) ExampleResult(registry, digest string, _ catalog.ExampleResult) {
	w.resMu.Lock()
	w.results = append(w.results, pendingResult{registry, digest})
	w.resMu.Unlock()
	select {
	case w.resCh <- struct{}{}:
	default:
	}
}

// takeResults is the result informer's transform: it hands a shard's
// results to the tester and leaves only the ConfigMap's metadata in the
// informer's cache. Every replica watches every shard, and a second copy
// of each result in each replica's cache cost as much as its index
// entry. A transform sees every version of every object the watch
// delivers, once and in order, before any handler: a deleted shard's
// results are imported before its DeleteFunc forgets its registry, never
// after.
func (w *Watcher) takeResults(obj any) (any, error) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		w.importResults(cm)
		cm.Data = nil
	}
	return stripManagedFields(obj)
}

// importResults hands a ConfigMap's results to the tester: this replica
// then never tests those versions. A result the tester holds already is
// not decoded again (a shard is rewritten each time results are added to
// it, and decoding its thousands of results at every write, in every
// replica, cost more than the tests).
func (w *Watcher) importResults(cm *corev1.ConfigMap) {
	if w.srv == nil {
		return
	}
	registry := cm.Annotations[resultsRegistry]
	ex := w.srv.Examples()
	for k, v := range cm.Data {
		digest := strings.Replace(k, ".", ":", 1)
		if ex.Holds(registry, digest) {
			continue
		}
		var r storedResult
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			continue
		}
		ex.Import(registry, digest, catalog.ExampleResult{Title: r.Title, Status: r.Status, Error: r.Error, Uses: r.Uses, Tested: r.Tested})
	}
}

// storeResults writes queued results to their ConfigMaps until ctx ends;
// a write that fails is tried again at the next result or after a second.
func (w *Watcher) storeResults(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.resCh:
		case <-t.C:
		}
		w.resMu.Lock()
		batch := w.results
		w.results = nil
		w.resMu.Unlock()
		if len(batch) == 0 {
			continue
		}
		// A registry no longer served has no results to keep: its
		// ConfigMaps go (collectResults), and so do these.
		batch = slices.DeleteFunc(batch, func(p pendingResult) bool {
			_, ok := w.opts.Resolver.ByKey(p.registry)
			return !ok
		})
		var failed []pendingResult
		for ps := range shardRuns(batch) {
			name := resultName(ps[0].registry, ps[0].digest)
			err := w.writeResults(ctx, name, ps)
			switch {
			case err == nil:
			case apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err):
				// Trying again would be refused again: the other
				// replicas test these versions themselves.
				w.log.Warn("cannot store example results; not trying again", "configmap", name, "results", len(ps), "err", err)
			default:
				w.log.Warn("cannot store example results; trying again", "configmap", name, "err", err)
				failed = append(failed, ps...)
			}
		}
		if len(failed) > 0 {
			w.resMu.Lock()
			w.results = append(failed, w.results...)
			w.resMu.Unlock()
		}
	}
}

// shardRuns sorts batch by shard and yields each shard's results, a run
// of the batch itself: grouping them into slices of their own held every
// queued result once more.
func shardRuns(batch []pendingResult) iter.Seq[[]pendingResult] {
	slices.SortFunc(batch, func(a, b pendingResult) int {
		return cmp.Or(strings.Compare(a.registry, b.registry), strings.Compare(shardOf(a.digest), shardOf(b.digest)))
	})
	return func(yield func([]pendingResult) bool) {
		for i := 0; i < len(batch); {
			j := i + 1
			for j < len(batch) && batch[j].registry == batch[i].registry && shardOf(batch[j].digest) == shardOf(batch[i].digest) {
				j++
			}
			if !yield(batch[i:j]) {
				return
			}
			i = j
		}
	}
}

func (w *Watcher) writeResults(ctx context.Context, name string, ps []pendingResult) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The watch cache holds the shards' metadata only (takeResults): the
	// shard is read to be merged with. A write of what was read fails if
	// another got there first (a conflict, or the shard created
	// meanwhile), and is tried again.
	cm := &corev1.ConfigMap{}
	if err := w.client.Get(wctx, client.ObjectKey{Namespace: w.opts.Namespace, Name: name}, cm); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.opts.Namespace, Name: name,
			Labels:      map[string]string{resultsLabel: "true", "app.kubernetes.io/name": "registryd"},
			Annotations: map[string]string{resultsRegistry: ps[0].registry}}}
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	dropped := 0
	ex := w.srv.Examples()
	for _, p := range ps {
		r, ok := ex.Result(p.registry, p.digest)
		if !ok || r.Tested.IsZero() {
			// Forgotten since: its registry went, or the version.
			continue
		}
		// To the second: the page says when a version was tested, not
		// to the nanosecond, and RFC 3339's fraction was a tenth of a
		// result.
		b, err := json.Marshal(storedResult{r.Title, r.Status, r.Error, r.Uses, r.Tested.Truncate(time.Second)})
		if err != nil {
			return err
		}
		k := resultKey(p.digest)
		grow := len(k) + len(b)
		if old, ok := cm.Data[k]; ok {
			grow -= len(k) + len(old)
		}
		if size+grow > maxShardBytes {
			// A shard is one object, of at most 1 MiB: what does not
			// fit is not stored (the other replicas test it themselves).
			dropped++
			continue
		}
		size += grow
		cm.Data[k] = string(b)
	}
	if dropped > 0 {
		w.log.Warn("example results not stored: their ConfigMap is full", "configmap", name, "results", dropped)
	}
	if cm.ResourceVersion == "" {
		return w.client.Create(wctx, cm)
	}
	return w.client.Update(wctx, cm)
}

// forgetResults is the results informer's DeleteFunc: the registry whose
// stored results went is forgotten by the tester too.
func (w *Watcher) forgetResults(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || w.srv == nil {
		return
	}
	w.srv.Examples().Forget(cm.Annotations[resultsRegistry])
}

// resultsGCTicks is how many status periods pass between collections of
// the results of deleted registries (a minute at the default 2 seconds).
const resultsGCTicks = 30

// collectResults deletes the stored results of the registries no object
// and no flag names any more: a deleted Registry leaves nothing behind,
// in the cluster or in any replica's memory.
func (w *Watcher) collectResults(ctx context.Context, regs, cregs, results toolscache.Store) {
	named := map[string]bool{}
	for p := range w.static {
		named[p] = true
	}
	for _, o := range objects(regs, cregs) {
		prefix := objectPrefix(o.spec)
		if p, err := api.ParsePrefix(prefix); err == nil {
			named[index.Key(o.namespace, p)] = true
		}
	}
	for _, o := range results.List() {
		cm := o.(*corev1.ConfigMap)
		if named[cm.Annotations[resultsRegistry]] {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := w.client.Delete(dctx, cm, client.Preconditions{UID: &cm.UID})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			w.log.Warn("cannot delete the example results of a deleted registry", "configmap", cm.Name, "err", err)
		}
	}
}
