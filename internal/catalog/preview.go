package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/manifest"
)

// PreviewProject is the Google Cloud project a preview's templates see
// (env.project) and its Config Connector objects carry: a placeholder for
// the one dm deploy --project names.
const PreviewProject = "PROJECT_ID"

// MaxForm bounds a preview form's body; registryd holds that many bytes
// of its request-body budget for a preview whose length is unannounced.
const MaxForm = 1 << 20

// skipField is the preview form's checkbox for SkipSchemaValidation.
const skipField = ".skip_schema_validation"

func yamlMarshal(v any) ([]byte, error) { return yaml.Marshal(v) }

// previewState is a submitted form: its values, the errors of its fields
// and the outcome.
type previewState struct {
	values      map[string]string
	fieldErrors map[string]string
	result      *preview
}

// handlePreview serves POST /t/{ref}/preview: the form's fields, named by
// property path and typed by the schema, expanded as one resource. The
// answer is the version's page with the preview, or with the errors next
// to their fields (status 422), so that it works without JavaScript.
func (c *Catalog) handlePreview(w http.ResponseWriter, r *http.Request) {
	p, err := tpath(r)
	if err != nil {
		c.renderError(w, r, err, "")
		return
	}
	ref, action, _ := splitAction(p)
	if action != "preview" {
		w.Header().Set("Allow", http.MethodGet)
		c.renderError(w, r, fmt.Errorf("POST %s: only /t/{reference}/preview takes a POST: %w", r.URL.Path, derrors.NotFound), "")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxForm)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, fmt.Errorf("reading the form: %v: %w", err, derrors.InvalidArgument), "")
		return
	}
	vp, _, err := c.version(r.Context(), ref)
	if err != nil {
		c.renderError(w, r, err, templateName(ref))
		return
	}
	st := &previewState{values: map[string]string{}, fieldErrors: map[string]string{}, result: &preview{}}
	// The checkbox's name cannot be a property path (its first part is
	// empty), so no property is lost to it.
	skip := r.PostForm.Get(skipField) != ""
	if skip {
		st.values[skipField] = "on"
	}
	r.PostForm.Del(skipField)
	props, ok := formProperties(vp.Fields, r.PostForm, st)
	if !ok {
		st.result.Errors = append(st.result.Errors, "fix the fields marked below")
		c.renderVersion(w, r, http.StatusUnprocessableEntity, vp, "", st)
		return
	}
	res, err := c.expand(r.Context(), &api.ExpandRequest{Ref: vp.Pinned(), Properties: props, Name: vp.TV.Template, Deployment: "preview", SkipSchemaValidation: skip,
		Env: map[string]string{"project": PreviewProject}})
	if err != nil {
		msg := derrors.Message(err)
		st.result.Errors = append(st.result.Errors, msg)
		for _, f := range vp.Fields {
			if mentions(msg, f.Name) {
				st.fieldErrors[f.Name] = msg
			}
		}
		status := derrors.HTTPStatus(err)
		if status < 500 {
			status = http.StatusUnprocessableEntity
		}
		c.renderVersion(w, r, status, vp, "", st)
		return
	}
	// The objects dm deploy would apply: Google Cloud resources
	// (Deployment Manager's types) as Config Connector objects. When the
	// primitives make none, the resources themselves, and why.
	objs := make([]any, len(res.Config.Resources))
	for i, o := range res.Config.Resources {
		objs[i] = o
	}
	m, err := manifest.Of(res, manifest.Options{Project: PreviewProject})
	if err != nil {
		st.result.Warnings = append(st.result.Warnings, "not all of it can be deployed: "+derrors.Message(err))
	} else {
		st.result.Warnings = append(st.result.Warnings, m.Warnings...)
		objs = objs[:0]
		for _, o := range m.Objects {
			objs = append(objs, o.Object)
		}
	}
	var b strings.Builder
	for i, obj := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(obj)
		if err != nil {
			st.result.Errors = append(st.result.Errors, fmt.Sprintf("object %d: %v", i, err))
			continue
		}
		b.Write(y)
	}
	st.result.YAML, st.result.Count = b.String(), len(objs)
	st.result.Warnings = append(st.result.Warnings, res.Warnings...)
	c.renderVersion(w, r, http.StatusOK, vp, "", st)
}

// expand runs one preview, bounded in number and time.
func (c *Catalog) expand(ctx context.Context, req *api.ExpandRequest) (*api.ExpandResult, error) {
	wait := time.NewTimer(5 * time.Second)
	defer wait.Stop()
	select {
	case c.previews <- struct{}{}:
		defer func() { <-c.previews }()
	case <-wait.C:
		return nil, fmt.Errorf("%d previews are running; try again later: %w", cap(c.previews), derrors.Unavailable)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.expander.Expand(ctx, req)
	if err == nil {
		err = ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the preview took longer than %s: %w", c.timeout, derrors.LimitExceeded)
	}
	return res, err
}

// mentions reports whether an engine error names the property at path:
// "properties.replicas: …" from the schema, or "missing property
// 'replicas'", or an OpenShift parameter by name.
func mentions(msg, path string) bool {
	q := regexp.QuoteMeta(path)
	re := regexp.MustCompile(`(properties\.` + q + `\b|'` + q + `'|"` + q + `"|\b` + q + `:)`)
	return re.MatchString(msg)
}

// formProperties types the submitted fields by the schema and nests them
// by their dotted paths. Empty fields are left out, so defaults apply; a
// required one is an error next to its field. Fields the schema does not
// name are typed as YAML scalars (replicas=3 is a number).
func formProperties(fields []field, form map[string][]string, st *previewState) (map[string]any, bool) {
	props := map[string]any{}
	ok := true
	known := map[string]bool{}
	for _, f := range fields {
		known[f.Name] = true
		raw := strings.TrimSpace(first(form[f.Name]))
		st.values[f.Name] = raw
		if raw == "" {
			if f.Required && f.Default == "" {
				st.fieldErrors[f.Name] = f.Name + " is required"
				ok = false
			}
			continue
		}
		v, err := typed(f, raw)
		if err != nil {
			st.fieldErrors[f.Name] = err.Error()
			ok = false
			continue
		}
		if err := expand.SetPath(props, f.Name, v); err != nil {
			st.fieldErrors[f.Name] = err.Error()
			ok = false
		}
	}
	for name, vals := range form {
		if known[name] || name == "" {
			continue
		}
		raw := strings.TrimSpace(first(vals))
		st.values[name] = raw
		if raw == "" {
			continue
		}
		// Typed as --properties types a value, and a text that is not
		// YAML stays text.
		v, err := expand.DecodeValue([]byte(raw))
		if err != nil {
			v = raw
		}
		if err := expand.SetPath(props, name, v); err != nil {
			st.fieldErrors[name] = err.Error()
			ok = false
		}
	}
	return props, ok
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// typed reads a field's text as dm reads a property it asks for
// (schema.Input.Parse): by the schema's type, YAML where it names none,
// and within the enum. The message names the field.
func typed(f field, raw string) (any, error) {
	in := schema.NewInput(f.Name, f.Description, f.Type, nil)
	for _, e := range f.Enum {
		in.Enum = append(in.Enum, e)
	}
	v, err := in.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return v, nil
}
