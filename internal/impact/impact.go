// Package impact is dm impact: what a template version, before or after
// it is published, would change in every instance that would take it.
//
// It lists the TemplateInstances, and the instances of every
// TemplateDefinition's kind, that the caller may read (a page at a time),
// keeps those that would take the version under their update policy
// (Patch, the same template and MAJOR.MINOR, the version newer than what
// they run or the same with other content), and for each expands the
// version and server-side dry-runs it as dm-controller applies (its field
// manager, forcing conflicts, impersonating the instance's account),
// comparing the result with the live objects. It reads instances as
// package controller/instance does, so that the preview is the
// controller's own reading.
package impact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/mod/semver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/instance"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/resolve"
)

// Target is the version previewed.
type Target struct {
	// Resolved is its canonical reference with its exact version
	// (github.com/acme/templates/web:v1.2.5).
	Resolved string
	// Digest is its content digest.
	Digest string
}

// Options configure Run.
type Options struct {
	Target Target
	// Expander expands a deploy source (dm's, over its registry flags:
	// the unpublished directory of --registry-dir among them). Run
	// expands Target.Resolved through it.
	Expander deploy.Expander
	// Cluster is the caller's connection: instances are listed with it,
	// and applied in dry runs by impersonating their accounts with it.
	Cluster *kube.Client
	// Namespace lists the instances of one namespace; AllNamespaces of
	// every namespace (Namespace is then ignored).
	Namespace     string
	AllNamespaces bool
	// DefaultRegistry is what instances' short references resolve
	// against (dm-controller's --default-registry); DefaultServiceAccount
	// the account of instances that name none (its
	// --default-service-account).
	DefaultRegistry       string
	DefaultServiceAccount string
	// Concurrency bounds the instances dry-run at once; default
	// DefaultConcurrency.
	Concurrency int
	// PageSize is the number of instances listed per request; default
	// DefaultPageSize.
	PageSize int64
	// Progress, when set, is told how many of the instances taking the
	// version are done.
	Progress func(done, total int)
	// Log receives warnings (a kind whose instances cannot be listed);
	// nil discards them.
	Log io.Writer
}

// DefaultConcurrency is Options.Concurrency's default.
const DefaultConcurrency = 32

// DefaultPageSize is Options.PageSize's default.
const DefaultPageSize = 250

// Report is what the version would do, -o json's document.
type Report struct {
	// Version is the version's canonical reference.
	Version string `json:"version"`
	// Instances are those that would take it, by namespace, kind and
	// name.
	Instances []Instance `json:"instances"`
	// Expansions counts the expansions made: one per distinct template
	// and properties.
	Expansions int `json:"-"`
	// Listing and Previewing are how long listing the instances (and
	// policies) and previewing them took.
	Listing, Previewing time.Duration `json:"-"`
}

// Instance is one instance that would take the version.
type Instance struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Kind is TemplateInstance, or the kind a TemplateDefinition defines.
	Kind string `json:"kind"`
	// From is the reference the instance runs (its status.resolved; ""
	// before its first apply), To the version's.
	From string `json:"from"`
	To   string `json:"to"`
	// Wave is the roll-out wave the instance is in, "" without a policy.
	Wave string `json:"wave"`
	// Error is why the instance cannot be previewed (its expansion or
	// dry run failed); "" when it can.
	Error string `json:"error"`
	// Changes are the objects the version would create, update or
	// delete.
	Changes []Change `json:"changes"`
}

// Change is what the version would do to one object.
type Change struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	// Action is create, update or delete.
	Action string `json:"action"`
	// Fields are the paths an update changes (spec.replicas).
	Fields []string `json:"fields"`
}

// Failed counts the instances whose preview failed.
func (r *Report) Failed() int {
	n := 0
	for _, in := range r.Instances {
		if in.Error != "" {
			n++
		}
	}
	return n
}

