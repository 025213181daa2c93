package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy/octemplate"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/configfile"
	"github.com/dmhq/dm/internal/expand/openshift"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/manifest"
	"github.com/dmhq/dm/internal/manifest/adopt"
	"github.com/dmhq/dm/internal/resolve"
)

// expandFlags are dm expand's own flags (and dm convert's).
type expandFlags struct {
	configFlags
	gcpFlags
	values     []string
	layout     bool
	name       string
	deployment string
	strict     bool
}

// configFlags are the flags of every command that reads a configuration
// (dm expand, and dm deploy): extra env keys, the import root and
// whether schemas validate.
type configFlags struct {
	env        []string
	importRoot string
	skipSchema bool
}

// addConfigFlags registers --env and --import-root on fs.
func addConfigFlags(fs *pflag.FlagSet, f *configFlags) {
	fs.StringArrayVar(&f.env, "env", nil, "add or override a key of every template's env (`KEY=VALUE`, repeatable)")
	fs.BoolVar(&f.skipSchema, "skip-schema-validation", false, "apply schemas' defaults without validating properties (violations are warnings), for templates whose schema and code disagree")
	fs.StringVar(&f.importRoot, "import-root", "", "`directory` imports may reach with ../ (default: the configuration's git work tree, else its directory)")
}

// templateEnv returns the env keys --env sets, with username defaulting
// to the OS user, as Deployment Manager set it to the caller.
func (f *configFlags) templateEnv() (map[string]string, error) {
	env := map[string]string{}
	if u, err := user.Current(); err == nil {
		env["username"] = u.Username
	} else if u := os.Getenv("USER"); u != "" {
		env["username"] = u
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, &usageError{fmt.Errorf("--env %w", expand.BadPair(kv))}
		}
		env[k] = v
	}
	return env, nil
}

// cmdExpand expands a configuration file or a template reference and
// prints the result: the flat config, or with --layout (and always with
// -o json) the config, the layout and the resolved references.
func cmdExpand(ctx context.Context, g *globals, p *printer, arg string, f *expandFlags, stdin io.Reader) error {
	x, err := expandArg(ctx, g, arg, f, stdin)
	if err != nil {
		return err
	}
	res := x.ExpandResult
	switch {
	case p.g.output == "json":
		_, err := p.structured(res)
		return err
	case p.g.output == "manifest" || p.g.output == "list":
		m, err := manifest.Of(res, f.options())
		if err != nil {
			return err
		}
		if err := x.checkDeployment(ctx, f); err != nil {
			return err
		}
		g.warn(m.Warnings)
		return printObjects(p.w, m.Maps(), p.g.output == "list")
	case f.layout:
		return printYAML(p.w, res)
	default:
		return printYAML(p.w, res.Config)
	}
}

// expanded is dm expand's (or dm convert's) argument expanded, with what
// expanding it again takes.
type expanded struct {
	*api.ExpandResult
	req *api.ExpandRequest
	b   api.Backend
}

// checkDeployment refuses, when --deployment was not given (the
// deployment is named after the file), Google Cloud resources whose names
// read env.deployment: Deployment Manager named them after the
// deployment's name.
func (x *expanded) checkDeployment(ctx context.Context, f *expandFlags) error {
	if f.deployment != "" {
		return nil
	}
	return adopt.CheckDeploymentName(x.ExpandResult, x.req.Deployment, "--deployment", gcp.Options{Project: f.options().Project}, sources(x.req.Config, x.req.Ref, x.req.Imports), func(d string) (*expand.Result, error) {
		req := *x.req
		req.Deployment = d
		return x.b.Expand(ctx, &req)
	})
}

// sources are the texts an expansion of a configuration and its imports
// reads, or nil for a reference (a registry's template, read elsewhere).
func sources(config, ref string, imports map[string]string) []string {
	if ref != "" {
		return nil
	}
	out := []string{config}
	for _, b := range imports {
		out = append(out, b)
	}
	return out
}

