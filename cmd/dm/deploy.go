package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/octemplate"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/version"
)

// applyFlags are the flags of the commands that apply objects.
type applyFlags struct {
	configFlags
	values          []string
	name            string
	createNamespace bool
	wait            bool
	timeout         time.Duration
	dryRun          string
	forceConflicts  bool
	adopt           bool
	atomic          bool
	upgrade         bool
	historyMax      int
	pruneCRDs       bool
	reuseProperties bool
	strict          bool
	// ask: required properties without a value are asked for (dm deploy).
	ask bool
}

func (f *applyFlags) options() deploy.ApplyOptions {
	hm := f.historyMax
	if hm == 0 {
		hm = -1 // 0 keeps everything, as Helm's --history-max 0
	}
	return deploy.ApplyOptions{
		DryRun: f.dryRun, Wait: f.wait, Timeout: f.timeout, ForceConflicts: f.forceConflicts,
		Adopt: f.adopt, Atomic: f.atomic, PruneCRDs: f.pruneCRDs, CreateNamespace: f.createNamespace,
		HistoryMax: hm,
	}
}

func addApplyFlags(cmd *cobra.Command, f *applyFlags, install bool) {
	fs := cmd.Flags()
	addConfigFlags(fs, &f.configFlags)
	fs.StringArrayVar(&f.values, "values", nil, "YAML `file` of properties (repeatable; --properties override)")
	fs.BoolVar(&f.wait, "wait", false, "wait until every object is ready (kstatus Current), printing progress on stderr")
	fs.DurationVar(&f.timeout, "timeout", deploy.DefaultTimeout, "how long --wait and deferred references wait")
	fs.StringVar(&f.dryRun, "dry-run", "", "`client`: print the objects; server: validate them with server-side dry-run applies; neither records anything")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&f.forceConflicts, "force-conflicts", false, "take over fields that other field managers own")
	fs.BoolVar(&f.adopt, "adopt", false, "take over existing objects that no dm deployment owns")
	fs.BoolVar(&f.atomic, "atomic", false, "on failure, roll back to the last deployed revision")
	fs.IntVar(&f.historyMax, "history-max", driver.DefaultHistoryMax, "revisions of history to keep (0: all)")
	fs.BoolVar(&f.pruneCRDs, "prune-crds", false, "allow pruning CustomResourceDefinitions that still have custom resources")
	fs.BoolVar(&f.createNamespace, "create-namespace", false, "create the namespace if it does not exist")
	fs.BoolVar(&f.strict, "strict", false, "fail on properties a template's schema does not define (otherwise a warning on stderr)")
	if install {
		f.ask = true
		fs.StringVar(&f.name, "name", "", "deployment `name` (default: the template's or configuration file's name)")
		fs.BoolVar(&f.upgrade, "upgrade", false, "update the deployment if it exists")
	} else {
		fs.BoolVar(&f.reuseProperties, "reuse-properties", false, "merge --properties/--values over the last revision's properties")
	}
}

func (f *applyFlags) check() error {
	switch f.dryRun {
	case "", "client", "server":
		return nil
	}
	return &usageError{fmt.Errorf("--dry-run=%q: want client or server", f.dryRun)}
}

// deployConfig connects to the cluster (without contacting it) and
// returns the actions' configuration.
func (g *globals) deployConfig(ctx context.Context) (*deploy.Config, error) {
	c, err := g.kubeClient(ctx)
	if err != nil {
		return nil, err
	}
	return &deploy.Config{
		Cluster:   c,
		History:   driver.NewSecrets(c.Dynamic()),
		Expander:  deploy.ExpandFunc(g.expandSource),
		Log:       g.stderr,
		DMVersion: version.Get().Short(),
	}, nil
}

// expandSource expands in-process or through --server: registryd expands,
// dm applies with the user's own credentials.
func (g *globals) expandSource(ctx context.Context, src deploy.Source) (*expand.Result, error) {
	b, err := g.backend()
	if err != nil {
		return nil, err
	}
	req := &api.ExpandRequest{
		Config: src.Input.Config, ConfigName: src.Input.ConfigName, Imports: src.Input.Imports,
		Ref: src.Input.Ref, Properties: src.Properties, Name: src.Name,
		Deployment: src.Deployment, Namespace: src.Namespace, Registry: src.Input.Registry,
		Env: src.Env, Strict: src.Strict, SkipSchemaValidation: src.SkipSchemaValidation,
	}
	return b.Expand(ctx, req)
}

