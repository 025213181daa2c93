package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dmhq/dm/internal/controller/instance"
	"github.com/dmhq/dm/internal/expand/schema"
)

// Redacted is what a status template reads in place of a secret: the data
// of a Secret among the live objects, and a property value that came from
// a Secret (spec.propertiesFrom) or that the template's schema marks
// writeOnly or format: password. A status template writes
// status.outputs, which accounts that may read TemplateInstances but not
// Secrets read too.
const Redacted = "(redacted)"

// leafPaths appends the paths of v's leaves (values that are not
// mappings) below prefix to out.
func leafPaths(v map[string]any, prefix []string, out [][]string) [][]string {
	return instance.LeafPaths(v, prefix, out)
}

// redactPaths returns v with the value at each path replaced by Redacted,
// copying what it changes: v itself is left alone. A path v does not hold
// is skipped.
func redactPaths(v map[string]any, paths [][]string) map[string]any {
	if len(paths) == 0 {
		return v
	}
	out := maps.Clone(v)
	for _, p := range paths {
		out = redactPath(out, p)
	}
	return out
}

func redactPath(v map[string]any, p []string) map[string]any {
	x, ok := v[p[0]]
	if !ok {
		return v
	}
	out := maps.Clone(v)
	if len(p) == 1 {
		out[p[0]] = Redacted
		return out
	}
	m, ok := x.(map[string]any)
	if !ok {
		// A mapping marked secret deeper down holds a scalar here: the
		// scalar goes too.
		out[p[0]] = Redacted
		return out
	}
	out[p[0]] = redactPath(m, p[1:])
	return out
}

// redactSecret returns obj with the values of its data and stringData
// replaced by Redacted, when it is a Secret (keys stay: a status may say
// which keys a Secret has), and obj itself otherwise.
func redactSecret(obj map[string]any) map[string]any {
	if obj["kind"] != "Secret" || obj["apiVersion"] != "v1" {
		return obj
	}
	out := maps.Clone(obj)
	for _, field := range []string{"data", "stringData"} {
		if d, ok := out[field].(map[string]any); ok {
			r := make(map[string]any, len(d))
			for k := range d {
				r[k] = Redacted
			}
			out[field] = r
		}
	}
	// kubectl's last-applied annotation would carry the data again.
	if md, ok := out["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, has := ann["kubectl.kubernetes.io/last-applied-configuration"]; has {
				md, ann = maps.Clone(md), maps.Clone(ann)
				ann["kubectl.kubernetes.io/last-applied-configuration"] = Redacted
				md["annotations"] = ann
				out["metadata"] = md
			}
		}
		if _, has := md["managedFields"]; has {
			md = maps.Clone(out["metadata"].(map[string]any))
			delete(md, "managedFields")
			out["metadata"] = md
		}
	}
	return out
}

// statusView is the live object obj as a status template reads it: a
// Secret's data Redacted (redactSecret), and every field t says depends
// on a marked value (the object's key k) Redacted, with what would carry
// those fields again (the last-applied annotation, managedFields, which
// name a mapping's keys).
func statusView(obj map[string]any, t *taint, k objectKey) map[string]any {
	obj = redactSecret(obj)
	if t == nil {
		return obj
	}
	paths := t.objects[k]
	if t.all {
		paths = renderedLeaves(obj)
		// What names it stays, and what the cluster reports.
		paths = slices.DeleteFunc(paths, func(p taintPath) bool { return p[0].key == "status" })
	}
	if len(paths) == 0 {
		return obj
	}
	obj = redactTainted(obj, paths)
	if md, ok := obj["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "managedFields")
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, has := ann["kubectl.kubernetes.io/last-applied-configuration"]; has {
				ann = maps.Clone(ann)
				ann["kubectl.kubernetes.io/last-applied-configuration"] = Redacted
				md["annotations"] = ann
			}
		}
		obj = maps.Clone(obj)
		obj["metadata"] = md
	}
	return obj
}

// sensitivePaths returns the paths of the properties sc marks writeOnly
// or format: password, nested properties of objects included.
func sensitivePaths(sc *schema.Schema) [][]string {
	if sc == nil {
		return nil
	}
	return sensitiveIn(sc.Properties, nil, nil)
}

func sensitiveIn(props map[string]any, prefix []string, out [][]string) [][]string {
	for name, def := range props {
		d, ok := def.(map[string]any)
		if !ok {
			continue
		}
		p := append(prefix[:len(prefix):len(prefix)], name)
		if d["writeOnly"] == true || d["format"] == "password" {
			out = append(out, p)
			continue
		}
		if sub, ok := d["properties"].(map[string]any); ok {
			out = sensitiveIn(sub, p, out)
		}
	}
	return out
}

