// Package helm renders Helm charts with Helm's own library (chart loader,
// chartutil values, engine), so that a chart in a dm registry or a
// configuration expands to exactly what `helm template` prints for the same
// release name, namespace and values.
//
// What differs from Helm, on purpose: there is no release record (dm keeps
// its own history); hooks are returned as ordered tiers per event (weight,
// then kind and name, as Helm runs them) for the deployer to apply as steps;
// test hooks are left out; without a cluster .Capabilities is
// DefaultKubeVersion with Helm's default API versions, and lookup returns
// an empty map.
package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mitchellh/copystructure"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/ignore"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
)

// DefaultKubeVersion is the Kubernetes version .Capabilities reports when
// no cluster is asked (Options.KubeVersion empty). It is what the released
// helm v3.16 binaries report offline: Helm's build sets the major and minor
// of the client-go it links (1.31), and dm links the same minor.
const DefaultKubeVersion = "v1.31.0"

// Default limits, used where Options leaves a field zero.
const (
	// DefaultMaxChartBytes bounds a chart's files, unpacked, in total.
	DefaultMaxChartBytes = 20 << 20
	// DefaultMaxOutputBytes bounds what one chart renders, in total.
	DefaultMaxOutputBytes = 4 << 20
	// DefaultTimeout bounds one render.
	DefaultTimeout = 30 * time.Second
)

// Options are the release's parameters and the render's limits. The zero
// value of every field but ReleaseName works.
type Options struct {
	// ReleaseName is .Release.Name; required.
	ReleaseName string
	// Namespace is .Release.Namespace; "default" when empty, as helm template.
	Namespace string
	// KubeVersion is .Capabilities.KubeVersion; DefaultKubeVersion when empty.
	KubeVersion string
	// APIVersions are added to Helm's default .Capabilities.APIVersions
	// (group/version or group/version/Kind), as helm template --api-versions.
	APIVersions []string
	// ClusterAPIVersions makes APIVersions the whole set, in place of
	// Helm's default: the cluster's, from discovery, as helm install uses.
	ClusterAPIVersions bool
	// Lookup gives the lookup function its clients; nil renders offline,
	// where lookup returns an empty map.
	Lookup engine.ClientProvider
	// IsUpgrade sets .Release.IsUpgrade (and clears IsInstall).
	IsUpgrade bool
	// SkipCRDs leaves out the chart's crds/ files (helm install's
	// --skip-crds); by default they come first among the objects.
	SkipCRDs bool
	// MaxChartBytes bounds the chart's files, in total.
	MaxChartBytes int
	// MaxOutputBytes bounds the rendered output, in total.
	MaxOutputBytes int
	// Timeout bounds the render.
	Timeout time.Duration
}

// Object is one rendered Kubernetes object.
type Object struct {
	// Source is the chart-relative template path it came from, such as
	// mychart/templates/deployment.yaml (helm template's "# Source:").
	Source string
	// Manifest is the object's YAML as Helm rendered it (valid YAML:
	// Helm's sorting parsed it).
	Manifest string
	// Kind and Name are the object's, as Helm read them to sort it.
	Kind, Name string
}

// Decode decodes the manifest (JSON-compatible types, as
// sigs.k8s.io/yaml). Render leaves it to the caller: decoding is most of
// the cost of a render, and a caller that only prints needs none.
func (o Object) Decode() (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(o.Manifest), &m); err != nil {
		return nil, at(o.Source, Invalid(fmt.Errorf("the rendered manifest is not valid YAML: %w", err)))
	}
	return m, nil
}

// Hook is a rendered hook object.
type Hook struct {
	Object
	// Weight is helm.sh/hook-weight.
	Weight int
	// DeletePolicies are helm.sh/hook-delete-policy's values;
	// before-hook-creation when it has none, as in Helm.
	DeletePolicies []string
}

// Tier is the hooks of one event sharing one weight: Helm applies a tier's
// hooks (in order) and waits for them before the next tier.
type Tier struct {
	Weight int
	Hooks  []Hook
}

// Result is a rendered chart.
type Result struct {
	// Objects are the chart's objects (CRDs first, then in Helm's install
	// order), hooks and test hooks excluded.
	Objects []Object
	// Hooks maps an event (pre-install, post-install, pre-upgrade,
	// post-upgrade, pre-delete, post-delete, pre-rollback, post-rollback) to
	// its tiers in the order Helm runs them. Test hooks are left out.
	Hooks map[string][]Tier
	// Notes is the chart's rendered templates/NOTES.txt.
	Notes string
}

