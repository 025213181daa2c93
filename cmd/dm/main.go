// Command dm reads template registries: lists registries, templates and
// versions, describes and resolves template references, searches, and
// lints a registry directory.
//
// Without --server (or DM_SERVER) dm works in-process: it indexes the
// --registry-dir directories, or the GitHub repository named by --registry
// (through --github-api with GITHUB_TOKEN, caching in ~/.cache/dm), or with
// no registry flag at all the example registry built into dm, which answers
// to github.com/acme/templates. With --server it asks a registryd.
//
// Exit status: 0 on success, 1 on failure (and for dm lint when the
// registry has error findings), 2 on a usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/version"
)

func main() {
	// A sandboxed expansion re-executes this binary as its worker.
	if sandbox.IsWorker() {
		sandbox.ServeWorker()
	}
	// dm runs for a moment and most of what it allocates is garbage at
	// once (encoded requests, decoded answers): collecting a fifth as
	// often saves a deploy of 100 objects about a tenth of its time on a
	// machine it shares with the apiserver. The soft limit keeps a large
	// deployment's heap bounded. GOGC and GOMEMLIMIT override both.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(512 << 20)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes dm with args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	g := &globals{getenv: getenv, stderr: stderr}
	root := newRoot(g, stdout)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	g.closeHelm()
	if err == nil {
		return 0
	}
	if _, ok := err.(*lintFailed); ok {
		// The findings are the message.
		return 1
	}
	if e, ok := err.(*silentExit); ok {
		return e.code
	}
	fmt.Fprintln(stderr, "dm:", err)
	return exitCode(err)
}

