package gcp

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/gcp/kcctest"
)

// The REST bodies of the mapped kinds, read from the discovery documents
// hack/gcpgen reads (third_party/googleapis/discovery) by this file's own
// reader: the tests below hold the generated tables to what the documents
// say, field by field, rather than to what the generator made of them.

// discoDoc is a trimmed discovery document.
type discoDoc struct {
	Methods map[string]struct {
		Request *struct {
			Ref string `json:"$ref"`
		} `json:"request"`
		Parameters map[string]*discoField `json:"parameters"`
	} `json:"methods"`
	Schemas map[string]*discoField `json:"schemas"`
}

type discoField struct {
	Ref                  string                 `json:"$ref"`
	Type                 string                 `json:"type"`
	Format               string                 `json:"format"`
	ReadOnly             bool                   `json:"readOnly"`
	Items                *discoField            `json:"items"`
	Properties           map[string]*discoField `json:"properties"`
	AdditionalProperties *discoField            `json:"additionalProperties"`
}

// restField is one field of a REST body: its type (string, integer,
// number, boolean, object, array, map, any), and its fields or items.
type restField struct {
	Type     string
	Format   string // google-datetime, google-duration, byte, ...
	ReadOnly bool
	Props    map[string]*restField
	Items    *restField
}

var discoDocs = map[string]*discoDoc{}

// restBody is the REST body of kind k's method (properties are the
// method's request body and its parameters), $refs followed to depth 12,
// a schema that repeats on its own path cut there (as any).
func restBody(t *testing.T, k *kindInfo) *restField {
	t.Helper()
	api, method, _ := strings.Cut(k.Body, " ")
	doc := discoDocs[api]
	if doc == nil {
		b, err := os.ReadFile(filepath.Join("..", "..", "third_party", "googleapis", "discovery", strings.ReplaceAll(api, "/", "-")+".json"))
		if err != nil {
			t.Fatal(err)
		}
		doc = &discoDoc{}
		if err := json.Unmarshal(b, doc); err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		discoDocs[api] = doc
	}
	m, ok := doc.Methods[method]
	if !ok {
		t.Fatalf("%s: %s has no method %s", k.Kind, api, method)
	}
	root := &restField{Type: "object", Props: map[string]*restField{}}
	if m.Request != nil {
		if r := toREST(doc, &discoField{Ref: m.Request.Ref}, map[string]bool{}, 0); r != nil && r.Props != nil {
			root = r
		}
	}
	for name, p := range m.Parameters {
		if root.Props[name] == nil {
			root.Props[name] = toREST(doc, p, nil, 0)
		}
	}
	return root
}

func toREST(doc *discoDoc, f *discoField, stack map[string]bool, depth int) *restField {
	if f == nil || depth > 12 {
		return nil
	}
	if f.Ref != "" {
		s := doc.Schemas[f.Ref]
		if stack[f.Ref] || s == nil {
			return &restField{Type: "any"}
		}
		stack[f.Ref] = true
		defer delete(stack, f.Ref)
		n := toREST(doc, s, stack, depth)
		if n != nil {
			n.ReadOnly = n.ReadOnly || f.ReadOnly
		}
		return n
	}
	n := &restField{ReadOnly: f.ReadOnly, Format: f.Format}
	switch {
	case f.Type == "array":
		n.Type, n.Items = "array", toREST(doc, f.Items, stack, depth+1)
	case f.Type == "object" && len(f.Properties) > 0:
		n.Type, n.Props = "object", map[string]*restField{}
		for k, p := range f.Properties {
			if c := toREST(doc, p, stack, depth+1); c != nil {
				n.Props[k] = c
			}
		}
	case f.Type == "object" && f.AdditionalProperties != nil:
		n.Type, n.Items = "map", toREST(doc, f.AdditionalProperties, stack, depth+1)
	case f.Type == "object", f.Type == "any":
		n.Type = "any"
	case f.Type == "string" && (f.Format == "int64" || f.Format == "uint64"):
		n.Type = "integer"
	case f.Type == "integer", f.Type == "number", f.Type == "boolean":
		n.Type = f.Type
	default:
		n.Type = "string"
	}
	return n
}

