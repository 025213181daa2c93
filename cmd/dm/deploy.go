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
	"github.com/spf13/pflag"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/driver"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/octemplate"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/version"
)

// lockFlags are the flags of the commands that change a deployment: how
// they wait for another that holds it, and how long their own hold lasts.
type lockFlags struct {
	waitForLock   time.Duration
	leaseDuration time.Duration
}

func addLockFlags(fs *pflag.FlagSet, f *lockFlags) {
	fs.DurationVar(&f.waitForLock, "wait-for-lock", deploy.DefaultWaitForLock, "how long to wait for another dm (or dm-controller) that is changing the deployment to finish, then fail naming it (0: do not wait; one that stopped renewing its lease is taken over once the lease expires)")
	fs.DurationVar(&f.leaseDuration, "lease-duration", deploy.DefaultLeaseDuration, "how long this dm's hold on the deployment lasts without a renewal (it renews every third of it): if it is killed, others take over after that")
}

func (f *lockFlags) check() error {
	// Zero: not a flag of this command (dm diff), or the default.
	if f.leaseDuration < 0 || f.leaseDuration > 0 && f.leaseDuration < time.Second {
		return &usageError{fmt.Errorf("--lease-duration %s: want at least 1s", f.leaseDuration)}
	}
	return nil
}

// lockWait is --wait-for-lock as the actions take it.
func (f *lockFlags) lockWait() time.Duration {
	if f.waitForLock <= 0 {
		return -1 // 0: no wait
	}
	return f.waitForLock
}

// config sets the lease's duration on c.
func (f *lockFlags) config(c *deploy.Config) *deploy.Config {
	c.Lease.Duration = f.leaseDuration
	return c
}

// applyFlags are the flags of the commands that apply objects.
type applyFlags struct {
	configFlags
	gcpFlags
	lockFlags
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
		HistoryMax: hm, WaitForLock: f.lockWait(),
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
	addGCPFlags(fs, &f.gcpFlags, "", "default: Config Connector's own, delete (dm update: the last revision's)")
	addLockFlags(fs, &f.lockFlags)
	if install {
		f.ask = true
		fs.StringVar(&f.name, "name", "", "deployment `name` (default: the template's or configuration file's name)")
		fs.BoolVar(&f.upgrade, "upgrade", false, "update the deployment if it exists")
	} else {
		fs.BoolVar(&f.reuseProperties, "reuse-properties", false, "merge --properties/--values over the last revision's properties")
	}
}

func (f *applyFlags) check() error {
	if err := f.gcpFlags.check(); err != nil {
		return err
	}
	if err := f.lockFlags.check(); err != nil {
		return err
	}
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
	// Charts deployed see the cluster's .Capabilities and lookup reads
	// it, as under helm install; dm-helm reads it with the same kubeconfig.
	g.engines()
	g.helm.Cluster = &helmproxy.Cluster{Kubeconfig: g.kube.kubeconfig, Context: g.kube.context}
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
	src := deploy.Source{Properties: props, Env: env, Strict: f.strict, SkipSchemaValidation: f.skipSchema, Input: release.Input{Server: server},
		Project: f.project, DeletionPolicy: f.deletionPolicy}
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

// newDeployCommands returns the commands that work on deployments in the
// cluster, each from its own constructor.
func newDeployCommands(g *globals, p *printer) []*cobra.Command {
	return []*cobra.Command{
		newDeployCommand(g, p), newUpdateCommand(g, p), newRollbackCommand(g, p),
		newDeleteCommand(g, p), newListCommand(g, p), newGetCommand(g, p),
		newHistoryCommand(g, p), newManifestCommand(g, p), newDiffCommand(g, p),
		newTypesCommand(g, p), newInstancesCommand(g, p),
	}
}

// newDeployCommand is dm deploy.
func newDeployCommand(g *globals, p *printer) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
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
			if err := f.check(); err != nil {
				return err
			}
			src, err := g.source(cmd.Context(), args[0], &f, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			f.lockFlags.config(c)
			res, err := c.Deploy(cmd.Context(), deploy.DeployOptions{ApplyOptions: f.options(), Name: f.nameOr(args[0]), Source: src, Upgrade: f.upgrade, NameDefaulted: f.name == ""})
			return p.applied(c, res, f.dryRun, err)
		},
	}
	addApplyFlags(cmd, &f, true)
	return cmd
}

