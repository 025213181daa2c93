// Package manifest turns an expansion into the objects a cluster applies:
// the engine's primitives that are Kubernetes objects as they are, and
// those of Google Cloud types (Deployment Manager's compute.v1.instance,
// gcp-types/storage-v1:buckets) as Config Connector objects, through
// package gcp. It is the one place where an expansion becomes objects:
// dm expand -o manifest, dm convert, the deploy actions (and so
// dm-controller) and the catalog's preview all call Of.
//
// Value references that only live objects can fill (a Service's
// spec.clusterIP, an instance's status.observedState fields) become
// Deferred entries naming the object to read and the field of the live
// object; a deployment's outputs (DM's outputs:) the same way. The package
// sits after the engine and before deploy: it imports expand and gcp, and
// neither imports it.
package manifest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/gcp"
)

// Options are the Google Cloud settings of one conversion; a
// configuration without Google Cloud resources needs neither.
type Options struct {
	// Project is the Google Cloud project of the resources whose
	// properties name none (dm's --project).
	Project string
	// DeletionPolicy is "" or "delete" (Config Connector's own: deleting
	// an object deletes its Google Cloud resource) or "abandon" (every
	// Config Connector object is annotated so that deleting it leaves the
	// resource).
	DeletionPolicy string
}

// Manifest is what an expansion applies.
type Manifest struct {
	// Objects are in an order where each comes after those its deferred
	// references read and those its resource dependsOn.
	Objects []Object
	// Outputs are the deployment's outputs (expand.Result.Outputs), with
	// what only live objects hold as Deferred reads.
	Outputs []Output
	// Warnings say what went through but will not work as the
	// configuration meant: an output reading a field the live Config
	// Connector object does not carry keeps its reference.
	Warnings []string
}

// Object is one object to apply.
type Object struct {
	Object map[string]any
	// Resource is the name of the primitive it was made of, Path that
	// primitive's layout path and Template the canonical reference (or
	// import path) of the template that made it ("" for the
	// configuration's own).
	Resource string
	Path     []string
	Template string
	// GCP is set for a Config Connector object made of a Google Cloud
	// resource.
	GCP bool
	// Deferred are the values it takes from live objects.
	Deferred []Deferred
	// After are the objects (indexes in Manifest.Objects) its resource
	// names in metadata.dependsOn: they are applied first, and a Config
	// Connector object among them must be Ready first (Deployment
	// Manager created a resource after those it depends on).
	After []int
}

// Deferred is a value taken from a live object: the reference Ref, in
// the string at Field, is replaced by the value at Path of the live
// object Target once it has it. When the string is Ref alone, the value
// replaces it with its type.
type Deferred struct {
	// Field is a JSON Pointer (RFC 6901) into the object (for an output:
	// into its value, "" for the whole value).
	Field string
	// Ref is the reference as written: $(ref.NAME.PATH).
	Ref string
	// Target indexes Manifest.Objects; Path is the field of the live
	// object (spec.clusterIP, status.observedState.address,
	// spec.networkInterface[0].networkIp).
	Target int
	Path   string
	// Ready says that the value is read once Target is ready: a Config
	// Connector object's status, which KCC writes once Google Cloud has
	// the resource.
	Ready bool
}

// Output is one of the deployment's outputs: Value, with the references
// of Deferred still in it.
type Output struct {
	Name     string
	Value    any
	Deferred []Deferred
}

// HasGCP reports whether res has primitives of Google Cloud types.
func HasGCP(res *expand.Result) bool {
	for _, r := range res.Config.Resources {
		if gcp.IsGCPType(r.Type) {
			return true
		}
	}
	return false
}

