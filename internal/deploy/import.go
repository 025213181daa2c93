package deploy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/manifest"
)

// ImportOptions are Import's options.
type ImportOptions struct {
	// Name is the deployment to create.
	Name string
	// Objects are the objects another tool deployed (Helm's manifest),
	// as decoded.
	Objects []map[string]any
	// Input and Properties are recorded with revision 1: what the objects
	// were made from, and the values they were made with.
	Input      release.Input
	Properties map[string]any
	// Type names what made the objects in the layout and in each
	// object's dm.io/template annotation ("helm:CHART@VERSION").
	Type string
	// Description is revision 1's description.
	Description string
	// DryRun is "", "client" or "server", as for ApplyOptions.
	DryRun string
	// TakeOver names the client-side field managers (Helm's "helm")
	// whose fields dm takes over once the objects are applied, so that a
	// later dm update that changes such a field conflicts with no one: a
	// forced apply of the same values only shares them.
	TakeOver []string
	// WaitForLock is as for ApplyOptions.
	WaitForLock time.Duration
}

// Import adopts objects that another tool deployed as revision 1 of a new
// deployment: it applies them unchanged but for dm's labels and
// annotations, server-side with dm as field manager taking over the
// fields their previous managers own, so the workloads are not replaced.
// A deployment of that name that exists is refused, as is an object that
// another dm deployment owns.
func (c *Config) Import(ctx context.Context, opts ImportOptions) (*Result, error) {
	return retryRaced(opts.WaitForLock, func(until time.Time) (*Result, error) { return c.importOnce(ctx, opts, until) })
}

func (c *Config) importOnce(ctx context.Context, opts ImportOptions, until time.Time) (*Result, error) {
	ns := c.namespace()
	hist, err := c.actionHistory(ctx, ns, opts.Name, opts.DryRun, lock{until: until})
	if err != nil {
		return nil, err
	}
	if live := liveRecord(hist); live != nil {
		return nil, fmt.Errorf("deployment %s exists in namespace %s (revision %d, %s); delete it first or import under another name: %w",
			opts.Name, ns, live.Revision, live.Status, derrors.AlreadyExists)
	}
	if len(opts.Objects) == 0 {
		return nil, fmt.Errorf("nothing to import into %s: no objects: %w", opts.Name, derrors.InvalidArgument)
	}
	x := importResult(opts)
	aopts := ApplyOptions{DryRun: opts.DryRun, Adopt: true, ForceConflicts: true, HistoryMax: -1}
	if opts.DryRun == "" {
		// Every object is tried first with a server-side dry run, so that
		// one the user may read but not patch (in a namespace they have
		// fewer rights in) stops the import before anything changes.
		p, err := objectsOf(x, opts.Name, ns, manifest.Options{})
		if err != nil {
			return nil, err
		}
		dry := aopts
		dry.DryRun = "server"
		if _, err := c.apply(ctx, opts.Name, hist, p, &release.Record{}, dry); err != nil {
			return nil, fmt.Errorf("importing %s (nothing was changed): %w", opts.Name, err)
		}
	}
	p, err := objectsOf(x, opts.Name, ns, manifest.Options{})
	if err != nil {
		return nil, err
	}
	rec := &release.Record{
		Description: opts.Description,
		Input:       opts.Input,
		Properties:  opts.Properties,
		Layout:      x.Layout,
	}
	res, err := c.apply(ctx, opts.Name, hist, p, rec, aopts)
	if err != nil || opts.DryRun != "" || len(opts.TakeOver) == 0 {
		return res, err
	}
	refs := make([]kube.ObjectRef, len(p.objects))
	for i, o := range p.objects {
		refs[i] = o.ref()
	}
	if err := c.Cluster.TakeOverFields(ctx, refs, opts.TakeOver); err != nil {
		return res, fmt.Errorf("imported %s, but taking over the fields of %s: %w", opts.Name, strings.Join(opts.TakeOver, ", "), p.annotate(err))
	}
	return res, nil
}

// importResult makes an expansion of the objects: one primitive each,
// named after its kind and name, under one layout node for opts.Type.
func importResult(opts ImportOptions) *expand.Result {
	x := &expand.Result{}
	top := &expand.LayoutResource{Name: opts.Name, Type: opts.Type}
	seen := map[string]int{}
	for _, o := range opts.Objects {
		kind, _ := o["kind"].(string)
		md, _ := o["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		rn := strings.ToLower(kind) + "-" + name
		if n := seen[rn]; n > 0 {
			// The same kind and name in two API groups or namespaces.
			seen[rn]++
			rn = fmt.Sprintf("%s-%d", rn, n+1)
		} else {
			seen[rn] = 1
		}
		api, _ := o["apiVersion"].(string)
		typ := api + "/" + kind
		x.Config.Resources = append(x.Config.Resources, expand.Resource{Name: rn, Type: typ, Properties: o})
		top.Resources = append(top.Resources, &expand.LayoutResource{Name: rn, Type: typ})
		x.Order = append(x.Order, rn)
	}
	x.Layout.Resources = []*expand.LayoutResource{top}
	return x
}
