// Package kube is dm's cluster client: it loads a kubeconfig the way kubectl
// does, maps objects to resources with discovery cached in memory and on
// disk (read again on a miss), applies them with server-side apply in
// tiers, and reads them back (get, list, kstatus readiness, diff, delete).
// It also turns live objects into a template (Export).
//
// It deliberately uses one raw REST client on unstructured JSON and reads
// discovery itself: the typed clientset and client-go's discovery package
// register every built-in API group at package initialisation, which would
// slow down every dm command that links this package. (A dynamic client is
// offered for the history driver, which is written against one.)
package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config says how to reach the cluster.
type Config struct {
	// Kubeconfig is an explicit kubeconfig file (--kubeconfig); empty means
	// the client-go loading rules ($KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Context overrides the kubeconfig's current context (--context).
	Context string
	// Namespace overrides the context's namespace (-n).
	Namespace string
	// QPS and Burst set a client-side rate limit. Zero (or a negative QPS)
	// means none: Concurrency already bounds the requests in flight, and
	// client-go's default of 5 per second would serialise a tier.
	QPS   float32
	Burst int
	// FieldManager is the server-side apply field manager; default "dm".
	FieldManager string
	// Concurrency bounds the requests in flight per tier; default
	// DefaultConcurrency.
	Concurrency int
	// DiscoveryCache is the directory of the discovery cache; empty means
	// dm/discovery under the user's cache directory (~/.cache), "-" none.
	DiscoveryCache string
	// REST, when set, is the connection to use instead of a kubeconfig
	// (dm-controller: its own, or impersonating a ServiceAccount); the
	// client's namespace is then Namespace, else "default".
	REST *rest.Config
}

// DefaultConcurrency is Config.Concurrency's default. Applies wait mostly
// on the apiserver and etcd, which commit concurrent writes together:
// a whole dm deploy of 100 ConfigMaps into one local apiserver took 144 ms
// with 16 in flight, 129 ms with 32 and 124 ms with 64 (medians of 9 runs
// on 2 cores). The server's own limits (max-requests-inflight, API
// Priority and Fairness) queue the rest.
const DefaultConcurrency = 64

// Client talks to one cluster. It is safe for concurrent use.
type Client struct {
	cfg       Config
	namespace string
	// rest is the connection, for REST.
	rest    *rest.Config
	raw     rest.Interface // every request of this package; see rest.go
	dynamic dynamic.Interface
	disc    discoveryState
	// dryRunNamespaces are the namespaces dry runs "created": objects in
	// them pass through later dry runs unchecked.
	dryRunNamespaces sync.Map
}

