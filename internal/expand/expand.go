// Package expand expands configurations: it instantiates templates written
// in Jinja, Starlark (Python-style), Go text/template or as OpenShift
// Templates, recursively, until only primitives (Kubernetes objects) remain.
//
// A configuration lists resources; a resource's type is a primitive (a
// Kubernetes kind), a template imported with the configuration, or a
// reference to a template in a registry, resolved through a
// resolve.Resolver. Each template invocation gets its properties (validated
// and defaulted by the template's schema), env (deployment, name, type,
// namespace, version) and imports (the files it may read), and returns a
// configuration again. The result is the flat list of primitives, the tree
// of template instances (the layout), the concrete versions the references
// resolved to, and the order that value references ($(ref.NAME.PATH))
// impose.
//
// Templates are other people's code: no engine can read files or reach the
// network, and every cost (steps, time, size, depth) has a limit in Options.
package expand

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/layout"
	"github.com/dmhq/dm/internal/expand/pyre"
	"github.com/dmhq/dm/internal/expand/pyyaml"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// Defaults of Options fields left zero.
const (
	DefaultMaxDepth       = 32
	DefaultMaxResources   = 10000
	DefaultMaxOutputBytes = 4 << 20
	DefaultTimeout        = 10 * time.Second
	DefaultTotalTimeout   = 30 * time.Second
	DefaultStarlarkSteps  = 10_000_000
	DefaultJinjaSteps     = 1_000_000
	DefaultJinjaCallDepth = 100
	DefaultCacheEntries   = 1024
	// DefaultRegexTimeout bounds one regular expression match on the
	// backtracking engine.
	DefaultRegexTimeout = pyre.DefaultTimeout

	defaultMaxInputBytes  = 1 << 20
	defaultMaxYAMLAliases = 1000
)

// Options configure an Expander. Zero fields take the defaults above. The
// limits travel to sandboxed workers as JSON, so fields that cannot
// (functions, interfaces) are tagged json:"-".
type Options struct {
	// Resolver resolves registry references and reads the resolved
	// versions' files; nil allows configurations with imported templates
	// and primitives only. *resolve.Resolver implements it; a sandboxed
	// worker plugs in one that asks its parent.
	Resolver Resolver `json:"-"`
	// Registry is the default registry for short references at the top of
	// a configuration; zero means the Resolver's default. A registry
	// template's own short references always resolve against the
	// template's registry.
	Registry resolve.Registry
	// AllowURLs lets a type be a raw GitHub content URL of a template file
	// (read as the registry reference it denotes).
	AllowURLs bool

	// MaxDepth bounds template nesting.
	MaxDepth int
	// MaxResources bounds the resources (primitives and template
	// instances) of one expansion.
	MaxResources int
	// MaxInputBytes bounds the configuration and each template file.
	MaxInputBytes int
	// MaxOutputBytes bounds what one template renders.
	MaxOutputBytes int
	// MaxYAMLAliases bounds YAML aliases in one document (alias bombs).
	MaxYAMLAliases int
	// MaxYAMLAliasBytes bounds what aliases add to one YAML document once
	// expanded (one 1 MB scalar aliased 999 times is 1 GB).
	MaxYAMLAliasBytes int
	// Timeout bounds the wall-clock time of one template invocation.
	Timeout time.Duration
	// TotalTimeout bounds the wall-clock time of one whole expansion, so
	// many templates each under Timeout still end.
	TotalTimeout time.Duration
	// StarlarkSteps bounds the Starlark steps of one invocation.
	StarlarkSteps uint64
	// JinjaSteps bounds the loop iterations and macro calls of one Jinja
	// invocation.
	JinjaSteps int
	// JinjaCallDepth bounds nested Jinja macro calls and includes, so a
	// recursive macro ends in an error and not in a stack overflow.
	JinjaCallDepth int
	// RegexTimeout bounds one match of a Python regular expression that
	// needs the backtracking engine (a schema's pattern, the re module of
	// a .py template): a pattern that backtracks catastrophically ends in
	// an error naming this field instead of hanging the expansion.
	RegexTimeout time.Duration
	// CacheEntries bounds the compiled-template and file caches.
	CacheEntries int

	// Engines are the engines of attached languages (engine.Language.
	// Attached) that this program renders, Helm's for one: a program links
	// them only if it pays their start-up cost. A template of an attached
	// language without one fails with a clear error.
	Engines []engine.Engine `json:"-"`
	// Charts downloads the charts of type: helm resources that name a URL,
	// an OCI reference or a chart repository; nil refuses them.
	Charts engine.ChartFetcher `json:"-"`

	// Schemas compiles schema files; nil uses the schema package.
	Schemas SchemaCompiler `json:"-"`
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger `json:"-"`
	// OnTemplate, if set, is called before each template invocation (its
	// schema and render) with the layout path and the template's label;
	// invocations never nest. A sandbox uses it to name the template that
	// was running when a worker died and to time each one.
	OnTemplate func(path []string, template string) `json:"-"`
}

