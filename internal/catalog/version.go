package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// versionPage is what a version's page shows that changes only with the
// registry's index: built once per version and snapshot.
type versionPage struct {
	TV       *api.TemplateVersion
	Base     string // the reference without version
	README   template.HTML
	Versions []versionRow
	Props    []propRow
	Fields   []field
	Deploy   string

	// rendered is the page as last rendered without a form submitted,
	// valid while the examples' generation and the note are the same.
	rendered atomic.Pointer[renderedPage]
}

type renderedPage struct {
	gen  uint64
	note string
	body []byte
}

// versionRow is one version in the versions list.
type versionRow struct {
	api.VersionInfo
	// Short are the short forms that resolve to this version (v1, v1.0,
	// and "latest" for the highest stable version).
	Short   []string
	Current bool
}

// Pinned is the reference of the page's version pinned to its digest (see
// versionRow.Pinned).
func (vp *versionPage) Pinned() string { return vp.TV.Resolved + "@" + vp.TV.Digest }

// Pinned is the version's reference pinned to its digest: vX.Y.Z alone
// resolves to the highest patch from Z up, and a link to an older patch
// must show that patch.
func (v versionRow) Pinned() string { return v.Ref + "@" + v.Digest }

// propRow is one row of the properties table; nested properties follow
// their parent with a deeper Depth.
type propRow struct {
	// Default is the default as YAML (yamlFlow), when HasDefault.
	Path, Type, Description, Default string
	Required, HasDefault             bool
	Depth                            int
}

// field is one input of the preview form.
type field struct {
	// Name is the property path (labels.tier), the form field's name.
	Name, Type, Description, Default string
	Enum                             []string
	Required                         bool
	// Input is the input kind: text, number, bool, select or yaml.
	Input string
}

// version resolves ref and returns its page's lasting part, from the cache
// when the version was shown before.
// The note says what the reference left open (the version chosen).
func (c *Catalog) version(ctx context.Context, ref string) (*versionPage, string, error) {
	res, err := c.svc.Resolve(ctx, ref, "")
	if err != nil {
		return nil, "", err
	}
	// The page lists the template's other versions too: it lasts as long
	// as the registry's snapshot.
	var snap *index.Snapshot
	regKey := res.Registry
	if g, ok := c.svc.Resolver().Registry(ctx, res.Registry); ok {
		snap, regKey = g.Snapshot(), g.Key()
	}
	key := pageKey{regKey, fmt.Sprintf("%s@%s|%p", res.Resolved, res.Digest, snap)}
	c.mu.Lock()
	vp := c.cache[key]
	c.mu.Unlock()
	if vp != nil {
		return vp, res.Note, nil
	}
	// Pinned to the digest: res.Resolved alone could pick a higher patch.
	tv, err := c.svc.Template(ctx, res.Pinned(), "")
	if err != nil {
		return nil, "", err
	}
	vp = &versionPage{TV: tv, Base: index.RefString(tv.Registry, tv.Collection, tv.Template, "")}
	vp.Versions = shortForms(tv.Versions, tv.Version)
	vp.Deploy = "dm deploy " + tv.Resolved
	if f, ok := findFile(tv.Files, "README.md"); ok {
		if b, err := c.svc.File(ctx, tv.Pinned(), "", f.Path); err == nil {
			var buf bytes.Buffer
			if err := c.md.Convert(b.Content, &buf); err == nil {
				// goldmark leaves raw HTML out unless told otherwise, so
				// its output is safe to embed.
				vp.README = template.HTML(buf.String())
			}
		}
	}
	vp.Props, vp.Fields = describe(tv)
	c.mu.Lock()
	if len(c.cache) >= maxCached {
		c.cache = map[pageKey]*versionPage{}
	}
	c.cache[key] = vp
	c.mu.Unlock()
	return vp, res.Note, nil
}

func findFile(files []api.File, name string) (api.File, bool) {
	for _, f := range files {
		if strings.EqualFold(f.Path, name) {
			return f, true
		}
	}
	return api.File{}, false
}

// shortForms lists the versions with the short forms that resolve to each:
// vX.Y to the highest stable patch of X.Y, vX (which is vX.0) to that of
// X.0, and no version to the highest stable version.
func shortForms(vs []api.VersionInfo, current string) []versionRow {
	rows := make([]versionRow, len(vs))
	best := map[string]int{} // "vX.Y" -> index of the highest stable patch
	latest := -1
	for i, v := range vs {
		rows[i] = versionRow{VersionInfo: v, Current: v.Version == current}
		if v.Prerelease || v.Problem != "" {
			continue
		}
		s, ok := index.ParseSemver(v.Version)
		if !ok {
			continue
		}
		mm := fmt.Sprintf("v%d.%d", s.Major, s.Minor)
		if j, ok := best[mm]; !ok || higher(v.Version, vs[j].Version) {
			best[mm] = i
		}
		if latest < 0 || higher(v.Version, vs[latest].Version) {
			latest = i
		}
	}
	for _, mm := range sortedKeys(best) {
		i := best[mm]
		if x, ok := strings.CutSuffix(mm, ".0"); ok {
			rows[i].Short = append(rows[i].Short, x)
		}
		rows[i].Short = append(rows[i].Short, mm)
	}
	if latest >= 0 {
		rows[latest].Short = append(rows[latest].Short, "latest")
	}
	// Newest first, as people look for them.
	slices.Reverse(rows)
	return rows
}

