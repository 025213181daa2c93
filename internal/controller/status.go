package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
)

// FileReader reads a file of the template version a reference resolves
// to: an api.Service over the controller's registries, or a registryd
// client.
type FileReader interface {
	ReadFile(ctx context.Context, ref, registry, path string) ([]byte, error)
}

// statusOutcome is what a status template made: the outputs, and whether
// it holds Ready back (ready: false) with its message.
type statusOutcome struct {
	outputs map[string]any
	hold    bool
	message string
}

// templateName is the template's name in a resolved reference:
// github.com/o/r/c/web:v1.2.0 -> web.
func templateName(resolved string) string {
	ref, _, _ := strings.Cut(resolved, "@")
	ref, _, _ = strings.Cut(ref, ":")
	return path.Base(ref)
}

// statusForms are the status-template forms of the engine table, in its
// order: the order a template version's files are looked for.
func statusForms() []engine.Status {
	var forms []engine.Status
	for _, lang := range engine.Default().Languages() {
		if lang.Status.Extension != "" {
			forms = append(forms, lang.Status)
		}
	}
	return forms
}

// statusFormFor is the status form of the engine table that status
// template file is written in, by its name's ending.
func statusFormFor(file string) engine.Status {
	for _, st := range statusForms() {
		if strings.HasSuffix(file, st.Extension) {
			return st
		}
	}
	return engine.Status{}
}

