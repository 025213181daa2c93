package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/manifest"
)

// object is one object to apply, with where it came from.
type object struct {
	obj      *unstructured.Unstructured
	name     string // the resource name in the expanded config
	path     string // layout path, "guestbook/guestbook-redis/svc"
	template string // canonical reference of its layout node's template
	wave     int    // apply wave: after the objects its deferred refs name
	// gcp: a Config Connector object made of a Google Cloud resource.
	gcp      bool
	deferred []deferred
	// after are the objects its resource's metadata.dependsOn names:
	// applied in an earlier wave, and waited for until ready when they
	// are Config Connector objects.
	after []*object
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

// deferred is a value an object takes from the live object target.
type deferred struct {
	manifest.Deferred
	target *object
}

func (o *object) ref() kube.ObjectRef { return kube.RefOf(o.obj) }

// where names the object for errors: its kind and name, and layout path.
func (o *object) where() string {
	return fmt.Sprintf("%s (layout path %s)", o.ref(), o.path)
}

// plan is what one revision applies.
type plan struct {
	objects []*object
	waves   int
	// hooks are the objects with helm.sh/hook, in expansion order: not
	// among objects, so neither applied with them nor pruned.
	hooks []*object
	// action is what applying the plan is (install, upgrade, rollback),
	// whose hooks run around the objects; "" runs none.
	action string
	// outputs are the deployment's outputs, with the live objects they
	// read.
	outputs []output
	// warnings are the conversion's (manifest.Manifest.Warnings).
	warnings []string
}

// output is one of the deployment's outputs.
type output struct {
	name     string
	value    any
	deferred []deferred
}

// objectsOf turns an expansion into labelled objects (Google Cloud
// resources as Config Connector objects, converted with gopts). A
// primitive that is neither is an error naming it and its layout path.
func objectsOf(res *expand.Result, name, namespace string, gopts manifest.Options) (*plan, error) {
	m, err := manifest.Of(res, gopts)
	if err != nil {
		return nil, err
	}
	p := &plan{warnings: m.Warnings}
	all := make([]*object, len(m.Objects))
	for i, mo := range m.Objects {
		u := &unstructured.Unstructured{Object: deepCopy(mo.Object).(map[string]any)}
		o := &object{name: mo.Resource, path: strings.Join(mo.Path, "/"), template: mo.Template, gcp: mo.GCP, obj: u}
		label(u, name, namespace, o.template, o.path)
		all[i] = o
		if h, ok := hookOf(u); ok {
			o.hook = &h
			p.hooks = append(p.hooks, o)
			continue
		}
		p.objects = append(p.objects, o)
	}
	for i, mo := range m.Objects {
		o := all[i]
		for _, d := range mo.Deferred {
			o.deferred = append(o.deferred, deferred{Deferred: d, target: all[d.Target]})
			all[d.Target].target = true
		}
		for _, j := range mo.After {
			o.after = append(o.after, all[j])
		}
	}
	for _, mo := range m.Outputs {
		out := output{name: mo.Name, value: mo.Value}
		for _, d := range mo.Deferred {
			out.deferred = append(out.deferred, deferred{Deferred: d, target: all[d.Target]})
		}
		p.outputs = append(p.outputs, out)
	}
	// Waves: an object goes after the objects its deferred references read
	// and those its resource depends on; the manifest lists each after
	// them.
	for _, o := range p.objects {
		for _, d := range o.deferred {
			if d.target.hook == nil {
				o.wave = max(o.wave, d.target.wave+1)
			}
		}
		for _, t := range o.after {
			if t.hook == nil {
				o.wave = max(o.wave, t.wave+1)
			}
		}
		p.waves = max(p.waves, o.wave+1)
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
		if err := p.missingConfigConnector(err); err != nil {
			return err
		}
		return p.annotate(err)
	}
	return nil
}

// InstallConfigConnector says how to get Config Connector's kinds into a
// cluster.
const InstallConfigConnector = "install Config Connector (https://cloud.google.com/config-connector/docs/how-to/install-upgrade-uninstall; on GKE, the Config Connector add-on) or deploy to a Config Controller instance (https://cloud.google.com/kubernetes-engine/enterprise/config-controller/docs/overview)"

// missingConfigConnector turns Prepare's errors about Config Connector
// objects whose kinds the cluster does not serve into one error naming the
// kinds and how to install Config Connector; nil when there are none.
func (p *plan) missingConfigConnector(err error) error {
	gcpRefs := map[kube.ObjectRef]bool{}
	for _, o := range p.objects {
		if o.gcp {
			gcpRefs[o.ref()] = true
		}
	}
	if len(gcpRefs) == 0 {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var kinds []string
	objects := 0
	for _, e := range errs {
		var oe *kube.ObjectError
		if !errors.As(e, &oe) || !gcpRefs[oe.Ref] || !meta.IsNoMatchError(e) {
			continue
		}
		objects++
		k := oe.Ref.Kind + " (" + oe.Ref.Group + "/" + oe.Ref.Version + ")"
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	slices.Sort(kinds)
	return fmt.Errorf("the cluster does not serve Config Connector's kinds %s, which the deployment's %d Google Cloud objects are (nothing was applied): %s, then deploy again: %w",
		strings.Join(kinds, ", "), objects, InstallConfigConnector, derrors.NotFound)
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
	p := &plan{waves: 1}
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

// recordOutputs is what a record keeps of the plan's outputs: the objects
// they read named as prepared (with their namespaces).
func (p *plan) recordOutputs() []release.Output {
	var out []release.Output
	for _, o := range p.outputs {
		ro := release.Output{Name: o.name, Value: o.value}
		for _, d := range o.deferred {
			ref := d.target.ref()
			ro.Reads = append(ro.Reads, release.Read{
				Field: d.Field, Ref: d.Ref, APIVersion: d.target.obj.GetAPIVersion(), Kind: ref.Kind,
				Namespace: ref.Namespace, Name: ref.Name, Path: d.Path, Ready: d.Ready,
			})
		}
		out = append(out, ro)
	}
	return out
}