// partKinds are the kinds made of a part of another kind's body, by kind:
// the kind whose body holds them and the part.
func partKinds() map[string]struct {
	parent *kindInfo
	part   part
} {
	out := map[string]struct {
		parent *kindInfo
		part   part
	}{}
	for i := range kinds {
		for _, pt := range kinds[i].Parts {
			out[pt.Kind] = struct {
				parent *kindInfo
				part   part
			}{&kinds[i], pt}
		}
	}
	return out
}

// walkFates calls visit with every field of the REST body n of kind k at
// path, down to the fields whose fate covers those below them (a leaf
// pair, an ignored or refused object), and into the kinds parts make:
// missing lists the fields the tables give no fate.
func walkFates(k *kindInfo, n *restField, path string, visit func(k *kindInfo, path string, n *restField, p *pair, f *restFate), missing *[]string) {
	for _, name := range slices.Sorted(maps.Keys(n.Props)) {
		child := n.Props[name]
		rp := joinREST(path, name)
		p, f := k.pair(rp), k.fate(rp)
		if p == nil && f == nil {
			*missing = append(*missing, k.Kind+": "+rp)
			continue
		}
		visit(k, rp, child, p, f)
		if f != nil && f.Fate == fPart {
			for _, pt := range k.Parts {
				if pt.REST != rp {
					continue
				}
				pk := lookupKind(pt.Kind)
				item := child.Items
				if item == nil {
					continue
				}
				if pt.As != "" {
					item = &restField{Type: "object", Props: map[string]*restField{pt.As: item}}
				}
				walkFates(pk, item, "", visit, missing)
			}
			continue
		}
		if f != nil || p.Mode == mLeaf {
			continue
		}
		switch child.Type {
		case "object":
			walkFates(k, child, rp, visit, missing)
		case "array":
			if child.Items != nil && child.Items.Type == "object" {
				walkFates(k, child.Items, rp+"[]", visit, missing)
			}
		}
	}
}

// TestEveryRESTFieldHasAFate walks every field of the REST body of every
// mapped kind, as the discovery documents describe it, and fails for one
// the generated tables give no fate: mapped (a pair), ignored, defaulted or
// refused. A field the tables name that the body does not have fails too.
func TestEveryRESTFieldHasAFate(t *testing.T) {
	parts := partKinds()
	var missing []string
	seen := map[string]map[string]bool{}
	fields := 0
	for i := range kinds {
		k := &kinds[i]
		if pt, isPart := parts[k.Kind]; isPart && pt.parent.Body == k.Body {
			continue // a part of the body of another kind's method: walked from it
		}
		walkFates(k, restBody(t, k), "", func(k *kindInfo, path string, _ *restField, _ *pair, _ *restFate) {
			fields++
			if seen[k.Kind] == nil {
				seen[k.Kind] = map[string]bool{}
			}
			seen[k.Kind][path] = true
		}, &missing)
	}
	for _, m := range missing {
		t.Errorf("REST field %s has no fate: run make generate-gcp", m)
	}
	for i := range kinds {
		k := &kinds[i]
		for _, f := range k.Fates {
			if !strings.Contains(f.REST, ":") && !seen[k.Kind][f.REST] && !underTerminal(k, f.REST) {
				t.Errorf("%s: the fate of %s names a field its REST body does not have", k.Kind, f.REST)
			}
		}
	}
	t.Logf("%d kinds, %d REST fields given a fate", len(kinds), fields)
}

// underTerminal says whether a REST path lies below a field whose fate or
// leaf pairing covers it (the tables may name a field there too).
func underTerminal(k *kindInfo, path string) bool {
	for i := len(path) - 1; i > 0; i-- {
		if path[i] != '.' {
			continue
		}
		parent := strings.TrimSuffix(path[:i], "[]")
		if f := k.fate(parent); f != nil {
			return true
		}
		if p := k.pair(parent); p != nil && p.Mode == mLeaf {
			return true
		}
	}
	return false
}