// New loads the kubeconfig with client-go's loading rules and returns a
// client for the selected context. It does not contact the server.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.FieldManager == "" {
		cfg.FieldManager = "dm"
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	rc, ns, err := restConfig(cfg)
	if err != nil {
		return nil, err
	}
	if ns == "" {
		ns = "default"
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if rc.QPS == 0 {
		rc.QPS = -1 // no limiter (client-go reads 0 as its default of 5)
	}
	if rc.Burst == 0 {
		rc.Burst = max(1, 2*int(rc.QPS))
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "dm"
	}
	// One HTTP client: one HTTP/2 connection.
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	raw, err := rest.RESTClientForConfigAndClient(rawConfig(rc), hc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	c := &Client{
		raw:       raw,
		dynamic:   dyn,
		cfg:       cfg,
		namespace: ns,
		rest:      rc,
	}
	switch dir := cfg.DiscoveryCache; dir {
	case "-":
	case "":
		if base, err := os.UserCacheDir(); err == nil {
			c.disc.file = cacheFile(filepath.Join(base, "dm", "discovery"), rc.Host)
		}
	default:
		c.disc.file = cacheFile(dir, rc.Host)
	}
	return c, nil
}

// restConfig returns cfg.REST (a copy) or the kubeconfig's connection,
// with the namespace of cfg or of the kubeconfig's context.
func restConfig(cfg Config) (*rest.Config, string, error) {
	if cfg.REST != nil {
		return rest.CopyConfig(cfg.REST), cfg.Namespace, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	overrides.Context.Namespace = cfg.Namespace
	if cfg.Kubeconfig != "" {
		if _, err := os.Stat(cfg.Kubeconfig); err != nil {
			return nil, "", fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, errors.Unwrap(err))
		}
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rc, err := loader.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		// client-go's own words ("try setting KUBERNETES_MASTER") point
		// at what dm does not read: say which files were tried instead.
		return nil, "", &noClusterError{tried: triedKubeconfigs(rules)}
	}
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	return rc, ns, nil
}

// noClusterError says that no kubeconfig file had a cluster, naming the
// files looked at.
type noClusterError struct{ tried string }

func (e *noClusterError) Error() string {
	return "no cluster configured: " + e.tried + "; pass --kubeconfig FILE or set $KUBECONFIG to a kubeconfig file (any cluster works: kind, minikube, GKE; make dev-cluster starts a local one and prints the line to use)"
}

// triedKubeconfigs describes the files rules read: $KUBECONFIG's, else
// ~/.kube/config, each with whether it exists.
func triedKubeconfigs(rules *clientcmd.ClientConfigLoadingRules) string {
	var parts []string
	for _, f := range rules.Precedence {
		state := "has no cluster"
		if _, err := os.Stat(f); err != nil {
			state = "does not exist"
		}
		parts = append(parts, f+" "+state)
	}
	if len(parts) == 0 {
		return "no kubeconfig file was named"
	}
	from := "~/.kube/config: "
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		from = "$KUBECONFIG: "
	}
	return from + strings.Join(parts, ", ")
}

// Namespace returns the namespace objects without one are put in: -n, else
// the kubeconfig context's namespace, else "default".
func (c *Client) Namespace() string { return c.namespace }

// Dynamic returns the client's dynamic client (for the history driver,
// which keeps records as Secrets).
func (c *Client) Dynamic() dynamic.Interface { return c.dynamic }

// REST returns a copy of the client's connection: dm impact impersonates
// instances' accounts with the caller's credentials.
func (c *Client) REST() *rest.Config { return rest.CopyConfig(c.rest) }

// ObjectRef identifies one object in the cluster.
type ObjectRef struct {
	Group, Version, Kind, Namespace, Name string
}

// RefOf returns the reference of obj.
func RefOf(obj *unstructured.Unstructured) ObjectRef {
	gvk := obj.GroupVersionKind()
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// GroupVersionKind returns the reference's kind.
func (r ObjectRef) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// String formats r as kubectl users read it: "ConfigMap default/x",
// "ClusterRole admin", "Widget.example.com ns/w".
func (r ObjectRef) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace == "" {
		return kind + " " + r.Name
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

// ObjectError is an error about one object. Callers that know where the
// object came from (a layout path) can find it with errors.As and add that.
type ObjectError struct {
	Ref ObjectRef
	Err error
}

// Error names the object, then says what went wrong.
func (e *ObjectError) Error() string { return e.Ref.String() + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ObjectError) Unwrap() error { return e.Err }

// mapping returns the REST mapping of gvk from the cached discovery. A kind
// the disk cache does not know is looked up on the server.
func (c *Client) mapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, errors.New("not a Kubernetes object: it has no apiVersion or kind")
	}
	d, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && d.fromDisk && meta.IsNoMatchError(err) {
		c.invalidate(d)
		if d, err = c.discover(ctx); err != nil {
			return nil, err
		}
		m, err = d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, &noMatchError{gvk: gvk, err: err}
		}
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return m, nil
}

// noMatchError says that the cluster does not serve a kind; it wraps the
// RESTMapper's error, so meta.IsNoMatchError sees it.
type noMatchError struct {
	gvk schema.GroupVersionKind
	err error
}

