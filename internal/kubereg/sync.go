package kubereg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/server"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// object is a Registry or a ClusterRegistry, as the sync loop reads it.
type object struct {
	key       string // Registry/NS/NAME or ClusterRegistry/NAME
	namespace string // "" for a ClusterRegistry
	name      string
	uid       string
	created   time.Time
	gen       int64
	spec      v1alpha1.RegistrySpec
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
	// note is said in the Ready condition: a setting registryd changed.
	note string
	// mirror is spec.mirror's target, with its credential.
	mirror *api.OCISpec
	// object is the object's key; rank its place in the quotas' order;
	// gen its generation.
	object string
	rank   rank
	gen    int64
}

// key is the served registry's key (index.Registry.Key).
func (d desired) key() string { return index.Key(d.spec.Namespace, d.prefix) }

// same reports whether d and e serve the registry alike: otherwise the
// registry is opened anew (a rotated token, another branch, an object
// made again under the same name).
func (d desired) same(e desired) bool {
	return d.prefix == e.prefix && d.spec.UID == e.spec.UID && sameSpec(d.spec, e.spec, true) && d.refresh == e.refresh && d.suspend == e.suspend &&
		sameOCI(d.mirror, e.mirror, true) && d.spec.Verify.Equal(e.spec.Verify)
}

// sameSpec reports whether a and b read the same source, with the same
// credential when cred is set.
func sameSpec(a, b api.RegistrySpec, cred bool) bool {
	switch {
	case a.GitHub != nil && b.GitHub != nil:
		x, y := *a.GitHub, *b.GitHub
		if !cred {
			x.Token, y.Token = "", ""
		}
		return x == y
	case a.OCI != nil || b.OCI != nil:
		return sameOCI(a.OCI, b.OCI, cred)
	}
	return false
}

func sameOCI(a, b *api.OCISpec, cred bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.URL == b.URL && a.PlainHTTP == b.PlainHTTP && (!cred || bytes.Equal(a.DockerConfig, b.DockerConfig))
}

// sameSource reports whether d and e are the same object reading the same
// repository through the same API at the same prefix, whatever the
// credential: a registry opened anew with a rotated token serves the old
// index until it has read the new one. An object made again (another
// uid) starts from nothing.
func (d desired) sameSource(e desired) bool {
	return d.key() == e.key() && d.spec.UID == e.spec.UID && sameSpec(d.spec, e.spec, false)
}