// sortedFates lists a kind's fates of one fate.
func sortedFates(k *kindInfo, fa fate) []string {
	var out []string
	for _, f := range k.Fates {
		if f.Fate == fa {
			out = append(out, f.REST)
		}
	}
	sort.Strings(out)
	return out
}

func TestFateCounts(t *testing.T) {
	counts := map[fate]int{}
	for i := range kinds {
		for _, f := range kinds[i].Fates {
			counts[f.Fate]++
		}
	}
	if counts[fDefault] == 0 || counts[fRefused] == 0 || counts[fOutput] == 0 || counts[fIgnored] == 0 {
		t.Errorf("fates %v: every kind of fate should occur", counts)
	}
	t.Log(fmt.Sprint(counts), sortedFates(lookupKind("ComputeInstance"), fDefault))
}

// genBodies holds, per kind, the body of the first sample of the kind in
// testdata/samples.yaml with a value added for every REST field the
// tables map, ignore or leave output only, that the sample lacks.
type bodyGen struct {
	t *testing.T
	// current is the resource being filled; edges the references between
	// resources (the samples' and those added), which must stay acyclic.
	current string
	edges   map[string][]string
	// byKind names a sample resource of each kind, which references name.
	byKind  map[string]string
	added   int      // fields given a generated value
	skipped []string // mapped fields the test makes no value for
	warned  int      // of which the conversion must leave out with a warning
}

// genSkip are fields the samples fill in another form than the REST
// body's, which a generated value would fill a second time.
var genSkip = map[string]bool{
	// iam.v1.serviceAccount's top-level displayName and description
	"IAMServiceAccount serviceAccount.displayName": true,
	"IAMServiceAccount serviceAccount.description": true,
}

// fill adds generated values to the REST object m (of REST type n, at
// path) for every field the sample lacks.
func (g *bodyGen) fill(k *kindInfo, n *restField, m map[string]any, path string) {
	for _, name := range slices.Sorted(maps.Keys(n.Props)) {
		child := n.Props[name]
		rp := joinREST(path, name)
		p, f := k.pair(rp), k.fate(rp)
		cur, has := m[name]
		if genSkip[k.Kind+" "+rp] {
			continue
		}
		switch {
		case f != nil:
			switch f.Fate {
			case fOutput, fIgnored:
				if has {
					continue
				}
				if f.Value != "" {
					var v any
					if err := json.Unmarshal([]byte(f.Value), &v); err != nil {
						g.t.Fatal(err)
					}
					m[name] = v
				} else {
					m[name] = g.restValue(child, name)
				}
				g.added++
				g.warned++
			case fPart:
				for _, pt := range k.Parts {
					list, _ := cur.([]any)
					if pt.REST != rp || len(list) == 0 || child.Items == nil {
						continue
					}
					item, ok := list[0].(map[string]any)
					if !ok {
						continue
					}
					pk, in := lookupKind(pt.Kind), child.Items
					body := item
					if pt.As != "" {
						in = &restField{Type: "object", Props: map[string]*restField{pt.As: in}}
						body = map[string]any{pt.As: item}
					}
					g.fill(pk, in, body, "")
				}
			}
		case p != nil:
			switch p.Mode {
			case mLeaf:
				if !has {
					if v, ok := g.leaf(k, p, child, name); ok {
						m[name] = v
						g.added++
					} else {
						g.skipped = append(g.skipped, k.Kind+" "+rp)
					}
				}
			case mObj, mPass:
				obj, _ := cur.(map[string]any)
				if obj == nil && has {
					continue // a sample's own form (a string where REST has an object)
				}
				if obj == nil {
					obj = map[string]any{}
				}
				g.fill(k, child, obj, rp)
				if len(obj) > 0 {
					m[name] = obj
				}
			case mList, mOne:
				list, _ := cur.([]any)
				if list == nil && has {
					continue
				}
				if len(list) == 0 {
					list = []any{map[string]any{}}
				}
				if item, ok := list[0].(map[string]any); ok && child.Items != nil {
					g.fill(k, child.Items, item, rp+"[]")
				}
				m[name] = list
			}
		}
	}
}

