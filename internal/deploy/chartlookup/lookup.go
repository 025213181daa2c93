// Package chartlookup gives Helm charts what they read of the cluster when
// dm deploys them, with the user's own rest.Config (their kubeconfig and
// credentials): a client provider for lookup (Options.Lookup of
// internal/expand/helm) and .Capabilities from discovery. Offline
// rendering uses neither: lookup returns an empty map and Capabilities are
// a documented default, as under helm template.
package chartlookup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"

	"helm.sh/helm/v3/pkg/engine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	dmengine "github.com/dmhq/dm/internal/expand/engine"
)

// New returns a client provider reading the cluster of cfg: kinds are
// mapped to resources through discovery (read once, on the first lookup,
// and again for a kind it did not know), objects read with the dynamic
// client, with cfg's credentials, as Helm's own provider does.
func New(cfg *rest.Config) (engine.ClientProvider, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("chart lookup: discovery client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("chart lookup: dynamic client: %w", err)
	}
	return &provider{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dyn: dyn}, nil
}

type provider struct {
	mapper meta.ResettableRESTMapper
	dyn    dynamic.Interface
}

// GetClientFor returns the client of apiVersion's kind and whether it is
// namespaced.
func (p *provider) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, fmt.Errorf("lookup %q %q: %w", apiVersion, kind, err)
	}
	m, err := p.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		return nil, false, fmt.Errorf("lookup %q %q: %w", apiVersion, kind, err)
	}
	return p.dyn.Resource(m.Resource), m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// NewLookup returns a Lookup (engine.Cluster's) reading the cluster of
// cfg with cfg's credentials, as New's provider does for Helm's lookup:
// what does not exist is (nil, nil), as Helm's lookup answers an empty
// map for it; any other failure (forbidden, an unknown kind) is an error
// naming the object. A program whose charts render elsewhere (a sandbox
// worker) answers their lookups with it.
func NewLookup(cfg *rest.Config) (dmengine.Lookup, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return lookup{p.(*provider)}, nil
}

type lookup struct{ p *provider }

// Lookup reads the object or list q names.
func (l lookup) Lookup(ctx context.Context, q dmengine.LookupQuery) (map[string]any, error) {
	c, namespaced, err := l.p.GetClientFor(q.APIVersion, q.Kind)
	if err != nil {
		return nil, err
	}
	var r dynamic.ResourceInterface = c
	if namespaced && q.Namespace != "" {
		r = c.Namespace(q.Namespace)
	}
	var obj map[string]any
	if q.Name != "" {
		u, gerr := r.Get(ctx, q.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			obj = u.Object
		}
	} else {
		u, lerr := r.List(ctx, metav1.ListOptions{LabelSelector: q.LabelSelector, FieldSelector: q.FieldSelector})
		if err = lerr; err == nil {
			obj = u.UnstructuredContent()
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("lookup %s: %w", q, err)
	}
	return obj, nil
}

// Capabilities reads the cluster's Kubernetes version and API versions
// (every group/version and group/version/Kind it serves), for Options'
// KubeVersion and APIVersions with ClusterAPIVersions set, as helm install
// fills .Capabilities. A group whose discovery failed is left out, as
// Helm does.
func Capabilities(cfg *rest.Config) (kubeVersion string, apiVersions []string, err error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("chart capabilities: discovery client: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", nil, fmt.Errorf("chart capabilities: the cluster's version: %w", err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return "", nil, fmt.Errorf("chart capabilities: the cluster's API versions: %w", err)
	}
	set := map[string]bool{}
	for _, g := range groups {
		for _, gv := range g.Versions {
			set[gv.GroupVersion] = true
		}
	}
	for _, r := range resources {
		for _, res := range r.APIResources {
			set[path.Join(r.GroupVersion, res.Kind)] = true
		}
	}
	for k := range set {
		apiVersions = append(apiVersions, k)
	}
	sort.Strings(apiVersions)
	if len(apiVersions) == 0 {
		return "", nil, errors.New("chart capabilities: the cluster lists no API versions")
	}
	return v.GitVersion, apiVersions, nil
}