func higher(a, b string) bool {
	x, _ := index.ParseSemver(a)
	y, _ := index.ParseSemver(b)
	if x.Major != y.Major {
		return x.Major > y.Major
	}
	if x.Minor != y.Minor {
		return x.Minor > y.Minor
	}
	return x.Patch > y.Patch
}

// describe builds the properties table and the form's fields from the
// version's schema (nested properties included), or from an OpenShift
// template's parameters.
func describe(tv *api.TemplateVersion) ([]propRow, []field) {
	if tv.SchemaContent == "" || tv.SchemaError != "" || api.Describer(tv.Language, tv.Schema) != nil {
		// The template's own description (OpenShift parameters, a
		// chart's values by dotted path) or nothing: flat.
		var rows []propRow
		var fields []field
		seen := map[string]bool{}
		for _, p := range tv.Properties {
			// Values by dotted path (a chart's image.tag): each nested one
			// sits under a row of its parent, as a schema's do.
			parts := strings.Split(p.Name, ".")
			for i := 1; i < len(parts); i++ {
				if parent := strings.Join(parts[:i], "."); !seen[parent] {
					seen[parent] = true
					rows = append(rows, propRow{Path: parent, Type: "object", Depth: i - 1})
				}
			}
			seen[p.Name] = true
			required := (p.Required || slices.Contains(tv.Required, p.Name)) && p.Default == nil
			row := propRow{Path: p.Name, Type: p.Type, Description: p.Description, Required: required, Depth: len(parts) - 1}
			if p.Default != nil {
				row.Default, row.HasDefault = yamlFlow(p.Default), true
			}
			rows = append(rows, row)
			fields = append(fields, newField(p.Name, p.Type, p.Description, p.Default, nil, required))
		}
		return rows, fields
	}
	sc, err := schema.Parse([]byte(tv.SchemaContent), tv.Schema)
	if err != nil {
		return nil, nil
	}
	var rows []propRow
	var fields []field
	var walk func(prefix string, depth int, name string, m map[string]any, required bool)
	walk = func(prefix string, depth int, name string, m map[string]any, required bool) {
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		typ := typeOf(m)
		desc, _ := m["description"].(string)
		desc = strings.TrimSpace(desc)
		def, hasDef := m["default"]
		// A required property with a default is filled by it: the caller
		// need not give it.
		required = required && !hasDef
		row := propRow{Path: p, Type: typ, Description: desc, Required: required, Depth: depth}
		if hasDef {
			row.Default, row.HasDefault = yamlFlow(def), true
		}
		rows = append(rows, row)
		sub, _ := m["properties"].(map[string]any)
		if typ == "object" && len(sub) > 0 {
			req := stringsOf(m["required"])
			for _, n := range sortedKeys(sub) {
				sm, _ := sub[n].(map[string]any)
				walk(p, depth+1, n, sm, slices.Contains(req, n))
			}
			return
		}
		var enum []string
		for _, e := range anys(m["enum"]) {
			enum = append(enum, show(e))
		}
		if !hasDef {
			def = nil
		}
		fields = append(fields, newField(p, typ, desc, def, enum, required))
	}
	for _, d := range sc.PropertyDocs() {
		m, _ := sc.Properties[d.Name].(map[string]any)
		walk("", 0, d.Name, m, d.Required)
	}
	return rows, fields
}

func typeOf(m map[string]any) string {
	switch t := m["type"].(type) {
	case string:
		return t
	case []any:
		var ts []string
		for _, e := range t {
			ts = append(ts, fmt.Sprint(e))
		}
		return strings.Join(ts, "|")
	}
	if _, ok := m["properties"]; ok {
		return "object"
	}
	return ""
}

func anys(v any) []any {
	a, _ := v.([]any)
	return a
}

