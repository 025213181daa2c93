package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	for k, x := range v {
		p := append(prefix[:len(prefix):len(prefix)], k)
		if m, ok := x.(map[string]any); ok && len(m) > 0 {
			out = leafPaths(m, p, out)
			continue
		}
		out = append(out, p)
	}
	return out
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
// from the live objects, for status.outputs. An output that reads a Secret,
// or whose value holds a property value a status template would not see
// (from a Secret through propertiesFrom, or marked writeOnly or format:
// password by the schema), is Redacted.
func (r *InstanceReconciler) outputs(ctx context.Context, a *applied, resolved, digest string) (map[string]any, error) {
	rec := a.res.Record
	if len(rec.Outputs) == 0 {
		return nil, nil
	}
	out, err := a.cfg.Outputs(ctx, rec)
	if err != nil {
		return nil, err
	}
	marked, err := r.schemaSecrets(ctx, resolved, digest)
	if err != nil {
		return nil, err
	}
	var secrets []string
	for _, p := range append(slices.Clip(a.secret), marked...) {
		if v, ok := valueAt(a.props, p); ok {
			if s := fmt.Sprint(v); len(s) >= minSecretLen {
				secrets = append(secrets, s)
			}
		}
	}
	for _, o := range rec.Outputs {
		for _, rd := range o.Reads {
			if rd.Kind == "Secret" && rd.APIVersion == "v1" {
				out[o.Name] = Redacted
			}
		}
		b, _ := json.Marshal(out[o.Name])
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				out[o.Name] = Redacted
			}
		}
	}
	return out, nil
}

// minSecretLen is the shortest secret value outputs are searched for: a
// shorter one ("1", "on") would redact outputs that merely share it.
const minSecretLen = 4

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