// schemaSecrets returns the paths of the properties the schema of the
// version resolved@digest marks secret, cached by version.
func (r *InstanceReconciler) schemaSecrets(ctx context.Context, resolved, digest string) ([][]string, error) {
	if r.opts.Templates == nil || resolved == "" || digest == "" {
		return nil, nil
	}
	key := resolved + "@" + digest
	if r.secretPaths != nil {
		if p, ok := r.secretPaths.Get(key); ok {
			return p, nil
		}
	}
	tv, err := r.opts.Templates.Template(ctx, key, "")
	if err != nil {
		// Not rendered without knowing what to hide.
		return nil, fmt.Errorf("reading the schema of %s to hide its secret properties: %w", resolved, err)
	}
	var paths [][]string
	if tv.SchemaContent != "" {
		// A schema dm cannot read (a chart's values.schema.json of
		// another draft) marks nothing: Secrets' values are still hidden.
		if sc, err := schema.Parse([]byte(tv.SchemaContent), tv.Schema); err == nil {
			paths = sensitivePaths(sc)
		}
	}
	if r.secretPaths != nil {
		r.secretPaths.Add(key, paths)
	}
	return paths, nil
}

// outputs are the template's outputs (DM's outputs: [{name, value}]) read
// from the live objects, for status.outputs. An output that reads a
// Secret, or whose value depends on a marked value (taintOf: a property
// from a Secret through propertiesFrom or marked writeOnly or format:
// password by the schema, a Secret a chart looked up), however
// transformed, is Redacted; one whose name depends on one is left out.
func (r *InstanceReconciler) outputs(ctx context.Context, a *applied, resolved, digest string) (map[string]any, error) {
	rec := a.res.Record
	if len(rec.Outputs) == 0 {
		return nil, nil
	}
	out, err := a.cfg.Outputs(ctx, rec)
	if err != nil {
		return nil, err
	}
	t, err := r.tainted(ctx, a, resolved, digest)
	if err != nil {
		return nil, err
	}
	for _, o := range rec.Outputs {
		for _, rd := range o.Reads {
			if rd.Kind == "Secret" && rd.APIVersion == "v1" {
				out[o.Name] = Redacted
			}
		}
		switch {
		case t == nil:
		case t.all, t.outputs[o.Name] == outputRedacted:
			out[o.Name] = Redacted
		case t.outputs[o.Name] == outputDropped:
			delete(out, o.Name)
		}
	}
	return out, nil
}

// minSecretLen is the shortest secret value error messages are cleaned
// of: a shorter one ("1", "on") would rewrite messages that merely share
// it.
const minSecretLen = 4

// secretStrings are the leaves of the values at marks in props, as text.
func secretStrings(props map[string]any, marks [][]string) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case nil:
		default:
			out = append(out, fmt.Sprint(x))
		}
	}
	for _, p := range marks {
		if v, ok := valueAt(props, p); ok {
			walk(v)
		}
	}
	return out
}

// secretForms are the forms a secret value takes in a message that quotes
// it: as it is, escaped as a JSON or Go string, for HTML, and in base64.
// An error is the words of whatever failed (a template engine, a schema
// validator, the apiserver), which quote what they refuse but transform
// nothing: unlike outputs, its message can only be cleaned after the fact.
func secretForms(s string) []string {
	forms := []string{s, html.EscapeString(s), base64.StdEncoding.EncodeToString([]byte(s)),
		base64.RawStdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte(s))}
	if b, err := json.Marshal(s); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		t := strings.TrimSpace(buf.String())
		forms = append(forms, t[1:len(t)-1])
	}
	q := strconv.Quote(s)
	forms = append(forms, q[1:len(q)-1])
	q = strconv.QuoteToASCII(s)
	forms = append(forms, q[1:len(q)-1])
	return forms
}

// scrubbedError is an error whose message has secret values taken out;
// errors.Is and errors.As see the error it was.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub returns err with every form of each of values (secretForms) in
// its message replaced by Redacted; err itself when none is there.
func scrub(err error, values []string) error {
	if err == nil {
		return nil
	}
	var forms []string
	for _, v := range values {
		if len(v) >= minSecretLen {
			forms = append(forms, secretForms(v)...)
		}
	}
	if len(forms) == 0 {
		return err
	}
	// The longest first: a form inside another goes with it.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	msg := err.Error()
	clean := msg
	for _, f := range forms {
		clean = strings.ReplaceAll(clean, f, Redacted)
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// scrubbed returns err (of applying the instance) without the values
// marked secret: props' at secret and at the paths the schema marks, and
// those of the Secrets a chart looked up.
func (r *InstanceReconciler) scrubbed(ctx context.Context, ref string, rd *rendering, props map[string]any, secret [][]string, err error) error {
	marks := slices.Clone(secret)
	resolved, digest := "", ""
	if rd.x != nil {
		for _, x := range rd.x.References {
			if x.Ref == rd.src.Input.Ref {
				resolved, digest = x.Resolved, x.Digest
			}
		}
	}
	switch {
	case digest != "":
		if m, e := r.schemaSecrets(ctx, resolved, digest); e == nil {
			marks = append(marks, m...)
		}
	case r.opts.Templates != nil:
		// The expansion failed before it resolved: the version it would
		// have, for its schema.
		if tv, e := r.opts.Templates.Template(ctx, ref, r.opts.DefaultRegistry); e == nil && tv.SchemaContent != "" {
			if sc, e := schema.Parse([]byte(tv.SchemaContent), tv.Schema); e == nil {
				marks = append(marks, sensitivePaths(sc)...)
			}
		}
	}
	_, looked := rd.secrets.read()
	return scrub(err, slices.Concat(secretStrings(props, marks), looked))
}

// valueAt returns the value at path p of v.
func valueAt(v map[string]any, p []string) (any, bool) {
	var cur any = v
	for _, k := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}