// nameOr is --name, else the deployment name arg gives.
func (f *applyFlags) nameOr(arg string) string {
	if f.name != "" {
		return f.name
	}
	return deploymentName(arg)
}

// newUpdateCommand is dm update.
func newUpdateCommand(g *globals, p *printer) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "update NAME [REF|CONFIG.yaml]",
		Short: "Deploy a new revision of a deployment, pruning the objects it no longer has",
		Long: `Expand again and apply a new revision. Without REF|CONFIG the last revision's input is
expanded again, and its reference resolved again (redis:v1 picks up a new patch release);
--properties/--values replace the last revision's properties, or with --reuse-properties
are merged over them. Objects of the previous revision that the new one no longer has
are pruned (only those that carry this deployment's labels).`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			src, err := g.source(cmd.Context(), optional(args[1:]), &f, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			f.lockFlags.config(c)
			res, err := c.Update(cmd.Context(), deploy.UpdateOptions{ApplyOptions: f.options(), Name: args[0], Source: src, ReuseProperties: f.reuseProperties})
			return p.applied(c, res, f.dryRun, err)
		},
	}
	addApplyFlags(cmd, &f, false)
	return cmd
}

// newRollbackCommand is dm rollback. It shares update's flags, hiding
// those about a new input: a rollback applies a recorded revision.
func newRollbackCommand(g *globals, p *printer) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "rollback NAME [REVISION]",
		Short: "Deploy a new revision with the objects an earlier revision applied (default: the previous one)",
		Args:  rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
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
			f.lockFlags.config(c)
			res, err := c.Rollback(cmd.Context(), args[0], rev, f.options())
			return p.applied(c, res, f.dryRun, err)
		},
	}
	addApplyFlags(cmd, &f, false)
	for _, name := range []string{"reuse-properties", "values", "strict", "skip-schema-validation", "env", "import-root", "project", "deletion-policy"} {
		cmd.Flags().MarkHidden(name)
	}
	return cmd
}

