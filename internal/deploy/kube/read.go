package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dmhq/dm/internal/derrors"
)

// Get returns the live object; a missing one is an error wrapping
// derrors.NotFound (and the server's NotFound status).
func (c *Client) Get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error) {
	m, ns, err := c.resource(ctx, ref)
	if err != nil {
		if meta.IsNoMatchError(err) {
			// A custom resource whose definition is gone is gone too.
			return nil, &ObjectError{Ref: ref, Err: fmt.Errorf("%w: %w", derrors.NotFound, err)}
		}
		return nil, &ObjectError{Ref: ref, Err: err}
	}
	obj, err := c.getObject(ctx, m, ns, ref.Name)
	if apierrors.IsNotFound(err) {
		return nil, &ObjectError{Ref: ref, Err: fmt.Errorf("%w: %w", derrors.NotFound, err)}
	}
	if err != nil {
		return nil, &ObjectError{Ref: ref, Err: err}
	}
	return obj, nil
}

// Existing returns the live metadata (labels, annotations, managedFields) of
// those refs that exist. Refs that share a kind and namespace are read with
// one metadata-only LIST, others with a metadata-only GET. A kind the
// cluster does not serve has no objects.
func (c *Client) Existing(ctx context.Context, refs []ObjectRef) (map[ObjectRef]*metav1.PartialObjectMetadata, error) {
	groups := groupByKind(refs)
	var mu sync.Mutex
	out := map[ObjectRef]*metav1.PartialObjectMetadata{}
	errs := make([]error, len(groups))
	parallel(c.cfg.Concurrency, indexes(len(groups)), func(g int) {
		group := make([]ObjectRef, len(groups[g]))
		for j, i := range groups[g] {
			group[j] = refs[i]
		}
		found, err := c.existing(ctx, group)
		mu.Lock()
		defer mu.Unlock()
		errs[g] = err
		for ref, m := range found {
			out[ref] = m
		}
	})
	return out, errors.Join(errs...)
}

// existing reads the metadata of refs of one kind and namespace.
func (c *Client) existing(ctx context.Context, refs []ObjectRef) (map[ObjectRef]*metav1.PartialObjectMetadata, error) {
	m, ns, err := c.resource(ctx, refs[0])
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &ObjectError{Ref: refs[0], Err: err}
	}
	out := map[ObjectRef]*metav1.PartialObjectMetadata{}
	if len(refs) > 1 {
		items, err := c.listMetadata(ctx, m, ns)
		if err == nil {
			byName := map[string]*metav1.PartialObjectMetadata{}
			for i := range items {
				byName[items[i].Name] = &items[i]
			}
			for _, ref := range refs {
				if obj := byName[ref.Name]; obj != nil {
					out[ref] = obj
				}
			}
			return out, nil
		}
		if !apierrors.IsForbidden(err) {
			return nil, &ObjectError{Ref: refs[0], Err: err}
		}
		// Allowed to get but not to list: read one by one.
	}
	var errs []error
	for _, ref := range refs {
		obj, err := c.getMetadata(ctx, m, ns, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, &ObjectError{Ref: ref, Err: err})
		default:
			out[ref] = obj
		}
	}
	return out, errors.Join(errs...)
}

// List returns the live objects of kinds (kubectl-style names such as
// "configmaps", "cm", "deploy", "deployments.apps", "Service",
// "Deployment.v1.apps"; empty means every listable namespaced kind) in
// namespace matching the label selector, sorted by tier, kind, namespace
// and name. A cluster-scoped kind named in kinds is listed cluster-wide.
// Without kinds, those the user may not list are left out.
func (c *Client) List(ctx context.Context, namespace, selector string, kinds []string) ([]*unstructured.Unstructured, error) {
	if namespace == "" {
		namespace = c.namespace
	}
	var mappings []*meta.RESTMapping
	if len(kinds) == 0 {
		all, err := c.listable(ctx)
		if err != nil {
			return nil, err
		}
		mappings = all
	} else {
		var errs []error
		for _, k := range kinds {
			m, err := c.mappingFor(ctx, k)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			mappings = append(mappings, m)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	lists := make([][]*unstructured.Unstructured, len(mappings))
	errs := make([]error, len(mappings))
	idx := indexes(len(mappings))
	parallel(c.cfg.Concurrency, idx, func(i int) {
		m := mappings[i]
		list, err := c.listObjects(ctx, m, namespace, selector)
		if err != nil && len(kinds) == 0 && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)) {
			return // not asked for by name: list what can be listed
		}
		if err != nil {
			errs[i] = fmt.Errorf("listing %s: %w", m.Resource.GroupResource(), err)
			return
		}
		lists[i] = list
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := RefOf(out[i]), RefOf(out[j])
		if ta, tb := Tier(a.GroupVersionKind()), Tier(b.GroupVersionKind()); ta != tb {
			return ta < tb
		}
		if a.Group+"/"+a.Kind != b.Group+"/"+b.Kind {
			return a.Group+"/"+a.Kind < b.Group+"/"+b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out, nil
}

// listable returns the preferred version of every namespaced kind that can
// be listed.
func (c *Client) listable(ctx context.Context) ([]*meta.RESTMapping, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[schema.GroupResource]bool{}
	var out []*meta.RESTMapping
	for _, r := range d.resources {
		gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}
		if seen[gr] {
			continue
		}
		seen[gr] = true
		if !r.Namespaced || !slices.Contains(r.Verbs, "list") {
			continue
		}
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		out = append(out, &meta.RESTMapping{
			Resource:         gv.WithResource(r.Resource),
			GroupVersionKind: gv.WithKind(r.Kind),
			Scope:            meta.RESTScopeNamespace,
		})
	}
	return out, nil
}

// mappingFor resolves a kubectl-style resource or kind name the way
// kubectl does: resource.version.group, resource.group, resource (or its
// short name), Kind.version.group, Kind.group, Kind, and Kind.version for
// the core group. It reads discovery again once when nothing matches.
func (c *Client) mappingFor(ctx context.Context, arg string) (*meta.RESTMapping, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		d, err := c.discover(ctx)
		if err != nil {
			return nil, err
		}
		if m, err := d.mappingFor(arg); err == nil {
			return m, nil
		}
		if attempt > 0 {
			return nil, fmt.Errorf("the cluster has no resource type %q", arg)
		}
		c.refreshBefore(start)
	}
}

func (d *discovered) mappingFor(arg string) (*meta.RESTMapping, error) {
	mapper := d.mapper
	// Expand a short name ("cm", "deploy") to its resource.
	first, rest, _ := strings.Cut(strings.ToLower(arg), ".")
	for _, r := range d.resources {
		if slices.Contains(r.ShortNames, first) {
			if rest == "" || rest == r.Group {
				return mapper.RESTMapping(schema.GroupKind{Group: r.Group, Kind: r.Kind})
			}
		}
	}
	gvr, gr := schema.ParseResourceArg(strings.ToLower(arg))
	var gvk schema.GroupVersionKind
	if gvr != nil {
		gvk, _ = mapper.KindFor(*gvr)
	}
	if gvk.Empty() {
		gvk, _ = mapper.KindFor(gr.WithVersion(""))
	}
	if !gvk.Empty() {
		return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	fullGVK, gk := schema.ParseKindArg(arg)
	if fullGVK != nil {
		if m, err := mapper.RESTMapping(fullGVK.GroupKind(), fullGVK.Version); err == nil {
			return m, nil
		}
	}
	if m, err := mapper.RESTMapping(gk); err == nil {
		return m, nil
	}
	// Kind.version of the core group, as in "Service.v1".
	if kind, version, ok := strings.Cut(arg, "."); ok && !strings.Contains(version, ".") {
		if m, err := mapper.RESTMapping(schema.GroupKind{Kind: kind}, version); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no resource type %q", arg)
}