// candidate is an instance that would take the version.
type candidate struct {
	ti *v1alpha1.TemplateInstance
	// kind is the instance's kind: TemplateInstance or a defined one.
	kind string
}

// Run previews opts.Target in the instances that would take it.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	name, version, err := splitResolved(opts.Target.Resolved)
	if err != nil {
		return nil, err
	}
	def := resolve.Registry{}
	if opts.DefaultRegistry != "" {
		if def, err = resolve.ParseRegistry(opts.DefaultRegistry); err != nil {
			return nil, fmt.Errorf("default registry %q: %w", opts.DefaultRegistry, err)
		}
	}
	m := matcher{name: name, version: version, digest: opts.Target.Digest, def: def}
	ns := opts.Namespace
	if opts.AllNamespaces {
		ns = ""
	} else if ns == "" {
		ns = opts.Cluster.Namespace()
	}
	dyn := opts.Cluster.Dynamic()
	start := time.Now()
	// listed are the instances of the version's template; those that
	// would take it are previewed, and all of them share waves.
	var listed []candidate
	err = list(ctx, dyn, v1alpha1.GroupVersion.WithResource("templateinstances"), ns, opts.PageSize, func(u *unstructured.Unstructured) error {
		ti := &v1alpha1.TemplateInstance{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ti); err != nil {
			return fmt.Errorf("TemplateInstance %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		if m.sameTemplate(ti.Spec.Template) {
			listed = append(listed, candidate{ti: ti, kind: "TemplateInstance"})
		}
		return nil
	})
	if err != nil {
		return nil, listError("TemplateInstances", ns, err)
	}
	defined, err := definedInstances(ctx, dyn, ns, opts.PageSize, m, opts.Log)
	if err != nil {
		return nil, err
	}
	listed = append(listed, defined...)
	waves, refused, err := wavesOf(ctx, dyn, ns, opts.AllNamespaces, opts.PageSize, def, version, listed, opts.Log)
	if err != nil {
		return nil, err
	}
	var cands []candidate
	for _, c := range listed {
		// A patch that failed under the instance's policy reaches none
		// of its instances.
		if m.takes(c.ti) && !refused[c.ti.Namespace+"/"+c.ti.Name] {
			cands = append(cands, c)
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.ti.Namespace, b.ti.Namespace), cmp.Compare(a.kind, b.kind), cmp.Compare(a.ti.Name, b.ti.Name))
	})

	p := &previewer{opts: opts, cache: newExpansions(opts.Expander), clients: map[string]*kube.Client{}, waves: waves}
	rep := &Report{Version: opts.Target.Resolved, Instances: make([]Instance, len(cands)), Listing: time.Since(start)}
	start = time.Now()
	var done atomic.Int64
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rep.Instances[i] = p.preview(ctx, c)
			if opts.Progress != nil {
				opts.Progress(int(done.Add(1)), len(cands))
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.Expansions = int(p.cache.count.Load())
	rep.Previewing = time.Since(start)
	return rep, nil
}

// listError says what could not be listed where, and what to do about a
// refusal.
func listError(what, ns string, err error) error {
	where := "namespace " + ns
	if ns == "" {
		where = "all namespaces"
	}
	if apierrors.IsForbidden(err) {
		hint := ""
		if ns == "" {
			hint = "; name a namespace you may read with -n"
		}
		return fmt.Errorf("listing %s in %s: you may not (%w)%s", what, where, err, hint)
	}
	return fmt.Errorf("listing %s in %s: %w", what, where, err)
}

