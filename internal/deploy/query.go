package deploy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/manifest"
)

// List returns the latest revision of every deployment in the namespace,
// or in every namespace with all.
func (c *Config) List(ctx context.Context, all bool) ([]*release.Record, error) {
	ns := c.namespace()
	if all {
		ns = ""
	}
	recs, err := c.History.List(ctx, ns)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, nil
	}
	return recs, err
}

// Revision returns one revision of a deployment; revision 0 means the
// latest.
func (c *Config) Revision(ctx context.Context, name string, revision int) (*release.Record, error) {
	ns := c.namespace()
	if revision > 0 {
		r, err := c.History.Get(ctx, ns, name, revision)
		if errors.Is(err, driver.ErrNotFound) {
			return nil, fmt.Errorf("deployment %s has no revision %d in namespace %s: %w", name, revision, ns, derrors.NotFound)
		}
		return r, err
	}
	hist, err := c.Revisions(ctx, name)
	if err != nil {
		return nil, err
	}
	return hist[len(hist)-1], nil
}

// Revisions returns every revision of a deployment, oldest first.
func (c *Config) Revisions(ctx context.Context, name string) ([]*release.Record, error) {
	ns := c.namespace()
	hist, err := c.history(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if len(hist) == 0 {
		return nil, fmt.Errorf("deployment %s not found in namespace %s: %w", name, ns, derrors.NotFound)
	}
	return hist, nil
}

// Statuses returns the live kstatus readiness of a revision's objects, in
// the record's order.
func (c *Config) Statuses(ctx context.Context, r *release.Record) ([]kube.Status, error) {
	refs := make([]kube.ObjectRef, len(r.Resources))
	for i, res := range r.Resources {
		refs[i] = refOf(res)
	}
	if len(refs) == 0 {
		return nil, nil
	}
	return c.Cluster.Statuses(ctx, refs)
}

// DiffOptions are Diff's options.
type DiffOptions struct {
	Name   string
	Source Source
}

// Diff compares what deploying Source as deployment Name would apply (a
// server-side dry run) with the live objects, including the objects the
// deployment has that the new revision would prune. It returns a unified
// diff and whether anything differs.
func (c *Config) Diff(ctx context.Context, opts DiffOptions) (string, bool, error) {
	p, gone, err := c.nextRevision(ctx, opts.Name, opts.Source, nil)
	if err != nil {
		return "", false, err
	}
	diff, changed, err := c.Cluster.Diff(ctx, p.unstructured(), gone)
	if err != nil {
		return "", false, p.annotate(err)
	}
	return diff, changed, nil
}

// nextRevision expands src as deployment name's next revision, as deploy
// would apply it (deferred references filled from the live objects,
// state merged into spec where the object asks), and lists the objects of
// the deployment's records that it would prune; with current, those of
// current instead, and the history is not read.
func (c *Config) nextRevision(ctx context.Context, name string, src Source, current []kube.ObjectRef) (*plan, []kube.ObjectRef, error) {
	var hist []*release.Record
	if current == nil {
		var err error
		if hist, err = c.history(ctx, c.namespace(), name); err != nil {
			return nil, nil, err
		}
	}
	x, err := c.expand(ctx, name, &src)
	if err != nil {
		return nil, nil, err
	}
	p := x.p
	if err := p.prepare(ctx, c.Cluster); err != nil {
		return nil, nil, err
	}
	newIDs := map[identity]bool{}
	for _, o := range p.objects {
		newIDs[idOf(o.ref())] = true
	}
	var gone []kube.ObjectRef
	for _, ref := range current {
		if !newIDs[idOf(ref)] {
			gone = append(gone, ref)
		}
	}
	if liveRecord(hist) != nil {
		for _, r := range pruneCandidates(hist, false) {
			if ref := refOf(r); !newIDs[idOf(ref)] {
				gone = append(gone, ref)
			}
		}
	}
	// Deferred references are filled from the live objects where they
	// exist, as deploy would.
	live := map[*object]*unstructured.Unstructured{}
	for _, o := range p.objects {
		for _, d := range o.deferred {
			if _, ok := live[d.target]; ok {
				continue
			}
			live[d.target] = nil
			if u, err := c.Cluster.Get(ctx, d.target.ref()); err == nil {
				live[d.target] = u
			}
		}
	}
	for _, o := range p.objects {
		if err := fillDeferred(o.obj.Object, o.deferred, live); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", o.where(), err)
		}
	}
	var shared []*object
	for _, o := range p.objects {
		if stateIntoSpec(o) {
			shared = append(shared, o)
		}
	}
	if err := c.mergeStateIntoSpec(ctx, shared); err != nil {
		return nil, nil, err
	}
	return p, gone, nil
}

