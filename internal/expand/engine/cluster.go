package engine

import (
	"context"
	"path"
)

// Cluster is the cluster a template is rendered for when it is deployed:
// what a Helm chart reads as .Capabilities and through lookup, as under
// helm install. An invocation without one renders offline (helm
// template): default capabilities, and lookup finds nothing.
//
// KubeVersion and APIVersions are data and travel with a request (to a
// sandbox worker, as JSON); Lookup stays with the program that holds the
// credentials, and a worker reaches it through its parent.
type Cluster struct {
	// KubeVersion is the apiserver's version, such as v1.31.2.
	KubeVersion string `json:"kube_version"`
	// APIVersions are every group/version and group/version/Kind the
	// cluster serves: the whole of .Capabilities.APIVersions.
	APIVersions []string `json:"api_versions"`
	// Lookup reads the cluster's objects as the account the template is
	// deployed as; nil finds nothing, as offline.
	Lookup Lookup `json:"-"`
}

// Lookup reads objects of a cluster for templates (Helm's lookup).
type Lookup interface {
	// Lookup returns the object q names, or with q.Name empty the list of
	// such objects in q.Namespace (all namespaces when empty) as a List
	// object. An object or a resource that does not exist is (nil, nil);
	// an error means the read failed (forbidden, an unknown kind), and
	// names q.
	Lookup(ctx context.Context, q LookupQuery) (map[string]any, error)
}

// LookupQuery names what a lookup reads.
type LookupQuery struct {
	APIVersion string `json:"api_version"`
	Kind       string `json:"kind"`
	// Namespace is ignored for cluster-scoped kinds, as by Helm.
	Namespace string `json:"namespace,omitempty"`
	// Name is empty for a list.
	Name string `json:"name,omitempty"`
	// LabelSelector and FieldSelector narrow a list.
	LabelSelector string `json:"label_selector,omitempty"`
	FieldSelector string `json:"field_selector,omitempty"`
}

// String names the object or list: "v1 ConfigMap ns/name", "v1 ConfigMap
// in ns".
func (q LookupQuery) String() string {
	s := q.APIVersion + " " + q.Kind
	switch {
	case q.Name != "" && q.Namespace != "":
		return s + " " + path.Join(q.Namespace, q.Name)
	case q.Name != "":
		return s + " " + q.Name
	case q.Namespace != "":
		return s + " in " + q.Namespace
	}
	return s
}