// list lists the objects of gvr in ns ("" all) a page at a time.
func list(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, page int64, each func(*unstructured.Unstructured) error) error {
	opts := metav1.ListOptions{Limit: page}
	for {
		l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if err := each(&l.Items[i]); err != nil {
				return err
			}
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// definedInstances lists the instances of the kinds whose definitions
// deploy the version's template. A caller who may not list
// TemplateDefinitions (cluster-scoped) is warned and sees
// TemplateInstances only.
func definedInstances(ctx context.Context, dyn dynamic.Interface, ns string, page int64, m matcher, log io.Writer) ([]candidate, error) {
	var defs []*v1alpha1.TemplateDefinition
	err := list(ctx, dyn, v1alpha1.GroupVersion.WithResource("templatedefinitions"), "", page, func(u *unstructured.Unstructured) error {
		def := &v1alpha1.TemplateDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, def); err != nil {
			return fmt.Errorf("TemplateDefinition %s: %w", u.GetName(), err)
		}
		if instance.Served(def) && m.sameTemplate(def.Spec.Template) {
			defs = append(defs, def)
		}
		return nil
	})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		if apierrors.IsForbidden(err) && log != nil {
			fmt.Fprintf(log, "dm: warning: you may not list TemplateDefinitions: instances of the kinds they define are not shown\n")
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing TemplateDefinitions: %w", err)
	}
	var out []candidate
	for _, def := range defs {
		gvk := instance.DefinedGVK(def)
		gvr := gvk.GroupVersion().WithResource(instance.Plural(def))
		err := list(ctx, dyn, gvr, ns, page, func(u *unstructured.Unstructured) error {
			ti, err := instance.AsInstance(u, def)
			if err != nil {
				return err
			}
			out = append(out, candidate{ti: ti, kind: gvk.Kind})
			return nil
		})
		if err != nil {
			return nil, listError(gvk.Kind+"s (TemplateDefinition "+def.Name+")", ns, err)
		}
	}
	return out, nil
}

// splitResolved splits a canonical reference into its name and exact
// version.
func splitResolved(resolved string) (string, string, error) {
	r, err := resolve.Parse(resolved)
	if err != nil {
		return "", "", err
	}
	if !r.Full() || strings.Count(r.Version, ".") != 2 {
		return "", "", fmt.Errorf("%q is not a canonical reference with an exact version: %w", resolved, derrors.InvalidArgument)
	}
	v := r.Version
	r.Version, r.Digest = "", ""
	return r.String(), v, nil
}

// matcher tells which instances would take the version.
type matcher struct {
	// name is the version's template, canonical, without version.
	name, version, digest string
	def                   resolve.Registry
}

// sameTemplate tells whether ref names the version's template.
func (m matcher) sameTemplate(ref string) bool {
	r, err := resolve.Parse(ref)
	if err != nil {
		return false
	}
	if r, err = resolve.Qualify(r, m.def); err != nil {
		return false
	}
	r.Version, r.Digest = "", ""
	return r.String() == m.name
}

// takes tells whether ti would take the version under its update
// policy, as dm resolves its reference once the version is published:
// Patch (Manual keeps what it runs; a suspended instance applies
// nothing), a reference to the same template without a digest that
// allows the version (web:v1.2 and web:v1.2.0 the patches of v1.2,
// web:v1.2.3 those from v1.2.3, web:v1 those of v1.0, web the highest
// stable version; a pre-release only when named), and the version newer
// than what the instance runs, or the same with other content.
func (m matcher) takes(ti *v1alpha1.TemplateInstance) bool {
	if ti.Spec.UpdatePolicy == v1alpha1.UpdateManual || ti.Spec.Suspend || ti.DeletionTimestamp != nil || !m.sameTemplate(ti.Spec.Template) {
		return false
	}
	r, _ := resolve.Parse(ti.Spec.Template) // sameTemplate parsed it
	if r.Digest != "" || semver.Prerelease(m.version) != "" {
		return false
	}
	if r.Version != "" {
		want := semver.Canonical(r.Version)
		if semver.Prerelease(want) != "" || semver.MajorMinor(want) != semver.MajorMinor(m.version) || semver.Compare(m.version, want) < 0 {
			return false
		}
	}
	if ti.Status.Resolved == "" {
		// Never applied: its first apply takes the version.
		return true
	}
	_, running, err := splitResolved(ti.Status.Resolved)
	if err != nil {
		return true
	}
	switch c := semver.Compare(m.version, running); {
	case c > 0:
		return true
	case c == 0:
		return m.digest != "" && m.digest != ti.Status.Digest
	}
	return false
}

// previewer previews instances, sharing expansions and clients.
type previewer struct {
	opts  Options
	cache *expansions
	mu    sync.Mutex
	// clients are the impersonating clients, by user and namespace:
	// discovery is read once per account.
	clients map[string]*kube.Client
	// waves are the instances' waves, by NAMESPACE/NAME.
	waves map[string]string
}

// client returns a client acting as user in ns, as dm-controller's does.
func (p *previewer) client(ctx context.Context, user, ns string) (*kube.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := user + "\x00" + ns
	if k := p.clients[key]; k != nil {
		return k, nil
	}
	rc := p.opts.Cluster.REST()
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	k, err := kube.New(ctx, kube.Config{REST: rc, Namespace: ns, FieldManager: instance.FieldManager, DiscoveryCache: "-", QPS: -1})
	if err != nil {
		return nil, err
	}
	p.clients[key] = k
	return k, nil
}

// preview expands the version for one instance and dry-runs it.
func (p *previewer) preview(ctx context.Context, c candidate) Instance {
	ti := c.ti
	out := Instance{Namespace: ti.Namespace, Name: ti.Name, Kind: c.kind, From: ti.Status.Resolved, To: p.opts.Target.Resolved, Changes: []Change{}}
	out.Wave = p.waves[ti.Namespace+"/"+ti.Name]
	changes, err := p.changes(ctx, ti)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	for _, ch := range changes {
		fields := ch.Fields
		if fields == nil {
			fields = []string{}
		}
		out.Changes = append(out.Changes, Change{
			APIVersion: ch.Ref.GroupVersionKind().GroupVersion().String(), Kind: ch.Ref.Kind,
			Namespace: ch.Ref.Namespace, Name: ch.Ref.Name, Action: ch.Action, Fields: fields,
		})
	}
	slices.SortFunc(out.Changes, func(a, b Change) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.APIVersion, b.APIVersion))
	})
	return out
}