// leaf is a value of REST field n (name) of the type of the KCC field it
// fills; false when the test cannot make one (a reference whose kind its
// value must say).
func (g *bodyGen) leaf(k *kindInfo, p *pair, n *restField, name string) (any, bool) {
	f := k.field(p.KCC)
	if f == nil {
		return nil, false
	}
	switch f.Type {
	case tRef, tUnion:
		return g.ref(k, f, name)
	case tArray:
		item := k.field(p.KCC + "[]")
		if item == nil || n.Type != "array" || n.Items == nil {
			return nil, false
		}
		var v any
		switch item.Type {
		case tRef, tUnion:
			r, ok := g.ref(k, item, name)
			if !ok {
				return nil, false
			}
			v = r
		case tObject:
			return nil, false
		default:
			v = g.restValue(n.Items, name)
		}
		return []any{v}, true
	case tMap:
		if n.Type == "map" {
			return g.restValue(n, name), true
		}
		return map[string]any{"gen-key": "gen-value"}, true
	case tObject:
		return nil, false
	case tSecret:
		return "gen-secret", true
	case tString:
		return g.restValue(n, name), true
	case tInteger:
		return int64(7), true
	case tNumber:
		return 0.5, true
	case tBoolean:
		return true, true
	}
	return g.restValue(n, name), true
}

// restValue is a value of REST type n.
func (g *bodyGen) restValue(n *restField, name string) any {
	switch n.Type {
	case "integer":
		return int64(7)
	case "number":
		return 0.5
	case "boolean":
		return true
	case "array":
		if n.Items == nil {
			return []any{}
		}
		return []any{g.restValue(n.Items, name)}
	case "map":
		if n.Items == nil {
			return map[string]any{}
		}
		return map[string]any{"gen-key": g.restValue(n.Items, name)}
	case "object":
		m := map[string]any{}
		for k, c := range n.Props {
			if c.Type != "object" && c.Type != "array" && c.Type != "map" {
				m[k] = g.restValue(c, k)
			}
		}
		return m
	case "any":
		return map[string]any{}
	}
	switch n.Format {
	case "google-datetime", "date-time":
		return "2030-01-02T03:04:05Z"
	case "google-duration":
		return "3600s"
	case "byte":
		return "Z2Vu"
	case "date":
		return "2030-01-02"
	case "google-fieldmask":
		return "gen"
	}
	return "gen-" + strings.ToLower(name)
}

// reaches says whether resource a references b, directly or not.
func (g *bodyGen) reaches(a, b string) bool {
	seen := map[string]bool{}
	var walk func(x string) bool
	walk = func(x string) bool {
		if x == b {
			return true
		}
		if seen[x] {
			return false
		}
		seen[x] = true
		for _, y := range g.edges[x] {
			if walk(y) {
				return true
			}
		}
		return false
	}
	return walk(a)
}

// ref is a reference for KCC reference field f: $(ref.NAME.selfLink) to
// a sample of a kind it takes, else (a kind without a sample) a path.
func (g *bodyGen) ref(k *kindInfo, f *field, name string) (any, bool) {
	targets := strings.Split(f.Target, ",")
	if f.Type == tUnion {
		// A union's kinds are its references'.
		targets = nil
		for _, c := range k.Spec {
			if rest, ok := strings.CutPrefix(c.Path, f.Path+"."); ok && !strings.ContainsAny(rest, ".[") && c.Type == tRef {
				targets = append(targets, c.Target)
			}
		}
	}
	for _, target := range targets {
		if r := g.byKind[target]; r != "" && !g.reaches(r, g.current) {
			g.edges[g.current] = append(g.edges[g.current], r)
			field := "selfLink"
			if f.TargetField != "" && f.TargetField != "selfLink" {
				field = f.TargetField
			}
			return "$(ref." + r + "." + field + ")", true
		}
	}
	if f.Type == tUnion {
		return nil, false
	}
	return "projects/dm-samples/global/gens/gen-" + strings.ToLower(name), true
}