// source reads the argument of deploy, update and diff: a configuration
// file (- for stdin) or a template reference.
func (g *globals) source(ctx context.Context, arg string, f *applyFlags, stdin io.Reader) (deploy.Source, error) {
	props, text, err := g.propertyValues(f.values)
	if err != nil {
		return deploy.Source{}, err
	}
	env, err := f.templateEnv()
	if err != nil {
		return deploy.Source{}, err
	}
	server := g.server
	if server == "" {
		server = g.getenv("DM_SERVER")
	}
	src := deploy.Source{Properties: props, Env: env, Strict: f.strict, SkipSchemaValidation: f.skipSchema, Input: release.Input{Server: server}}
	if arg == "" {
		return src, nil
	}
	req := &api.ExpandRequest{}
	switch {
	case isConfigArg(arg):
		if err := readConfig(req, arg, stdin, f.importRoot); err != nil {
			return src, err
		}
		if f.ask {
			b, err := g.backend()
			if err != nil {
				return src, err
			}
			if src.Properties, err = g.configProperties(ctx, b, req, props, stdin); err != nil {
				return src, err
			}
		}
	case looksLikeConfigFile(arg):
		_, err := os.Stat(arg)
		return src, fmt.Errorf("configuration file: %w", err)
	case strings.HasPrefix(arg, octemplate.Prefix):
		// A Template kept in the cluster, read with the user's credentials.
		if src.Properties, err = g.templateSource(ctx, req, arg, props, text, f.ask, stdin); err != nil {
			return src, err
		}
	default:
		req.Ref = arg
		b, err := g.backend()
		if err != nil {
			return src, err
		}
		// Properties a schema types as strings keep their text, and a
		// deployment asks for the required ones, as dm expand does.
		if src.Properties, err = g.refProperties(ctx, b, arg, props, text, f.ask, stdin); err != nil {
			return src, err
		}
	}
	src.Input = release.Input{Ref: req.Ref, Registry: g.registry, Config: req.Config, ConfigName: req.ConfigName, Imports: req.Imports, Server: server}
	return src, nil
}