// expandArg expands dm expand's (or dm convert's) argument, a
// configuration file or a template reference, and prints the warnings.
func expandArg(ctx context.Context, g *globals, arg string, f *expandFlags, stdin io.Reader) (*expanded, error) {
	props, text, err := g.propertyValues(f.values)
	if err != nil {
		return nil, err
	}
	env, err := f.templateEnv()
	if err != nil {
		return nil, err
	}
	if err := f.gcpFlags.check(); err != nil {
		return nil, err
	}
	f.setEnv(env)
	// Templates see -n as env.namespace, as they will when deployed.
	ns := g.kube.namespace
	if ns == "" {
		ns = "default"
	}
	req := &api.ExpandRequest{Properties: props, Name: f.name, Deployment: f.deployment, Namespace: ns, Env: env, Strict: f.strict, SkipSchemaValidation: f.skipSchema}
	if isConfigArg(arg) {
		if err := readConfig(req, arg, stdin, f.importRoot); err != nil {
			return nil, err
		}
	} else if looksLikeConfigFile(arg) {
		// Not a reference (they have no .yaml suffix): a file that is
		// not there.
		_, err := os.Stat(arg)
		return nil, fmt.Errorf("configuration file: %w", err)
	} else {
		req.Ref = arg
	}
	if req.Deployment == "" {
		req.Deployment = deploymentName(arg)
	}
	b, err := g.backend()
	if err != nil {
		return nil, err
	}
	if req.Ref != "" {
		req.Properties, err = g.refProperties(ctx, b, req.Ref, props, text, true, stdin)
	} else {
		req.Properties, err = g.configProperties(ctx, b, req, props, stdin)
	}
	if err != nil {
		return nil, err
	}
	res, err := b.Expand(ctx, req)
	if err != nil {
		if root, ok := versionDirRoot(arg, req.Config); ok && len(g.dirs) == 0 && errors.Is(err, derrors.NotFound) {
			return nil, fmt.Errorf("%w\n%s is an example of the registry directory %s: name it, and its templates resolve there: dm --registry-dir %s=%s expand %s", err, arg, root, examplePrefix, root, arg)
		}
		return nil, err
	}
	g.warn(res.Warnings)
	return &expanded{res, req, b}, nil
}

// examplePrefix is the reference prefix dm's hints mount a registry
// directory under: any prefix serves short references (the only
// registry is the default one).
const examplePrefix = "github.com/example/templates"