// LoadFiles loads a chart from its files, keyed by slash-separated path
// relative to the chart's directory (Chart.yaml, values.yaml,
// templates/..., charts/... including packed .tgz subcharts). .helmignore
// applies as in helm package.
func LoadFiles(files map[string][]byte, maxBytes int) (*chart.Chart, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxChartBytes
	}
	rules := ignore.Empty()
	if b, ok := files[ignore.HelmIgnore]; ok {
		r, err := ignore.Parse(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ignore.HelmIgnore, Invalid(err))
		}
		rules = r
	}
	rules.AddDefaults()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var bf []*loader.BufferedFile
	total := 0
	for _, n := range names {
		n = strings.TrimPrefix(path.Clean("/"+n), "/")
		if ignored(rules, n) {
			continue
		}
		total += len(files[n])
		if total > maxBytes {
			return nil, limitErr("MaxChartBytes", "the chart's files exceed %d bytes", maxBytes)
		}
		bf = append(bf, &loader.BufferedFile{Name: n, Data: files[n]})
	}
	return load(func() (*chart.Chart, error) { return loader.LoadFiles(bf) })
}

// ignored reports whether .helmignore's rules leave out the file n or one
// of its directories.
func ignored(rules *ignore.Rules, n string) bool {
	parts := strings.Split(n, "/")
	for i := 1; i <= len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		if rules.Ignore(p, fileInfo{name: path.Base(p), dir: i < len(parts)}) {
			return true
		}
	}
	return false
}

// LoadFS loads the chart whose Chart.yaml is at the root of fsys.
func LoadFS(fsys fs.FS, maxBytes int) (*chart.Chart, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxChartBytes
	}
	files := map[string][]byte{}
	total := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and devices are not chart content
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		total += len(b)
		if total > maxBytes {
			return limitErr("MaxChartBytes", "the chart's files exceed %d bytes", maxBytes)
		}
		files[p] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return LoadFiles(files, maxBytes)
}

// LoadArchive loads a packed chart (.tgz), reading at most maxBytes
// unpacked.
func LoadArchive(r io.Reader, maxBytes int) (*chart.Chart, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxChartBytes
	}
	// Helm's own archive reader bounds each file by its own (larger)
	// limit; this bounds the whole compressed stream as well.
	lr := &io.LimitedReader{R: r, N: int64(maxBytes) + 1}
	c, err := load(func() (*chart.Chart, error) { return loader.LoadArchive(lr) })
	if lr.N <= 0 {
		return nil, limitErr("MaxChartBytes", "the chart archive exceeds %d bytes", maxBytes)
	}
	if err != nil {
		return nil, err
	}
	n := 0
	for _, f := range c.Raw {
		n += len(f.Data)
	}
	if n > maxBytes {
		return nil, limitErr("MaxChartBytes", "the chart's files exceed %d bytes", maxBytes)
	}
	return c, nil
}

// load runs a Helm loader with its panics turned into errors.
func load(f func() (*chart.Chart, error)) (c *chart.Chart, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Invalid(fmt.Errorf("Helm's chart loader failed: %v", p))
		}
	}()
	c, err = f()
	if err != nil {
		return nil, Invalid(fmt.Errorf("loading the chart: %w", err))
	}
	return c, nil
}

// Render renders the chart c with values (the user's values, coalesced
// over the chart's values.yaml as helm template does) for the release in
// opts. values.schema.json of the chart and its subcharts is validated
// first; every violation is listed.
func Render(ctx context.Context, c *chart.Chart, values map[string]any, opts Options) (*Result, error) {
	if c == nil || c.Metadata == nil {
		return nil, Invalid(errors.New("no chart (Chart.yaml missing)"))
	}
	if opts.ReleaseName == "" {
		return nil, Invalid(errors.New("the release name is empty"))
	}
	if err := chartutil.ValidateReleaseName(opts.ReleaseName); err != nil {
		return nil, Invalid(fmt.Errorf("release name %q: %w", opts.ReleaseName, err))
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	caps, err := capabilities(opts)
	if err != nil {
		return nil, err
	}
	if c.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, Invalid(fmt.Errorf("Chart.yaml: the chart requires kubeVersion %s, which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, caps.KubeVersion.String()))
	}
	if values == nil {
		values = map[string]any{}
	}

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	type answer struct {
		res *Result
		err error
	}
	// Helm's engine cannot be interrupted: it runs aside, and a render
	// that outlives the timeout is abandoned (the sandbox's worker
	// processes bound CPU and memory where templates are untrusted).
	done := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			if p := recover(); p != nil {
				a = answer{err: Invalid(fmt.Errorf("the helm engine failed on chart %s: %v", c.Name(), p))}
			}
			done <- a
		}()
		a.res, a.err = render(c, values, opts, caps)
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, limitErr("Timeout", "rendering chart %s took longer than %s", c.Name(), opts.Timeout)
		}
		return nil, ctx.Err()
	}
}

