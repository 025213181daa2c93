// Package kubereg serves registries that are Kubernetes objects: registryd
// --watch-registries watches every Registry (namespaced) and
// ClusterRegistry (cluster-scoped) of API group dm.io/v1alpha1 it can read,
// and the Secrets they name, and adds, changes, suspends and removes the
// registries it serves as the objects change, beside those of its flags.
//
// Kubernetes is the only channel between replicas: a replica that
// receives a signed push records the pushed commit in a ConfigMap of
// registryd's namespace (registryd-pushes, keyed by object uid) and every
// replica, watching it, refreshes; one Lease in registryd's namespace
// elects the replica that writes the objects' status. A replica that
// loses the apiserver keeps serving what it has and says so in /readyz's
// notes.
//
// A namespaced Registry serves its namespace alone: its prefix is claimed
// within the namespace (a prefix a ClusterRegistry or a flag serves is
// refused), its registry is visible only to callers that may get the
// object (package resolve's Scope, checked by Authorizer), and what it
// reads is cached under its own identity (object, source, credential).
//
// The types come from internal/controller/api/v1alpha1, a package of plain
// types that imports nothing of the controller's reconcilers.
package kubereg

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/catalog"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/server"
)

// Server is what the watcher needs of registryd's HTTP server.
type Server interface {
	SetWebhookRegistries(regs []server.WebhookRegistry)
	RequestRefresh(name, commit string) bool
	Examples() *catalog.Examples
	// Forget drops what the server keeps of a registry no longer served
	// (caches, metrics series): its memory returns with the registry's.
	Forget(g *index.Registry)
}

// Options configure a Watcher.
type Options struct {
	// Config reaches the apiserver. Required: see LoadConfig.
	Config *rest.Config
	// Namespace is registryd's own namespace: its Lease, and the Secrets
	// of ClusterRegistries. Required.
	Namespace string
	// Identity names this replica in the Lease; default hostname and pid.
	Identity string
	// Resolver receives the registries. Required.
	Resolver *resolve.Resolver
	// Setup is what every registry shares (cache directory, metrics hooks).
	Setup api.Setup
	// GitHubAPI is the API URL of objects without spec.github.apiURL.
	GitHubAPI string
	// Refresh is the refresh interval of objects without
	// spec.refreshInterval.
	Refresh time.Duration
	// Static are the registries of flags and the configuration file: an
	// object naming one of their prefixes is refused (Stalled).
	Static []string
	// AllowedAPIs are the GitHub API URLs objects may name
	// (spec.github.apiURL); an object naming another is Stalled
	// (APINotAllowed) and registryd sends it nothing. Empty means
	// GitHubAPI alone.
	AllowedAPIs []string
	// AllowedOCIHosts are the OCI registry hosts (HOST[:PORT]) objects may
	// name in spec.oci and spec.mirror; an object naming another is
	// Stalled (HostNotAllowed) and registryd sends it nothing. Empty
	// means none.
	AllowedOCIHosts []string
	// MinRefresh is the shortest refresh interval an object gets: a
	// shorter spec.refreshInterval is raised to it, and the Ready
	// condition says so. Zero means none.
	MinRefresh time.Duration
	// MaxTreeEntries and MaxRegistryBytes bound each object's registry:
	// its listing's entries and the bytes of its files. A registry over a
	// bound is not served; its Ready condition says TooLarge, naming the
	// bound. Zero means fetch.DefaultMaxEntries and no byte bound.
	MaxTreeEntries   int
	MaxRegistryBytes int64
	// MaxNamespaceRegistries bounds the Registries of one namespace
	// indexed, and MaxNamespaceBytes what their indexes hold (the index
	// bytes of index.Cost); MaxIndexBytes bounds the index bytes of every
	// registry served, the flags' first, then ClusterRegistries, then
	// Registries. Objects are admitted oldest first (by creation time,
	// then namespace and name): over a bound the newest are not indexed,
	// and their Ready condition says which bound (NamespaceQuotaExceeded,
	// DaemonQuotaExceeded). ClusterRegistries, the operator's, are exempt
	// from the namespace bounds. Zero means no bound.
	MaxNamespaceRegistries int
	MaxNamespaceBytes      int64
	MaxIndexBytes          int64
	// MaxListings bounds the objects' listings in flight (read from their
	// source and not yet indexed) for the daemon, and
	// MaxNamespaceListings those of one namespace's Registries
	// (ClusterRegistries share a lane of their own): a listing is held
	// whole in memory before the index bounds above can weigh it. Zero
	// means no bound.
	MaxListings          int
	MaxNamespaceListings int
	// ReleaseAfter is how long after registries holding at least
	// ReleaseBytes of index are stopped the watcher returns the freed
	// memory to the system (debug.FreeOSMemory), at most once per
	// ReleaseAfter; zero means 10 seconds and 64 MiB.
	ReleaseAfter time.Duration
	ReleaseBytes int64
	// StaticIdentities are the identities of the registries of flags and
	// the configuration file (api.RegistrySpec.Identity): their cache
	// directories are never cleaned.
	StaticIdentities []string
	// CacheGCDelay is how long after its first full view of the objects
	// the watcher removes the cache directories no registry uses (those of
	// objects deleted while registryd was down); zero means a minute.
	CacheGCDelay time.Duration
	// StaticWebhooks are the flag registries' webhook registrations, kept
	// beside the objects'.
	StaticWebhooks []server.WebhookRegistry
	// LeaseDuration, RenewDeadline and RetryPeriod tune the Lease; zero
	// means 60s, 40s and 15s: a holder renews four times a minute, and a
	// replica takes over within a minute of the holder's death.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// StatusPeriod is how often the Lease holder compares each object's
	// status with what it serves (reading its own caches) and writes the
	// ones that differ; zero means 2 seconds.
	StatusPeriod time.Duration
	Logger       *slog.Logger
}