// TestEveryFieldApplies converts, for every mapped kind, its first sample
// of testdata/samples.yaml with a generated value added for every field of
// its REST body (from the discovery documents) that the tables map, ignore
// or leave output only, and applies every object to an apiserver holding
// Config Connector's CRDs under strict field validation: a field whose
// conversion Config Connector's schema refuses, or that the conversion
// itself cannot take, fails. Fields the rules map need forms a generated
// value does not have: the samples give them. Ignored and output only
// fields must be left out with a warning.
func TestEveryFieldApplies(t *testing.T) {
	b, err := os.ReadFile("testdata/samples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Resources []Resource `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	res := cfg.Resources
	g := &bodyGen{t: t, byKind: map[string]string{}, edges: map[string][]string{}}
	refName := regexp.MustCompile(`\$\(ref\.([^.)]+)`)
	for _, r := range res {
		if d, ok := lookupType(r.Type); ok && g.byKind[d.Kind] == "" {
			g.byKind[d.Kind] = r.Name
		}
		b, _ := json.Marshal([]any{r.Properties, r.Metadata, r.AccessControl})
		for _, m := range refName.FindAllStringSubmatch(string(b), -1) {
			g.edges[r.Name] = append(g.edges[r.Name], m[1])
		}
	}
	done := map[string]bool{}
	for i := range res {
		r := &res[i]
		r.Path = []string{r.Name}
		d, ok := lookupType(r.Type)
		if !ok {
			t.Fatalf("%s: type %s is not mapped", r.Name, r.Type)
		}
		kind := d.Kind
		if kind == "ComputeSSLCertificate" && r.Properties["type"] == "MANAGED" {
			kind = "ComputeManagedSSLCertificate"
		}
		if done[kind] {
			continue
		}
		done[kind] = true
		k := lookupKind(kind)
		props, _ := deepCopy(r.Properties).(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		if err := unwrap(k, props); err != nil {
			t.Fatal(err)
		}
		g.current = r.Name
		g.fill(k, restBody(t, k), props, "")
		r.Properties = props
	}
	conv, err := Convert(res, Options{Project: "dm-samples", DeletionPolicy: "abandon"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kinds, %d generated fields (%d left out with a warning, %d warnings), %d objects", len(done), g.added, g.warned, len(conv.Warnings), len(conv.Objects))
	t.Logf("mapped fields given no generated value (a union whose kinds have no sample, an object copied whole): %s", strings.Join(g.skipped, ", "))
	if len(conv.Warnings) < g.warned {
		t.Errorf("%d fields should be left out with a warning; warnings:\n%s", g.warned, strings.Join(conv.Warnings, "\n"))
	}
	for _, d := range conv.Deferred {
		if s, ok := pointerGet(conv.Objects[d.Object], d.Field).(string); ok {
			pointerSet(conv.Objects[d.Object], d.Field, strings.ReplaceAll(s, d.Ref, "10.0.0.2"))
		}
	}
	env := kubetest.Shared(t)
	crds := kcctest.InstallCRDs(t, env)
	ns := env.Namespace(t)
	for i, o := range conv.Objects {
		kind, _ := o["kind"].(string)
		apiVersion, _ := o["apiVersion"].(string)
		name, _ := o["metadata"].(map[string]any)["name"].(string)
		body, _ := json.Marshal(o)
		if err := kcctest.ApplyStrict(env, "/apis/"+apiVersion+"/namespaces/"+ns+"/"+crds[kind].Plural+"/"+name, body); err != nil {
			y, _ := yaml.Marshal(o)
			t.Errorf("%s %s (from %s): %v\n%s", kind, name, conv.Sources[i], err, y)
		}
	}
}

// pointerGet and pointerSet read and write a JSON Pointer's value.
func pointerGet(obj map[string]any, ptr string) any {
	var cur any = obj
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func pointerSet(obj map[string]any, ptr string, v any) {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	parent := pointerGet(obj, "/"+strings.Join(parts[:len(parts)-1], "/"))
	if len(parts) == 1 {
		parent = obj
	}
	last := strings.ReplaceAll(strings.ReplaceAll(parts[len(parts)-1], "~1", "/"), "~0", "~")
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
	case []any:
		var i int
		if _, err := fmt.Sscan(last, &i); err == nil && i < len(c) {
			c[i] = v
		}
	}
}
