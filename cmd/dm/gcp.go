package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/manifest"
	"github.com/dmhq/dm/internal/manifest/adopt"
	"github.com/dmhq/dm/internal/manifest/outdir"
)

// gcpFlags are the Google Cloud settings of the commands that map
// Deployment Manager's Google Cloud types to Config Connector objects.
type gcpFlags struct {
	project        string
	deletionPolicy string
}

// addGCPFlags registers --project and --deletion-policy on fs; policyUsage,
// when the default is not a value pflag prints, says what it is.
func addGCPFlags(fs *pflag.FlagSet, f *gcpFlags, defaultPolicy, policyUsage string) {
	fs.StringVar(&f.project, "project", "", "Google Cloud project `ID` of the Config Connector objects whose properties name none; templates read it as env.project")
	usage := "`abandon` (deleting an object leaves its Google Cloud resource: cnrm.cloud.google.com/deletion-policy: abandon) or delete"
	if policyUsage != "" {
		usage += "; " + policyUsage
	}
	fs.StringVar(&f.deletionPolicy, "deletion-policy", defaultPolicy, usage)
}

func (f *gcpFlags) check() error {
	switch f.deletionPolicy {
	case "", "abandon", "delete":
		return nil
	}
	return &usageError{fmt.Errorf("--deletion-policy %q: want abandon or delete", f.deletionPolicy)}
}

// setEnv gives templates the project as env.project, as Deployment
// Manager did.
func (f *gcpFlags) setEnv(env map[string]string) {
	if f.project != "" {
		env["project"] = f.project
	}
}

// options are the conversion's options: the project is --project, else
// an env.project that --env set.
func (f *expandFlags) options() manifest.Options {
	project := f.project
	if project == "" {
		for _, kv := range f.env {
			if v, ok := strings.CutPrefix(kv, "project="); ok {
				project = v
			}
		}
	}
	return manifest.Options{Project: project, DeletionPolicy: f.deletionPolicy}
}

// gcloudProject is the project gcloud deploys to, as Deployment Manager's
// users ran it: CLOUDSDK_CORE_PROJECT, else core/project of gcloud's active
// configuration (CLOUDSDK_CONFIG, default ~/.config/gcloud; the
// configuration CLOUDSDK_ACTIVE_CONFIG_NAME or active_config names, default
// "default"). It returns the project and where it was read, or "".
func gcloudProject(getenv func(string) string) (project, from string) {
	if p := strings.TrimSpace(getenv("CLOUDSDK_CORE_PROJECT")); p != "" {
		return p, "CLOUDSDK_CORE_PROJECT"
	}
	dir := getenv("CLOUDSDK_CONFIG")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", ""
		}
		dir = filepath.Join(home, ".config", "gcloud")
	}
	name := strings.TrimSpace(getenv("CLOUDSDK_ACTIVE_CONFIG_NAME"))
	if name == "" {
		b, _ := os.ReadFile(filepath.Join(dir, "active_config"))
		name = strings.TrimSpace(string(b))
	}
	if name == "" {
		name = "default"
	}
	file := filepath.Join(dir, "configurations", "config_"+name)
	b, err := os.ReadFile(file)
	if err != nil {
		return "", ""
	}
	// An INI file: project = ID in [core].
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && section == "core" && strings.TrimSpace(k) == "project" {
			if v = strings.TrimSpace(v); v != "" {
				return v, file
			}
		}
	}
	return "", ""
}

// convertFlags are dm convert's own flags.
type convertFlags struct {
	dir             string
	listTypes       bool
	allowUnresolved bool
	checkManifest   string
}

