// Package kube is dm's cluster client: it loads a kubeconfig the way kubectl
// does, maps objects to resources with a cached, self-refreshing RESTMapper,
// applies them with server-side apply in dependency tiers, and reads them back
// (get, list, kstatus readiness, diff, delete).
//
// It deliberately uses only the dynamic and metadata clients on unstructured
// objects, never the typed clientset, whose package initialisation registers
// every built-in API group and would slow down every dm command that links
// this package.
package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// errNotImplemented is returned by the parts of the skeleton not yet written.
var errNotImplemented = errors.New("not implemented")

// Config says how to reach the cluster.
type Config struct {
	// Kubeconfig is an explicit kubeconfig file (--kubeconfig); empty means
	// the client-go loading rules ($KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Context overrides the kubeconfig's current context (--context).
	Context string
	// Namespace overrides the context's namespace (-n).
	Namespace string
	// QPS and Burst limit client-side request rates; zero derives them from
	// Concurrency so that parallel applies are not throttled.
	QPS   float32
	Burst int
	// FieldManager is the server-side apply field manager; default "dm".
	FieldManager string
	// Concurrency bounds the requests in flight per tier; default 16.
	Concurrency int
}

// Client talks to one cluster. It is safe for concurrent use.
type Client struct {
	cfg       Config
	namespace string
	rest      *rest.Config
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	discovery discovery.CachedDiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
}

// New loads the kubeconfig with client-go's loading rules and returns a
// client for the selected context. It does not contact the server.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.FieldManager == "" {
		cfg.FieldManager = "dm"
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	overrides.Context.Namespace = cfg.Namespace
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rc, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if ns == "" {
		ns = "default"
	}
	// The client-go default of 5 requests per second would serialise a tier
	// of parallel applies; allow a few rounds of Concurrency per second.
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if rc.QPS == 0 {
		rc.QPS = float32(max(50, 8*cfg.Concurrency))
	}
	if rc.Burst == 0 {
		rc.Burst = max(100, 2*int(rc.QPS))
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "dm"
	}
	// One HTTP client (one HTTP/2 connection) for every client below.
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	return &Client{
		cfg:       cfg,
		namespace: ns,
		rest:      rc,
		dynamic:   dyn,
		metadata:  md,
		discovery: cached,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(cached),
	}, nil
}

// Namespace returns the namespace objects without one are put in: -n, else
// the kubeconfig context's namespace, else "default".
func (c *Client) Namespace() string { return c.namespace }

// Mapper returns the client's RESTMapper (discovery-backed, refreshed on a miss).
func (c *Client) Mapper() meta.RESTMapper { return c.mapper }

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

func (e *ObjectError) Error() string { return e.Ref.String() + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ObjectError) Unwrap() error { return e.Err }

// Prepare maps every object to its resource, refreshing discovery once on a
// miss, sets the client's namespace on namespaced objects that have none and
// clears it on cluster-scoped ones. It returns one ObjectError for every
// object whose kind cannot be mapped, joined, except for kinds that a
// CustomResourceDefinition among objs defines: those map once it is applied.
func (c *Client) Prepare(ctx context.Context, objs []*unstructured.Unstructured) error {
	return errNotImplemented
}

// Tier orders kinds for applying: lower tiers first, deletion in reverse.
// Namespaces, CRDs, service accounts and RBAC, config and storage, services,
// workloads, then everything else (custom resources last).
func Tier(gvk schema.GroupVersionKind) int { return 0 }

// ApplyOptions modify Apply.
type ApplyOptions struct {
	// Force takes over fields owned by other field managers (--force-conflicts).
	Force bool
	// DryRun asks the server to validate and admit without persisting.
	DryRun bool
}

// Applied is the result of applying one object.
type Applied struct {
	Ref ObjectRef
	// Object is the object as the server returned it.
	Object *unstructured.Unstructured
	// Created is true when the object did not exist before.
	Created bool
}

// Apply server-side applies objs (which Prepare has seen) tier by tier; the
// objects of a tier go in parallel, at most Config.Concurrency at a time.
// Objects that depend on each other within a tier (the engine's $(ref)
// order) must be passed in separate calls, one per dependency wave. Applied
// CRDs are waited for until Established before the custom resources of later
// tiers. Every failed object gives one ObjectError, all joined; the results
// are in the order of objs, for the objects that succeeded.
func (c *Client) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) ([]Applied, error) {
	return nil, errNotImplemented
}

// Get returns the live object; a missing one is an error wrapping
// derrors.NotFound.
func (c *Client) Get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error) {
	return nil, errNotImplemented
}

// Existing returns the live metadata (labels, annotations, managedFields) of
// those refs that exist. Refs that share a kind and namespace are read with
// one metadata-only LIST, others with a GET.
func (c *Client) Existing(ctx context.Context, refs []ObjectRef) (map[ObjectRef]*metav1.PartialObjectMetadata, error) {
	return nil, errNotImplemented
}

// DeleteOptions modify Delete.
type DeleteOptions struct {
	// Wait polls until every object is gone, up to Timeout.
	Wait    bool
	Timeout time.Duration
	DryRun  bool
}

// Delete deletes refs in reverse tier order with background propagation. A
// missing object is not an error.
func (c *Client) Delete(ctx context.Context, refs []ObjectRef, opts DeleteOptions) error {
	return errNotImplemented
}

// Status is an object's kstatus readiness.
type Status struct {
	Ref ObjectRef
	// Status is a kstatus status: Current, InProgress, Failed, Terminating,
	// NotFound or Unknown.
	Status  string
	Message string
}

// Statuses returns the live kstatus status of each ref, in order.
func (c *Client) Statuses(ctx context.Context, refs []ObjectRef) ([]Status, error) {
	return nil, errNotImplemented
}

// Wait polls until every ref is Current, calling progress for an object each
// time its status changes. When ctx ends first, the error names every object
// that is not Current with its status and message.
func (c *Client) Wait(ctx context.Context, refs []ObjectRef, progress func(Status)) error {
	return errNotImplemented
}

// Diff server-side dry-run applies objs and compares each result with the
// live object, ignoring server-set fields. It returns a unified diff (new
// objects all added, objects in gone all removed) and whether anything
// differs.
func (c *Client) Diff(ctx context.Context, objs []*unstructured.Unstructured, gone []ObjectRef) (string, bool, error) {
	return "", false, errNotImplemented
}

// List returns the live objects of kinds (kubectl-style names such as
// "configmaps", "deploy", "Service.v1"; empty means every listable
// namespaced kind) in namespace matching the label selector.
func (c *Client) List(ctx context.Context, namespace, selector string, kinds []string) ([]*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("list: %w", errNotImplemented)
}
