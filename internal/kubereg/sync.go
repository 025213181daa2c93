package kubereg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/server"
)

// object is a Registry or a ClusterRegistry, as the sync loop reads it.
type object struct {
	key       string // Registry/NS/NAME or ClusterRegistry/NAME
	namespace string // "" for a ClusterRegistry
	name      string
	created   time.Time
	gen       int64
	spec      v1alpha1.RegistrySpec
	pushed    string // the dm.io/pushed-commit annotation
	status    v1alpha1.RegistryStatus
	obj       client.Object
}

// desired is how one object's registry is to be served.
type desired struct {
	prefix  string
	spec    api.RegistrySpec // GitHub holds the token
	refresh time.Duration
	suspend bool
	// hookSecret is the registry's own webhook secret.
	hookSecret string
}

// same reports whether d and e serve the registry alike: otherwise the
// registry is opened anew (a rotated token, another branch).
func (d desired) same(e desired) bool {
	return d.prefix == e.prefix && *d.spec.GitHub == *e.spec.GitHub && d.refresh == e.refresh && d.suspend == e.suspend
}

// running is an object's registry being served.
type running struct {
	desired
	g      *index.Registry
	cancel context.CancelFunc
	pushed string // the last pushed commit acted on
}

// problem is why an object is not served (or not as asked).
type problem struct {
	stalled         bool
	reason, message string
}

func registryKey(ns, name string) string { return "Registry/" + ns + "/" + name }
func clusterKey(name string) string      { return "ClusterRegistry/" + name }