// running is an object's registry being served.
type running struct {
	desired
	g      *index.Registry
	cancel context.CancelFunc
	pushed string // the last pushed commit acted on
	// gone is set, with the watcher's qmu held, when the registry is no
	// longer served: a refresh still under way is then admitted no more.
	gone bool
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
		out = append(out, object{key: registryKey(r.Namespace, r.Name), namespace: r.Namespace, name: r.Name, uid: string(r.UID), created: r.CreationTimestamp.Time,
			gen: r.Generation, spec: r.Spec, status: r.Status, obj: r})
	}
	for _, o := range cregs.List() {
		r := o.(*v1alpha1.ClusterRegistry)
		out = append(out, object{key: clusterKey(r.Name), name: r.Name, uid: string(r.UID), created: r.CreationTimestamp.Time,
			gen: r.Generation, spec: r.Spec, status: r.Status, obj: r})
	}
	// ClusterRegistries claim their prefixes first, whatever their age: a
	// namespace's Registry can never take a prefix from every namespace.
	slices.SortFunc(out, func(a, b object) int {
		if ca, cb := a.namespace == "", b.namespace == ""; ca != cb {
			if ca {
				return -1
			}
			return 1
		}
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
	switch {
	case o.spec.OCI != nil && !gh.IsZero():
		return desired{}, &problem{true, "InvalidSpec", "set spec.github or spec.oci, not both"}
	case o.spec.OCI == nil && (gh.Owner == "" || gh.Repo == ""):
		return desired{}, &problem{true, "InvalidSpec", "set spec.github (owner and repo) or spec.oci"}
	case o.spec.OCI != nil && o.spec.Prefix == "":
		return desired{}, &problem{true, "InvalidSpec", "spec.prefix is required with spec.oci: the prefix references to the registry name, such as github.com/acme/templates"}
	}
	prefix := objectPrefix(o.spec)
	p, err := api.ParsePrefix(prefix)
	if err != nil {
		return desired{}, &problem{true, "InvalidSpec", "spec.prefix: " + err.Error()}
	}
	// Prefixes are claimed per namespace: registries visible everywhere
	// (flags, ClusterRegistries) in one space, each namespace's in its
	// own, which a prefix visible everywhere keeps out of.
	if w.static[p] {
		return desired{}, &problem{true, "PrefixConflict", fmt.Sprintf("prefix %s is served to every namespace by registryd's flags or configuration file", p)}
	}
	if other, ok := claimed[p]; ok {
		msg := fmt.Sprintf("prefix %s is served for %s, created earlier", p, other)
		if o.namespace != "" {
			msg = fmt.Sprintf("prefix %s is served to every namespace by %s: a namespace's Registry cannot serve a prefix a ClusterRegistry serves", p, other)
		}
		return desired{}, &problem{true, "PrefixConflict", msg}
	}
	own := index.Key(o.namespace, p)
	if other, ok := claimed[own]; ok {
		return desired{}, &problem{true, "PrefixConflict", fmt.Sprintf("prefix %s is served in namespace %s for %s, created earlier", p, o.namespace, other)}
	}
	claimed[own] = o.key
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
	verify, pr := verifySpec(o.spec.Verify, read)
	if pr != nil {
		return desired{}, pr
	}
	var mirror *api.OCISpec
	if m := o.spec.Mirror; m != nil {
		var pr *problem
		if mirror, pr = w.ociSpec("spec.mirror", m, read); pr != nil {
			return desired{}, pr
		}
	}
	if o.spec.OCI != nil {
		d := desired{prefix: p, refresh: w.opts.Refresh, suspend: o.spec.Suspend, mirror: mirror,
			spec: api.RegistrySpec{Prefix: p, Namespace: o.namespace, Object: o.name, UID: o.uid,
				MaxEntries: w.opts.MaxTreeEntries, MaxBytes: w.opts.MaxRegistryBytes, Verify: verify}}
		var pr *problem
		if d.spec.OCI, pr = w.ociSpec("spec.oci", o.spec.OCI, read); pr != nil {
			return d, pr
		}
		w.refreshInterval(o, &d)
		return d, nil
	}
	apiURL := gh.APIURL
	if apiURL == "" {
		apiURL = w.opts.GitHubAPI
	}
	if !w.apiAllowed(apiURL) {
		// Nothing is sent to a server registryd was not told to trust:
		// an object is not a way to make it send requests anywhere.
		return desired{}, &problem{true, "APINotAllowed", fmt.Sprintf("spec.github.apiURL %s is not among the GitHub APIs registryd may reach (its --allowed-github-api flags)", apiURL)}
	}
	d := desired{prefix: p, refresh: w.opts.Refresh, suspend: o.spec.Suspend, mirror: mirror,
		spec: api.RegistrySpec{Prefix: p, Namespace: o.namespace, Object: o.name, UID: o.uid,
			MaxEntries: w.opts.MaxTreeEntries, MaxBytes: w.opts.MaxRegistryBytes, Verify: verify,
			GitHub: &api.GitHubSpec{Owner: gh.Owner, Repo: gh.Repo, Branch: gh.Branch, APIURL: apiURL}}}
	w.refreshInterval(o, &d)
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

// refreshInterval applies spec.refreshInterval to d.
func (w *Watcher) refreshInterval(o object, d *desired) {
	if ri := o.spec.RefreshInterval; ri != nil {
		d.refresh = ri.Duration
		if m := w.opts.MinRefresh; m > 0 && d.refresh < m {
			// Clamped, not refused: the registry stays served, and the
			// condition says so. A tight interval would spend the rate
			// limit every tokenless registry shares.
			d.note = fmt.Sprintf("; spec.refreshInterval %s is below registryd's --min-refresh-interval: refreshing every %s", ri.Duration, m)
			d.refresh = m
		}
	}
}

// ociSpec checks an object's OCI registry (spec.oci or spec.mirror)
// against the hosts registryd may reach, and reads its credential from
// the object's own Secrets' namespace.
func (w *Watcher) ociSpec(field string, o *v1alpha1.RegistryOCI, read func(string, *v1alpha1.SecretKeyReference) (string, *problem)) (*api.OCISpec, *problem) {
	loc, err := oci.ParseURL(o.URL)
	if err != nil {
		return nil, &problem{true, "InvalidSpec", field + ".url: " + err.Error()}
	}
	if !slices.ContainsFunc(w.opts.AllowedOCIHosts, func(h string) bool { return strings.EqualFold(h, loc.Host) }) {
		// Nothing is sent to a host registryd was not told to trust: an
		// object is not a way to make it send requests anywhere.
		return nil, &problem{true, "HostNotAllowed", fmt.Sprintf("%s.url: host %s is not among the OCI registries registryd may reach (its --allowed-oci-host flags)", field, loc.Host)}
	}
	spec := &api.OCISpec{URL: o.URL, PlainHTTP: o.PlainHTTP}
	if ref := o.CredentialsSecretRef; ref != nil {
		v, pr := read(field+".credentialsSecretRef", &v1alpha1.SecretKeyReference{Name: ref.Name, Key: corev1.DockerConfigJsonKey})
		if pr != nil {
			return nil, pr
		}
		spec.DockerConfig = []byte(v)
	} else {
		// Anonymous: never registryd's own Docker configuration.
		spec.DockerConfig = []byte("{}")
	}
	return spec, nil
}

// verifySpec reads an object's spec.verify: its key and trusted root from
// the object's own Secrets' namespace (read), so a namespace's Registry
// names only its own Secrets and a ClusterRegistry's policy is
// registryd's namespace's to set.
func verifySpec(v *v1alpha1.RegistryVerify, read func(string, *v1alpha1.SecretKeyReference) (string, *problem)) (*signature.PolicyConfig, *problem) {
	if v == nil {
		return nil, nil
	}
	c := &signature.PolicyConfig{Required: v.Required}
	key, pr := read("spec.verify.keySecretRef", v.KeySecretRef)
	if pr != nil {
		return nil, pr
	}
	if key != "" {
		c.Keys = [][]byte{[]byte(key)}
	}
	root, pr := read("spec.verify.trustedRootSecretRef", v.TrustedRootSecretRef)
	if pr != nil {
		return nil, pr
	}
	if root != "" {
		c.TrustedRoot = []byte(root)
	}
	for _, id := range v.Identities {
		c.Identities = append(c.Identities, signature.Identity{Issuer: id.Issuer, Subject: id.Subject})
	}
	// Compiled as registryd will verify with it: a trusted root
	// sigstore-go does not read is the object's problem now, not a
	// refusal of every version later.
	if _, err := sigstore.NewPolicy(*c); err != nil {
		return nil, &problem{true, "InvalidSpec", "spec.verify: " + err.Error()}
	}
	return c, nil
}

// objectPrefix is an object's reference prefix as written: spec.prefix,
// else a GitHub repository's github.com/OWNER/REPO.
func objectPrefix(spec v1alpha1.RegistrySpec) string {
	if spec.Prefix != "" || spec.OCI != nil {
		return spec.Prefix
	}
	return spec.GitHub.Owner + "/" + spec.GitHub.Repo
}

// sync brings the served registries in step with the objects.
func (w *Watcher) sync(ctx context.Context, regs, cregs toolscache.Store) {
	objs := objects(regs, cregs)
	claimed := map[string]string{}
	needed := map[string]bool{}
	want := map[string]desired{}
	problems := map[string]problem{}
	pushed := map[string]string{}
	pushes := w.pushedCommits()
	now := time.Now()
	w.qmu.Lock()
	// Oldest first, each object is admitted if the bounds have room for
	// it beside the older ones: over a bound, the newest are not indexed.
	admitted := w.quota.tally()
	for _, o := range objs {
		d, pr := w.want(o, claimed, needed)
		if pr != nil {
			problems[o.key] = *pr
			continue
		}
		cost, _ := w.quota.known(o, now)
		if qe := admitted.admit(o.namespace, cost); qe != nil {
			problems[o.key] = quotaProblem(qe)
			continue
		}
		d.object, d.rank, d.gen = o.key, rank{cluster: o.namespace == "", created: o.created, key: o.key}, o.gen
		want[o.key] = d
		pushed[o.key] = pushes[o.uid]
	}
	w.qmu.Unlock()
	w.secrets.ensure(ctx, needed)

	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = problems
	for key, r := range w.running {
		if d, ok := want[key]; ok && d.same(r.desired) {
			continue
		}
		if d, ok := want[key]; ok && d.sameSource(r.desired) {
			continue // replaced below, keeping its snapshot
		}
		w.stop(key, r, true)
	}
	var hooks []server.WebhookRegistry
	for key, d := range want {
		r, ok := w.running[key]
		if !ok || !d.same(r.desired) {
			nr, err := w.start(ctx, d, r)
			if err != nil {
				w.problems[key] = problem{true, "InvalidSpec", err.Error()}
				if ok {
					w.stop(key, r, true)
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
			w.byRegistry[d.key()] = key
			r = nr
			w.log.Info("serving registry from the cluster", "object", key, "registry", d.prefix, "location", d.spec.String(), "suspended", d.suspend)
		}
		r.hookSecret, r.note = d.hookSecret, d.note
		if p := pushed[key]; p != "" && p != r.pushed {
			r.pushed = p
			if !d.suspend {
				w.log.Info("push recorded by another replica: refreshing", "registry", d.key(), "commit", p)
				w.srv.RequestRefresh(d.key(), p)
			}
		}
		if gh := d.spec.GitHub; !d.suspend && gh != nil {
			hooks = append(hooks, server.WebhookRegistry{Registry: d.key(), Owner: gh.Owner, Repo: gh.Repo, Branch: gh.Branch, Secret: d.hookSecret})
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
	// A registry that cannot be indexed (a wrong token, a dead server) is
	// retried from the shortest interval an object may ask for, backing
	// off to its own; opened anew (a changed spec or Secret), it starts
	// again from there.
	g.RetryMin = w.opts.MinRefresh
	nr := &running{desired: d, g: g}
	g.Admit = func(cost int64) error { return w.admit(nr, cost) }
	ns := d.spec.Namespace
	g.Gate = func(ctx context.Context) (func(), error) { return w.listings.acquire(ctx, ns) }
	if old != nil && d.sameSource(old.desired) && old.g.Snapshot() != nil {
		_ = g.Install(old.g.Snapshot())
	} else if g.CacheDir != "" {
		if err := g.Load(); err == nil {
			w.log.Info("serving persisted snapshot", "registry", g.Name)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	nr.cancel = cancel
	if !d.suspend {
		var wg sync.WaitGroup
		if d.mirror != nil {
			p, err := api.NewPusher(*d.mirror, w.log)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("spec.mirror: %w", err)
			}
			api.KeepMirrored(rctx, &wg, g, api.NewService(w.opts.Resolver, expand.Options{Logger: w.log}), p, w.log.With("object", d.spec.Object, "namespace", d.spec.Namespace), nil)
		}
		api.KeepIndexed(rctx, &wg, g, d.refresh, w.log)
	}
	w.opts.Resolver.Put(g)
	if old != nil {
		old.cancel()
		w.gone(old, false)
		if old.g.CacheDir != g.CacheDir {
			w.forget(old)
		}
	}
	return nr, nil
}

// admit is r's index.Registry.Admit: the quotas' answer for a listing of
// r's registry that costs cost. A refused listing's cost is kept, so that
// the next sync leaves the object out until there is room for it.
func (w *Watcher) admit(r *running, cost int64) error {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	if r.gone {
		return fmt.Errorf("registry %s is no longer served: %w", r.key(), context.Canceled)
	}
	key := r.object
	prev, had := w.quota.charges[key]
	if qe := w.quota.fits(key, r.rank, r.spec.Namespace, cost); qe != nil {
		delete(w.quota.charges, key)
		// Tried again after its refresh interval: its repository may
		// have shrunk meanwhile.
		w.quota.measured[key] = measure{uid: r.spec.UID, gen: r.gen, cost: cost, until: time.Now().Add(max(r.refresh, time.Minute))}
		w.wake()
		return qe
	}
	w.quota.charges[key] = charge{rank: r.rank, namespace: r.spec.Namespace, cost: cost}
	delete(w.quota.measured, key)
	if !had || prev.cost != cost {
		// Newer objects may not fit any more, or refused ones may now.
		w.wake()
	}
	return nil
}

// gone marks r as no longer served and drops its charge (with forget, or
// when another registry took its object's place, whose charge is its
// own). w.mu is held.
func (w *Watcher) gone(r *running, drop bool) {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	r.gone = true
	if drop {
		delete(w.quota.charges, r.object)
	}
}

// stop stops serving key's registry and, with forget, removes what it
// kept (its cache directory, its metrics): memory and disk return when an
// object goes. w.mu is held.
func (w *Watcher) stop(key string, r *running, forget bool) {
	r.cancel()
	w.gone(r, true)
	w.opts.Resolver.Remove(r.g)
	delete(w.running, key)
	if w.byRegistry[r.key()] == key {
		delete(w.byRegistry, r.key())
	}
	if forget {
		w.forget(r)
	}
	w.log.Info("no longer serving registry from the cluster", "object", key, "registry", r.key())
}

// forget removes what r kept on disk and what the server keeps of it
// (caches, metrics), and returns its memory to the system once a large
// part of the index is gone. A registry no longer served may still be
// refreshing: its refresh may write the directory again, which the next
// start of registryd removes (cleanCache).
func (w *Watcher) forget(r *running) {
	if r.g.CacheDir != "" {
		if err := os.RemoveAll(r.g.CacheDir); err != nil {
			w.log.Warn("cannot remove the registry's cache directory", "registry", r.key(), "err", err)
		}
	}
	if w.srv != nil {
		w.srv.Forget(r.g)
	}
	w.collect.Store(true)
	w.release.freed(r.g.Cost())
}

// apiAllowed reports whether registryd may send requests to the GitHub
// API at u.
func (w *Watcher) apiAllowed(u string) bool {
	norm := func(s string) string { return strings.TrimSuffix(strings.TrimSpace(s), "/") }
	allowed := w.opts.AllowedAPIs
	if len(allowed) == 0 {
		allowed = []string{w.opts.GitHubAPI}
	}
	for _, a := range allowed {
		if norm(a) == norm(u) {
			return true
		}
	}
	return false
}

// Pushed is the webhook's OnPush: it records commit for the registry of
// key (index.Registry.Key) in registryd's pushes ConfigMap, so that every
// replica refreshes. It does not block.
func (w *Watcher) Pushed(key, commit string) {
	w.mu.Lock()
	obj, ok := w.byRegistry[key]
	if ok && commit != "" {
		// This replica refreshes already: its own record must not make it
		// refresh twice.
		r := w.running[obj]
		r.pushed = commit
		w.pushes[r.spec.UID] = commit
	}
	w.mu.Unlock()
	if ok {
		select {
		case w.pushCh <- struct{}{}:
		default:
		}
	}
}

// Pushed commits live in one ConfigMap of registryd's namespace, which
// registryd owns: each key an object's uid, each value the commit last
// pushed to it. registryd writes nothing on the objects themselves, so
// it needs no right to change a Registry's spec or metadata.
const pushesName = "registryd-pushes"

// pushedCommits returns the recorded pushes by object uid.
func (w *Watcher) pushedCommits() map[string]string {
	if w.pushStore == nil {
		return nil
	}
	o, ok, _ := w.pushStore.GetByKey(w.opts.Namespace + "/" + pushesName)
	if !ok {
		return nil
	}
	return o.(*corev1.ConfigMap).Data
}

// recordPushes writes the pushed commits to the pushes ConfigMap until
// ctx ends.
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
		live := map[string]bool{}
		for _, r := range w.running {
			live[r.spec.UID] = true
		}
		w.mu.Unlock()
		if len(pushes) == 0 {
			continue
		}
		if err := w.writePushes(ctx, pushes, live); err != nil {
			w.log.Warn("cannot record the push; other replicas refresh at their interval", "configmap", w.opts.Namespace+"/"+pushesName, "err", err)
		}
	}
}

// writePushes records pushes (uid -> commit), dropping the entries of
// objects no longer served (live says which are), and retries on a
// conflict with another replica's write.
func (w *Watcher) writePushes(ctx context.Context, pushes map[string]string, live map[string]bool) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	key := client.ObjectKey{Namespace: w.opts.Namespace, Name: pushesName}
	var err error
	for range 5 {
		cm := &corev1.ConfigMap{}
		err = w.client.Get(wctx, key, cm)
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		if create {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{"app.kubernetes.io/name": "registryd"}}}
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for uid := range cm.Data {
			if !live[uid] {
				delete(cm.Data, uid)
			}
		}
		maps.Copy(cm.Data, pushes)
		if create {
			err = w.client.Create(wctx, cm)
		} else {
			err = w.client.Update(wctx, cm)
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return err
}

// ReadyNotes are /readyz's notes: an unreachable apiserver.
func (w *Watcher) ReadyNotes() []string {
	if n := w.reach.note(); n != "" {
		return []string{n}
	}
	return nil
}

// Serves reports whether the registry of key comes from a cluster
// object: its missing index does not fail /readyz.
func (w *Watcher) Serves(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.byRegistry[key]
	return ok
}

// errNoServer is returned by Run without a server.
var errNoServer = errors.New("kubereg: Run needs the server")
