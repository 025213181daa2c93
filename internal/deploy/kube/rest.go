package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Every request of this package goes through one raw REST client on
// unstructured JSON: the apply's status code says whether it created the
// object, and a GET, a LIST, a metadata-only read or a DELETE is a path.

// rawConfig returns rc set up for JSON requests by absolute path, with a
// decoder that turns the server's Status errors into *errors.StatusError.
func rawConfig(rc *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(rc)
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/"
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	return cfg
}

// objectPath is the URL path of the object name of mapping m, or of the
// collection when name is empty.
func objectPath(m *meta.RESTMapping, namespace, name string) string {
	gv := m.Resource.GroupVersion()
	p := "/api/" + gv.Version
	if gv.Group != "" {
		p = "/apis/" + gv.Group + "/" + gv.Version
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
		p += "/namespaces/" + namespace
	}
	return path.Join(p, m.Resource.Resource, name)
}

// metadataAccept asks for PartialObjectMetadata(List) instead of whole objects.
const (
	metadataAccept     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	metadataListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
)

// body returns the body of a successful response, else the server's
// error: Result.Raw returns an unstructured error ("unknown" for a 403),
// Result.Error the decoded Status.
func body(res rest.Result) ([]byte, error) {
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// getObject reads one object.
func (c *Client) getObject(ctx context.Context, m *meta.RESTMapping, namespace, name string) (*unstructured.Unstructured, error) {
	data, err := body(c.raw.Get().AbsPath(objectPath(m, namespace, name)).Do(ctx))
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decoding the server's response: %w", err)
	}
	return obj, nil
}

// listObjects lists the objects of mapping m in namespace ("" for all or
// for a cluster-scoped kind) matching selector, with their kind set.
func (c *Client) listObjects(ctx context.Context, m *meta.RESTMapping, namespace, selector string) ([]*unstructured.Unstructured, error) {
	req := c.raw.Get().AbsPath(objectPath(m, namespace, ""))
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	data, err := body(req.Do(ctx))
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	if err := list.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decoding the server's response: %w", err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
		out[i].SetGroupVersionKind(m.GroupVersionKind)
	}
	return out, nil
}

// getMetadata reads one object's metadata.
func (c *Client) getMetadata(ctx context.Context, m *meta.RESTMapping, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	data, err := body(c.raw.Get().AbsPath(objectPath(m, namespace, name)).SetHeader("Accept", metadataAccept).Do(ctx))
	if err != nil {
		return nil, err
	}
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("decoding the server's response: %w", err)
	}
	return &obj, nil
}

// listMetadata lists the metadata of the objects of mapping m in namespace.
func (c *Client) listMetadata(ctx context.Context, m *meta.RESTMapping, namespace string) ([]metav1.PartialObjectMetadata, error) {
	data, err := body(c.raw.Get().AbsPath(objectPath(m, namespace, "")).SetHeader("Accept", metadataListAccept).Do(ctx))
	if err != nil {
		return nil, err
	}
	var list metav1.PartialObjectMetadataList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("decoding the server's response: %w", err)
	}
	return list.Items, nil
}

// deleteObject deletes one object.
func (c *Client) deleteObject(ctx context.Context, m *meta.RESTMapping, namespace, name string, opts metav1.DeleteOptions) error {
	opts.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}
	data, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	return c.raw.Delete().AbsPath(objectPath(m, namespace, name)).Body(data).Do(ctx).Error()
}