func newDeployCommands(g *globals, p *printer) []*cobra.Command {
	var df applyFlags
	deployCmd := &cobra.Command{
		Use:   "deploy REF|CONFIG.yaml|template:NAMESPACE/NAME",
		Short: "Deploy a template reference or a configuration into the cluster as a new deployment",
		Long: `Expand a template reference (with --properties/--values) or a configuration and apply
the objects with server-side apply (field manager dm), recording revision 1 of the
deployment in its namespace. The name defaults to the template's (or the file's) name.
A deployment that exists is an error: use dm update, or deploy --upgrade.
template:NAMESPACE/NAME deploys an OpenShift Template kept in the cluster (read with
your credentials), --properties giving its parameters.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := df.check(); err != nil {
				return err
			}
			src, err := g.source(cmd.Context(), args[0], &df, cmd.InOrStdin())
			if err != nil {
				return err
			}
			name := df.name
			if name == "" {
				name = deploymentName(args[0])
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			res, err := c.Deploy(cmd.Context(), deploy.DeployOptions{ApplyOptions: df.options(), Name: name, Source: src, Upgrade: df.upgrade})
			return p.applied(c, res, df.dryRun, err)
		},
	}
	addApplyFlags(deployCmd, &df, true)

	var uf applyFlags
	updateCmd := &cobra.Command{
		Use:   "update NAME [REF|CONFIG.yaml]",
		Short: "Deploy a new revision of a deployment, pruning the objects it no longer has",
		Long: `Expand again and apply a new revision. Without REF|CONFIG the last revision's input is
expanded again, and its reference resolved again (redis:v1 picks up a new patch release);
--properties/--values replace the last revision's properties, or with --reuse-properties
are merged over them. Objects of the previous revision that the new one no longer has
are pruned (only those that carry this deployment's labels).`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := uf.check(); err != nil {
				return err
			}
			src, err := g.source(cmd.Context(), optional(args[1:]), &uf, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			res, err := c.Update(cmd.Context(), deploy.UpdateOptions{ApplyOptions: uf.options(), Name: args[0], Source: src, ReuseProperties: uf.reuseProperties})
			return p.applied(c, res, uf.dryRun, err)
		},
	}
	addApplyFlags(updateCmd, &uf, false)

	var rf applyFlags
	rollbackCmd := &cobra.Command{
		Use:   "rollback NAME [REVISION]",
		Short: "Deploy a new revision with the objects an earlier revision applied (default: the previous one)",
		Args:  rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.check(); err != nil {
				return err
			}
			rev := 0
			if len(args) == 2 {
				n, err := strconv.Atoi(args[1])
				if err != nil || n <= 0 {
					return &usageError{fmt.Errorf("revision %q: want a positive number", args[1])}
				}
				rev = n
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			res, err := c.Rollback(cmd.Context(), args[0], rev, rf.options())
			return p.applied(c, res, rf.dryRun, err)
		},
	}
	addApplyFlags(rollbackCmd, &rf, false)
	rollbackCmd.Flags().MarkHidden("reuse-properties")
	rollbackCmd.Flags().MarkHidden("values")
	rollbackCmd.Flags().MarkHidden("strict")
	rollbackCmd.Flags().MarkHidden("skip-schema-validation")
	rollbackCmd.Flags().MarkHidden("env")
	rollbackCmd.Flags().MarkHidden("import-root")

	var delf deploy.DeleteOptions
	deleteCmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a deployment's objects (in reverse order) and its history",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			refs, err := c.Delete(cmd.Context(), args[0], delf)
			if err != nil {
				return err
			}
			fmt.Fprintf(p.w, "deployment %s deleted (%d objects)\n", args[0], len(refs))
			return nil
		},
	}
	deleteCmd.Flags().BoolVar(&delf.KeepHistory, "keep-history", false, "keep the deployment's history records")
	deleteCmd.Flags().BoolVar(&delf.Wait, "wait", false, "wait until the objects are gone")
	deleteCmd.Flags().DurationVar(&delf.Timeout, "timeout", deploy.DefaultTimeout, "how long --wait waits")
	deleteCmd.Flags().BoolVar(&delf.PruneCRDs, "prune-crds", false, "allow deleting CustomResourceDefinitions that still have custom resources")

	var all bool
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List the deployments of the namespace (-A: of every namespace)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			recs, err := c.List(cmd.Context(), all)
			if err != nil {
				return err
			}
			return p.list(recs)
		},
	}
	listCmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the deployments of every namespace")

	getCmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a deployment: revision, status, and each object with its layout path and live readiness",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			r, err := c.Revision(cmd.Context(), args[0], 0)
			if err != nil {
				return err
			}
			st, err := c.Statuses(cmd.Context(), r)
			if err != nil {
				return err
			}
			return p.deployment(r, st)
		},
	}

	historyCmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions of a deployment",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			hist, err := c.Revisions(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return p.history(hist)
		},
	}

	var mrev int
	manifestCmd := &cobra.Command{
		Use:   "manifest NAME",
		Short: "Print the objects a revision applied (default: the latest)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			r, err := c.Revision(cmd.Context(), args[0], mrev)
			if err != nil {
				return err
			}
			return p.objects(r.Objects)
		},
	}
	manifestCmd.Flags().IntVar(&mrev, "revision", 0, "`revision` to print (default: the latest)")

	var xf applyFlags
	diffCmd := &cobra.Command{
		Use:   "diff REF|CONFIG.yaml",
		Short: "Compare what deploying would apply (server-side dry run) with the live objects; exit 1 if they differ",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := g.source(cmd.Context(), args[0], &xf, cmd.InOrStdin())
			if err != nil {
				return err
			}
			name := xf.name
			if name == "" {
				name = deploymentName(args[0])
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			diff, changed, err := c.Diff(cmd.Context(), deploy.DiffOptions{Name: name, Source: src})
			if err != nil {
				return err
			}
			fmt.Fprint(p.w, diff)
			if changed {
				return &silentExit{1}
			}
			return nil
		},
	}
	diffCmd.Flags().StringVar(&xf.name, "name", "", "deployment `name` (default: the template's or configuration file's name)")
	diffCmd.Flags().StringArrayVar(&xf.values, "values", nil, "YAML `file` of properties (repeatable; --properties override)")
	diffCmd.Flags().BoolVar(&xf.strict, "strict", false, "fail on properties a template's schema does not define")
	addConfigFlags(diffCmd.Flags(), &xf.configFlags)

	var tall bool
	typesCmd := &cobra.Command{
		Use:   "types",
		Short: "List the template types in use in the namespace's deployments (-A: every namespace), with versions and instance counts",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			types, err := c.Types(cmd.Context(), tall)
			if err != nil {
				return err
			}
			if ok, err := p.structured(map[string]any{"items": nonNil(types)}); ok {
				return err
			}
			rows := make([][]string, len(types))
			for i, t := range types {
				rows[i] = []string{t.Template, orDash(t.Version), strconv.Itoa(t.Instances), strconv.Itoa(t.Deployments)}
			}
			return p.table([]string{"TEMPLATE", "VERSION", "INSTANCES", "DEPLOYMENTS"}, rows)
		},
	}
	typesCmd.Flags().BoolVarP(&tall, "all-namespaces", "A", false, "look at the deployments of every namespace")

	var iall bool
	instancesCmd := &cobra.Command{
		Use:   "instances TYPE",
		Short: "List which deployments use a template, and where in their layouts",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			ins, err := c.Instances(cmd.Context(), args[0], iall)
			if err != nil {
				return err
			}
			if ok, err := p.structured(map[string]any{"items": nonNil(ins)}); ok {
				return err
			}
			rows := make([][]string, len(ins))
			for i, in := range ins {
				rows[i] = []string{in.Namespace, in.Deployment, strconv.Itoa(in.Revision), in.Path, in.Template}
			}
			return p.table([]string{"NAMESPACE", "DEPLOYMENT", "REVISION", "PATH", "TEMPLATE"}, rows)
		},
	}
	instancesCmd.Flags().BoolVarP(&iall, "all-namespaces", "A", false, "look at the deployments of every namespace")

	return []*cobra.Command{deployCmd, updateCmd, rollbackCmd, deleteCmd, listCmd, getCmd, historyCmd, manifestCmd, diffCmd, typesCmd, instancesCmd}
}

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
	Updated     time.Time          `json:"updated"`
	References  []expand.Reference `json:"references,omitempty"`
	Resources   []resourceView     `json:"resources"`
}

