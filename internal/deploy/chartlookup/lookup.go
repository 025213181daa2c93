// Package chartlookup gives the lookup function of Helm charts the
// cluster: a client provider over the user's own rest.Config (their
// kubeconfig and credentials), for Options.Lookup of internal/expand/helm
// when dm deploys a chart. Offline rendering passes none, and lookup
// returns an empty map, as under helm template.
package chartlookup

import (
	"fmt"

	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
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