func capabilities(opts Options) (*chartutil.Capabilities, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	kv := opts.KubeVersion
	if kv == "" {
		kv = DefaultKubeVersion
	}
	v, err := chartutil.ParseKubeVersion(kv)
	if err != nil {
		return nil, Invalid(fmt.Errorf("kube version %q: %w", kv, err))
	}
	caps.KubeVersion = *v
	if opts.ClusterAPIVersions {
		caps.APIVersions = append(chartutil.VersionSet{}, opts.APIVersions...)
	} else {
		// A fresh slice: DefaultCapabilities' must not grow.
		caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), opts.APIVersions...)
	}
	return caps, nil
}

// render does what helm template does between loading the chart and
// printing it (action.Install with ClientOnly).
func render(c *chart.Chart, values map[string]any, opts Options, caps *chartutil.Capabilities) (*Result, error) {
	// Dependencies' conditions, tags and import-values change the chart
	// (in place), so they apply to a copy of its dependency list.
	c = shallowCopy(c)
	if err := chartutil.ProcessDependenciesWithMerge(c, values); err != nil {
		return nil, Invalid(fmt.Errorf("Chart.yaml: dependencies: %w", err))
	}
	ro := chartutil.ReleaseOptions{
		Name:      opts.ReleaseName,
		Namespace: opts.Namespace,
		Revision:  1,
		IsInstall: !opts.IsUpgrade,
		IsUpgrade: opts.IsUpgrade,
	}
	vals, err := chartutil.ToRenderValues(c, values, ro, caps)
	if err != nil {
		if strings.Contains(err.Error(), "values don't meet the specifications") {
			return nil, Invalid(fmt.Errorf("values.schema.json: %w", err))
		}
		return nil, Invalid(fmt.Errorf("values: %w", err))
	}
	var files map[string]string
	if opts.Lookup != nil {
		files, err = engine.RenderWithClientProvider(c, vals, opts.Lookup)
	} else {
		files, err = engine.Render(c, vals)
	}
	if err != nil {
		return nil, templateError(err)
	}
	total := 0
	for _, s := range files {
		total += len(s)
	}
	if total > opts.MaxOutputBytes {
		return nil, limitErr("MaxOutputBytes", "chart %s rendered more than %d bytes", c.Name(), opts.MaxOutputBytes)
	}

	res := &Result{Hooks: map[string][]Tier{}}
	for k, v := range files {
		if strings.HasSuffix(k, "/NOTES.txt") {
			if k == path.Join(c.Name(), "templates", "NOTES.txt") {
				res.Notes = v
			}
			delete(files, k)
		}
	}
	hooks, manifests, err := sortManifests(files)
	if err != nil {
		return nil, Invalid(fmt.Errorf("the rendered chart is not valid YAML: %w", err))
	}
	if !opts.SkipCRDs {
		// crds/ files are not templates: Helm applies them as they are,
		// so they are parsed here as Helm's install does.
		for _, crd := range c.CRDObjects() {
			for _, doc := range releaseutil.SplitManifests(string(crd.File.Data)) {
				var head releaseutil.SimpleHead
				if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
					return nil, at(crd.Filename, Invalid(fmt.Errorf("not valid YAML: %w", err)))
				}
				if !blank(doc) {
					res.Objects = append(res.Objects, object(crd.Filename, doc, head.Kind, head.Metadata))
				}
			}
		}
	}
	for _, m := range manifests {
		if !blank(m.Content) {
			res.Objects = append(res.Objects, object(m.Name, m.Content, m.Head.Kind, m.Head.Metadata))
		}
	}
	if err := groupHooks(res, hooks); err != nil {
		return nil, err
	}
	return res, nil
}

// shallowCopy copies c and, recursively, its dependency list, so that
// ProcessDependencies can drop disabled subcharts without changing the
// caller's chart.
func shallowCopy(c *chart.Chart) *chart.Chart {
	n := *c
	md := *c.Metadata
	n.Metadata = &md
	if c.Metadata.Dependencies != nil {
		md.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			dd := *d
			md.Dependencies[i] = &dd
		}
	}
	n.SetDependencies()
	for _, d := range c.Dependencies() {
		n.AddDependency(shallowCopy(d))
	}
	// import-values write into the values map, so each render gets its own.
	if c.Values != nil {
		if v, err := copystructure.Copy(c.Values); err == nil {
			n.Values = v.(map[string]any)
		}
	}
	return &n
}