// newConvertCommand is dm convert.
func newConvertCommand(g *globals, p *printer) *cobra.Command {
	var (
		f  expandFlags
		cf convertFlags
	)
	cmd := &cobra.Command{
		Use:   "convert CONFIG.yaml|REF [-o DIR]",
		Short: "Write the Config Connector objects a Deployment Manager configuration makes, as files",
		Long: `Expand a configuration (or a template reference) as dm expand does and write the
objects it makes, its Google Cloud resources (compute.v1.instance,
gcp-types/storage-v1:buckets, ...) as Config Connector objects, for tools that apply
static manifests (Config Sync, Argo CD): one YAML stream on stdout, or with -o DIR one
file per object (KIND-NAME.yaml). The templates stay templates: convert again after
changing them. Every object carries cnrm.cloud.google.com/project-id (--project, else
env project=, else gcloud's: CLOUDSDK_CORE_PROJECT or its active configuration's
core/project) and, by default,
cnrm.cloud.google.com/deletion-policy: abandon, so that deleting it leaves the Google
Cloud resource Deployment Manager made. --list-types lists the supported types.

Resources named after the deployment (env.deployment) need --deployment, the name
Deployment Manager's deployment had: without it they would be new resources beside
DM's. A reference only a live object can fill (an address's IP in a startup script) is
an error naming it, unless --allow-unresolved (dm deploy fills them in). -o DIR keeps
a record of what it wrote (DIR/.dm-convert.json): a later run removes the files of
objects no longer made, but never a file it did not write or one edited since.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cf.listTypes {
				return noArgs(cmd, args)
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cf.listTypes {
				return printTypes(p.w)
			}
			return cmdConvert(cmd.Context(), g, p, args[0], &f, &cf, cmd.InOrStdin())
		},
	}
	fs := cmd.Flags()
	// -o is a directory here; it shadows the global --output.
	fs.StringVarP(&cf.dir, "output", "o", "", "write one file per object into `DIR` (created if missing) instead of one YAML stream on stdout")
	fs.BoolVar(&cf.listTypes, "list-types", false, "list every supported Deployment Manager type spelling with its Config Connector kind")
	fs.StringVar(&cf.checkManifest, "check-manifest", "", "compare the Google Cloud resources, name by name and type by type, with those of the Deployment Manager deployment whose manifest `FILE` is (gcloud deployment-manager manifests describe --deployment NAME --format yaml > FILE): exit 1 listing every difference; with -o DIR, write only when there is none")
	fs.BoolVar(&cf.allowUnresolved, "allow-unresolved", false, "write references only live objects can fill as their text, with a warning each, instead of failing (dm deploy fills them in)")
	fs.StringArrayVar(&f.values, "values", nil, "YAML `file` of properties (repeatable; --properties override)")
	fs.StringVar(&f.name, "name", "", "resource `name` of a template given by reference (default: the template's name)")
	fs.StringVar(&f.deployment, "deployment", "", "deployment `name` templates see as env.deployment: the Deployment Manager deployment's (needed when resource names read it)")
	fs.BoolVar(&f.strict, "strict", false, "fail on properties a template's schema does not define (otherwise a warning on stderr)")
	addConfigFlags(fs, &f.configFlags)
	addGCPFlags(fs, &f.gcpFlags, "abandon", "")
	return cmd
}

// cmdConvert expands arg and writes its objects.
func cmdConvert(ctx context.Context, g *globals, p *printer, arg string, f *expandFlags, cf *convertFlags, stdin io.Reader) error {
	if f.deletionPolicy == "" {
		return &usageError{fmt.Errorf("--deletion-policy: want abandon or delete")}
	}
	var dmm *adopt.DMManifest
	if cf.checkManifest != "" {
		var err error
		if dmm, err = readDMManifest(cf.checkManifest); err != nil {
			return err
		}
	}
	if f.options().Project == "" {
		// Offline there is no namespace to read the project from: the
		// deployment's, or the one gcloud deployed Deployment Manager's
		// configurations to.
		project, from := "", ""
		if dmm != nil && dmm.Project != "" {
			project, from = dmm.Project, "the selfLink of "+cf.checkManifest
		} else {
			project, from = gcloudProject(g.getenv)
		}
		if project != "" {
			f.project = project
			fmt.Fprintf(g.stderr, "dm: project %s (from %s; --project overrides it)\n", project, from)
		}
	}
	x, err := expandArg(ctx, g, arg, f, stdin)
	if err != nil {
		return err
	}
	m, err := manifest.Of(x.ExpandResult, f.options())
	if err != nil {
		return err
	}
	if err := x.checkDeployment(ctx, f); err != nil {
		var ne *adopt.NameError
		if dmm != nil && dmm.Deployment != "" && errors.As(err, &ne) {
			return fmt.Errorf("%w (%s is the manifest of deployment %s: --deployment %s)", err, cf.checkManifest, dmm.Deployment, dmm.Deployment)
		}
		return err
	}
	g.warn(m.Warnings)
	if dmm != nil {
		if diffs := adopt.Compare(dmm, x.ExpandResult, gcp.Options{Project: f.options().Project}); len(diffs) > 0 {
			for _, d := range diffs {
				fmt.Fprintln(p.w, d)
			}
			return &adopt.ManifestError{File: cf.checkManifest, Deployment: dmm.Deployment, Differences: diffs}
		}
		fmt.Fprintf(g.stderr, "dm: the %s of %s have objects of the same Google Cloud names and types, and dm makes no other\n",
			plural(len(dmm.Resources), "resource", "resources"), orDeployment(dmm))
		if cf.dir == "" {
			return nil // a check
		}
	}
	if un := m.Unresolved(); len(un) > 0 {
		if !cf.allowUnresolved {
			return derrors.Errorf(derrors.InvalidArgument, "%s only live objects can fill, which a static manifest would hold as text (dm deploy fills them in; --allow-unresolved writes them as written):\n  %s",
				plural(len(un), "reference", "references"), strings.Join(un, "\n  "))
		}
		for _, u := range un {
			fmt.Fprintf(g.stderr, "dm: warning: %s: dm deploy fills it in, a static manifest keeps the reference\n", u)
		}
	}
	if cf.dir == "" {
		return printObjects(p.w, m.Maps(), false)
	}
	files := make([]outdir.File, 0, len(m.Objects))
	for _, o := range m.Objects {
		kind, _ := o.Object["kind"].(string)
		name := objectName(o.Object)
		y, err := value.MarshalYAML(o.Object)
		if err != nil {
			return fmt.Errorf("%s %s (layout path %s): %w", kind, name, strings.Join(o.Path, "/"), err)
		}
		files = append(files, outdir.File{Name: strings.ToLower(kind) + "-" + name + ".yaml", Data: y})
	}
	rep, err := outdir.Write(cf.dir, arg, files)
	if rep != nil {
		for _, n := range rep.Replaced {
			fmt.Fprintf(g.stderr, "dm: warning: %s was edited since dm convert wrote it; it is written again (its object's file)\n", filepath.Join(cf.dir, n))
		}
		for _, n := range rep.Removed {
			fmt.Fprintf(g.stderr, "dm: removed %s: the configuration no longer makes its object\n", filepath.Join(cf.dir, n))
		}
		for _, n := range rep.Kept {
			fmt.Fprintf(g.stderr, "dm: warning: kept %s: the configuration no longer makes its object, but the file was edited since dm convert wrote it; remove it yourself, or a tool applying %s keeps its object\n", filepath.Join(cf.dir, n), cf.dir)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "dm: wrote %d objects to %s\n", len(rep.Written), cf.dir)
	return nil
}

// readDMManifest reads a manifest gcloud printed.
func readDMManifest(file string) (*adopt.DMManifest, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--check-manifest: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, adopt.MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--check-manifest: %w", err)
	}
	return adopt.ParseManifest(b, file)
}

// orDeployment names a manifest's deployment.
func orDeployment(m *adopt.DMManifest) string {
	if m.Deployment != "" {
		return "deployment " + m.Deployment
	}
	return m.File
}

// plural is n with the noun's singular or plural.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// printTypes prints every supported DM type spelling with its Config
// Connector kind, one a line.
func printTypes(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range gcp.Types() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Type, t.Kind, t.APIVersion)
	}
	return tw.Flush()
}

// objectName is an object's metadata.name.
func objectName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}
