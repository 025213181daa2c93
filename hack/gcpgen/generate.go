package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// generated is generate's output: the Go source of zz_generated.go and,
// per kind, the REST fields that pair with nothing (for -report).
type generated struct {
	source    []byte
	table     []byte // docs/gcp-fields.md
	unmatched map[string][]string
}

type kindOut struct {
	spec   kindSpec
	kcc    *kccKind
	pairs  []pairOut
	fates  []fateOut
	live   []pairOut
	scopes []string
	api    apiSpec
	// schema is the discovery document and schema of the REST body, for
	// errors and the table.
	schema string
	// wrappers are the properties that may hold the resource's ID (a
	// string) or wrap its body (an object): not fields of the body.
	wrappers []string
}

// generate builds zz_generated.go from the vendored inputs under root.
func generate(root string) (*generated, error) {
	kf, err := readKinds(root)
	if err != nil {
		return nil, err
	}
	byKind, err := indexCRDs(filepath.Join(root, crdDir))
	if err != nil {
		return nil, err
	}
	mappings, err := readServiceMappings(filepath.Join(root, mappingDir))
	if err != nil {
		return nil, err
	}
	docs := map[string]*discoDoc{}
	g := &generated{unmatched: map[string][]string{}}
	var outs []*kindOut
	var errs []string
	for _, ks := range kf.Kinds {
		file, ok := byKind[ks.Kind]
		if !ok {
			return nil, fmt.Errorf("%s: no CRD in %s (run gcpgen -refresh)", ks.Kind, crdDir)
		}
		k, err := loadKind(file, mappings[ks.Kind])
		if err != nil {
			return nil, err
		}
		doc := docs[ks.API]
		if doc == nil {
			b, err := os.ReadFile(filepath.Join(root, discoveryDir, strings.ReplaceAll(ks.API, "/", "-")+".json"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w (run gcpgen -refresh)", ks.Kind, err)
			}
			doc = &discoDoc{}
			if err := json.Unmarshal(b, doc); err != nil {
				return nil, fmt.Errorf("%s: %w", ks.API, err)
			}
			docs[ks.API] = doc
		}
		rest, err := restTree(doc, ks.Method)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ks.Kind, err)
		}
		if ks.Body != "" {
			if rest = restAt(rest, ks.Body); rest == nil || rest.Type != "object" {
				return nil, fmt.Errorf("%s: body %s: no object there in %s %s", ks.Kind, ks.Body, ks.API, ks.Method)
			}
		}
		p := newPairer(k)
		p.rename, p.hand, p.names = ks.Rename, map[string]bool{}, map[string]bool{}
		p.ignore, p.refuse, p.parts = ks.Ignore, ks.Refuse, map[string]string{}
		names := ks.Name
		if len(names) == 0 {
			names = []string{"name"}
		}
		for _, n := range names {
			p.names[n] = true
		}
		// DM's gcp-types also took the resource's ID under the singular
		// of its collection (function for projects.locations.functions,
		// metric, sink), and its body wrapped under that name or its
		// schema's (function: {...} beside parent and functionId):
		// properties the body does not have.
		var wrappers []string
		if ks.Body == "" {
			for _, w := range wrapperNames(doc, ks.Method) {
				if rest.Props[w] == nil && !contains(wrappers, w) && !generic[w] && w != "project" {
					wrappers = append(wrappers, w)
				}
			}
		}
		for _, h := range ks.Hand {
			p.hand[h] = true
		}
		for _, pt := range ks.Parts {
			p.parts[pt.REST] = "objects of kind " + pt.Kind
			if !kindListed(kf, pt.Kind) {
				errs = append(errs, fmt.Sprintf("%s: part %s: kind %s is not in kinds.yaml", ks.Kind, pt.REST, pt.Kind))
			}
		}
		p.object(rest, "", "")
		for _, v := range ks.Variants {
			node := restAt(rest, v.REST)
			if node == nil {
				errs = append(errs, fmt.Sprintf("%s: variant %s: the REST body has no %s", ks.Kind, v.Label, v.REST))
				continue
			}
			if v.KCC != "" && p.fields[v.KCC].Type == "" {
				errs = append(errs, fmt.Sprintf("%s: variant %s: the KCC spec has no %s", ks.Kind, v.Label, v.KCC))
				continue
			}
			vp := newPairer(k)
			vp.rename, vp.hand, vp.names = map[string]string{}, map[string]bool{}, map[string]bool{}
			vp.ignore, vp.refuse, vp.parts = ks.Ignore, ks.Refuse, map[string]string{}
			for from, to := range v.Rename {
				vp.rename[v.Label+":"+from] = to
			}
			for _, h := range v.Hand {
				vp.hand[v.Label+":"+h] = true
			}
			vp.add(v.Label+":", v.KCC, modeObj)
			vp.object(node, v.Label+":", v.KCC)
			p.pairs = append(p.pairs, vp.pairs...)
			p.fates = append(p.fates, vp.fates...)
			p.unmatched = append(p.unmatched, vp.unmatched...)
			p.errs = append(p.errs, vp.errs...)
		}
		errs = append(errs, p.errs...)
		for from := range ks.Rename {
			if !hasPair(p.pairs, from) && ks.Rename[from] != "-" {
				errs = append(errs, fmt.Sprintf("%s: rename %s: the REST body has no such field (or it is output only)", ks.Kind, from))
			}
		}
		errs = append(errs, applyDefaults(p, ks, k)...)
		errs = append(errs, unusedHints(p, ks)...)
		sort.Slice(p.pairs, func(i, j int) bool { return p.pairs[i].REST < p.pairs[j].REST })
		sort.Slice(p.fates, func(i, j int) bool { return p.fates[i].REST < p.fates[j].REST })
		api, _, _ := strings.Cut(ks.API, "/")
		policy, ok := kf.APIs[api]
		if !ok {
			policy = apiSpec{Unknown: "refuse", Why: "what the API did with properties its schema lacks is not known"}
		}
		if len(p.unmatched) > 0 {
			g.unmatched[ks.Kind] = p.unmatched
		}
		// DM references read the resource, which for a wrapped request
		// (CreateClusterRequest's cluster) is kinds.yaml's resource.
		liveRoot := rest
		if ks.Resource != "" {
			if liveRoot = restAt(rest, ks.Resource); liveRoot == nil {
				errs = append(errs, fmt.Sprintf("%s: resource %s: the REST body has no such field", ks.Kind, ks.Resource))
				continue
			}
		}
		live := statusPairs(liveRoot, k.Status)
		for from, to := range ks.Live {
			live = setPair(live, from, to)
		}
		sort.Slice(live, func(i, j int) bool { return live[i].REST < live[j].REST })
		schemaName := ks.API + " " + ks.Method
		if m := doc.Methods[ks.Method]; m != nil && m.Request != nil {
			schemaName = ks.API + " " + m.Request.Ref
		}
		outs = append(outs, &kindOut{spec: ks, kcc: k, pairs: p.pairs, fates: p.fates, live: live, api: policy, schema: schemaName, wrappers: wrappers})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", kindsFile_, strings.Join(errs, "\n  "))
	}
	resolveTargets(outs)
	src, err := emit(kf, outs)
	if err != nil {
		return nil, err
	}
	g.source = src
	g.table = fieldTable(outs)
	return g, nil
}