func object(source, manifest, kind string, md *struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations"`
}) Object {
	o := Object{Source: source, Manifest: withNewline(manifest), Kind: kind}
	if md != nil {
		o.Name = md.Name
	}
	return o
}

// withNewline ends a manifest with a newline, as helm template prints it
// and helm install applies it: a block scalar at the end of the document
// keeps its final line break.
func withNewline(m string) string {
	if strings.HasSuffix(m, "\n") {
		return m
	}
	return m + "\n"
}

// blank reports whether a document holds only comments and blank lines,
// which helm template prints and which are no object.
func blank(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}

// groupHooks sorts the hooks into tiers per event, as Helm's execHook
// orders them: by weight, then name (the install order of kinds only
// between equal names).
func groupHooks(res *Result, hooks []*release.Hook) error {
	byEvent := map[string][]*release.Hook{}
	for _, h := range hooks {
		for _, e := range h.Events {
			if e == release.HookTest {
				continue
			}
			byEvent[string(e)] = append(byEvent[string(e)], h)
		}
	}
	for e, hs := range byEvent {
		sort.SliceStable(hs, func(i, j int) bool {
			if hs[i].Weight != hs[j].Weight {
				return hs[i].Weight < hs[j].Weight
			}
			return hs[i].Name < hs[j].Name
		})
		var tiers []Tier
		for _, h := range hs {
			if blank(h.Manifest) {
				continue
			}
			hk := Hook{Object: Object{Source: h.Path, Manifest: withNewline(h.Manifest), Kind: h.Kind, Name: h.Name}, Weight: h.Weight}
			for _, p := range h.DeletePolicies {
				hk.DeletePolicies = append(hk.DeletePolicies, string(p))
			}
			if len(hk.DeletePolicies) == 0 {
				// Helm's default, so that a hook runs again on the next install.
				hk.DeletePolicies = []string{string(release.HookBeforeHookCreation)}
			}
			if n := len(tiers); n == 0 || tiers[n-1].Weight != h.Weight {
				tiers = append(tiers, Tier{Weight: h.Weight})
			}
			tiers[len(tiers)-1].Hooks = append(tiers[len(tiers)-1].Hooks, hk)
		}
		res.Hooks[e] = tiers
	}
	return nil
}

// helmLineRE finds the template and line in Helm's engine errors, such as
// "template: mychart/templates/cm.yaml:4:12: executing ...", "execution
// error at (mychart/templates/cm.yaml:6:11): ..." or "parse error at
// (mychart/templates/cm.yaml:3): ...".
var helmLineRE = regexp.MustCompile(`(?:template: |error at \()([^:\s()]+):(\d+)`)

// TemplateLine returns the template file (the chart's name first) and
// line that one of Helm's engine errors names, if it names one.
func TemplateLine(msg string) (file string, line int, ok bool) {
	m := helmLineRE.FindStringSubmatch(msg)
	if m == nil {
		return "", 0, false
	}
	n, _ := strconv.Atoi(m[2])
	return m[1], n, true
}

// templateError wraps an engine error with the template file and line it
// names (kept in the message as Helm wrote it).
func templateError(err error) error {
	file, n, ok := TemplateLine(err.Error())
	if !ok {
		return Invalid(err)
	}
	return &Error{File: file, Line: n, Err: Invalid(err)}
}

// Error is a failure located in a chart's file.
type Error struct {
	// File is the chart-relative path (with the chart's name first, as
	// Helm names templates).
	File string
	// Line is 1-based; 0 when unknown.
	Line int
	Err  error
}

func (e *Error) Error() string {
	// Helm's messages already name the template and line; others get them.
	if strings.Contains(e.Err.Error(), e.File) {
		return e.Err.Error()
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func at(file string, err error) error { return &Error{File: file, Err: err} }

// kindError gives an error one of derrors' kinds without changing its text.
type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// Invalid gives err derrors.InvalidArgument's kind without changing its
// text: a chart's own fault.
func Invalid(err error) error { return &kindError{err: err, kind: derrors.InvalidArgument} }

// LimitError is a limit of Options reached.
type LimitError struct {
	// Field names the Options field.
	Field string
	Msg   string
}

func (e *LimitError) Error() string { return fmt.Sprintf("%s (limit %s)", e.Msg, e.Field) }

// Unwrap returns derrors.LimitExceeded.
func (e *LimitError) Unwrap() error { return derrors.LimitExceeded }

func limitErr(field, format string, args ...any) error {
	return &LimitError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fileInfo is the little of fs.FileInfo that .helmignore's rules read.
type fileInfo struct {
	name string
	dir  bool
}

func (f fileInfo) Name() string { return f.name }
func (f fileInfo) Size() int64  { return 0 }
func (f fileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir
	}
	return 0
}
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }
