package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
)

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// silentExit ends dm with a status and no message (dm diff's 1).
type silentExit struct{ code int }

func (e *silentExit) Error() string { return "exit status " + strconv.Itoa(e.code) }

// resourceView is one object of a deployment as dm get prints it.
type resourceView struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace"`
	Path      string `json:"path,omitempty"`
	Template  string `json:"template,omitempty"`
	Status    string `json:"status,omitempty"`
	Message   string `json:"message,omitempty"`
	// DeletionPolicy is, for a Config Connector object, what deleting it
	// does to its Google Cloud resource: abandon or delete.
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
}

// deploymentView is a deployment as dm get and dm deploy print it.
type deploymentView struct {
	Name        string             `json:"name"`
	Namespace   string             `json:"namespace"`
	Revision    int                `json:"revision"`
	Status      string             `json:"status"`
	Description string             `json:"description,omitempty"`
	Template    string             `json:"template,omitempty"`
	Controller  string             `json:"controller,omitempty"`
	Lease       *release.Lease     `json:"lease,omitempty"`
	Updated     time.Time          `json:"updated"`
	References  []expand.Reference `json:"references,omitempty"`
	Resources   []resourceView     `json:"resources"`
	// Outputs are the deployment's outputs, read from the live objects
	// (dm get).
	Outputs map[string]any `json:"outputs,omitempty"`
}

func viewOf(r *release.Record, st []kube.Status) deploymentView {
	v := deploymentView{
		Name: r.Name, Namespace: r.Namespace, Revision: r.Revision, Status: string(r.Status),
		Description: r.Description, Updated: r.Updated, References: r.References, Controller: r.Controller, Lease: r.Lease,
		Resources: make([]resourceView, len(r.Resources)),
	}
	if r.Input.Ref != "" {
		v.Template = r.Input.Ref
		for _, ref := range r.References {
			if ref.Ref == r.Input.Ref {
				v.Template = ref.Resolved
				break
			}
		}
	} else if ch := r.Input.Chart; ch != nil && r.Input.Config == "" {
		v.Template = "helm:" + ch.Name + "@" + ch.Version
	} else {
		v.Template = r.Input.ConfigName
	}
	for i, res := range r.Resources {
		v.Resources[i] = resourceView{APIVersion: res.APIVersion, Kind: res.Kind, Name: res.Name, Namespace: res.Namespace, Path: res.Path, Template: res.Template}
		if i < len(st) {
			v.Resources[i].Status, v.Resources[i].Message, v.Resources[i].DeletionPolicy = st[i].Status, st[i].Message, st[i].DeletionPolicy
		}
	}
	return v
}

// deployment prints one deployment with its objects, and its outputs
// when it has them.
func (p *printer) deployment(r *release.Record, st []kube.Status, outputs map[string]any) error {
	v := viewOf(r, st)
	v.Outputs = outputs
	if ok, err := p.structured(v); ok {
		return err
	}
	fmt.Fprintf(p.w, "NAME:         %s\nNAMESPACE:    %s\nREVISION:     %d\nSTATUS:       %s\nTEMPLATE:     %s\nUPDATED:      %s\n",
		v.Name, v.Namespace, v.Revision, v.Status, orDash(v.Template), v.Updated.Format(time.RFC3339))
	if v.Description != "" && r.Lease == nil {
		fmt.Fprintf(p.w, "DESCRIPTION:  %s\n", v.Description)
	}
	if r.Lease != nil {
		fmt.Fprintf(p.w, "HELD BY:      %s\n", heldBy(r.Lease))
	}
	if v.Controller != "" {
		fmt.Fprintf(p.w, "MANAGED BY:   %s (dm-controller; change the instance, not the deployment)\n", v.Controller)
	}
	fmt.Fprintln(p.w)
	// The deletion policy, when Config Connector objects have one (before
	// the status, whose messages are long).
	policies := slices.ContainsFunc(v.Resources, func(r resourceView) bool { return r.DeletionPolicy != "" })
	rows := make([][]string, len(v.Resources))
	for i, res := range v.Resources {
		kind := res.Kind
		if g, _, ok := strings.Cut(res.APIVersion, "/"); ok {
			kind += "." + g
		}
		name := res.Name
		if res.Namespace != "" {
			name = res.Namespace + "/" + name
		}
		rows[i] = []string{kind, name, res.Path}
		if policies {
			rows[i] = append(rows[i], orDash(res.DeletionPolicy))
		}
		if st != nil {
			status := orDash(res.Status)
			if res.Message != "" && res.Status != kube.Current {
				status += ": " + res.Message
			}
			rows[i] = append(rows[i], status)
		}
	}
	header := []string{"KIND", "NAME", "PATH"}
	if policies {
		header = append(header, "DELETION")
	}
	if st != nil {
		header = append(header, "STATUS")
	}
	if err := p.table(header, rows); err != nil || len(outputs) == 0 {
		return err
	}
	fmt.Fprintln(p.w)
	names := slices.Sorted(maps.Keys(outputs))
	orows := make([][]string, len(names))
	for i, n := range names {
		val, ok := outputs[n].(string)
		if !ok {
			b, _ := json.Marshal(outputs[n])
			val = string(b)
		}
		orows[i] = []string{n, val}
	}
	return p.table([]string{"OUTPUT", "VALUE"}, orows)
}

// heldBy says who holds a record's lease, for the tables: the record's
// description is what the holder will write when it is done.
func heldBy(l *release.Lease) string {
	return fmt.Sprintf("%s in progress: held by %s since %s (by its clock)", l.Operation, l.Holder, l.Acquired.Format(time.RFC3339))
}