// changes dry-runs the version as ti's next revision, as ti's account.
func (p *previewer) changes(ctx context.Context, ti *v1alpha1.TemplateInstance) ([]deploy.Change, error) {
	user, err := instance.User(ti, p.opts.DefaultServiceAccount)
	if err != nil {
		if errors.Is(err, instance.ErrNoAccount) {
			return nil, errors.New("spec.serviceAccountName is not set: name the controller's --default-service-account with --default-service-account")
		}
		return nil, err
	}
	k, err := p.client(ctx, user, ti.Namespace)
	if err != nil {
		return nil, err
	}
	props, _, err := instance.Properties(ctx, ti, k)
	if err != nil {
		return nil, err
	}
	src := instance.Source(ti, props, p.opts.DefaultRegistry, "")
	src.Input.Ref = p.opts.Target.Resolved
	cfg := &deploy.Config{
		Cluster:   k,
		History:   driver.NewSecrets(k.Dynamic()),
		Expander:  p.cache,
		Namespace: ti.Namespace,
	}
	// What the instance has now is its status.inventory, which the
	// controller writes after each apply; an applied instance without
	// one has its history read instead.
	var current []kube.ObjectRef
	if len(ti.Status.Inventory) > 0 || ti.Status.Resolved == "" {
		current = []kube.ObjectRef{}
	}
	for _, o := range ti.Status.Inventory {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("status.inventory: %s %s: %w", o.Kind, o.Name, err)
		}
		current = append(current, kube.ObjectRef{Group: gv.Group, Version: gv.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
	}
	return cfg.Changes(ctx, deploy.ChangesOptions{Name: ti.Name, Source: src, Force: true, Current: current})
}
