package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
)

// object is one object to apply, with where it came from.
type object struct {
	obj      *unstructured.Unstructured
	name     string // the resource name in the expanded config
	path     string // layout path, "guestbook/guestbook-redis/svc"
	template string // canonical reference of its layout node's template
	wave     int    // apply wave: after the objects its deferred refs name
	deferred []expand.Deferred
	// rv is the resourceVersion the server answered the apply with (or
	// that of the unchanged live object when the apply was skipped).
	rv string
	// unchanged: the previous revision applied the same object and the
	// live object has not changed since, so there is nothing to PATCH.
	unchanged bool
	// target: some deferred reference names this object, so its live
	// state is needed after applying.
	target bool
	// hook is set for a hook (helm.sh/hook): applied around the objects
	// by the actions whose events it names, never pruned.
	hook *hook
}

func (o *object) ref() kube.ObjectRef { return kube.RefOf(o.obj) }

// where names the object for errors: its kind and name, and layout path.
func (o *object) where() string {
	return fmt.Sprintf("%s (layout path %s)", o.ref(), o.path)
}

// plan is what one revision applies.
type plan struct {
	objects []*object
	byName  map[string]*object
	waves   int
	// hooks are the objects with helm.sh/hook, in expansion order: not
	// among objects, so neither applied with them nor pruned.
	hooks []*object
	// action is what applying the plan is (install, upgrade, rollback),
	// whose hooks run around the objects; "" runs none.
	action string
}

// objectsOf turns an expansion's primitives into labelled objects. A
// primitive that is not a Kubernetes object is an error naming it and its
// layout path.
func objectsOf(res *expand.Result, name, namespace string) (*plan, error) {
	resolved := map[string]string{}
	for _, r := range res.References {
		if _, ok := resolved[r.Ref]; !ok {
			resolved[r.Ref] = r.Resolved
		}
	}
	type leaf struct{ name, path, template string }
	var leaves []leaf
	var walk func(nodes []*expand.LayoutResource, prefix []string, template string)
	walk = func(nodes []*expand.LayoutResource, prefix []string, template string) {
		for _, n := range nodes {
			p := append(prefix[:len(prefix):len(prefix)], n.Name)
			if len(n.Resources) == 0 {
				leaves = append(leaves, leaf{n.Name, strings.Join(p, "/"), template})
				continue
			}
			t := resolved[n.Type]
			if t == "" {
				t = n.Type
			}
			walk(n.Resources, p, t)
		}
	}
	walk(res.Layout.Resources, nil, "")

	p := &plan{byName: map[string]*object{}}
	var errs []error
	li := 0
	for _, r := range res.Config.Resources {
		o := &object{name: r.Name, path: r.Name}
		// Primitives appear among the layout's leaves in expansion order;
		// templates that made nothing are leaves too, and are skipped.
		for li < len(leaves) && leaves[li].name != r.Name {
			li++
		}
		if li < len(leaves) {
			o.path, o.template = leaves[li].path, leaves[li].template
			li++
		}
		// apiVersion and kind come from the type when the properties
		// lack them (type: apps/v1/Deployment), as in DM.
		obj, err := r.Object()
		if err != nil {
			errs = append(errs, fmt.Errorf("layout path %s: resource %s is not a Kubernetes object: %w", o.path, r.Name, err))
			continue
		}
		u := &unstructured.Unstructured{Object: deepCopy(obj).(map[string]any)}
		label(u, name, namespace, o.template, o.path)
		o.obj = u
		if h, ok := hookOf(u); ok {
			o.hook = &h
			p.hooks = append(p.hooks, o)
			continue
		}
		p.objects = append(p.objects, o)
		p.byName[r.Name] = o
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, d := range res.Deferred {
		if o := p.byName[d.Resource]; o != nil {
			o.deferred = append(o.deferred, d)
		}
		if t := p.byName[d.Target]; t != nil {
			t.target = true
		}
	}
	// Waves: an object with deferred references goes after the objects
	// they name. Order lists every resource after those it references.
	for _, n := range res.Order {
		o := p.byName[n]
		if o == nil {
			continue
		}
		for _, d := range o.deferred {
			if t := p.byName[d.Target]; t != nil && t.wave+1 > o.wave {
				o.wave = t.wave + 1
			}
		}
		p.waves = max(p.waves, o.wave+1)
	}
	if p.waves == 0 && len(p.objects) > 0 {
		p.waves = 1
	}
	return p, nil
}

// label sets dm's labels and annotations on u.
func label(u *unstructured.Unstructured, name, namespace, template, path string) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[LabelManagedBy] = ManagedBy
	l[LabelDeployment] = driver.DeploymentLabel(name)
	u.SetLabels(l)
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationNamespace] = namespace
	if template != "" {
		a[AnnotationTemplate] = template
	}
	a[AnnotationPath] = path
	u.SetAnnotations(a)
}

