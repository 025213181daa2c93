package helm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	helmengine "helm.sh/helm/v3/pkg/engine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/dmhq/dm/internal/expand/engine"
)

// LookupProvider returns Helm's client provider over l: lookup's Get and
// List go to l, which reads the cluster where the credentials are (in
// dm-controller's workers, the parent process, as the instance's
// account). Helm's lookup needs nothing else of the client; every other
// method fails. ctx bounds the reads (Helm's lookup passes none).
func LookupProvider(ctx context.Context, l engine.Lookup) helmengine.ClientProvider {
	return lookupProvider{ctx: ctx, l: l}
}

type lookupProvider struct {
	ctx context.Context
	l   engine.Lookup
}

// GetClientFor returns a client of apiVersion's kind. It reports every kind
// as namespaced, so that Helm passes the namespace on; whoever answers
// the lookup ignores it for a cluster-scoped kind, as Helm does.
func (p lookupProvider) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, fmt.Errorf("lookup %q %q: %w", apiVersion, kind, err)
	}
	return &lookupClient{p: p, gv: gv, q: engine.LookupQuery{APIVersion: apiVersion, Kind: kind}}, true, nil
}

// lookupClient is a dynamic client that can only read, through a Lookup.
type lookupClient struct {
	p  lookupProvider
	gv schema.GroupVersion
	q  engine.LookupQuery
}

var _ dynamic.NamespaceableResourceInterface = (*lookupClient)(nil)

func (c *lookupClient) Namespace(ns string) dynamic.ResourceInterface {
	n := *c
	n.q.Namespace = ns
	return &n
}

func (c *lookupClient) Get(_ context.Context, name string, _ metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	if len(sub) > 0 {
		return nil, c.unsupported("get of a subresource")
	}
	q := c.q
	q.Name = name
	m, err := c.p.l.Lookup(c.p.ctx, q)
	if err != nil {
		return nil, err
	}
	if m == nil {
		// Helm's lookup answers an empty map for what is not found.
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: c.gv.Group, Resource: strings.ToLower(c.q.Kind)}, name)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func (c *lookupClient) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	q := c.q
	q.LabelSelector, q.FieldSelector = opts.LabelSelector, opts.FieldSelector
	m, err := c.p.l.Lookup(c.p.ctx, q)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: c.gv.Group, Resource: strings.ToLower(c.q.Kind)}, "")
	}
	l := &unstructured.UnstructuredList{}
	l.SetUnstructuredContent(m)
	return l, nil
}

// errReadOnly is the error of every method but Get and List.
var errReadOnly = errors.New("a chart's lookup only reads (get, list)")

func (c *lookupClient) unsupported(what string) error {
	return fmt.Errorf("lookup %s: %s: %w", c.q, what, errReadOnly)
}

func (c *lookupClient) Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, c.unsupported("create")
}

func (c *lookupClient) Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, c.unsupported("update")
}

func (c *lookupClient) UpdateStatus(context.Context, *unstructured.Unstructured, metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return nil, c.unsupported("update")
}

func (c *lookupClient) Delete(context.Context, string, metav1.DeleteOptions, ...string) error {
	return c.unsupported("delete")
}

func (c *lookupClient) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return c.unsupported("delete")
}

func (c *lookupClient) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, c.unsupported("watch")
}

func (c *lookupClient) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, c.unsupported("patch")
}

func (c *lookupClient) Apply(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, c.unsupported("apply")
}

func (c *lookupClient) ApplyStatus(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return nil, c.unsupported("apply")
}