// objects reads both informers' stores, oldest first: of two objects
// claiming one prefix, the older keeps it.
func objects(regs, cregs toolscache.Store) []object {
	var out []object
	for _, o := range regs.List() {
		r := o.(*v1alpha1.Registry)
		out = append(out, object{key: registryKey(r.Namespace, r.Name), namespace: r.Namespace, name: r.Name, created: r.CreationTimestamp.Time,
			gen: r.Generation, spec: r.Spec, pushed: r.Annotations[v1alpha1.PushedCommitAnnotation], status: r.Status, obj: r})
	}
	for _, o := range cregs.List() {
		r := o.(*v1alpha1.ClusterRegistry)
		out = append(out, object{key: clusterKey(r.Name), name: r.Name, created: r.CreationTimestamp.Time,
			gen: r.Generation, spec: r.Spec, pushed: r.Annotations[v1alpha1.PushedCommitAnnotation], status: r.Status, obj: r})
	}
	slices.SortFunc(out, func(a, b object) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

// secretNamespace is where an object's Secrets are.
func (w *Watcher) secretNamespace(o object) string {
	if o.namespace != "" {
		return o.namespace
	}
	return w.opts.Namespace
}

// want computes how o is to be served; a problem says why it cannot be.
// needed receives the Secrets it names.
func (w *Watcher) want(o object, claimed map[string]string, needed map[string]bool) (desired, *problem) {
	gh := o.spec.GitHub
	prefix := o.spec.Prefix
	if prefix == "" {
		prefix = gh.Owner + "/" + gh.Repo
	}
	p, err := api.ParsePrefix(prefix)
	if err != nil {
		return desired{}, &problem{true, "InvalidSpec", "spec.prefix: " + err.Error()}
	}
	if w.static[p] {
		return desired{}, &problem{true, "PrefixConflict", fmt.Sprintf("prefix %s is configured by registryd's flags or configuration file", p)}
	}
	if other, ok := claimed[p]; ok {
		return desired{}, &problem{true, "PrefixConflict", fmt.Sprintf("prefix %s is served for %s, created earlier", p, other)}
	}
	claimed[p] = o.key
	apiURL := gh.APIURL
	if apiURL == "" {
		apiURL = w.opts.GitHubAPI
	}
	d := desired{prefix: p, refresh: w.opts.Refresh, suspend: o.spec.Suspend,
		spec: api.RegistrySpec{Prefix: p, Namespace: o.namespace, GitHub: &api.GitHubSpec{Owner: gh.Owner, Repo: gh.Repo, Branch: gh.Branch, APIURL: apiURL}}}
	if ri := o.spec.RefreshInterval; ri != nil {
		d.refresh = ri.Duration
	}
	ns := w.secretNamespace(o)
	read := func(field string, ref *v1alpha1.SecretKeyReference) (string, *problem) {
		if ref == nil {
			return "", nil
		}
		needed[ns+"/"+ref.Name] = true
		v, ok, synced := w.secrets.get(ns, ref.Name, ref.Key)
		if !ok {
			msg := fmt.Sprintf("%s: Secret %s/%s has no key %s", field, ns, ref.Name, ref.Key)
			if !synced {
				msg = fmt.Sprintf("%s: waiting for Secret %s/%s", field, ns, ref.Name)
			}
			return "", &problem{false, "SecretNotFound", msg}
		}
		return strings.TrimSpace(v), nil
	}
	tok, pr := read("spec.tokenSecretRef", o.spec.TokenSecretRef)
	if pr != nil {
		return d, pr
	}
	d.spec.GitHub.Token = tok
	if d.hookSecret, pr = read("spec.webhookSecretRef", o.spec.WebhookSecretRef); pr != nil {
		return d, pr
	}
	return d, nil
}

// sync brings the served registries in step with the objects.
func (w *Watcher) sync(ctx context.Context, regs, cregs toolscache.Store) {
	objs := objects(regs, cregs)
	claimed := map[string]string{}
	needed := map[string]bool{}
	want := map[string]desired{}
	problems := map[string]problem{}
	pushed := map[string]string{}
	for _, o := range objs {
		d, pr := w.want(o, claimed, needed)
		if pr != nil {
			problems[o.key] = *pr
			continue
		}
		want[o.key] = d
		pushed[o.key] = o.pushed
	}
	w.secrets.ensure(ctx, needed)

	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = problems
	for key, r := range w.running {
		if d, ok := want[key]; ok && d.same(r.desired) {
			continue
		}
		if _, ok := want[key]; ok && want[key].prefix == r.prefix {
			continue // replaced below, keeping its snapshot
		}
		w.stop(key, r)
	}
	var hooks []server.WebhookRegistry
	for key, d := range want {
		r, ok := w.running[key]
		if !ok || !d.same(r.desired) {
			nr, err := w.start(ctx, d, r)
			if err != nil {
				w.problems[key] = problem{true, "InvalidSpec", err.Error()}
				if ok {
					w.stop(key, r)
				}
				continue
			}
			if ok {
				nr.pushed = r.pushed
			} else {
				// The annotation as first seen is history: the first
				// refresh reads the branch anyway.
				nr.pushed = pushed[key]
			}
			w.running[key] = nr
			w.byPrefix[d.prefix] = key
			r = nr
			w.log.Info("serving registry from the cluster", "object", key, "registry", d.prefix, "location", d.spec.GitHub.String(), "suspended", d.suspend)
		}
		r.hookSecret = d.hookSecret
		if p := pushed[key]; p != "" && p != r.pushed {
			r.pushed = p
			if !d.suspend {
				w.log.Info("push recorded on the registry's object: refreshing", "registry", d.prefix, "commit", p)
				w.srv.RequestRefresh(d.prefix, p)
			}
		}
		if !d.suspend {
			gh := d.spec.GitHub
			hooks = append(hooks, server.WebhookRegistry{Registry: d.prefix, Owner: gh.Owner, Repo: gh.Repo, Branch: gh.Branch, Secret: d.hookSecret})
		}
	}
	slices.SortFunc(hooks, func(a, b server.WebhookRegistry) int { return strings.Compare(a.Registry, b.Registry) })
	w.srv.SetWebhookRegistries(append(slices.Clone(w.opts.StaticWebhooks), hooks...))
}

// start opens d's registry and serves it; old, if not nil, is the
// object's previous registry, whose snapshot is served until the new one
// has indexed. w.mu is held.
func (w *Watcher) start(ctx context.Context, d desired, old *running) (*running, error) {
	g, err := api.OpenRegistry(d.spec, w.opts.Setup)
	if err != nil {
		return nil, err
	}
	if old != nil && old.prefix == d.prefix && old.g.Snapshot() != nil {
		g.Install(old.g.Snapshot())
	} else if g.CacheDir != "" {
		if err := g.Load(); err == nil {
			w.log.Info("serving persisted snapshot", "registry", g.Name)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	if !d.suspend {
		var wg sync.WaitGroup
		api.KeepIndexed(rctx, &wg, g, d.refresh, w.log)
	}
	w.opts.Resolver.Put(g)
	if old != nil {
		old.cancel()
	}
	return &running{desired: d, g: g, cancel: cancel}, nil
}

// stop stops serving key's registry. w.mu is held.
func (w *Watcher) stop(key string, r *running) {
	r.cancel()
	if cur, ok := w.opts.Resolver.Registry(r.prefix); ok && cur == r.g {
		w.opts.Resolver.Remove(r.prefix)
	}
	delete(w.running, key)
	if w.byPrefix[r.prefix] == key {
		delete(w.byPrefix, r.prefix)
	}
	w.log.Info("no longer serving registry from the cluster", "object", key, "registry", r.prefix)
}

// Pushed is the webhook's OnPush: it records commit on the object serving
// registry, so that every replica refreshes. It does not block.
func (w *Watcher) Pushed(registry, commit string) {
	w.mu.Lock()
	key, ok := w.byPrefix[registry]
	if ok && commit != "" {
		// This replica refreshes already: its own record must not make it
		// refresh twice.
		w.running[key].pushed = commit
		w.pushes[key] = commit
	}
	w.mu.Unlock()
	if ok {
		select {
		case w.pushCh <- struct{}{}:
		default:
		}
	}
}

// recordPushes writes the pushed commits to the objects' annotations
// until ctx ends.
func (w *Watcher) recordPushes(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.pushCh:
		}
		w.mu.Lock()
		pushes := w.pushes
		w.pushes = map[string]string{}
		w.mu.Unlock()
		for key, commit := range pushes {
			if err := w.annotate(ctx, key, commit); err != nil {
				w.log.Warn("cannot record the push on the registry's object; other replicas refresh at their interval", "object", key, "err", err)
			}
		}
	}
}

func (w *Watcher) annotate(ctx context.Context, key, commit string) error {
	var obj client.Object
	parts := strings.Split(key, "/")
	switch parts[0] {
	case "Registry":
		obj = &v1alpha1.Registry{}
		obj.SetNamespace(parts[1])
		obj.SetName(parts[2])
	default:
		obj = &v1alpha1.ClusterRegistry{}
		obj.SetName(parts[1])
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.PushedCommitAnnotation: commit}}})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return w.client.Patch(pctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// ReadyNotes are /readyz's notes: an unreachable apiserver.
func (w *Watcher) ReadyNotes() []string {
	if n := w.reach.note(); n != "" {
		return []string{n}
	}
	return nil
}

// Serves reports whether registry comes from a cluster object: its
// missing index does not fail /readyz.
func (w *Watcher) Serves(registry string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.byPrefix[registry]
	return ok
}

// errNoServer is returned by Run without a server.
var errNoServer = errors.New("kubereg: Run needs the server")