// versionDirRoot tells whether the configuration file path lies in a
// template version directory of a registry ([COLLECTION/]TEMPLATE/vX.Y.Z/,
// as dm init writes one) and returns that registry's root: the
// directory above the version as many levels as its first registry
// reference's path has names (common/web:v1 -> three).
func versionDirRoot(path, config string) (string, bool) {
	if path == "-" {
		return "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	vdir := filepath.Dir(abs)
	if _, ok := index.ParseSemver(filepath.Base(vdir)); !ok {
		return "", false
	}
	cfg, err := expand.ParseConfig([]byte(config), path)
	if err != nil {
		return "", false
	}
	for _, r := range cfg.Resources {
		ref, err := resolve.Parse(r.Type)
		if err != nil || ref.Version == "" || ref.Host != "" {
			continue
		}
		root := filepath.Dir(vdir)
		if ref.Collection != "" {
			root = filepath.Dir(root)
		}
		root = filepath.Dir(root)
		if rel, err := filepath.Rel(mustGetwd(), root); err == nil {
			root = rel
		}
		return root, true
	}
	return "", false
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}

// printObjects prints objects, in order, as a "---"-separated YAML stream
// or as one kind: List.
func printObjects(w io.Writer, objs []map[string]any, list bool) error {
	if list {
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = o
		}
		return printYAML(w, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	docs, err := value.MarshalYAMLEach(objs)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, d := range docs {
		b.WriteString("---\n")
		b.Write(d)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// warn prints an expansion's warnings on stderr.
func (g *globals) warn(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintln(g.stderr, "dm: warning:", w)
	}
}

// isConfigArg reports whether dm expand's argument is a configuration file
// rather than a reference: "-" (standard input) or an existing file.
func isConfigArg(arg string) bool {
	if arg == "-" {
		return true
	}
	st, err := os.Stat(arg)
	return err == nil && st.Mode().IsRegular()
}

// looksLikeConfigFile reports whether arg names a YAML or JSON file rather
// than a template reference.
func looksLikeConfigFile(arg string) bool {
	switch filepath.Ext(arg) {
	case ".yaml", ".yml", ".json":
		return !strings.ContainsAny(arg, ":@")
	}
	return false
}

// readConfig fills req with a configuration file (- for stdin) and the
// files its imports name (see configfile.Read).
func readConfig(req *api.ExpandRequest, name string, stdin io.Reader, importRoot string) error {
	f, err := configfile.Read(name, stdin, importRoot)
	if err != nil {
		return err
	}
	req.Config, req.ConfigName = string(f.Content), f.Name
	if len(f.Imports) > 0 {
		req.Imports = make(map[string]string, len(f.Imports))
		for k, b := range f.Imports {
			req.Imports[k] = string(b)
		}
	}
	return nil
}

// deploymentName names a deployment after its configuration file or
// template.
func deploymentName(arg string) string {
	if arg == "-" {
		return "stdin"
	}
	if isConfigArg(arg) {
		return strings.TrimSuffix(filepath.Base(arg), filepath.Ext(arg))
	}
	if r, err := octemplate.ParseRef(arg); err == nil && strings.HasPrefix(arg, octemplate.Prefix) {
		return r.Name
	}
	if r, err := resolveParseTemplate(arg); err == nil {
		return r
	}
	return "deployment"
}

// resolveParseTemplate returns the template name of a reference without
// resolving it.
func resolveParseTemplate(ref string) (string, error) {
	s := ref
	if i := strings.IndexAny(s, ":@"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "", errors.New("no template name")
	}
	return s, nil
}

// propertyValues merges --values files (in order), then --properties,
// then --set-string. text holds the --properties values as written, by
// dotted key, for schema.KeepText.
func (g *globals) propertyValues(files []string) (props map[string]any, text map[string]string, err error) {
	props = map[string]any{}
	text = map[string]string{}
	for _, f := range files {
		b, err := configfile.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("--values: %w", err)
		}
		v, err := expand.DecodeValue(b)
		if err != nil {
			return nil, nil, fmt.Errorf("--values %s: %w", f, err)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, nil, derrors.Errorf(derrors.InvalidArgument, "--values %s: want a mapping of property names to values", f)
		}
		props = value.Merge(props, m)
	}
	for _, s := range g.properties {
		kv, err := parsePairs("--properties", s, false, text)
		if err != nil {
			return nil, nil, err
		}
		props = value.Merge(props, kv)
	}
	for _, s := range g.setStrings {
		kv, err := parsePairs("--set-string", s, true, nil)
		if err != nil {
			return nil, nil, err
		}
		props = value.Merge(props, kv)
	}
	if len(props) == 0 {
		return nil, nil, nil
	}
	return props, text, nil
}

// parsePairs parses --properties or --set-string (flag) KEY=VALUE pairs
// with expand.ParsePairs; a mistake is a usage error naming the flag.
func parsePairs(flag, s string, asString bool, text map[string]string) (map[string]any, error) {
	kv, err := expand.ParsePairs(s, asString, text)
	if err != nil {
		return nil, &usageError{fmt.Errorf("%s %w", flag, err)}
	}
	return kv, nil
}

// processFlags are dm process's flags.
type processFlags struct {
	file          string
	params        []string
	paramFile     string
	rawTemplate   bool
	listParams    bool
	labels        []string
	ignoreUnknown bool
}

// cmdProcess processes an OpenShift-style template like oc process: the
// objects as a List, or the processed Template with --raw-template. JSON
// unless -o yaml. The template is -f FILE or a registry reference (args[0]
// when it is not NAME=VALUE); other arguments are NAME=VALUE parameters,
// as oc takes them.
func cmdProcess(ctx context.Context, g *globals, f *processFlags, args []string, output string, w io.Writer, stdin io.Reader) error {
	var ref string
	if len(args) > 0 && !strings.Contains(args[0], "=") {
		ref, args = args[0], args[1:]
	}
	var (
		data   []byte
		source = f.file
		err    error
	)
	switch {
	case ref != "" && f.file != "":
		return &usageError{fmt.Errorf("give a template reference (%s) or -f FILE, not both", ref)}
	case ref != "" && isClusterTemplate(ref):
		if _, data, _, err = g.readClusterTemplate(ctx, ref); err != nil {
			return err
		}
		source = strings.TrimPrefix(ref, octemplate.Prefix)
	case ref != "":
		if data, source, err = readTemplateRef(ctx, g, ref); err != nil {
			return err
		}
	case f.file == "":
		return &usageError{errors.New("dm process needs a template: a reference (postgres:v1) or -f FILE (- for standard input)")}
	case f.file == "-":
		data, err = configfile.ReadStdin(stdin)
	default:
		data, err = configfile.ReadFile(f.file)
	}
	if err != nil {
		return err
	}
	t, err := openshift.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if f.listParams {
		return printParameters(w, t, output)
	}
	params := map[string]string{}
	if f.paramFile != "" {
		b, err := configfile.ReadFile(f.paramFile)
		if err != nil {
			return fmt.Errorf("--param-file: %w", err)
		}
		if params, err = openshift.ParseParamFile(b); err != nil {
			return fmt.Errorf("--param-file %s: %w", f.paramFile, err)
		}
	}
	for _, pv := range [][]string{args, f.params} {
		flags, err := openshift.ParseParamFlags(pv)
		if err != nil {
			return &usageError{fmt.Errorf("-p: %w", err)}
		}
		for k, v := range flags {
			params[k] = v
		}
	}
	if f.ignoreUnknown {
		t.DropUnknown(params)
	}
	for _, l := range f.labels {
		kv, err := openshift.ParseLabels(l)
		if err != nil {
			return &usageError{fmt.Errorf("-l %w", err)}
		}
		t.AddLabels(kv)
	}
	if err := g.ask(t.Missing(params), "parameter", "NAME=VALUE or -p NAME=VALUE", stdin, func(name string, v any) { params[name] = fmt.Sprint(v) }); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	out, err := t.Process(params, openshift.Options{})
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	var v any = out.ToList()
	if f.rawTemplate {
		v = out
	}
	return printJSONOrYAML(w, v, output)
}

// printJSONOrYAML prints v as YAML for -o yaml, else as indented JSON.
func printJSONOrYAML(w io.Writer, v any, output string) error {
	if output == "yaml" {
		return printYAML(w, v)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// readTemplateRef reads the template file of the version ref resolves to.
func readTemplateRef(ctx context.Context, g *globals, ref string) ([]byte, string, error) {
	b, err := g.backend()
	if err != nil {
		return nil, "", err
	}
	res, err := b.Resolve(ctx, ref, g.registry)
	if err != nil {
		return nil, "", err
	}
	if res.Language != "openshift" {
		return nil, "", derrors.Errorf(derrors.InvalidArgument, "%s is a %s template; dm process takes kind: Template files (use dm expand)", res.Resolved, res.Language)
	}
	data, err := b.ReadFile(ctx, res.Pinned(), "", res.TemplateFile)
	return data, res.Resolved, err
}

// printParameters lists a template's parameters, as oc process
// --parameters does.
func printParameters(w io.Writer, t *openshift.Template, output string) error {
	if output == "json" || output == "yaml" {
		return printJSONOrYAML(w, map[string]any{"parameters": t.Parameters}, output)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION\tGENERATOR\tVALUE")
	for _, p := range t.Parameters {
		gen, val := "", p.Value
		if p.Generate != "" {
			gen, val = p.Generate, p.From
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, strings.Join(strings.Fields(p.Description), " "), gen, val)
	}
	return tw.Flush()
}

func printYAML(w io.Writer, v any) error {
	b, err := value.MarshalYAML(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