func kindListed(kf *kindsFile, kind string) bool {
	for _, k := range kf.Kinds {
		if k.Kind == kind {
			return true
		}
	}
	return false
}

func hasPair(pairs []pairOut, rest string) bool {
	for _, p := range pairs {
		if p.REST == rest {
			return true
		}
	}
	return false
}

func setPair(pairs []pairOut, rest, kcc string) []pairOut {
	for i := range pairs {
		if pairs[i].REST == rest {
			pairs[i].KCC = kcc
			return pairs
		}
	}
	return append(pairs, pairOut{REST: rest, KCC: kcc, Mode: modeLeaf})
}

// restAt is the node at a REST path: a.b[] the items of list b, a.b{}
// the values of map b (a table's column families by name).
func restAt(n *restNode, path string) *restNode {
	for _, seg := range strings.Split(path, ".") {
		elem := ""
		if strings.HasSuffix(seg, "[]") || strings.HasSuffix(seg, "{}") {
			seg, elem = seg[:len(seg)-2], seg[len(seg)-2:]
		}
		if n == nil || n.Props == nil {
			return nil
		}
		n = n.Props[seg]
		if n == nil || elem == "" {
			continue
		}
		if (elem == "[]") != (n.Type == "array") || (elem == "{}") != (n.Type == "map") {
			return nil
		}
		n = n.Items
	}
	return n
}

var typeConst = map[string]string{
	"string": "tString", "integer": "tInteger", "number": "tNumber", "boolean": "tBoolean", "object": "tObject",
	"array": "tArray", "map": "tMap", "any": "tAny", "ref": "tRef", "union": "tUnion", "secret": "tSecret",
}

var modeConst = map[string]string{modeLeaf: "mLeaf", modeObj: "mObj", modeList: "mList", modeOne: "mOne", modePass: "mPass"}