// Of makes the objects of res. It fails naming every primitive that is
// neither a Kubernetes object nor a Google Cloud resource Config
// Connector represents (gcp.Convert's errors name type, resource and
// layout path).
func Of(res *expand.Result, opts Options) (*Manifest, error) {
	where := leaves(res)
	// The Google Cloud resources, converted together (references between
	// them need the whole set).
	gres := gcpResources(res, where)
	var conv *gcp.Result
	var errs []error
	if len(gres) > 0 {
		var err error
		if conv, err = gcp.Convert(gres, gcp.Options{Project: opts.Project, DeletionPolicy: opts.DeletionPolicy}); err != nil {
			errs = append(errs, err)
		}
	}
	// The objects in a first order: the engine's (referenced resources
	// first), a Google Cloud resource's objects in the converter's order.
	b := &builder{res: res, conv: conv, byResource: map[string][]int{}, byKind: map[string]int{}}
	byName := map[string][]int{} // resource name -> indexes in res.Config.Resources
	for i, r := range res.Config.Resources {
		byName[r.Name] = append(byName[r.Name], i)
	}
	gcpObjects := map[string][]int{} // resource -> indexes in conv.Objects
	if conv != nil {
		for i, s := range conv.Sources {
			gcpObjects[s] = append(gcpObjects[s], i)
		}
	}
	order := make([]int, 0, len(res.Config.Resources))
	if len(res.Order) == len(res.Config.Resources) {
		next := map[string]int{}
		for _, name := range res.Order {
			order = append(order, byName[name][next[name]])
			next[name]++
		}
	} else {
		for i := range res.Config.Resources {
			order = append(order, i)
		}
	}
	gcpIndex := map[int]int{} // conv.Objects index -> b.objs index
	for _, ri := range order {
		r, w := res.Config.Resources[ri], where[ri]
		if gcp.IsGCPType(r.Type) {
			for _, i := range gcpObjects[r.Name] {
				gcpIndex[i] = b.add(Object{Object: conv.Objects[i], Resource: r.Name, Path: w.path, Template: w.template, GCP: true})
			}
			continue
		}
		obj, err := r.Object()
		if err != nil {
			errs = append(errs, located(w.path, r.Name, err))
			continue
		}
		// A copy: the engine's properties may share values with the
		// layout, and deferred references are filled in place.
		b.add(Object{Object: value.Copy(obj).(map[string]any), Resource: r.Name, Path: w.path, Template: w.template})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Deferred references: the engine's (of Kubernetes objects), the
	// converter's (of Config Connector objects).
	for _, d := range res.Deferred {
		idx := b.byResource[d.Resource]
		if len(idx) == 0 || b.objs[idx[len(idx)-1]].GCP {
			continue // a Google Cloud resource's: the converter's below
		}
		i := idx[len(idx)-1]
		if err := b.defer1(i, d.Field, d.Ref, d.Target, d.Path); err != nil {
			errs = append(errs, located(b.objs[i].Path, d.Resource, err))
		}
	}
	if conv != nil {
		for _, d := range conv.Deferred {
			i := gcpIndex[d.Object]
			if err := b.deferRead(i, d.Field, d.Read); err != nil {
				errs = append(errs, located(b.objs[i].Path, b.objs[i].Resource, err))
			}
		}
	}
	// dependsOn, of every resource.
	for i, o := range b.objs {
		r := res.Config.Resources[byName[o.Resource][0]]
		deps, err := dependsOn(r.Metadata)
		if err != nil {
			if o.GCP {
				continue // the converter said so
			}
			errs = append(errs, located(o.Path, o.Resource, err))
			continue
		}
		for _, dep := range deps {
			targets, ok := b.byResource[dep]
			if !ok {
				if _, exists := byName[dep]; !exists && b.byResource[o.Resource][0] == i {
					errs = append(errs, located(o.Path, o.Resource, derrors.Errorf(derrors.InvalidArgument, "metadata.dependsOn names %s, which is not a resource of the deployment", dep)))
				}
				continue
			}
			for _, t := range targets {
				if t != i && !slices.Contains(b.objs[i].After, t) {
					b.objs[i].After = append(b.objs[i].After, t)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m := &Manifest{}
	if conv != nil {
		m.Warnings = append(m.Warnings, conv.Warnings...)
	}
	var err error
	if m.Objects, err = b.sorted(); err != nil {
		return nil, err
	}
	// Outputs read the objects in their final order.
	b.objs, b.byResource, b.byKind = m.Objects, map[string][]int{}, map[string]int{}
	for i, o := range m.Objects {
		b.index(i, o)
	}
	for _, o := range res.Outputs {
		out, warnings, err := b.output(o)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		for _, w := range warnings {
			m.Warnings = append(m.Warnings, fmt.Sprintf("output %s: %s", o.Name, w))
		}
		m.Outputs = append(m.Outputs, out)
	}
	return m, nil
}

// GCPResources returns the primitives of res of Google Cloud types, in
// order, with their layout paths: what Of converts.
func GCPResources(res *expand.Result) []gcp.Resource {
	return gcpResources(res, leaves(res))
}

func gcpResources(res *expand.Result, where []place) []gcp.Resource {
	var gres []gcp.Resource
	for i, r := range res.Config.Resources {
		if gcp.IsGCPType(r.Type) {
			gres = append(gres, gcp.Resource{Name: r.Name, Type: r.Type, Properties: r.Properties,
				Metadata: r.Metadata, AccessControl: r.AccessControl, Path: where[i].path})
		}
	}
	return gres
}

// place is where a primitive is in the layout: its path and the
// template that made it.
type place struct {
	path     []string
	template string
}

// leaves finds the layout path and template of each of res's primitives:
// they are the layout's leaves, in expansion order (templates that made
// nothing are leaves too, and are skipped).
func leaves(res *expand.Result) []place {
	resolved := map[string]string{}
	for _, r := range res.References {
		if _, ok := resolved[r.Ref]; !ok {
			resolved[r.Ref] = r.Resolved
		}
	}
	type leaf struct {
		name string
		place
	}
	var all []leaf
	var walk func(nodes []*expand.LayoutResource, prefix []string, template string)
	walk = func(nodes []*expand.LayoutResource, prefix []string, template string) {
		for _, n := range nodes {
			p := append(prefix[:len(prefix):len(prefix)], n.Name)
			if len(n.Resources) == 0 {
				all = append(all, leaf{n.Name, place{p, template}})
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
	out := make([]place, len(res.Config.Resources))
	li := 0
	for i, r := range res.Config.Resources {
		for li < len(all) && all[li].name != r.Name {
			li++
		}
		if li < len(all) {
			out[i] = all[li].place
			li++
		} else {
			out[i] = place{path: []string{r.Name}}
		}
	}
	return out
}

// located names the primitive name (at layout path path) in err.
func located(path []string, name string, err error) error {
	return fmt.Errorf("layout path %s: resource %s: %w", strings.Join(path, "/"), name, err)
}

// Unresolved describes each value the objects take from live objects, one
// line each, naming the object, the field, the reference and where the
// value is: what a static manifest (dm convert) would write as the
// reference's text, where dm deploy fills the value in.
func (m *Manifest) Unresolved() []string {
	var out []string
	for _, o := range m.Objects {
		for _, d := range o.Deferred {
			t := m.Objects[d.Target].Object
			out = append(out, fmt.Sprintf("%s %s: %s holds %s, which only the live %s %s has (%s)",
				o.Object["kind"], objectName(o.Object), d.Field, d.Ref, t["kind"], objectName(t), d.Path))
		}
	}
	return out
}

// objectName is an object's metadata.name.
func objectName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// Maps returns the objects' maps, in order.
func (m *Manifest) Maps() []map[string]any {
	out := make([]map[string]any, len(m.Objects))
	for i, o := range m.Objects {
		out[i] = o.Object
	}
	return out
}

// builder collects the objects of a manifest.
type builder struct {
	res  *expand.Result
	conv *gcp.Result
	objs []Object
	// byResource indexes objs by the primitive they were made of, byKind
	// the Config Connector objects by kind/name.
	byResource map[string][]int
	byKind     map[string]int
}

func (b *builder) add(o Object) int {
	b.objs = append(b.objs, o)
	b.index(len(b.objs)-1, o)
	return len(b.objs) - 1
}

func (b *builder) index(i int, o Object) {
	b.byResource[o.Resource] = append(b.byResource[o.Resource], i)
	if o.GCP {
		md, _ := o.Object["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		kind, _ := o.Object["kind"].(string)
		b.byKind[kind+"/"+name] = i
	}
}

// defer1 adds the reference ref (to resource target, path) of the string at
// field of object i: a Kubernetes object's. A reference to a Google Cloud
// resource reads its Config Connector object (or is known now: its name).
func (b *builder) defer1(i int, field, ref, target, path string) error {
	ti := b.byResource[target]
	if len(ti) == 0 {
		return derrors.Errorf(derrors.InvalidArgument, "%s: no object is made of resource %s", ref, target)
	}
	if !b.objs[ti[0]].GCP {
		b.objs[i].Deferred = append(b.objs[i].Deferred, Deferred{Field: field, Ref: ref, Target: ti[0], Path: path})
		return nil
	}
	v, known, rd, err := b.conv.Lookup(ref)
	if err != nil {
		return err
	}
	if known {
		return fill(b.objs[i].Object, field, ref, v)
	}
	return b.deferRead(i, field, rd)
}

// deferRead adds a read the converter asked for to object i.
func (b *builder) deferRead(i int, field string, rd gcp.Read) error {
	d := Deferred{Field: field, Ref: rd.Ref, Path: rd.Path}
	if rd.Kind != "" {
		t, ok := b.byKind[rd.Kind+"/"+rd.Name]
		if !ok {
			return fmt.Errorf("%s: no %s %s among the objects", rd.Ref, rd.Kind, rd.Name)
		}
		d.Target, d.Ready = t, true
	} else {
		// A Kubernetes object beside the Google Cloud resources.
		ti := b.byResource[rd.Resource]
		if len(ti) == 0 {
			return derrors.Errorf(derrors.InvalidArgument, "%s: no resource named %s in the deployment", rd.Ref, rd.Resource)
		}
		d.Target = ti[0]
	}
	if !slices.Contains(b.objs[i].Deferred, d) {
		b.objs[i].Deferred = append(b.objs[i].Deferred, d)
	}
	return nil
}

// output resolves one of the deployment's outputs. A reference to a field
// the live Config Connector object does not carry is a warning, not an
// error: the deployment can go on without the output.
func (b *builder) output(o expand.Output) (Output, []string, error) {
	var warnings []string
	out := Output{Name: o.Name}
	holder := map[string]any{"v": value.Copy(o.Value)}
	var errs []error
	walkRefs(holder["v"], "", func(s, ptr string) {
		for _, ref := range refsIn(s) {
			target, _, _ := splitRef(ref)
			ti := b.byResource[target]
			if len(ti) == 0 {
				errs = append(errs, derrors.Errorf(derrors.InvalidArgument, "%s: no object is made of resource %s", ref, target))
				continue
			}
			if !b.objs[ti[0]].GCP {
				_, _, path := splitRef(ref)
				out.Deferred = append(out.Deferred, Deferred{Field: ptr, Ref: ref, Target: ti[0], Path: path})
				continue
			}
			v, known, rd, err := b.conv.Lookup(ref)
			if err != nil {
				warnings = append(warnings, derrors.Message(err)+"; it stays unresolved")
				continue
			}
			if known {
				if err := fill(holder, "/v"+ptr, ref, v); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			t, ok := b.byKind[rd.Kind+"/"+rd.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: no %s %s among the objects", ref, rd.Kind, rd.Name))
				continue
			}
			out.Deferred = append(out.Deferred, Deferred{Field: ptr, Ref: ref, Target: t, Path: rd.Path, Ready: true})
		}
	})
	out.Value = holder["v"]
	return out, warnings, errors.Join(errs...)
}

// sorted orders the objects so that each comes after the objects its
// deferred references read and those it must come after, otherwise in
// their first order.
func (b *builder) sorted() ([]Object, error) {
	n := len(b.objs)
	state := make([]int8, n)
	order := make([]int, 0, n)
	var stack []int
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 2:
			return nil
		case 1:
			k := slices.Index(stack, i)
			var names []string
			for _, j := range append(stack[k:], i) {
				names = append(names, b.objs[j].Resource)
			}
			return located(b.objs[i].Path, b.objs[i].Resource, derrors.Errorf(derrors.InvalidArgument, "reference or dependsOn cycle: %s", strings.Join(names, " -> ")))
		}
		state[i] = 1
		stack = append(stack, i)
		deps := slices.Clone(b.objs[i].After)
		for _, d := range b.objs[i].Deferred {
			deps = append(deps, d.Target)
		}
		slices.Sort(deps)
		for _, j := range slices.Compact(deps) {
			if j == i {
				continue
			}
			if err := visit(j); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = 2
		order = append(order, i)
		return nil
	}
	for i := range n {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	pos := make([]int, n)
	for k, i := range order {
		pos[i] = k
	}
	out := make([]Object, n)
	for k, i := range order {
		o := b.objs[i]
		o.Deferred = slices.Clone(o.Deferred)
		for j := range o.Deferred {
			o.Deferred[j].Target = pos[o.Deferred[j].Target]
		}
		o.After = slices.Clone(o.After)
		for j := range o.After {
			o.After[j] = pos[o.After[j]]
		}
		slices.Sort(o.After)
		out[k] = o
	}
	return out, nil
}

// dependsOn reads DM's metadata.dependsOn: resource names.
func dependsOn(md map[string]any) ([]string, error) {
	v, ok := md["dependsOn"]
	if !ok || v == nil {
		return nil, nil
	}
	var out []string
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, derrors.Errorf(derrors.InvalidArgument, "metadata.dependsOn holds %v, not a resource name", e)
			}
			out = append(out, s)
		}
	case []string:
		out = v
	default:
		return nil, derrors.Errorf(derrors.InvalidArgument, "metadata.dependsOn is %T, not a list of resource names", v)
	}
	return out, nil
}

// fill replaces ref in the string at JSON Pointer field of obj by v: the
// string is v when it is ref alone, else v formatted into it.
func fill(obj map[string]any, field, ref string, v any) error {
	cur, ok := PointerGet(obj, field)
	s, isStr := cur.(string)
	if !ok || !isStr {
		return fmt.Errorf("%s: %s is not a string in the object", ref, field)
	}
	filled, err := expand.FillRefs(s, func(text, _, _ string) (any, bool, error) {
		return v, text == ref, nil
	})
	if err != nil {
		return err
	}
	PointerSet(obj, field, filled)
	return nil
}

// walkRefs calls f with every string in v that holds a value reference,
// and its JSON Pointer (ptr is v's).
func walkRefs(v any, ptr string, f func(s, ptr string)) {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, "$(ref.") {
			f(v, ptr)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walkRefs(v[k], ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), f)
		}
	case []any:
		for i, e := range v {
			walkRefs(e, ptr+"/"+strconv.Itoa(i), f)
		}
	}
}

// refsIn lists the value references in s, each once, in order.
func refsIn(s string) []string {
	var out []string
	_, _ = expand.FillRefs(s, func(text, _, _ string) (any, bool, error) {
		if !slices.Contains(out, text) {
			out = append(out, text)
		}
		return nil, false, nil
	})
	return out
}

// splitRef splits $(ref.NAME.PATH) into NAME and PATH (without its
// leading dot).
func splitRef(ref string) (name, dotted, path string) {
	_, _ = expand.FillRefs(ref, func(_, n, p string) (any, bool, error) {
		name, dotted = n, p
		return nil, false, nil
	})
	return name, dotted, strings.TrimPrefix(dotted, ".")
}

// PointerGet returns the value at JSON Pointer ptr in v.
func PointerGet(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = unescape(tok)
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

// PointerSet sets the value at JSON Pointer ptr (whose parent must exist)
// in v.
func PointerSet(v any, ptr string, val any) bool {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return false
	}
	parent, ok := PointerGet(v, ptr[:i])
	if !ok {
		return false
	}
	tok := unescape(ptr[i+1:])
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

func unescape(tok string) string {
	if !strings.Contains(tok, "~") {
		return tok
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
}