// newDeleteCommand is dm delete.
func newDeleteCommand(g *globals, p *printer) *cobra.Command {
	var (
		f   deploy.DeleteOptions
		lf  lockFlags
		yes bool
	)
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a deployment's objects (in reverse order) and its history",
		Long: `Delete a deployment's objects, in reverse order, and its history.

Config Connector deletes the Google Cloud resource of each of its objects that is
deleted, unless the object carries cnrm.cloud.google.com/deletion-policy: abandon.
--deletion-policy abandon|delete (gcloud's deployments delete --delete-policy) writes
that policy on every Config Connector object of the deployment first. Without it, the
objects whose Google Cloud resources would be deleted are listed and, on a terminal,
confirmed; elsewhere dm delete refuses them unless --yes.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			switch f.DeletionPolicy {
			case "", gcp.PolicyAbandon, gcp.PolicyDelete:
			default:
				return &usageError{fmt.Errorf("--deletion-policy %q: want abandon or delete", f.DeletionPolicy)}
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			lf.config(c)
			f.WaitForLock = lf.lockWait()
			if !yes {
				f.Confirm = func(objs []kube.ObjectRef) error {
					return g.confirmDelete(args[0], objs, cmd.InOrStdin())
				}
			}
			refs, err := c.Delete(cmd.Context(), args[0], f)
			if err != nil {
				return err
			}
			fmt.Fprintf(p.w, "deployment %s deleted (%d objects)\n", args[0], len(refs))
			return nil
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.KeepHistory, "keep-history", false, "keep the deployment's history records")
	fs.BoolVar(&f.Wait, "wait", false, "wait until the objects are gone")
	fs.DurationVar(&f.Timeout, "timeout", deploy.DefaultTimeout, "how long --wait waits")
	fs.BoolVar(&f.PruneCRDs, "prune-crds", false, "allow deleting CustomResourceDefinitions that still have custom resources")
	addLockFlags(fs, &lf)
	fs.StringVar(&f.DeletionPolicy, "deletion-policy", "", "`abandon` (Config Connector leaves every Google Cloud resource) or delete (it deletes them), written on every Config Connector object before deleting (default: each object's own)")
	fs.BoolVarP(&yes, "yes", "y", false, "delete without asking, even Google Cloud resources that deleting the objects deletes")
	return cmd
}

// addAllNamespacesFlag registers -A, shared by the commands that look at
// the deployments of one namespace or of all; usage ends the help line.
func addAllNamespacesFlag(cmd *cobra.Command, all *bool, usage string) {
	cmd.Flags().BoolVarP(all, "all-namespaces", "A", false, usage)
}

// newListCommand is dm list.
func newListCommand(g *globals, p *printer) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
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
	addAllNamespacesFlag(cmd, &all, "list the deployments of every namespace")
	return cmd
}

// newGetCommand is dm get.
func newGetCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
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
			outs, err := c.Outputs(cmd.Context(), r)
			if err != nil {
				return err
			}
			return p.deployment(r, st, outs)
		},
	}
}

// newHistoryCommand is dm history.
func newHistoryCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
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
}

// newManifestCommand is dm manifest.
func newManifestCommand(g *globals, p *printer) *cobra.Command {
	var rev int
	cmd := &cobra.Command{
		Use:   "manifest NAME",
		Short: "Print the objects a revision applied (default: the latest)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			r, err := c.Revision(cmd.Context(), args[0], rev)
			if err != nil {
				return err
			}
			return p.objects(r.Objects)
		},
	}
	cmd.Flags().IntVar(&rev, "revision", 0, "`revision` to print (default: the latest)")
	return cmd
}

// newDiffCommand is dm diff. It takes the input flags of dm deploy, not
// those about applying.
func newDiffCommand(g *globals, p *printer) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "diff REF|CONFIG.yaml",
		Short: "Compare what deploying would apply (server-side dry run) with the live objects; exit 1 if they differ",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			src, err := g.source(cmd.Context(), args[0], &f, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			diff, changed, err := c.Diff(cmd.Context(), deploy.DiffOptions{Name: f.nameOr(args[0]), Source: src})
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
	fs := cmd.Flags()
	fs.StringVar(&f.name, "name", "", "deployment `name` (default: the template's or configuration file's name)")
	fs.StringArrayVar(&f.values, "values", nil, "YAML `file` of properties (repeatable; --properties override)")
	fs.BoolVar(&f.strict, "strict", false, "fail on properties a template's schema does not define")
	addConfigFlags(fs, &f.configFlags)
	addGCPFlags(fs, &f.gcpFlags, "", "default: Config Connector's own, delete")
	return cmd
}

// newTypesCommand is dm types.
func newTypesCommand(g *globals, p *printer) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "types",
		Short: "List the template types in use in the namespace's deployments (-A: every namespace), with versions and instance counts",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			types, err := c.Types(cmd.Context(), all)
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
	addAllNamespacesFlag(cmd, &all, "look at the deployments of every namespace")
	return cmd
}

// newInstancesCommand is dm instances.
func newInstancesCommand(g *globals, p *printer) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "instances TYPE",
		Short: "List which deployments use a template, and where in their layouts",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.deployConfig(cmd.Context())
			if err != nil {
				return err
			}
			ins, err := c.Instances(cmd.Context(), args[0], all)
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
	addAllNamespacesFlag(cmd, &all, "look at the deployments of every namespace")
	return cmd
}