func emit(kf *kindsFile, outs []*kindOut) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by hack/gcpgen from internal/gcp/kinds.yaml, third_party/kcc and\n")
	b.WriteString("// third_party/googleapis/discovery. DO NOT EDIT.\n\npackage gcp\n\n")
	// DM type spellings.
	type typeRow struct{ typ, kind, scope string }
	var rows []typeRow
	seen := map[string]string{}
	for _, o := range outs {
		for _, t := range o.spec.Types {
			for _, s := range expandBraces(t.Type) {
				if prev, ok := seen[s]; ok {
					return nil, fmt.Errorf("%s: type %s is listed for %s and %s", kindsFile_, s, prev, o.spec.Kind)
				}
				seen[s] = o.spec.Kind
				rows = append(rows, typeRow{s, o.spec.Kind, t.Scope})
			}
		}
	}
	var unsupported []typeRow
	for _, u := range kf.Unsupported {
		for _, t := range u.Types {
			for _, s := range expandBraces(t) {
				if prev, ok := seen[s]; ok {
					return nil, fmt.Errorf("%s: type %s is listed for %s and as unsupported", kindsFile_, s, prev)
				}
				seen[s] = "unsupported"
				unsupported = append(unsupported, typeRow{typ: s, kind: u.Why})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].typ < rows[j].typ })
	sort.Slice(unsupported, func(i, j int) bool { return unsupported[i].typ < unsupported[j].typ })
	b.WriteString("// dmTypes are the DM type spellings that map to a kind, sorted.\nvar dmTypes = []dmType{\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "\t{%q, %q, %q},\n", r.typ, r.kind, r.scope)
	}
	b.WriteString("}\n\n// unsupportedTypes are DM types with no Config Connector kind, sorted, with\n// what to do instead.\nvar unsupportedTypes = []unsupportedType{\n")
	for _, r := range unsupported {
		fmt.Fprintf(&b, "\t{%q, %q},\n", r.typ, r.kind)
	}
	b.WriteString("}\n\n// kinds are the Config Connector kinds the mapping produces, sorted.\nvar kinds = []kindInfo{\n")
	sort.Slice(outs, func(i, j int) bool { return outs[i].spec.Kind < outs[j].spec.Kind })
	for _, o := range outs {
		k := o.kcc
		fmt.Fprintf(&b, "\t{\n\t\tKind: %q, APIVersion: %q, Plural: %q,\n", k.Kind, k.Group+"/"+k.Version, k.Plural)
		fmt.Fprintf(&b, "\t\tREST: %q, Body: %q, IAM: %v, CRD: %q,\n", o.spec.REST, o.spec.API+" "+o.spec.Method, o.spec.IAM, k.File)
		names := o.spec.Name
		if len(names) == 0 {
			names = []string{"name"}
		}
		fmt.Fprintf(&b, "\t\tNameFrom: %#v, RESTName: %q,\n", names, o.spec.RESTName)
		if len(o.wrappers) > 0 {
			fmt.Fprintf(&b, "\t\tWrappers: %#v,\n", o.wrappers)
		}
		if len(o.spec.Parts) > 0 {
			b.WriteString("\t\tParts: []part{\n")
			for _, pt := range o.spec.Parts {
				fmt.Fprintf(&b, "\t\t\t{%q, %q, %q},\n", pt.REST, pt.Kind, pt.As)
			}
			b.WriteString("\t\t},\n")
		}
		b.WriteString("\t\tSpec: []field{\n")
		for _, f := range k.Spec {
			target := strings.Join(f.Targets, ",")
			fmt.Fprintf(&b, "\t\t\t{%q, %s, %q, %q, %v},\n", f.Path, typeConst[f.Type], target, f.TargetField, f.Required)
		}
		b.WriteString("\t\t},\n\t\tStatus: []string{\n")
		for _, s := range k.Status {
			fmt.Fprintf(&b, "\t\t\t%q,\n", s)
		}
		b.WriteString("\t\t},\n\t\tPairs: []pair{\n")
		for _, p := range o.pairs {
			fmt.Fprintf(&b, "\t\t\t{%q, %q, %s},\n", p.REST, p.KCC, modeConst[p.Mode])
		}
		b.WriteString("\t\t},\n\t\tFates: []restFate{\n")
		for _, f := range o.fates {
			fmt.Fprintf(&b, "\t\t\t{%q, %s, %q, %q, %q},\n", f.REST, fateConst[f.Fate], f.KCC, f.Note, f.Value)
		}
		b.WriteString("\t\t},\n")
		fmt.Fprintf(&b, "\t\tIgnoreUnknown: %v, UnknownWhy: %q, Schema: %q,\n", o.api.Unknown == "ignore", o.api.Why, o.schema)
		b.WriteString("\t\tLive: []pair{\n")
		for _, p := range o.live {
			fmt.Fprintf(&b, "\t\t\t{%q, %q, %s},\n", p.REST, p.KCC, modeConst[p.Mode])
		}
		b.WriteString("\t\t},\n\t},\n")
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the generated source: %w", err)
	}
	return src, nil
}

// resolveTargets completes the kinds references name by their short name
// (AccessLevel for AccessContextManagerAccessLevel): the mapped kind of the
// same group whose name ends so.
func resolveTargets(outs []*kindOut) {
	byKind := map[string]*kccKind{}
	for _, o := range outs {
		byKind[o.kcc.Kind] = o.kcc
	}
	for _, o := range outs {
		for i := range o.kcc.Spec {
			f := &o.kcc.Spec[i]
			for j, t := range f.Targets {
				if byKind[t] != nil {
					continue
				}
				var found []string
				for k, kk := range byKind {
					if strings.HasSuffix(k, t) && kk.Group == o.kcc.Group {
						found = append(found, k)
					}
				}
				if len(found) == 1 {
					f.Targets[j] = found[0]
				}
			}
		}
	}
}