// Resolver resolves registry references and reads the files of resolved
// versions.
type Resolver interface {
	// ResolveIn resolves ref, short references against def.
	ResolveIn(ctx context.Context, ref string, def resolve.Registry) (*resolve.Resolution, error)
	// ReadFile reads a file of a resolved version, name relative to it.
	ReadFile(ctx context.Context, rs *resolve.Resolution, name string) ([]byte, error)
	// DefaultRegistry is where short references resolve when neither the
	// request nor Options name a registry.
	DefaultRegistry() resolve.Registry
}

func (o *Options) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxDepth, DefaultMaxDepth)
	def(&o.MaxResources, DefaultMaxResources)
	def(&o.MaxInputBytes, defaultMaxInputBytes)
	def(&o.MaxOutputBytes, DefaultMaxOutputBytes)
	def(&o.MaxYAMLAliases, defaultMaxYAMLAliases)
	def(&o.MaxYAMLAliasBytes, DefaultMaxYAMLAliasBytes)
	def(&o.JinjaSteps, DefaultJinjaSteps)
	def(&o.JinjaCallDepth, DefaultJinjaCallDepth)
	def(&o.CacheEntries, DefaultCacheEntries)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.TotalTimeout <= 0 {
		o.TotalTimeout = DefaultTotalTimeout
	}
	if o.StarlarkSteps == 0 {
		o.StarlarkSteps = DefaultStarlarkSteps
	}
	if o.RegexTimeout <= 0 {
		o.RegexTimeout = DefaultRegexTimeout
	}
	if o.Schemas == nil {
		o.Schemas = schemaCompiler(o.RegexTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Expander expands configurations. It is safe for concurrent use; compiled
// templates and registry files are cached by content digest.
type Expander struct {
	opts     Options
	compiled *lru.Cache[string, any]     // cache key -> compiled template
	bundles  *lru.Cache[string, *bundle] // version digest -> files
	// langs is the table of languages; engines implement them, by name.
	langs   *engine.Registry
	engines map[string]engine.Engine
	// configTemplaters are the engines whose templates may stand for a
	// configuration, found once.
	configTemplaters []engine.ConfigTemplater
	// print is templatePrint as a value, made once for every invocation.
	print func(ctx context.Context, label, file string, line int, msg string)
}

// New returns an Expander with the given options.
func New(opts Options) *Expander {
	opts.setDefaults()
	compiled, _ := lru.New[string, any](opts.CacheEntries) // fails only for size <= 0
	bundles, _ := lru.New[string, *bundle](max(opts.CacheEntries/8, 16))
	x := &Expander{opts: opts, compiled: compiled, bundles: bundles, langs: engine.Default()}
	x.print = x.templatePrint
	engines, err := enginesByName(x.langs, append(builtinEngines(x), opts.Engines...))
	if err != nil {
		panic(err) // the table and builtinEngines disagree: a programming error a test catches
	}
	x.engines = engines
	x.configTemplaters = configTemplaters(x.langs, engines)
	return x
}

// Request is one expansion: a configuration with its imports, or a single
// template reference with properties.
type Request struct {
	// Config is a configuration (YAML or JSON), or a kind: Template
	// document processed with Properties as parameters.
	Config []byte
	// ConfigName names Config in errors; default "config.yaml".
	ConfigName string
	// Imports are the files sent with Config, by path.
	Imports map[string][]byte

	// Ref, instead of Config, is a template reference (or an import path)
	// expanded with Properties as one resource named Name (default: the
	// template's name).
	Ref        string
	Properties map[string]any
	Name       string

	// Deployment and Namespace reach templates as env.deployment and
	// env.namespace.
	Deployment string
	Namespace  string
	// Registry, if set, overrides Options.Registry for short references.
	Registry resolve.Registry
	// Strict makes properties a template's schema does not define an
	// error instead of a warning.
	Strict bool
	// SkipSchemaValidation applies schemas' defaults without validating
	// properties (Helm's --skip-schema-validation): violations are
	// warnings. For templates whose schema and code disagree.
	SkipSchemaValidation bool
	// Env adds keys to, or overrides keys of, every template's env (dm's
	// --env KEY=VALUE). Unset, project is Namespace, project_number "0",
	// current_time the expansion's start (RFC 3339, UTC) and username "".
	Env map[string]string
	// Cluster, when deploying, is the cluster the templates are rendered
	// for: charts read its .Capabilities and lookup it. Nil renders
	// offline, as helm template.
	Cluster *engine.Cluster
}

// Result is an expanded configuration.
type Result struct {
	// Config holds the primitives in expansion order, value references
	// resolved.
	Config Config `json:"config"`
	// Layout is the tree of resources as written and as templates made
	// them.
	Layout Layout `json:"layout"`
	// References are the registry templates used, each once, in first-use
	// order.
	References []Reference `json:"references"`
	// Order lists the names of Config's resources so that every resource
	// comes after the resources its value references name.
	Order []string `json:"order,omitempty"`
	// Warnings are what went through but is likely a mistake, each with
	// its layout path: properties a schema does not define
	// (`web: web.jinja.schema: unknown property "replcas" (did you mean
	// replicas?)`).
	Warnings []string `json:"warnings,omitempty"`
	// Logs are the lines templates printed (Starlark's print), each with
	// the template, file and line.
	Logs []string `json:"logs,omitempty"`
	// Deferred lists the value references left unfilled because the
	// fields they name are set by the server; deploy fills them.
	Deferred []Deferred `json:"deferred,omitempty"`
	// Outputs are the deployment's outputs (DM's outputs: [{name,
	// value}]): the configuration's, or those of the template a reference
	// expanded as. References to template outputs and to fields the
	// expansion knows are replaced by their values; those to fields only
	// the live objects have ($(ref.vm.networkInterfaces[0].networkIP))
	// stay in place, and deploy reads them (dm get shows them).
	Outputs []Output `json:"outputs,omitempty"`
}

// Layout is the tree of resources; see package layout, where history
// reads it without linking the template languages.
type Layout = layout.Layout

// LayoutResource is a node of the layout.
type LayoutResource = layout.Resource

// Reference is a registry template used by an expansion.
type Reference = layout.Reference

// scope is where a template's (or the configuration's) types resolve.
type scope struct {
	b *bundle
	// types maps type names (import paths and aliases) to file paths.
	types map[string]string
	// registry is the default registry of short references.
	registry resolve.Registry
	// res is the registry version whose files b holds, nil for a
	// configuration's imports.
	res *resolve.Resolution
}

// bundle is a set of files: a version directory or a configuration's
// imports. key identifies the content, so compiled templates are cached
// under it.
type bundle struct {
	key   string
	files map[string][]byte
	// names are the schema imports' names of a version's files (name ->
	// path); files has them as keys too.
	names map[string]string

	once sync.Once
	strs map[string]any // files as strings, for the imports global
}

func (b *bundle) importsValue() map[string]any {
	b.once.Do(func() {
		b.strs = make(map[string]any, len(b.files))
		for k, v := range b.files {
			b.strs[k] = string(v)
		}
	})
	return b.strs
}

func newImportsBundle(files map[string][]byte) *bundle {
	return &bundle{key: "imports:" + engine.FilesKey(files), files: files}
}

// run is the state of one Expand call.
type run struct {
	x          *Expander
	deployment string
	namespace  string
	env        map[string]string // Request.Env over the defaults
	refType    string            // Request.Ref: a registry reference even without a version
	order      *keyOrder
	config     []Resource
	paths      [][]string  // layout path of each config resource
	composites []composite // template resources with outputs
	refs       []Reference
	seenRefs   map[string]bool
	count      int
	strict     bool
	skipSchema bool
	warnings   []string
	warned     map[string]bool
	cluster    *engine.Cluster // Request.Cluster
}

// warn adds a warning to the result, once.
func (r *run) warn(msg string) {
	if r.warned[msg] {
		return
	}
	if r.warned == nil {
		r.warned = map[string]bool{}
	}
	r.warned[msg] = true
	r.warnings = append(r.warnings, msg)
}

// Expand expands a request.
func (x *Expander) Expand(ctx context.Context, req Request) (*Result, error) {
	r := &run{x: x, deployment: req.Deployment, namespace: req.Namespace, seenRefs: map[string]bool{}, refType: req.Ref, order: newKeyOrder(), strict: req.Strict, skipSchema: req.SkipSchemaValidation, cluster: req.Cluster}
	r.env = map[string]string{
		"project":        req.Namespace,
		"project_number": "0",
		"current_time":   time.Now().UTC().Format(time.RFC3339),
		"username":       "",
	}
	for k, v := range req.Env {
		r.env[k] = v
	}
	ctx, logs := withTemplateLogs(ctx)
	reg := req.Registry
	if reg.IsZero() {
		reg = x.opts.Registry
	}
	if reg.IsZero() && x.opts.Resolver != nil {
		reg = x.opts.Resolver.DefaultRegistry()
	}
	ctx, cancel := context.WithTimeoutCause(ctx, x.opts.TotalTimeout,
		limitErr("TotalTimeout", x.opts.TotalTimeout, "expansion ran too long"))
	defer cancel()
	for p, b := range req.Imports {
		if len(b) > x.opts.MaxInputBytes {
			return nil, at(p, 0, limitErr("MaxInputBytes", x.opts.MaxInputBytes, "import is %d bytes", len(b)))
		}
	}
	files := req.Imports
	if files == nil {
		files = map[string][]byte{}
	}
	name := req.ConfigName
	if name == "" {
		name = "config.yaml"
	}
	var cfg *Config
	switch {
	case req.Ref != "" && req.Config != nil:
		return nil, invalid("request has both a configuration and a reference")
	case req.Ref != "":
		n := req.Name
		if n == "" {
			n = refName(req.Ref)
		}
		cfg = &Config{Resources: []Resource{{Name: n, Type: req.Ref, Properties: req.Properties}}}
	case req.Config != nil:
		if ct, ok := x.configTemplate(req.Config); ok {
			// A Template given directly is an import expanded once.
			files = maps1(files, name, req.Config)
			n := ct.ResourceName(req.Config)
			if n == "" {
				n = refName(name)
			}
			cfg = &Config{Resources: []Resource{{Name: n, Type: name, Properties: req.Properties}}}
			break
		}
		var err error
		lim := x.yamlLimits("MaxInputBytes", x.opts.MaxInputBytes)
		lim.order = r.order
		lim.duplicate = func(line int, key string) { r.warn(pyyaml.DuplicateKeyWarning(name, line, key)) }
		cfg, err = parseConfig(req.Config, name, lim)
		if err != nil {
			return nil, &Error{Err: err}
		}
		for _, w := range cfg.ignoredOutputFields {
			r.warn(name + ": " + w)
		}
		if len(req.Properties) > 0 {
			if err := overrideProperties(cfg, req.Properties); err != nil {
				return nil, &Error{File: name, Err: err}
			}
		}
	default:
		return nil, invalid("request has neither a configuration nor a reference")
	}
	for i, imp := range cfg.Imports {
		if _, ok := files[imp.Path]; !ok {
			return nil, &Error{File: name, Err: invalid("imports[%d]: %s was not sent with the configuration (%s)", i, imp.Path, listOr(sortedKeys(files), "sent: ", "no files were sent"))}
		}
	}
	files, names, err := importNames(x.langs, files, cfg.Imports, x.yamlLimits("MaxInputBytes", x.opts.MaxInputBytes))
	if err != nil {
		return nil, &Error{Err: err}
	}
	sc := &scope{b: newImportsBundle(files), types: map[string]string{}, registry: reg}
	for p := range files {
		sc.types[p] = p
	}
	for n, p := range names {
		sc.types[n] = p
	}
	layout, err := r.expandList(ctx, sc, nil, nil, "", cfg.Resources)
	if err != nil {
		return nil, err
	}
	// Outputs first: what they hold may be references to primitives,
	// resolved or deferred below as any other.
	inliner := newOutputInliner(r.config, r.composites)
	if err := inlineOutputs(inliner, r.config, r.paths); err != nil {
		return nil, err
	}
	res := &Result{Config: Config{ConfigVersion: cfg.ConfigVersion, Resources: r.config}, Layout: Layout{Resources: layout}, References: r.refs, Warnings: r.warnings}
	for _, c := range res.Config.Resources {
		finite(c.Properties)
	}
	finiteLayout(res.Layout.Resources)
	if res.Config.Resources == nil {
		res.Config.Resources = []Resource{}
	}
	if res.References == nil {
		res.References = []Reference{}
	}
	if res.Layout.Resources == nil {
		res.Layout.Resources = []*LayoutResource{}
	}
	order, deferred, err := resolveValueRefs(res.Config.Resources, r.paths)
	if err != nil {
		return nil, err
	}
	res.Order, res.Deferred = order, deferred
	outs := cfg.Outputs
	if req.Ref != "" || req.Config != nil && len(cfg.Resources) == 1 && cfg.Resources[0].Type == name {
		// A template expanded by reference (or given as the
		// configuration): its outputs are the deployment's.
		if len(layout) == 1 {
			outs = layout[0].Outputs
		}
	}
	if res.Outputs, err = deploymentOutputs(inliner, outs, res.Config.Resources); err != nil {
		return nil, &Error{File: name, Err: err}
	}
	if err := checkNames(res); err != nil {
		return nil, err
	}
	res.Logs = logs.list()
	return res, nil
}

// overrideProperties merges properties given with a configuration (dm
// expand app.yaml --properties web.replicas=3, --values prod.yaml) into its
// resources' properties: they are keyed by resource name, as Helm keys a
// subchart's values by its name. The errors speak of --properties, the
// flag people reach for first, and show the keyed form.
func overrideProperties(cfg *Config, values map[string]any) error {
	byName := make(map[string]int, len(cfg.Resources))
	names := make([]string, len(cfg.Resources))
	for i, r := range cfg.Resources {
		byName[r.Name], names[i] = i, r.Name
	}
	for _, k := range sortedKeys(values) {
		i, ok := byName[k]
		if !ok {
			if len(names) == 0 {
				return invalid("--properties %q: the configuration has no resources to give properties to", k)
			}
			near := derrors.Near(k, names)
			example := names[0]
			if len(near) > 0 {
				example = near[0]
			}
			msg := fmt.Sprintf("--properties %q: the configuration has no resource %q; with a configuration, --properties and --values are keyed by resource name (--properties %s.%s=VALUE sets property %s of resource %s; resources: %s)", k, k, example, k, k, example, strings.Join(names, ", "))
			if len(near) > 0 {
				msg += fmt.Sprintf("; did you mean %s?", strings.Join(near, " or "))
			}
			return derrors.Errorf(derrors.InvalidArgument, "%s", msg)
		}
		m, ok := values[k].(map[string]any)
		if !ok {
			return invalid("--properties %q: resource %s takes a mapping of its properties, got %s (--properties %s.KEY=VALUE)", k, k, kindOf(values[k]), k)
		}
		cfg.Resources[i].Properties = value.Merge(cfg.Resources[i].Properties, m)
	}
	return nil
}

// chainLabel names a template of the expansion chain for people: an
// imported file by its path (its id holds the imports' digest, which
// tells a reader nothing), a registry template by its reference.
func chainLabel(id string) string {
	if rest, ok := strings.CutPrefix(id, "imports:"); ok {
		if _, file, ok := strings.Cut(rest, ":"); ok {
			return file
		}
	}
	return id
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func maps1(m map[string][]byte, k string, v []byte) map[string][]byte {
	out := make(map[string][]byte, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// refName is the default resource name for a reference: the template name.
func refName(ref string) string {
	switch path.Ext(ref) {
	case ".yaml", ".yml", ".json", ".jinja", ".py", ".gotmpl":
		base := path.Base(ref)
		return strings.TrimSuffix(base, path.Ext(base))
	}
	if r, err := resolve.Parse(ref); err == nil {
		return r.Template
	}
	base := path.Base(ref)
	return strings.TrimSuffix(base, path.Ext(base))
}

func (x *Expander) yamlLimits(field string, n int) yamlLimits {
	return yamlLimits{maxBytes: n, bytesField: field, maxAliases: x.opts.MaxYAMLAliases, maxAliasBytes: x.opts.MaxYAMLAliasBytes}
}

// expandList expands the resources of one configuration or template
// output. path holds the resource names above, chain the template IDs above
// (for cycle detection), parent the label of the template that produced the
// list ("" for the configuration).
func (r *run) expandList(ctx context.Context, sc *scope, path []string, chain []string, parent string, list []Resource) ([]*LayoutResource, error) {
	out := make([]*LayoutResource, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, res := range list {
		if ctx.Err() != nil {
			return nil, &Error{Path: path, Err: stopped(ctx)}
		}
		p := append(path[:len(path):len(path)], res.Name)
		if seen[res.Name] {
			where := "the configuration"
			if parent != "" {
				where = "template " + parent
			}
			return nil, &Error{Path: path, Template: parent, Err: invalid("%s has two resources named %q; names must be unique among siblings", where, res.Name)}
		}
		seen[res.Name] = true
		if res.project != nil {
			r.warn(fmt.Sprintf("%s: the resource's project field (%v) is ignored, as Deployment Manager ignored it: a deployment's resources are in its project (for Config Connector, the namespace's project annotation)", strings.Join(p, " > "), res.project))
		}
		r.count++
		if r.count > r.x.opts.MaxResources {
			return nil, &Error{Path: p, Err: limitErr("MaxResources", r.x.opts.MaxResources, "expansion has more than %d resources", r.x.opts.MaxResources)}
		}
		kind, target := classifyType(r.x.langs, res.Type, sc.types)
		if kind == primitiveType && len(path) == 0 && res.Type == r.refType {
			kind = registryType // a reference asked for by name, any version
		}
		if res.Type == HelmType && res.Helm != nil {
			// A chart of a registry is a registry reference; the others
			// are downloaded.
			kind, target = registryType, res.Helm.Chart
			if _, ok := res.Helm.source(); ok {
				kind = chartType
			}
		}
		switch kind {
		case primitiveType:
			r.config = append(r.config, res)
			r.paths = append(r.paths, p)
			out = append(out, &LayoutResource{Name: res.Name, Type: res.Type, Metadata: res.Metadata, AccessControl: res.AccessControl})
			continue
		case urlType:
			if !r.x.opts.AllowURLs {
				return nil, &Error{Path: p, Err: invalid("type %q is a URL; URL types are off (dm --allow-urls, registryd --allow-url-types)", res.Type)}
			}
		case registryType:
			if looksLikeFile(r.x.langs, res.Type) {
				return nil, &Error{Path: p, Template: parent, Err: fmt.Errorf("type %q is not an import of %s (%s): %w", res.Type, orConfig(parent), listOr(sortedKeys(sc.types), "imports: ", "no imports"), derrors.NotFound)}
			}
		}
		node, err := r.expandTemplate(ctx, sc, p, chain, kind, target, res)
		if err != nil {
			return nil, err
		}
		out = append(out, node)
	}
	return out, nil
}

// listOr formats a list with a prefix, or none when it is empty.
func listOr(l []string, prefix, none string) string {
	if len(l) == 0 {
		return none
	}
	return prefix + strings.Join(l, ", ")
}

func orConfig(parent string) string {
	if parent == "" {
		return "the configuration"
	}
	return parent
}

// invocation is one template call.
type invocation struct {
	file  string // template file, a key of sc.b.files
	src   []byte
	lang  index.Language
	props map[string]any
	env   map[string]any
	sc    *scope // the template's own scope
	label string
	// order is the expansion's key order: properties and decoded output
	// keep document order (keyOrder.Keys).
	order *keyOrder
	// cluster is the request's (Request.Cluster).
	cluster *engine.Cluster
}

func (r *run) expandTemplate(ctx context.Context, sc *scope, p, chain []string, kind typeKind, target string, res Resource) (*LayoutResource, error) {
	x := r.x
	inv := &invocation{}
	var id, schemaFile string
	env := make(map[string]any, len(r.env)+5)
	for k, v := range r.env {
		env[k] = v
	}
	env["deployment"] = r.deployment
	env["name"] = res.Name
	env["type"] = res.Type
	env["namespace"] = r.namespace
	for _, k := range []string{"deployment", "name", "type", "namespace"} {
		if v, ok := r.env[k]; ok {
			env[k] = v // --env overrides even these
		}
	}
	switch kind {
	case importType:
		inv.file = target
		inv.sc = sc
		id = sc.b.key + ":" + target
		inv.label = target
		if sc.res != nil {
			inv.label = sc.res.Resolved() + "/" + target
		}
		l, ok := x.langs.ForFile(target)
		if !ok {
			return nil, &Error{Path: p, Err: invalid("import %s is not a template (want %s)", target, x.langs.Describe("", true))}
		}
		inv.lang = index.Language(l.Name)
		if s := l.Schema(target); hasKey(sc.b.files, s) {
			schemaFile = s
		}
		if sc.res != nil {
			env["version"] = sc.res.Version.Semver
		}
	default:
		if x.opts.Resolver == nil {
			return nil, &Error{Path: p, Err: fmt.Errorf("type %q is a registry reference and no registry is configured: %w", res.Type, derrors.NotFound)}
		}
		ref := res.Type
		if res.Helm != nil {
			ref = target
		}
		rs, err := x.opts.Resolver.ResolveIn(ctx, ref, sc.registry)
		if err != nil {
			return nil, &Error{Path: p, Err: fmt.Errorf("type %q: %w", ref, err)}
		}
		if res.Helm != nil && rs.Version.Language != HelmType {
			return nil, &Error{Path: p, Template: rs.Resolved(), Err: invalid("chart %s is a %s template, not a Helm chart (a version directory with Chart.yaml)", ref, rs.Version.Language)}
		}
		id = rs.Resolved()
		inv.label = id
		b, err := x.bundle(ctx, rs)
		if err != nil {
			return nil, &Error{Path: p, Template: id, Err: err}
		}
		inv.sc = &scope{b: b, types: map[string]string{}, res: rs,
			registry: resolve.Registry{Host: rs.Ref.Host, Owner: rs.Ref.Owner, Repo: rs.Ref.Repo}}
		for f := range b.files {
			inv.sc.types[f] = f
		}
		for n, f := range b.names {
			inv.sc.types[n] = f
		}
		inv.file = rs.Version.Template
		inv.lang = rs.Version.Language
		schemaFile = rs.Version.Schema
		env["version"] = rs.Version.Semver
		if !r.seenRefs[id] {
			r.seenRefs[id] = true
			r.refs = append(r.refs, Reference{Ref: ref, Resolved: id, Version: rs.Version.Semver, Digest: rs.Version.Digest})
		}
	case chartType:
		src, _ := res.Helm.source()
		if x.opts.Charts == nil {
			// A refusal of the request, not a fault of the program: the
			// operator allows chart hosts (registryd --chart-repo).
			return nil, &Error{Path: p, Err: derrors.Errorf(derrors.InvalidArgument, "type: helm resource names a chart outside the registries (%s), which this program does not download: no chart repository is allowed (registryd --chart-repo, or chart_repos in its configuration)", src)}
		}
		c, err := x.opts.Charts.FetchChart(ctx, src)
		if err != nil {
			return nil, &Error{Path: p, Err: fmt.Errorf("chart %s: %w", src, err)}
		}
		id = "chart:" + c.Digest
		inv.label = src.String()
		inv.sc = &scope{b: &bundle{key: id, files: c.Files}, types: map[string]string{}}
		inv.file = "Chart.yaml"
		inv.lang = HelmType
		env["version"] = c.Version
		if !r.seenRefs[id] {
			r.seenRefs[id] = true
			r.refs = append(r.refs, Reference{Ref: src.String(), Resolved: c.URL, Version: c.Version, Digest: c.Digest})
		}
	}
	if i := slices.Index(chain, id); i >= 0 {
		cyc := append(slices.Clone(chain[i:]), id)
		for j, c := range cyc {
			cyc[j] = chainLabel(c)
		}
		return nil, &Error{Path: p, Template: inv.label, Err: invalid("reference cycle: %s", strings.Join(cyc, " -> "))}
	}
	if len(chain)+1 > x.opts.MaxDepth {
		return nil, &Error{Path: p, Template: inv.label, Err: limitErr("MaxDepth", x.opts.MaxDepth, "templates nested %d deep", len(chain)+1)}
	}
	inv.src = inv.sc.b.files[inv.file]
	inv.env = env
	props := res.Properties
	if props == nil {
		props = map[string]any{}
	}
	fail := func(err error) error {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		e = &Error{Path: p, Template: inv.label, Err: err}
		var l *located
		if errors.As(err, &l) {
			e.File, e.Line, e.Err = l.File, l.Line, l.Err
		}
		return e
	}
	if x.opts.OnTemplate != nil {
		x.opts.OnTemplate(p, inv.label)
	}
	if res.Helm != nil && res.Helm.Content != "" {
		var err error
		if props, err = r.contentValues(ctx, res, props, env); err != nil {
			return nil, fail(err)
		}
	}
	if l, _ := x.langs.Lookup(string(inv.lang)); l.SchemaFile != "" {
		// A chart's values.schema.json validates the values coalesced
		// with values.yaml, which the engine does as Helm does: checked
		// here, a required value values.yaml gives would be missing, and
		// the schema's defaults, which Helm does not apply, would be.
		schemaFile = ""
	}
	if schemaFile != "" {
		orig := props
		var unknown, warns []string
		var err error
		var violations error
		props, unknown, warns, violations, err = x.applySchema(ctx, inv.sc.b, schemaFile, props, r.skipSchema)
		if err != nil {
			return nil, fail(err)
		}
		if violations != nil {
			r.warn(fmt.Sprintf("%s (%s): not validated (--skip-schema-validation): %v", strings.Join(p, " > "), inv.label, violations))
		}
		for _, w := range warns {
			r.warn(fmt.Sprintf("%s (%s): %s", strings.Join(p, " > "), inv.label, w))
		}
		if len(unknown) > 0 && r.strict {
			return nil, fail(invalid("%s: %s (--strict)", schemaFile, strings.Join(unknown, "; ")))
		}
		for _, u := range unknown {
			r.warn(fmt.Sprintf("%s (%s): %s: %s", strings.Join(p, " > "), inv.label, schemaFile, u))
		}
		r.order.Inherit(props, orig)
	}
	inv.props = props
	inv.order = r.order
	inv.cluster = r.cluster
	children, outputs, ignored, err := x.render(ctx, inv)
	if err != nil {
		return nil, fail(err)
	}
	if len(ignored.top) > 0 {
		r.warn(fmt.Sprintf("%s (%s): the template's output has fields beside resources and outputs (%s), which are ignored, as Deployment Manager ignored them (a multi-line value pasted without indentation makes such fields of its lines)", strings.Join(p, " > "), inv.label, strings.Join(ignored.top, ", ")))
	}
	for _, e := range ignored.outputs {
		r.warn(fmt.Sprintf("%s (%s): %s", strings.Join(p, " > "), inv.label, e))
	}
	if len(outputs) > 0 {
		r.composites = append(r.composites, composite{name: res.Name, path: p, outputs: outputs})
	}
	x.opts.Logger.DebugContext(ctx, "expanded template", "path", strings.Join(p, " > "), "template", inv.label, "resources", len(children))
	nodes, err := r.expandList(ctx, inv.sc, p, append(chain[:len(chain):len(chain)], id), inv.label, children)
	if err != nil {
		return nil, err
	}
	return &LayoutResource{Name: res.Name, Type: res.Type, Properties: props, Resources: nodes, Outputs: outputs, Metadata: res.Metadata, AccessControl: res.AccessControl}, nil
}

// Forget drops the files and compiled templates cached of the versions
// listed by the registry of identity source (index.Version.Source), no
// longer served.
func (x *Expander) Forget(source string) {
	mark := "version:" + source + "@"
	for _, k := range x.bundles.Keys() {
		if strings.HasPrefix(k, mark) {
			x.bundles.Remove(k)
		}
	}
	// Compiled templates are keyed by their files' key, after their
	// engine's name.
	for _, k := range x.compiled.Keys() {
		if strings.Contains(k, mark) {
			x.compiled.Remove(k)
		}
	}
}

// bundle returns the files of a resolved version, cached by digest.
func (x *Expander) bundle(ctx context.Context, rs *resolve.Resolution) (*bundle, error) {
	key := "version:" + rs.Version.CacheKey()
	if b, ok := x.bundles.Get(key); ok {
		return b, nil
	}
	files := make(map[string][]byte, len(rs.Version.Files))
	total := 0
	for _, f := range rs.Version.Files {
		data, err := x.opts.Resolver.ReadFile(ctx, rs, f.Path)
		if err != nil {
			return nil, fmt.Errorf("reading the version's files: %w", err)
		}
		if len(data) > x.opts.MaxInputBytes {
			return nil, at(f.Path, 0, limitErr("MaxInputBytes", x.opts.MaxInputBytes, "file is %d bytes", len(data)))
		}
		total += len(data)
		files[f.Path] = data
	}
	files, names, err := importNames(x.langs, files, nil, x.yamlLimits("MaxInputBytes", x.opts.MaxInputBytes))
	if err != nil {
		return nil, err
	}
	b := &bundle{key: key, files: files, names: names}
	x.bundles.Add(key, b)
	return b, nil
}

// render runs a template and returns its resources and outputs, and the
// other fields of its output, which are ignored.
func (x *Expander) render(ctx context.Context, inv *invocation) ([]Resource, []Output, ignoredFields, error) {
	if inv.src == nil {
		return nil, nil, ignoredFields{}, fmt.Errorf("template file %s is missing: %w", inv.file, derrors.NotFound)
	}
	if len(inv.src) > x.opts.MaxInputBytes {
		return nil, nil, ignoredFields{}, at(inv.file, 0, limitErr("MaxInputBytes", x.opts.MaxInputBytes, "template is %d bytes", len(inv.src)))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, x.opts.Timeout,
		limitErr("Timeout", x.opts.Timeout, "template ran too long"))
	defer cancel()
	eng, ok := x.engines[string(inv.lang)]
	if !ok {
		return nil, nil, ignoredFields{}, fmt.Errorf("template %s: unknown language %q: %w", inv.file, inv.lang, derrors.InvalidArgument)
	}
	out, err := eng.Render(ctx, engine.Invocation{
		File: inv.file, Source: inv.src,
		Files: inv.sc.b.files, FilesKey: inv.sc.b.key, Imports: inv.sc.b.importsValue,
		Properties: inv.props, Env: inv.env, Label: inv.label,
		Order: inv.order, Print: x.print, Cluster: inv.cluster,
	})
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, derrors.LimitExceeded) {
			// Name the deadline that fired: this template's Timeout,
			// the expansion's TotalTimeout or the caller's.
			err = stopped(ctx)
		}
		return nil, nil, ignoredFields{}, classify(err)
	}
	var v any
	switch {
	case out.YAML != nil:
		o := out.YAML
		var ok bool
		if v, ok = fastYAML(o, inv.order); ok {
			break
		}
		lim := x.yamlLimits("MaxOutputBytes", x.opts.MaxOutputBytes)
		lim.order = inv.order
		v, err = decodeYAML(o, lim)
		if err != nil {
			n := yamlErrorLine(err)
			msg := fmt.Sprintf("rendered output is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
			if ex := excerpt(o, n); ex != "" {
				msg += fmt.Sprintf(" (output line %d: %q)", n, ex)
			}
			if errors.Is(err, derrors.LimitExceeded) {
				return nil, nil, ignoredFields{}, err
			}
			return nil, nil, ignoredFields{}, at(inv.file, 0, invalid("%s", msg))
		}
	case out.Resources != nil:
		list := make([]Resource, len(out.Resources))
		for i, r := range out.Resources {
			list[i] = Resource{Name: r.Name, Type: r.Type, Properties: r.Properties}
		}
		return list, nil, ignoredFields{}, nil
	default:
		v = out.Value
	}
	list, outs, ignored, err := configFromValue(v)
	if err != nil {
		return nil, nil, ignoredFields{}, at(inv.file, 0, err)
	}
	return list, outs, ignored, nil
}

// stopped is the error of a done context; see engine.Stopped.
func stopped(ctx context.Context) error { return engine.Stopped(ctx) }

// cached returns the compiled value under key, compiling it on a miss.
func (x *Expander) cached(key string, compile func() (any, error)) (any, error) {
	if v, ok := x.compiled.Get(key); ok {
		return v, nil
	}
	v, err := compile()
	if err != nil {
		return nil, err
	}
	x.compiled.Add(key, v)
	return v, nil
}

// limitWriter collects rendered output up to a limit; see
// engine.LimitWriter.
type limitWriter = engine.LimitWriter

// contentValues renders a type: helm resource's content, a Go template
// with the properties and env of every Go template, and merges the YAML
// it prints over props (seed 002: values made by a template).
func (r *run) contentValues(ctx context.Context, res Resource, props, env map[string]any) (map[string]any, error) {
	file := res.Name + ".content.gotmpl"
	src := []byte(res.Helm.Content)
	sum := sha256.Sum256(src)
	out, err := r.x.engines["gotmpl"].Render(ctx, engine.Invocation{
		File: file, Source: src, Files: map[string][]byte{file: src}, FilesKey: "content:" + hex.EncodeToString(sum[:]),
		Imports: func() map[string]any { return map[string]any{} }, Properties: props, Env: env, Label: file, Order: r.order,
	})
	if err != nil {
		return nil, err
	}
	v, err := decodeYAML(out.YAML, r.x.yamlLimits("MaxOutputBytes", r.x.opts.MaxOutputBytes))
	if err != nil {
		return nil, at(file, engine.LineOf(err), invalid("content's output is not YAML: %v", err))
	}
	if v == nil {
		return props, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, at(file, 0, invalid("content's output is %s; want a mapping of values", kindOf(v)))
	}
	return mergeValues(props, m), nil
}

// mergeValues returns over merged into a copy of base: mappings merge
// key by key, anything else replaces (as Helm merges values files).
func mergeValues(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, ok1 := out[k].(map[string]any)
		om, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = mergeValues(bm, om)
			continue
		}
		out[k] = v
	}
	return out
}