func newRoot(g *globals, stdout io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "dm",
		Short:         "Read template registries, and expand and process templates",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			switch g.output {
			case "table", "json", "yaml":
			case "text", "markdown":
				if cmd.Name() != "impact" {
					return &usageError{fmt.Errorf("-o %s is for dm impact; want table, json or yaml", g.output)}
				}
			case "manifest", "list":
				// kubectl-ready output of the objects an expansion makes.
				if cmd.Name() != "expand" {
					return &usageError{fmt.Errorf("-o %s is for dm expand; want table, json or yaml", g.output)}
				}
			default:
				return &usageError{fmt.Errorf("-o %q: want table, json or yaml (dm expand also takes manifest and list)", g.output)}
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	// Bare dm is a usage error, as with a missing argument: the help goes
	// to stderr and the exit status is 2, so a script that forgot its
	// command fails.
	root.Args = noArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		cmd.SetOut(cmd.ErrOrStderr())
		cmd.Help()
		return &usageError{errors.New("no command given")}
	}
	root.SetVersionTemplate("dm {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&g.registry, "registry", "", "registry (and collection) short references resolve against (`[github.com/]OWNER/REPO[/COLLECTION]`, or oci://HOST/OWNER/REPO)")
	pf.StringArrayVar(&g.dirs, "registry-dir", nil, "read local directory DIR as the registry with reference prefix PREFIX (`PREFIX=DIR`, repeatable; one alone is the default registry)")
	pf.StringArrayVar(&g.oci, "registry-oci", nil, "read OCI registry oci://HOST/PATH as the registry with reference prefix PREFIX (`PREFIX=oci://HOST/PATH`, repeatable)")
	pf.BoolVar(&g.plainHTTP, "plain-http", false, "speak plain HTTP to the OCI registries named on the command line (a loopback or in-cluster registry); others stay HTTPS")
	pf.StringVar(&g.server, "server", "", "registryd `URL` to ask instead of reading registries in-process (default $DM_SERVER)")
	pf.StringVar(&g.serverToken, "server-token", "", "bearer `token` for --server, which shows a namespace's registries to accounts that may get them (default $DM_SERVER_TOKEN, else the kubeconfig context's token, sent over HTTPS or to loopback only)")
	pf.StringVar(&g.githubAPI, "github-api", fetch.DefaultGitHubAPI, "GitHub REST API base `URL` for in-process GitHub registries")
	pf.StringVar(&g.cacheDir, "cache-dir", "", "cache `directory` for in-process GitHub registries (default ~/.cache/dm)")
	pf.StringVarP(&g.output, "output", "o", "table", "output `format`: table, json or yaml")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log what dm does to stderr")
	pf.BoolVar(&g.noPrompt, "no-prompt", false, "never ask for required properties without a value (deploy, expand, process): list them in an error, as without a terminal")
	pf.StringArrayVar(&g.setStrings, "set-string", nil, "template properties `KEY=VALUE[,KEY=VALUE...]` whose values are always strings (tag=1.10 stays \"1.10\"; repeatable; after --properties)")
	addKubeFlags(pf, &g.kube)
	addChartFlags(pf, &g.charts)
	addVerifyFlags(pf, &g.verify)
	pf.StringArrayVar(&g.properties, "properties", nil, "template properties `KEY=VALUE[,KEY=VALUE...]`, typed as YAML types them (replicas=3 is a number); KEY may be a dotted path (repeatable)")

	root.RegisterFlagCompletionFunc("output", completeOutput)
	p := &printer{w: stdout, g: g}
	root.AddCommand(
		newExpandCommand(g, p),
		newConvertCommand(g, p),
		newProcessCommand(g, stdout),
		newRegistriesCommand(g, p),
		newTemplatesCommand(g, p),
		newVersionsCommand(g, p),
		newDescribeCommand(g, p),
		newResolveCommand(g, p),
		newSearchCommand(g, p),
		newLintCommand(g, p),
		newExportCmd(g, stdout),
		newPushCommand(g, p),
		newMirrorCommand(g, p),
		newSignCommand(g, p),
		newInstallCmd(g, stdout),
		newShowCommand(g, stdout),
		initCmd(stdout),
		newVersionCommand(p, stdout),
	)
	root.AddCommand(newDeployCommands(g, p)...)
	root.AddCommand(newImportCommand(g, p))
	root.AddCommand(newImpactCommand(g, p))
	root.AddCommand(newRolloutCommand(g, p))
	return root
}

// newExpandCommand is dm expand.
func newExpandCommand(g *globals, p *printer) *cobra.Command {
	var ef expandFlags
	expandCmd := &cobra.Command{
		Use:   "expand CONFIG.yaml|REF",
		Short: "Expand a configuration file (- for stdin) or a template reference into Kubernetes objects",
		Long: `Expand a configuration (resources with name, type and properties, and imports read
relative to the file) or a template reference with --properties/--values, recursively,
until only Kubernetes objects remain. Prints the flat config as YAML; with --layout the
config, the layout (the tree of template instances) and the resolved references;
with -o json always all three. -o manifest prints the Kubernetes objects as a
"---"-separated stream in dependency order and -o list as one kind: List, so
"dm expand REF -o manifest | kubectl apply -f -" works.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdExpand(cmd.Context(), g, p, args[0], &ef, cmd.InOrStdin())
		},
	}
	xf := expandCmd.Flags()
	xf.StringArrayVar(&ef.values, "values", nil, "YAML `file` of properties (repeatable; --properties override)")
	xf.BoolVar(&ef.layout, "layout", false, "print the layout and resolved references with the config")
	xf.StringVar(&ef.name, "name", "", "resource `name` of a template given by reference (default: the template's name)")
	xf.StringVar(&ef.deployment, "deployment", "", "deployment `name` templates see as env.deployment (default: the file's or template's name)")
	xf.BoolVar(&g.noSandbox, "no-sandbox", false, "expand templates of GitHub registries in dm's own process, without a worker process and its limits")
	xf.BoolVar(&ef.strict, "strict", false, "fail on properties a template's schema does not define (otherwise a warning on stderr)")
	addConfigFlags(xf, &ef.configFlags)
	addGCPFlags(xf, &ef.gcpFlags, "", "-o manifest and list write it on every Config Connector object (default: Config Connector's own, delete)")
	xf.BoolVar(&g.allowURLs, "allow-urls", false, "let resource types be raw GitHub URLs of template files (in-process; a registryd decides for itself)")
	expandCmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		// A configuration file or a reference.
		refs, dir := completeRef(g)(cmd, args, toComplete)
		if len(args) > 0 || strings.Contains(toComplete, ":") {
			return refs, dir
		}
		return refs, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveDefault
	}
	return expandCmd
}

// newLintCommand is dm lint.
func newLintCommand(g *globals, p *printer) *cobra.Command {
	var lf lintFlags
	lintCmd := &cobra.Command{
		Use:   "lint DIR",
		Short: "Check a registry directory against the registry conventions and the engine (exit 1 on errors)",
		Long: `Check a registry directory: the layout conventions (version names, one template file
per version, schema names, example.yaml, duplicate versions, undiscoverable templates,
registry.yaml), and that schemas compile, kind: Template files are Templates and examples
parse. With --expand, every example.yaml is also expanded, short references resolving
against the directory itself (mounted as --prefix).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return cmdLint(cmd.Context(), g, p, args[0], &lf) },
	}
	lintCmd.Flags().BoolVar(&lf.expand, "expand", false, "also expand every version's example.yaml")
	lintCmd.Flags().StringVar(&lf.prefix, "prefix", "github.com/lint/registry", "reference `prefix` to mount the directory under (what full references in examples name)")
	return lintCmd
}

// newProcessCommand is dm process, which prints JSON unless -o says
// otherwise, as oc process.
func newProcessCommand(g *globals, stdout io.Writer) *cobra.Command {
	var pflags processFlags
	processCmd := &cobra.Command{
		Use:   "process [REF | NAMESPACE/NAME | -f TEMPLATE] [NAME=VALUE ...]",
		Short: "Process an OpenShift-style kind: Template like oc process: a List of objects, or the processed Template",
		Long: `Process a kind: Template, from -f FILE (- for standard input) or from a registry
reference (postgres:v1) or kept in the cluster (NAMESPACE/NAME or template:NAMESPACE/NAME,
read with your kubeconfig's credentials), with parameters given as NAME=VALUE arguments, -p NAME=VALUE
or --param-file, as oc process takes them. Prints a List of the objects (JSON unless
-o yaml), the processed Template with --raw-template, or the parameters with
--parameters. -l adds labels to every object.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := g.output
			if !cmd.Flags().Changed("output") {
				out = "json" // as oc process
			}
			if pflags.listParams && !cmd.Flags().Changed("output") {
				out = "table"
			}
			return cmdProcess(cmd.Context(), g, &pflags, args, out, stdout, cmd.InOrStdin())
		},
	}
	qf := processCmd.Flags()
	qf.StringVarP(&pflags.file, "filename", "f", "", "template `file` (YAML or JSON; - for stdin)")
	qf.StringArrayVarP(&pflags.params, "param", "p", nil, "parameter `NAME=VALUE` (repeatable)")
	qf.StringVar(&pflags.paramFile, "param-file", "", "`file` of parameters: NAME=VALUE lines or a YAML mapping (-p overrides)")
	qf.BoolVar(&pflags.rawTemplate, "raw-template", false, "print the processed Template instead of a List of its objects")
	qf.BoolVar(&pflags.listParams, "parameters", false, "list the template's parameters instead of processing it")
	qf.StringArrayVarP(&pflags.labels, "labels", "l", nil, "labels `KEY=VALUE[,KEY=VALUE...]` to add to every object (repeatable)")
	qf.BoolVar(&pflags.ignoreUnknown, "ignore-unknown-parameters", false, "ignore parameters the template does not define instead of failing")
	processCmd.ValidArgsFunction = completeRef(g)
	return processCmd
}

// newRegistriesCommand is dm registries.
func newRegistriesCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
		Use:   "registries",
		Short: "List the registries and the state of their indexes",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmdRegistries(cmd.Context(), g, p) },
	}
}

// newTemplatesCommand is dm templates.
func newTemplatesCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
		Use:   "templates [REGEXP]",
		Short: "List templates (of --registry, else of every registry), optionally those whose name matches REGEXP",
		Args:  maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdTemplates(cmd.Context(), g, p, optional(args))
		},
	}
}

// newVersionsCommand is dm versions.
func newVersionsCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
		Use:               "versions TEMPLATE",
		ValidArgsFunction: completeRef(g),
		Short:             "List the versions of a template ([COLLECTION/]NAME or a full reference without version)",
		Args:              exactArgs(1),
		RunE:              func(cmd *cobra.Command, args []string) error { return cmdVersions(cmd.Context(), g, p, args[0]) },
	}
}

// newDescribeCommand is dm describe.
func newDescribeCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
		Use:               "describe REF",
		ValidArgsFunction: completeRef(g),
		Short:             "Describe a template version: title, description, properties, files and example",
		Args:              exactArgs(1),
		RunE:              func(cmd *cobra.Command, args []string) error { return cmdDescribe(cmd.Context(), g, p, args[0]) },
	}
}

// newResolveCommand is dm resolve.
func newResolveCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
		Use:               "resolve REF",
		ValidArgsFunction: completeRef(g),
		Short:             "Print the canonical reference REF resolves to (notes go to stderr)",
		Args:              exactArgs(1),
		RunE:              func(cmd *cobra.Command, args []string) error { return cmdResolve(cmd.Context(), g, p, args[0]) },
	}
}

// newSearchCommand is dm search.
func newSearchCommand(g *globals, p *printer) *cobra.Command {
	return &cobra.Command{
		Use:   "search TEXT",
		Short: "Find templates by name, title, collection, tags, property names, description or file paths, best match first",
		Args:  minArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return cmdSearch(cmd.Context(), g, p, args) },
	}
}

// newShowCommand is dm show.
func newShowCommand(g *globals, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:               "show REF [FILE]",
		ValidArgsFunction: completeRef(g),
		Short:             "Print a version's template file, or its FILE (a path in the version directory), like helm show",
		Args:              rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdShow(cmd.Context(), g, stdout, args[0], optional(args[1:]))
		},
	}
}

// newVersionCommand is dm version.
func newVersionCommand(p *printer, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print dm's version and the VCS revision it was built from",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := version.Get()
			if ok, err := p.structured(in); ok {
				return err
			}
			_, err := fmt.Fprintln(stdout, "dm", in)
			return err
		},
	}
}

// initCmd is dm init, which scaffolds a template version directory.
func initCmd(stdout io.Writer) *cobra.Command {
	var lang, dir string
	cmd := &cobra.Command{
		Use:   "init [COLLECTION/]TEMPLATE",
		Short: "Scaffold TEMPLATE/v0.1.0/ with a template, its schema and an example that pass dm lint --expand",
		Long: `Scaffold a new template in a registry directory: [COLLECTION/]TEMPLATE/v0.1.0/ under
--dir (default: the current directory, the registry's root) with a template file in
--lang, its schema and an example.yaml that pass dm lint --expand. It never overwrites.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return cmdInit(stdout, dir, args[0], lang) },
	}
	cmd.Flags().StringVar(&lang, "lang", "jinja", "template `language`: "+engine.Default().DescribeNames())
	cmd.Flags().StringVar(&dir, "dir", ".", "registry `directory` to write under")
	return cmd
}

func optional(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func noArgs(cmd *cobra.Command, args []string) error { return argsBetween(0, 0)(cmd, args) }

func maxArgs(n int) cobra.PositionalArgs { return argsBetween(0, n) }

func rangeArgs(lo, hi int) cobra.PositionalArgs { return argsBetween(lo, hi) }

func exactArgs(n int) cobra.PositionalArgs { return argsBetween(n, n) }

func minArgs(n int) cobra.PositionalArgs { return argsBetween(n, -1) }

// argsBetween checks that a command got lo to hi arguments (no upper
// bound when hi < 0). Its usage error names what is missing or extra by
// the words of the command's Use line (REF, CONFIG.yaml|REF), and an
// unknown command the nearest ones.
func argsBetween(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && (hi < 0 || len(args) <= hi) {
			return nil
		}
		return &usageError{argsError(cmd, args, lo, hi)}
	}
}

func argsError(cmd *cobra.Command, args []string, lo, hi int) error {
	usage := "usage: " + strings.TrimSuffix(cmd.UseLine(), " [flags]")
	if hi == 0 && cmd.HasAvailableSubCommands() {
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
				names = append(names, c.Aliases...)
			}
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if near := derrors.Near(args[0], names); len(near) > 0 {
			return fmt.Errorf("%s; did you mean %s?", msg, strings.Join(near, " or "))
		}
		return fmt.Errorf("%s (dm --help lists them)", msg)
	}
	// dm's own name leads every message already.
	name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	words := strings.Fields(cmd.Use)[1:]
	if len(args) < lo {
		var missing []string
		for i := len(args); i < lo && i < len(words); i++ {
			w := words[i]
			if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") && strings.Count(w, "[") == 1 {
				w = w[1 : len(w)-1]
			}
			missing = append(missing, w)
		}
		if len(missing) == 0 {
			return fmt.Errorf("%s needs %d arguments, got %d (%s)", name, lo, len(args), usage)
		}
		return fmt.Errorf("%s needs %s (%s)", name, strings.Join(missing, " and "), usage)
	}
	extra := make([]string, len(args)-hi)
	for i, a := range args[hi:] {
		extra[i] = strconv.Quote(a)
	}
	if hi == 0 {
		return fmt.Errorf("%s takes no arguments, got %s (%s)", name, strings.Join(extra, " "), usage)
	}
	takes := fmt.Sprintf("%d arguments", hi)
	if hi <= len(words) {
		takes = strings.Join(words[:hi], " ")
	}
	if len(extra) == 1 {
		return fmt.Errorf("%s takes %s; %s is one argument too many (%s)", name, takes, extra[0], usage)
	}
	return fmt.Errorf("%s takes %s; %s are %d arguments too many (%s)", name, takes, strings.Join(extra, " "), len(extra), usage)
}

func wrapUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}