// Change is what deploying a new revision would do to one object.
type Change struct {
	Ref kube.ObjectRef
	// Action is ActionCreate, ActionUpdate or ActionDelete.
	Action string
	// Fields are the paths of the fields an update changes
	// (kube.ChangedFields).
	Fields []string
}

// The actions of a Change.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
)

// ChangesOptions are Changes' options.
type ChangesOptions struct {
	Name   string
	Source Source
	// Force takes over the fields other field managers own, as
	// dm-controller applies; without it a conflict is an error, as for
	// Diff.
	Force bool
	// Current, when not nil, are the objects the deployment has now
	// (dm-controller's status.inventory): those the new revision no
	// longer renders are deleted, and neither the history nor those
	// objects are read (for a fleet's preview, requests saved).
	Current []kube.ObjectRef
}

// dmAnnotations are the annotations dm writes on every object for
// itself: a new patch changes dm.io/template on every object, which is no
// change of the object's own.
var dmAnnotations = []string{AnnotationTemplate, AnnotationPath, AnnotationNamespace}

// Changes is Diff as data: a server-side dry run of what deploying Source
// as deployment Name would apply, compared with the live objects, gives
// one Change for each object that would be created, updated (with the
// fields that change, not those only the server or dm itself writes) or
// deleted (in the deployment's records, live, and no longer rendered), in
// the order of the objects then of the deletions. An object unchanged is
// absent.
func (c *Config) Changes(ctx context.Context, opts ChangesOptions) ([]Change, error) {
	p, gone, err := c.nextRevision(ctx, opts.Name, opts.Source, opts.Current)
	if err != nil {
		return nil, err
	}
	applied, err := c.Cluster.Apply(ctx, p.unstructured(), kube.ApplyOptions{DryRun: true, Force: opts.Force})
	if err != nil {
		return nil, p.annotate(err)
	}
	// The live objects of those the server found, read at once: a
	// preview of many instances waits on round trips.
	live := make([]*unstructured.Unstructured, len(applied))
	errs := make([]error, len(applied))
	var wg sync.WaitGroup
	for i, a := range applied {
		if a.Created {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			live[i], errs[i] = c.Cluster.Get(ctx, a.Ref)
			if errors.Is(errs[i], derrors.NotFound) {
				live[i], errs[i] = nil, nil
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []Change
	for i, a := range applied {
		next, err := a.Object()
		if err != nil {
			return nil, err
		}
		if live[i] == nil {
			out = append(out, Change{Ref: a.Ref, Action: ActionCreate})
			continue
		}
		if fields := kube.ChangedFields(live[i], next, dmAnnotations); len(fields) > 0 {
			out = append(out, Change{Ref: a.Ref, Action: ActionUpdate, Fields: fields})
		}
	}
	if opts.Current != nil {
		// What the deployment has now is given: each object it no longer
		// renders is deleted (one deleted by hand meanwhile, the
		// controller would have made again).
		for _, ref := range gone {
			out = append(out, Change{Ref: ref, Action: ActionDelete})
		}
		return out, nil
	}
	for _, ref := range gone {
		_, err := c.Cluster.Get(ctx, ref)
		if errors.Is(err, derrors.NotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Change{Ref: ref, Action: ActionDelete})
	}
	return out, nil
}

// TypeUse is a template type in use, with one version.
type TypeUse struct {
	// Template is the template's canonical name (without version), or
	// the import path of a template sent with a configuration.
	Template string `json:"template"`
	Version  string `json:"version"`
	// Instances counts the layout nodes of the template in deployed
	// revisions, Deployments the deployments they are in.
	Instances   int `json:"instances"`
	Deployments int `json:"deployments"`
}

// Instance is one use of a template in a deployment's layout.
type Instance struct {
	Deployment string `json:"deployment"`
	Namespace  string `json:"namespace"`
	Revision   int    `json:"revision"`
	// Path is the layout path of the template's node.
	Path string `json:"path"`
	// Template is the canonical reference with version (or the import
	// path), Type the type as written in the layout.
	Template string `json:"template"`
	Version  string `json:"version,omitempty"`
	Type     string `json:"type"`
}

// instances walks the layouts of the deployed deployments.
func (c *Config) instances(ctx context.Context, all bool) ([]Instance, error) {
	recs, err := c.List(ctx, all)
	if err != nil {
		return nil, err
	}
	var out []Instance
	for _, r := range recs {
		if r.Status == release.StatusDeleting {
			continue
		}
		if r.Status != release.StatusDeployed {
			// The list holds the latest revision; what runs is the
			// latest deployed one.
			hist, err := c.History.History(ctx, r.Namespace, r.Name)
			if err != nil {
				return nil, err
			}
			r = nil
			for i := len(hist) - 1; i >= 0; i-- {
				if hist[i].Status == release.StatusDeployed {
					r = hist[i]
					break
				}
			}
			if r == nil {
				continue
			}
		}
		resolved := map[string]expand.Reference{}
		for _, ref := range r.References {
			if _, ok := resolved[ref.Ref]; !ok {
				resolved[ref.Ref] = ref
			}
		}
		var walk func(nodes []*expand.LayoutResource, prefix string)
		walk = func(nodes []*expand.LayoutResource, prefix string) {
			for _, n := range nodes {
				p := n.Name
				if prefix != "" {
					p = prefix + "/" + n.Name
				}
				if len(n.Resources) == 0 {
					continue // a primitive (or a template that made nothing)
				}
				in := Instance{Deployment: r.Name, Namespace: r.Namespace, Revision: r.Revision, Path: p, Template: n.Type, Type: n.Type}
				if ref, ok := resolved[n.Type]; ok {
					in.Template, in.Version = ref.Resolved, ref.Version
				}
				out = append(out, in)
				walk(n.Resources, p)
			}
		}
		walk(r.Layout.Resources, "")
	}
	return out, nil
}

// templateName is a canonical reference without its version.
func templateName(in Instance) string {
	if in.Version != "" {
		return strings.TrimSuffix(in.Template, ":"+in.Version)
	}
	return in.Template
}

// Types returns the template types in use in the deployed revisions, one
// entry per template and version, with instance counts.
func (c *Config) Types(ctx context.Context, all bool) ([]TypeUse, error) {
	ins, err := c.instances(ctx, all)
	if err != nil {
		return nil, err
	}
	type key struct{ t, v string }
	uses := map[key]*TypeUse{}
	deps := map[key]map[string]bool{}
	for _, in := range ins {
		k := key{templateName(in), in.Version}
		u := uses[k]
		if u == nil {
			u = &TypeUse{Template: k.t, Version: k.v}
			uses[k] = u
			deps[k] = map[string]bool{}
		}
		u.Instances++
		deps[k][in.Namespace+"/"+in.Deployment] = true
	}
	out := make([]TypeUse, 0, len(uses))
	for k, u := range uses {
		u.Deployments = len(deps[k])
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Template != out[j].Template {
			return out[i].Template < out[j].Template
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// Instances returns the uses of template typ in the deployed revisions:
// typ is a template name (redis, common/web), a canonical name, a type as
// written in a layout, or any of these with a version.
func (c *Config) Instances(ctx context.Context, typ string, all bool) ([]Instance, error) {
	ins, err := c.instances(ctx, all)
	if err != nil {
		return nil, err
	}
	var out []Instance
	for _, in := range ins {
		name := templateName(in)
		if in.Type == typ || in.Template == typ || name == typ ||
			strings.HasSuffix(name, "/"+typ) || strings.HasSuffix(in.Template, "/"+typ) {
			out = append(out, in)
		}
	}
	return out, nil
}

// Outputs returns the outputs of revision r filled from the live objects
// they read: a value that a live object does not have yet (a Config
// Connector object that is not ready) keeps its reference.
func (c *Config) Outputs(ctx context.Context, r *release.Record) (map[string]any, error) {
	if len(r.Outputs) == 0 {
		return nil, nil
	}
	targets := map[kube.ObjectRef]*object{}
	live := map[*object]*unstructured.Unstructured{}
	out := make(map[string]any, len(r.Outputs))
	for _, o := range r.Outputs {
		holder := map[string]any{"v": deepCopy(o.Value)}
		var ds []deferred
		for _, rd := range o.Reads {
			gv, _ := schema.ParseGroupVersion(rd.APIVersion)
			ref := kube.ObjectRef{Group: gv.Group, Version: gv.Version, Kind: rd.Kind, Namespace: rd.Namespace, Name: rd.Name}
			t := targets[ref]
			if t == nil {
				t = &object{}
				targets[ref] = t
				u, err := c.Cluster.Get(ctx, ref)
				switch {
				case errors.Is(err, derrors.NotFound):
				case err != nil:
					return nil, fmt.Errorf("output %s: reading %s: %w", o.Name, ref, err)
				default:
					live[t] = u
				}
			}
			ds = append(ds, deferred{Deferred: manifest.Deferred{Field: "/v" + rd.Field, Ref: rd.Ref, Path: rd.Path, Ready: rd.Ready}, target: t})
		}
		if err := fillDeferred(holder, ds, live); err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		out[o.Name] = holder["v"]
	}
	return out, nil
}