// statusLanguageNames names the languages a status template may be
// written in, for messages: "jinja or gotmpl".
func statusLanguageNames() string {
	var names []string
	for _, st := range statusForms() {
		names = append(names, strings.TrimPrefix(st.Extension, ".status."))
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// runStatus renders the instance's status template over the live objects:
// the one its kind gives inline, else the one shipped next to its template
// (<template>.status.jinja, else .status.gotmpl); nil when there is none.
// Secrets' data, the properties that came from Secrets or that the
// schema marks secret, and every field of a rendered object that depends
// on one of those (taintOf) read Redacted: the template runs over no
// secret, so nothing it outputs can hold one.
func (r *InstanceReconciler) runStatus(ctx context.Context, ti *v1alpha1.TemplateInstance, a *applied, resolved, digest string) (*statusOutcome, error) {
	cfg, rec := a.cfg, a.res.Record
	file, src, err := r.kind.inlineStatus(ti)
	if err != nil {
		return nil, err
	}
	if file == "" {
		if file, src, err = r.statusFile(ctx, resolved, digest); file == "" || err != nil {
			return nil, err
		}
	}
	form := statusFormFor(file)
	prefix, suffix := form.Prefix, form.Suffix
	t, err := r.tainted(ctx, a, resolved, digest)
	if err != nil {
		return nil, fmt.Errorf("status template %s: %w", file, err)
	}
	live := map[string]any{}
	for _, res := range rec.Resources {
		gv, _ := parseAPIVersion(res.APIVersion)
		u, err := cfg.Cluster.Get(ctx, kube.ObjectRef{Group: gv[0], Version: gv[1], Kind: res.Kind, Namespace: res.Namespace, Name: res.Name})
		if err != nil && !errors.Is(err, derrors.NotFound) {
			return nil, fmt.Errorf("status template %s: reading %s %s: %w", file, res.Kind, res.Name, err)
		}
		if u != nil {
			live[path.Base(res.Path)] = statusView(u.Object, t, objectKey{path: res.Path, apiVersion: res.APIVersion, kind: res.Kind, name: res.Name})
		}
	}
	marked, err := r.schemaSecrets(ctx, resolved, digest)
	if err != nil {
		return nil, fmt.Errorf("status template %s: %w", file, err)
	}
	props := redactPaths(a.props, slices.Concat(a.secret, marked))
	inst, err := r.kind.instance(ti)
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(map[string]any{"resources": live, "instance": inst, "properties": props})
	if err != nil {
		return nil, fmt.Errorf("status template %s: %w", file, err)
	}
	out, err := renderStatus(ctx, r.opts.Expander, "status of "+r.kind.controllerName(ti), file, string(src), prefix, suffix, in)
	if err != nil {
		return nil, err
	}
	o := &statusOutcome{outputs: out}
	if ready, ok := out["ready"].(bool); ok {
		o.hold = !ready
		delete(out, "ready")
	}
	if msg, ok := out["message"].(string); ok {
		o.message = msg
		delete(out, "message")
	}
	if o.hold && o.message == "" {
		o.message = file + " says not ready"
	}
	return o, nil
}

// statusFile reads the status template shipped with the template version
// applied; "" when there is none.
func (r *InstanceReconciler) statusFile(ctx context.Context, resolved, digest string) (string, []byte, error) {
	if r.opts.Files == nil || resolved == "" || digest == "" {
		return "", nil, nil
	}
	for _, st := range statusForms() {
		name := templateName(resolved) + st.Extension
		// The digest reads the very version applied, not a newer patch.
		b, err := r.opts.Files.ReadFile(ctx, resolved+"@"+digest, "", name)
		if errors.Is(err, derrors.NotFound) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("reading the status template %s: %w", name, err)
		}
		return name, b, nil
	}
	return "", nil, nil
}

// renderStatus runs the status template file (source src, wrapped in
// prefix and suffix) over the JSON input in, in the expander, and returns
// its output mapping.
func renderStatus(ctx context.Context, exp api.Expander, configName, file, src, prefix, suffix string, in []byte) (map[string]any, error) {
	config := "imports:\n- path: " + file + "\nresources:\n- name: status\n  type: " + file + "\n  properties: " + string(in) + "\n"
	req := func(text string) *api.ExpandRequest {
		return &api.ExpandRequest{Config: config, ConfigName: configName, Imports: map[string]string{file: text}}
	}
	x, err := exp.Expand(ctx, req(prefix+src+suffix))
	if err != nil {
		return nil, fmt.Errorf("status template %s: %w", file, jinjaStatusLine(ctx, exp, err, file, prefix, src, req))
	}
	if len(x.Config.Resources) != 1 {
		return nil, fmt.Errorf("status template %s: no output", file)
	}
	text, _ := x.Config.Resources[0].Properties["text"].(string)
	v, err := expand.DecodeValue([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("status template %s: its output is not YAML: %w", file, err)
	}
	out, ok := v.(map[string]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("status template %s: want a mapping, got %T", file, v)
	}
	return out, nil
}

// jinjaCapture ends the Jinja status form's prefix of the engine table:
// the capture of what the status template prints.
const jinjaCapture = `{% set out %}`

// jinjaStatusLine finds the true line of a Jinja status template's error.
// The engine names the line of the outermost statement, and in the capture
// that runs a status template that is always line 1; run again without the
// capture (the inputs' prefix holds no newline, so lines are the file's),
// the template's own statements are outermost and the error names the
// line the author wrote. Only a template error at line 1 is run again, never
// a limit: a hostile template runs once.
func jinjaStatusLine(ctx context.Context, exp api.Expander, err error, file, prefix, src string, req func(string) *api.ExpandRequest) error {
	if !strings.HasSuffix(prefix, jinjaCapture) || !errors.Is(err, derrors.InvalidArgument) || errors.Is(err, derrors.LimitExceeded) ||
		!strings.Contains(err.Error(), file+":1:") {
		return err
	}
	_, again := exp.Expand(ctx, req(strings.TrimSuffix(prefix, jinjaCapture)+src))
	// Rendered without the capture its output is no configuration, so an
	// error that names no line of the file is not the template's.
	if again == nil || !errors.Is(again, derrors.InvalidArgument) || !regexp.MustCompile(regexp.QuoteMeta(file)+`:\d+:`).MatchString(again.Error()) {
		return err
	}
	return again
}

// toMap converts an object to its JSON form.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}