// prepare maps the plan's objects and the hooks of its action to resources
// (refreshing discovery on a miss) and sets their namespaces; a kind the
// cluster does not know fails here, before anything is applied, naming the
// object and its layout path. Hooks of other actions are
// prepared where their kinds are known, for the record, and never fail.
func (p *plan) prepare(ctx context.Context, c Cluster) error {
	objs := p.unstructured()
	run := p.actionHooks(p.action)
	for _, o := range run {
		objs = append(objs, o.obj)
	}
	var others []*unstructured.Unstructured
	for _, o := range p.hooks {
		if !slices.Contains(run, o) {
			others = append(others, o.obj)
		}
	}
	if len(others) > 0 {
		// Each object is prepared on its own: those of known kinds get
		// their namespace, the others are prepared again when they run.
		_ = c.Prepare(ctx, others)
	}
	if err := c.Prepare(ctx, objs); err != nil {
		return p.annotate(err)
	}
	return nil
}

func (p *plan) unstructured() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(p.objects))
	for i, o := range p.objects {
		out[i] = o.obj
	}
	return out
}

// annotate adds layout paths to the per-object errors in err.
func (p *plan) annotate(err error) error {
	if err == nil {
		return nil
	}
	byRef := map[kube.ObjectRef]*object{}
	for _, o := range append(p.objects[:len(p.objects):len(p.objects)], p.hooks...) {
		byRef[o.ref()] = o
	}
	return annotateErr(err, func(ref kube.ObjectRef) string {
		if o := byRef[ref]; o != nil {
			return o.path
		}
		return ""
	})
}

// maxObjectErrors bounds the per-object errors reported at once: when the
// cluster goes away, every object fails the same way.
const maxObjectErrors = 10

// annotateErr prefixes each kube.ObjectError in err (a single error or a
// join) with the layout path pathOf gives.
func annotateErr(err error, pathOf func(kube.ObjectRef) string) error {
	return eachObjectError(err, func(oe *kube.ObjectError, e error) error {
		if path := pathOf(oe.Ref); path != "" {
			return fmt.Errorf("layout path %s: %w", path, e)
		}
		return e
	})
}

// eachObjectError rewrites each kube.ObjectError e in err (a single error
// or a join) as f(oe, e) returns it, keeping the other errors; at most
// maxObjectErrors of them.
func eachObjectError(err error, f func(oe *kube.ObjectError, e error) error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, 0, min(len(errs), maxObjectErrors+1))
	for i, e := range errs {
		if i == maxObjectErrors {
			out = append(out, fmt.Errorf("and %d more errors like these", len(errs)-i))
			break
		}
		var oe *kube.ObjectError
		if errors.As(e, &oe) {
			e = f(oe, e)
		}
		out = append(out, e)
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// resources lists the plan's objects for a record.
func (p *plan) resources() []release.Resource {
	out := make([]release.Resource, len(p.objects))
	for i, o := range p.objects {
		out[i] = release.Resource{
			APIVersion: o.obj.GetAPIVersion(), Kind: o.obj.GetKind(),
			Namespace: o.obj.GetNamespace(), Name: o.obj.GetName(),
			Path: o.path, Template: o.template, ResourceVersion: o.rv,
		}
	}
	return out
}

// objectMaps copies the objects for a record.
func objectMaps(objs []*object) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.obj.Object
	}
	return out
}

// planOfRecord rebuilds the plan of a recorded revision (for rollback):
// its applied objects, in order, with their layout paths.
func planOfRecord(r *release.Record) *plan {
	p := &plan{byName: map[string]*object{}, waves: 1}
	for i, m := range r.Objects {
		o := &object{obj: &unstructured.Unstructured{Object: deepCopy(m).(map[string]any)}}
		if i < len(r.Resources) {
			o.path, o.template = r.Resources[i].Path, r.Resources[i].Template
		}
		o.name = o.obj.GetName()
		p.objects = append(p.objects, o)
	}
	for _, m := range r.Hooks {
		o := &object{obj: &unstructured.Unstructured{Object: deepCopy(m).(map[string]any)}}
		h, _ := hookOf(o.obj)
		o.hook, o.name = &h, o.obj.GetName()
		o.path, o.template = o.obj.GetAnnotations()[AnnotationPath], o.obj.GetAnnotations()[AnnotationTemplate]
		p.hooks = append(p.hooks, o)
	}
	return p
}

// refOf returns the object reference of a recorded resource.
func refOf(r release.Resource) kube.ObjectRef {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return kube.ObjectRef{Group: gv.Group, Version: gv.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// identity is an object's identity across API versions.
type identity struct{ group, kind, namespace, name string }

func idOf(r kube.ObjectRef) identity { return identity{r.Group, r.Kind, r.Namespace, r.Name} }

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = deepCopy(e)
		}
		return l
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case float32:
		return float64(v)
	}
	return v
}

// pointerGet returns the value at JSON Pointer ptr in v.
func pointerGet(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := v.(type) {
		case map[string]any:
			e, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// pointerSet sets the value at JSON Pointer ptr (which must exist) in v.
func pointerSet(v any, ptr string, val any) bool {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return false
	}
	parent, ok := pointerGet(v, ptr[:i])
	if !ok {
		return false
	}
	tok := strings.NewReplacer("~1", "/", "~0", "~").Replace(ptr[i+1:])
	switch c := parent.(type) {
	case map[string]any:
		c[tok] = val
		return true
	case []any:
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n >= len(c) {
			return false
		}
		c[n] = val
		return true
	}
	return false
}