func (e *noMatchError) Error() string {
	return fmt.Sprintf("the cluster does not serve kind %q in apiVersion %q", e.gvk.Kind, e.gvk.GroupVersion().String())
}

func (e *noMatchError) Unwrap() error { return e.err }

// resource returns the mapping of ref's kind and the namespace to use:
// ref's, the client's for a namespaced kind without one, "" for a
// cluster-scoped kind.
func (c *Client) resource(ctx context.Context, ref ObjectRef) (*meta.RESTMapping, string, error) {
	m, err := c.mapping(ctx, ref.GroupVersionKind())
	if err != nil {
		return nil, "", err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return m, "", nil
	}
	if ref.Namespace == "" {
		return m, c.namespace, nil
	}
	return m, ref.Namespace, nil
}

// crdGroupKind is the kind of CustomResourceDefinitions.
var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// crdDefines returns the group, kind and scope a CRD object defines.
func crdDefines(obj *unstructured.Unstructured) (schema.GroupKind, bool, bool) {
	if obj.GroupVersionKind().GroupKind() != crdGroupKind {
		return schema.GroupKind{}, false, false
	}
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
	return schema.GroupKind{Group: group, Kind: kind}, scope != "Cluster", true
}

// Prepare maps every object to its resource, refreshing discovery once on a
// miss, sets the client's namespace on namespaced objects that have none and
// clears it on cluster-scoped ones. It returns one ObjectError for every
// object whose kind cannot be mapped, joined, except for kinds that a
// CustomResourceDefinition among objs defines: those map once it is applied,
// and get their namespace from the CRD's scope.
func (c *Client) Prepare(ctx context.Context, objs []*unstructured.Unstructured) error {
	defined := map[schema.GroupKind]bool{} // kind -> namespaced
	for _, obj := range objs {
		if gk, namespaced, ok := crdDefines(obj); ok {
			defined[gk] = namespaced
		}
	}
	start := time.Now()
	errs := make([]error, len(objs))
	missed := false
	for i, obj := range objs {
		errs[i] = c.prepare(ctx, obj, defined)
		missed = missed || errs[i] != nil
	}
	if missed {
		// A kind may be new since discovery was read: look once more,
		// unless that read was made during this call.
		c.refreshBefore(start)
		for i, obj := range objs {
			if errs[i] != nil {
				errs[i] = c.prepare(ctx, obj, defined)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var all []error
	for i, err := range errs {
		if err != nil {
			all = append(all, &ObjectError{Ref: RefOf(objs[i]), Err: err})
		}
	}
	return errors.Join(all...)
}

func (c *Client) prepare(ctx context.Context, obj *unstructured.Unstructured, defined map[schema.GroupKind]bool) error {
	if obj.GetName() == "" && obj.GetGenerateName() == "" {
		return errors.New("object has no metadata.name")
	}
	gvk := obj.GroupVersionKind()
	namespaced, isDefined := defined[gvk.GroupKind()]
	m, err := c.mapping(ctx, gvk)
	switch {
	case err == nil:
		namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
	case !isDefined:
		return err
	}
	if !namespaced {
		obj.SetNamespace("")
	} else if obj.GetNamespace() == "" {
		obj.SetNamespace(c.namespace)
	}
	return nil
}

// Tier orders kinds for applying: lower tiers first, deletion in reverse.
// Namespaces, CRDs, service accounts and RBAC, config and storage, services,
// workloads, other built-in kinds, then custom resources.
func Tier(gvk schema.GroupVersionKind) int {
	if t, ok := tiers[gvk.GroupKind()]; ok {
		return t
	}
	if builtinGroup(gvk.Group) {
		return TierOther
	}
	return TierCustom
}

// The tiers Tier returns.
const (
	TierNamespace = iota
	TierCRD
	TierRBAC
	TierConfig
	TierService
	TierWorkload
	TierOther
	TierCustom
)

var tiers = map[schema.GroupKind]int{
	{Kind: "Namespace"}: TierNamespace,
	crdGroupKind:        TierCRD,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        TierRBAC,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: TierRBAC,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               TierRBAC,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        TierRBAC,
	{Kind: "ServiceAccount"}:                                         TierRBAC,
	{Group: "policy", Kind: "PodSecurityPolicy"}:                     TierRBAC,
	{Kind: "ResourceQuota"}:                                          TierConfig,
	{Kind: "LimitRange"}:                                             TierConfig,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:              TierConfig,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                   TierConfig,
	{Kind: "ConfigMap"}:                                              TierConfig,
	{Kind: "Secret"}:                                                 TierConfig,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                  TierConfig,
	{Kind: "PersistentVolume"}:                                       TierConfig,
	{Kind: "PersistentVolumeClaim"}:                                  TierConfig,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              TierConfig,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                     TierConfig,
	{Kind: "Service"}:                                                TierService,
	{Kind: "Endpoints"}:                                              TierService,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:               TierService,
	{Kind: "Pod"}:                                           TierWorkload,
	{Kind: "ReplicationController"}:                         TierWorkload,
	{Group: "apps", Kind: "ReplicaSet"}:                     TierWorkload,
	{Group: "apps", Kind: "Deployment"}:                     TierWorkload,
	{Group: "apps", Kind: "StatefulSet"}:                    TierWorkload,
	{Group: "apps", Kind: "DaemonSet"}:                      TierWorkload,
	{Group: "batch", Kind: "Job"}:                           TierWorkload,
	{Group: "batch", Kind: "CronJob"}:                       TierWorkload,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: TierOther,
}

// builtinGroup reports whether group is one Kubernetes itself serves: the
// core group, and the *.k8s.io and unqualified groups such as "apps".
func builtinGroup(group string) bool {
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// byTier splits the indexes of objs into tiers, in ascending order, keeping
// the given order within a tier.
func byTier[T any](items []T, gvk func(T) schema.GroupVersionKind) [][]int {
	groups := map[int][]int{}
	for i, it := range items {
		t := Tier(gvk(it))
		groups[t] = append(groups[t], i)
	}
	keys := make([]int, 0, len(groups))
	for t := range groups {
		keys = append(keys, t)
	}
	sort.Ints(keys)
	out := make([][]int, len(keys))
	for i, t := range keys {
		out[i] = groups[t]
	}
	return out
}

// groupByKind splits the indexes of refs into groups of one kind and
// namespace, in the order of first appearance.
func groupByKind(refs []ObjectRef) [][]int {
	type key struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	at := map[key]int{}
	var out [][]int
	for i, ref := range refs {
		k := key{ref.GroupVersionKind(), ref.Namespace}
		g, ok := at[k]
		if !ok {
			g = len(out)
			at[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], i)
	}
	return out
}

// indexes returns 0, 1, ..., n-1.
func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// parallel runs f(i) for every i in idx, at most n at a time, and returns
// when all are done.
func parallel(n int, idx []int, f func(i int)) {
	if len(idx) == 1 || n <= 1 {
		for _, i := range idx {
			f(i)
		}
		return
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, i := range idx {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}

// BearerAuth returns the part of rc that proves who its user is with a
// bearer token (the token, its file, an exec plugin or an auth provider),
// and nothing else: no password, no client certificate, no
// impersonation. Nil when rc has none. dm and dm-controller send it to a
// registryd (rest.HTTPWrappersForConfig), which reviews the token with
// the apiserver.
func BearerAuth(rc *rest.Config) *rest.Config {
	auth := &rest.Config{BearerToken: rc.BearerToken, BearerTokenFile: rc.BearerTokenFile, ExecProvider: rc.ExecProvider,
		AuthProvider: rc.AuthProvider, AuthConfigPersister: rc.AuthConfigPersister}
	if auth.BearerToken == "" && auth.BearerTokenFile == "" && auth.ExecProvider == nil && auth.AuthProvider == nil {
		return nil
	}
	return auth
}