func stringsOf(v any) []string {
	var out []string
	for _, e := range anys(v) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func newField(name, typ, desc string, def any, enum []string, required bool) field {
	f := field{Name: name, Type: typ, Description: desc, Default: show(def), Enum: enum, Required: required}
	switch {
	case len(enum) > 0:
		f.Input = "select"
	case typ == "integer" || typ == "number":
		f.Input = "number"
	case typ == "boolean":
		f.Input = "bool"
	case typ == "array" || typ == "object" || strings.Contains(typ, "|"):
		f.Input = "yaml"
	default:
		f.Input = "text"
	}
	return f
}

// show formats a default or enum value for a form: a string as it is
// typed, anything else as YAML in flow style.
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	return yamlFlow(v)
}

// yamlFlow formats v as YAML on one line: lists and maps in flow style
// ([22, 80], {tier: web}), keys in order, strings quoted only where YAML
// would read them as something else ("80", "yes", "").
func yamlFlow(v any) string {
	var b strings.Builder
	writeFlow(&b, v)
	return b.String()
}

func writeFlow(b *strings.Builder, v any) {
	switch v := v.(type) {
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeFlow(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b.WriteString(", ")
			}
			writeFlow(b, k)
			b.WriteString(": ")
			writeFlow(b, v[k])
		}
		b.WriteByte('}')
	case string:
		// A scalar's text as the YAML encoder writes it, unless flow
		// style needs it quoted (its indicators).
		out, err := yamlMarshal(v)
		text := strings.TrimSuffix(string(out), "\n")
		if err != nil || strings.ContainsAny(text, "\n,[]{}") || strings.HasPrefix(text, "|") || strings.HasPrefix(text, ">") {
			q, _ := json.Marshal(v)
			text = string(q)
		}
		b.WriteString(text)
	case nil:
		b.WriteString("null")
	default:
		q, err := json.Marshal(v)
		if err != nil {
			fmt.Fprint(b, v)
			return
		}
		b.Write(q)
	}
}

// versionView is the data of a version's page.
type versionView struct {
	*versionPage
	Note    string
	Example *ExampleResult
	UsedBy  []Use
	// Form is the preview form's state: the values entered and the
	// errors next to their fields; Preview the outcome.
	Form    map[string]string
	Errors  map[string]string
	Preview *preview
}

// preview is the outcome of a preview: objects as YAML, or errors.
type preview struct {
	YAML     string
	Count    int
	Errors   []string
	Warnings []string
}

func (c *Catalog) renderVersion(w http.ResponseWriter, r *http.Request, status int, vp *versionPage, note string, pv *previewState) {
	var gen uint64
	if c.examples != nil {
		gen = c.examples.Generation()
	}
	// The page lists the uses its caller may see: only an anonymous
	// caller's page is kept.
	keep := pv == nil && resolve.ScopeKey(r.Context()) == ""
	if keep {
		// The page without a form changes only with the examples' results.
		if rp := vp.rendered.Load(); rp != nil && rp.gen == gen && rp.note == note {
			c.write(w, status, rp.body)
			return
		}
	}
	v := versionView{versionPage: vp, Note: note, Form: map[string]string{}, Errors: map[string]string{}}
	if c.examples != nil {
		if res, ok := c.examples.Result(index.Key(vp.TV.Namespace, vp.TV.Registry), vp.TV.Digest); ok && res.Status != "" {
			v.Example = &res
		}
		v.UsedBy = c.examples.UsedBy(vp.TV.Namespace, vp.Base, c.visible(r.Context()))
	}
	if pv != nil {
		v.Form, v.Errors, v.Preview = pv.values, pv.fieldErrors, pv.result
	}
	title := vp.TV.Resolved
	if vp.TV.Title != "" {
		title = vp.TV.Title + " · " + title
	}
	body, err := c.page("template", title, "", v)
	if err != nil {
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	if keep {
		vp.rendered.Store(&renderedPage{gen: gen, note: note, body: body})
	}
	c.write(w, status, body)
}

// DeployCommand is the dm deploy command to copy: the version's
// reference, a --properties placeholder for each property the caller
// must give (required, no default), and --project when the example
// made Google Cloud resources, which need one.
func (v versionView) DeployCommand() string {
	var b strings.Builder
	b.WriteString(v.Deploy)
	if v.Example != nil && v.Example.GCP {
		b.WriteString(" --project PROJECT_ID")
	}
	for _, p := range v.Props {
		if p.Required {
			fmt.Fprintf(&b, " --properties %s=%s", p.Path, placeholder(p.Path))
		}
	}
	return b.String()
}

// placeholder is the value to fill in for property path in a command:
// its last name in capitals (image.tag -> TAG).
func placeholder(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	var b strings.Builder
	for i, r := range path {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		if r == '-' {
			r = '_'
		}
		b.WriteString(strings.ToUpper(string(r)))
	}
	return b.String()
}

// FileLink is the link to a file of the version.
func (v versionView) FileLink(p string) string {
	return refPath(v.Pinned()) + "/-/file/" + path.Clean(p)
}