// list prints the deployments.
func (p *printer) list(recs []*release.Record) error {
	type item struct {
		Name      string    `json:"name"`
		Namespace string    `json:"namespace"`
		Revision  int       `json:"revision"`
		Status    string    `json:"status"`
		Template  string    `json:"template,omitempty"`
		Updated   time.Time `json:"updated"`
		// Controller names the instance managing the deployment.
		Controller string `json:"controller,omitempty"`
	}
	items := make([]item, len(recs))
	rows := make([][]string, len(recs))
	for i, r := range recs {
		v := viewOf(r, nil)
		items[i] = item{r.Name, r.Namespace, r.Revision, string(r.Status), v.Template, r.Updated, r.Controller}
		rows[i] = []string{r.Name, r.Namespace, strconv.Itoa(r.Revision), statusCell(r), orDash(v.Template), r.Updated.Format(time.RFC3339)}
	}
	if ok, err := p.structured(map[string]any{"items": items}); ok {
		return err
	}
	return p.table([]string{"NAME", "NAMESPACE", "REVISION", "STATUS", "TEMPLATE", "UPDATED"}, rows)
}

// statusCell is a revision's status as the tables show it: marked when
// dm-controller manages the deployment.
func statusCell(r *release.Record) string {
	if r.Controller != "" {
		return string(r.Status) + " (controller)"
	}
	return string(r.Status)
}

// history prints a deployment's revisions.
func (p *printer) history(hist []*release.Record) error {
	type item struct {
		Revision    int       `json:"revision"`
		Status      string    `json:"status"`
		Template    string    `json:"template,omitempty"`
		Description string    `json:"description,omitempty"`
		Updated     time.Time `json:"updated"`
		DMVersion   string    `json:"dmVersion,omitempty"`
		Controller  string    `json:"controller,omitempty"`
		// Lease says who holds the revision while it is being applied
		// (or the deployment deleted).
		Lease *release.Lease `json:"lease,omitempty"`
	}
	items := make([]item, len(hist))
	rows := make([][]string, len(hist))
	for i, r := range hist {
		v := viewOf(r, nil)
		items[i] = item{r.Revision, string(r.Status), v.Template, r.Description, r.Updated, r.DMVersion, r.Controller, r.Lease}
		desc := r.Description
		if i := strings.IndexByte(desc, '\n'); i >= 0 {
			desc = desc[:i] + " …"
		}
		if r.Lease != nil {
			desc = heldBy(r.Lease)
		}
		rows[i] = []string{strconv.Itoa(r.Revision), r.Updated.Format(time.RFC3339), statusCell(r), orDash(v.Template), desc}
	}
	if ok, err := p.structured(map[string]any{"items": items}); ok {
		return err
	}
	return p.table([]string{"REVISION", "UPDATED", "STATUS", "TEMPLATE", "DESCRIPTION"}, rows)
}

// objects prints objects as a YAML stream (or a JSON List with -o json).
func (p *printer) objects(objs []map[string]any) error {
	if p.g.output == "json" {
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = o
		}
		_, err := p.structured(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		return err
	}
	return printObjects(p.w, objs, false)
}

// applied prints the outcome of deploy, update or rollback (the action
// said on stderr which version the reference resolved to).
func (p *printer) applied(c *deploy.Config, res *deploy.Result, dryRun string, err error) error {
	if err != nil {
		return err
	}
	if dryRun != "" {
		if dryRun == "server" {
			hooks := ""
			if len(res.Hooks) > 0 {
				hooks = fmt.Sprintf(" and %d hooks", len(res.Hooks))
			}
			fmt.Fprintf(p.g.stderr, "dm: server dry run: the server accepted %d objects%s; nothing was applied or recorded\n", len(res.Objects), hooks)
		}
		return p.dryRun(res)
	}
	return p.deployment(res.Record, nil, nil)
}

// hookView is a hook as a dry run prints it with -o json.
type hookView struct {
	Event  string         `json:"event"`
	Weight int            `json:"weight"`
	Path   string         `json:"path,omitempty"`
	Object map[string]any `json:"object"`
}

// dryRun prints what a dry run would apply, in the order the action
// applies it: the pre- hooks, the objects, the post- hooks. A YAML
// stream marks each hook with a comment saying its event, weight and
// layout path; -o json prints a List of the objects with the hooks in a
// field of their own, hooks, so that the items stay the release's objects.
func (p *printer) dryRun(res *deploy.Result) error {
	if p.g.output == "json" {
		items := make([]any, len(res.Objects))
		for i, u := range res.Objects {
			items[i] = u.Object
		}
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		if len(res.Hooks) > 0 {
			hooks := make([]hookView, len(res.Hooks))
			for i, h := range res.Hooks {
				hooks[i] = hookView{Event: h.Event, Weight: h.Weight, Path: h.Path, Object: h.Object.Object}
			}
			list["hooks"] = hooks
		}
		_, err := p.structured(list)
		return err
	}
	pre, post := res.Hooks, []deploy.Hook(nil)
	for i, h := range res.Hooks {
		if strings.HasPrefix(h.Event, "post-") {
			pre, post = res.Hooks[:i], res.Hooks[i:]
			break
		}
	}
	hooks := func(hs []deploy.Hook) error {
		for _, h := range hs {
			fmt.Fprintf(p.w, "---\n# hook: %s, weight %d, layout path %s\n", h.Event, h.Weight, h.Path)
			if err := printYAML(p.w, h.Object.Object); err != nil {
				return err
			}
		}
		return nil
	}
	if err := hooks(pre); err != nil {
		return err
	}
	for _, u := range res.Objects {
		fmt.Fprintln(p.w, "---")
		if err := printYAML(p.w, u.Object); err != nil {
			return err
		}
	}
	return hooks(post)
}