func viewOf(r *release.Record, st []kube.Status) deploymentView {
	v := deploymentView{
		Name: r.Name, Namespace: r.Namespace, Revision: r.Revision, Status: string(r.Status),
		Description: r.Description, Updated: r.Updated, References: r.References, Controller: r.Controller,
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
			v.Resources[i].Status, v.Resources[i].Message = st[i].Status, st[i].Message
		}
	}
	return v
}

// deployment prints one deployment with its objects.
func (p *printer) deployment(r *release.Record, st []kube.Status) error {
	v := viewOf(r, st)
	if ok, err := p.structured(v); ok {
		return err
	}
	fmt.Fprintf(p.w, "NAME:         %s\nNAMESPACE:    %s\nREVISION:     %d\nSTATUS:       %s\nTEMPLATE:     %s\nUPDATED:      %s\n",
		v.Name, v.Namespace, v.Revision, v.Status, orDash(v.Template), v.Updated.Format(time.RFC3339))
	if v.Description != "" {
		fmt.Fprintf(p.w, "DESCRIPTION:  %s\n", v.Description)
	}
	if v.Controller != "" {
		fmt.Fprintf(p.w, "MANAGED BY:   %s (dm-controller; change the instance, not the deployment)\n", v.Controller)
	}
	fmt.Fprintln(p.w)
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
		if st != nil {
			status := orDash(res.Status)
			if res.Message != "" && res.Status != kube.Current {
				status += ": " + res.Message
			}
			rows[i] = append(rows[i], status)
		}
	}
	header := []string{"KIND", "NAME", "PATH"}
	if st != nil {
		header = append(header, "STATUS")
	}
	return p.table(header, rows)
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
	}
	items := make([]item, len(hist))
	rows := make([][]string, len(hist))
	for i, r := range hist {
		v := viewOf(r, nil)
		items[i] = item{r.Revision, string(r.Status), v.Template, r.Description, r.Updated, r.DMVersion, r.Controller}
		desc := r.Description
		if i := strings.IndexByte(desc, '\n'); i >= 0 {
			desc = desc[:i] + " …"
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
	for _, o := range objs {
		fmt.Fprintln(p.w, "---")
		if err := printYAML(p.w, o); err != nil {
			return err
		}
	}
	return nil
}

// applied prints the outcome of deploy, update or rollback (the action
// said on stderr which version the reference resolved to).
func (p *printer) applied(c *deploy.Config, res *deploy.Result, dryRun string, err error) error {
	if err != nil {
		return err
	}
	if dryRun != "" {
		objs := make([]map[string]any, len(res.Objects))
		for i, u := range res.Objects {
			objs[i] = u.Object
		}
		if dryRun == "server" {
			fmt.Fprintf(p.g.stderr, "dm: server dry run: the server accepted %d objects; nothing was applied or recorded\n", len(objs))
		}
		return p.objects(objs)
	}
	return p.deployment(res.Record, nil)
}