// LeaseName is the name of registryd's Lease in its namespace.
const LeaseName = "registryd"

// LoadConfig reads a kubeconfig file, or with "" the in-cluster
// configuration of a pod.
func LoadConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("--watch-registries without --kubeconfig needs the in-cluster configuration of a pod: %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return c, nil
}

// Scheme returns the kinds the watcher reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, coordinationv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Watcher keeps the served registries in step with the cluster's objects.
type Watcher struct {
	opts   Options
	log    *slog.Logger
	client client.WithWatch
	srv    Server
	static map[string]bool

	// kick wakes the sync loop; syncs coalesce.
	kick chan struct{}
	// leader is true while this replica holds the Lease.
	leader atomic.Bool
	// reach tracks the apiserver's reachability.
	reach reachability

	mu      sync.Mutex
	running map[string]*running // object key -> what is served for it
	// byRegistry maps a served registry's key (index.Registry.Key) to the
	// key of the object serving it.
	byRegistry map[string]string
	// problems say why objects are not served, by key.
	problems map[string]problem
	secrets  *secretWatches
	// results are example results to store; resCh wakes their writer.
	resMu   sync.Mutex
	results []pendingResult
	resCh   chan struct{}
	// pushes are commits to record, by object uid; pushStore is the
	// informer's store of the pushes ConfigMap.
	pushes    map[string]string
	pushCh    chan struct{}
	pushStore toolscache.Store

	// qmu guards quota; it is taken after mu, never before.
	qmu   sync.Mutex
	quota quotas
	// release returns the memory of stopped registries to the system;
	// collect asks the Lease holder to delete the results of registries
	// no longer served now, not at the next minute.
	release *releaser
	collect atomic.Bool
	// listings bounds the objects' listings in flight.
	listings *listingGate
}

// New returns a Watcher; Run starts it.
func New(opts Options) (*Watcher, error) {
	if opts.Config == nil || opts.Namespace == "" || opts.Resolver == nil {
		return nil, fmt.Errorf("kubereg: Config, Namespace and Resolver are required")
	}
	if opts.Identity == "" {
		host, _ := os.Hostname()
		opts.Identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 60 * time.Second
	}
	if opts.RenewDeadline <= 0 {
		opts.RenewDeadline = 40 * time.Second
	}
	if opts.RetryPeriod <= 0 {
		opts.RetryPeriod = 15 * time.Second
	}
	if opts.StatusPeriod <= 0 {
		opts.StatusPeriod = 2 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(opts.Config)
	cfg.UserAgent = "registryd"
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	w := &Watcher{opts: opts, log: log, client: c, static: map[string]bool{},
		kick: make(chan struct{}, 1), running: map[string]*running{}, byRegistry: map[string]string{},
		problems: map[string]problem{}, pushes: map[string]string{}, pushCh: make(chan struct{}, 1), resCh: make(chan struct{}, 1)}
	for _, p := range opts.Static {
		w.static[p] = true
	}
	w.quota = quotas{nsRegistries: opts.MaxNamespaceRegistries, nsBytes: opts.MaxNamespaceBytes, allBytes: opts.MaxIndexBytes,
		charges: map[string]charge{}, measured: map[string]measure{}, static: w.staticCost}
	w.listings = newListingGate(opts.MaxListings, opts.MaxNamespaceListings)
	w.release = newReleaser(opts.ReleaseAfter, opts.ReleaseBytes, log)
	w.secrets = newSecretWatches(w)
	return w, nil
}

// staticCost is what the registries of flags hold, which the daemon's
// bound counts before any object's.
func (w *Watcher) staticCost() int64 {
	var n int64
	for p := range w.static {
		if g, ok := w.opts.Resolver.ByKey(p); ok {
			n += g.Cost()
		}
	}
	return n
}

// Config returns the connection to the apiserver the watcher uses.
func (w *Watcher) Config() *rest.Config { return w.opts.Config }

// Leader reports whether this replica holds the Lease.
func (w *Watcher) Leader() bool { return w.leader.Load() }

// wake asks the sync loop to run.
func (w *Watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}
