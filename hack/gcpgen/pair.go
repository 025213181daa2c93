package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Pairing: each field of the REST body with the KCC spec field it fills,
// by name where the names agree (exactly, in case and underscores, in
// number, or as NAME and NAMERef), and by kinds.yaml's renames elsewhere.

// Modes of a pair, as internal/gcp reads them.
const (
	modeLeaf = "leaf" // the value is copied (converted to the KCC type)
	modeObj  = "obj"  // an object: its fields pair one by one
	modeList = "list" // a list of objects, item by item into a KCC list
	modeOne  = "one"  // a list of at most one object into a KCC object
	modePass = "pass" // an object that has no KCC node: its fields pair elsewhere
)

type pairOut struct {
	REST, KCC, Mode string
}

// generic are the top-level REST fields internal/gcp maps for every kind:
// the project and the location (and the name: kinds.yaml's name list).
var generic = map[string]bool{"project": true, "zone": true, "region": true}

type pairer struct {
	kind      string
	fields    map[string]kccField
	children  map[string][]string
	rename    map[string]string
	hand      map[string]bool
	names     map[string]bool // where the Google Cloud name is
	pairs     []pairOut
	unmatched []string
	errs      []string
	used      map[string]string // KCC path -> REST path that fills it
	// ignore, refuse and parts are kinds.yaml's for the kind (parts: REST
	// path -> the kind its items become); fates what became of each REST
	// field that pairs with no KCC field of its own name.
	ignore map[string]ignoreSpec
	refuse map[string]string
	parts  map[string]string
	fates  []fateOut
}

// Fates of a REST field beside being paired with a KCC field: what
// internal/gcp does with it, for the table that names every field.
const (
	fateRule    = "rule"    // a rule of internal/gcp maps it (rules.go)
	fateName    = "name"    // the Google Cloud name: metadata.name or spec.resourceID
	fateGeneric = "generic" // project or location: the project annotation, spec.location
	fateLabels  = "labels"  // metadata.labels
	fatePart    = "part"    // its items are objects of another kind
	fateOutput  = "output"  // output only: the API ignores it in requests
	fateIgnored = "ignored" // kinds.yaml's ignore
	fateDefault = "default" // paired, and filled with the API's default when absent
	fateRefused = "refused" // Config Connector has no field for it
)

// fateOut is what becomes of one REST field (LABEL:PATH in a variant).
type fateOut struct {
	REST, Fate string
	// KCC is the field a default fills; Note says why (or where to).
	KCC, Note string
	// Value is the value an ignored field may take or a default, as JSON.
	Value string
}

func (p *pairer) fate(rest, fate, note string) {
	p.fates = append(p.fates, fateOut{REST: rest, Fate: fate, Note: note})
}

func newPairer(k *kccKind) *pairer {
	p := &pairer{kind: k.Kind, fields: map[string]kccField{}, children: map[string][]string{}, used: map[string]string{}}
	for _, f := range k.Spec {
		p.fields[f.Path] = f
		parent, name := splitPath(f.Path)
		if name == "[]" || strings.HasSuffix(name, "{}") {
			continue
		}
		p.children[parent] = append(p.children[parent], name)
	}
	return p
}

// splitPath splits a.b[].c into a.b[] and c, and a.b[] into a.b and [].
func splitPath(p string) (parent, name string) {
	if strings.HasSuffix(p, "[]") {
		return strings.TrimSuffix(p, "[]"), "[]"
	}
	parent, name, _ = cutLast(p, ".")
	return parent, name
}

func (p *pairer) typeOf(kp string) string {
	if kp == "" {
		return "object"
	}
	return p.fields[kp].Type
}

func (p *pairer) itemType(kp string) string {
	return p.fields[kp+"[]"].Type
}

func (p *pairer) add(rest, kcc, mode string) {
	p.pairs = append(p.pairs, pairOut{REST: rest, KCC: kcc, Mode: mode})
	if mode == modeLeaf || mode == modeList {
		if prev, ok := p.used[kcc]; ok && prev != rest {
			p.errs = append(p.errs, fmt.Sprintf("%s: %s and %s both fill %s", p.kind, prev, rest, kcc))
		}
		p.used[kcc] = rest
	}
}

// object pairs the fields of REST object rn at rest with KCC node kcc,
// and records the fate of those that pair with no KCC field of their own.
func (p *pairer) object(rn *restNode, rest, kcc string) {
	for _, name := range sortedKeys(rn.Props) {
		child := rn.Props[name]
		rp := joinREST(rest, name)
		_, renamed := p.rename[rp]
		switch {
		case p.ignore[rp].Why != "":
			ig := p.ignore[rp]
			out := fateOut{REST: rp, Fate: fateIgnored, Note: ig.Why}
			if ig.Value != nil {
				b, _ := json.Marshal(ig.Value)
				out.Value = string(b)
			}
			p.fates = append(p.fates, out)
			continue
		case p.refuse[rp] != "" && p.rename[rp] == "":
			// Refused although a KCC field of its name exists: the
			// forms differ (kinds.yaml says how).
			p.fate(rp, fateRefused, p.refuse[rp])
			continue
		case p.parts[rp] != "":
			p.fate(rp, fatePart, p.parts[rp])
			continue
		case p.hand[rp]:
			p.fate(rp, fateRule, "")
			continue
		case rest == "" && generic[name]:
			note := "the cnrm.cloud.google.com/project-id annotation, or spec.projectRef"
			if name != "project" {
				note = "spec.location, spec." + name + " or the location of the kind's references"
			}
			p.fate(rp, fateGeneric, note)
			continue
		case p.names[rp]:
			p.fate(rp, fateName, "metadata.name, or spec.resourceID where it cannot be an object's name")
			continue
		case child.ReadOnly && !renamed:
			p.fate(rp, fateOutput, "output only: the API sets it and ignores it in requests")
			continue
		}
		kp, ok := "", false
		if target, has := p.rename[rp]; has {
			ok = true
			switch target {
			case ".":
				kp = kcc
			case "-":
				p.fate(rp, fateRefused, p.refusal(rp, "never in Deployment Manager bodies"))
				continue
			default:
				kp = joinKCC(kcc, target)
				if _, exists := p.fields[kp]; !exists {
					p.errs = append(p.errs, fmt.Sprintf("%s: rename %s: %s: the KCC spec has no %s", p.kind, rp, target, kp))
					continue
				}
			}
		} else {
			kp, ok = p.match(name, child, kcc)
		}
		if !ok {
			if rest == "" && name == "labels" && p.fields["labels"].Type == "" {
				p.fate(rp, fateLabels, "metadata.labels")
				continue
			}
			if why := serverField(name, child); why != "" {
				p.fate(rp, fateIgnored, why)
				continue
			}
			p.unmatched = append(p.unmatched, rp)
			why := ""
			if child.Param {
				why = "a request parameter of the method that creates it"
			}
			p.fate(rp, fateRefused, p.refusal(rp, why))
			continue
		}
		if !p.pair(child, rp, kp) {
			p.unmatched = append(p.unmatched, rp+" (types differ: "+child.Type+" vs "+p.typeOf(kp)+")")
			p.fate(rp, fateRefused, p.refusal(rp, fmt.Sprintf("a REST %s, where Config Connector's nearest field spec.%s is a %s", child.Type, kp, p.typeOf(kp))))
		}
	}
}

// serverField says why a REST field Config Connector has no field for is
// one the API ignored when a resource was created, by what every Google
// API means by its name, or "".
func serverField(name string, n *restNode) string {
	if n.Param {
		switch name {
		case "requestId":
			return "a request parameter: the API uses it to recognize a retried call; Config Connector sends its own"
		case "userProject":
			return "a request parameter: the project billed for the call, not a part of the resource"
		}
		return ""
	}
	if n.Type != "string" {
		return ""
	}
	switch name {
	case "kind":
		return "the REST type marker (TYPE#RESOURCE), the same for every resource of the type"
	case "etag", "fingerprint", "labelFingerprint":
		return "a concurrency token the API reads on updates, not when it creates the resource; Config Connector reads its own"
	case "selfLink":
		return "the resource's URL, which the API sets"
	}
	return ""
}

// refusal is why field rp is refused: kinds.yaml's reason, else why, else
// that Config Connector has no field for it.
func (p *pairer) refusal(rp, why string) string {
	if r := p.refuse[rp]; r != "" {
		return r
	}
	if why != "" {
		return why
	}
	return "Config Connector's " + p.kind + " has no field for it"
}

func joinREST(p, k string) string {
	if p == "" || strings.HasSuffix(p, ":") {
		return p + k
	}
	return p + "." + k
}

func joinKCC(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func isScalar(t string) bool {
	switch t {
	case "string", "integer", "number", "boolean", "any":
		return true
	}
	return false
}

// pair records rest -> kp for a REST node and descends; false when their
// shapes cannot pair.
func (p *pairer) pair(rn *restNode, rp, kp string) bool {
	kt := p.typeOf(kp)
	switch rn.Type {
	case "object":
		switch {
		case kt == "object":
			p.add(rp, kp, modeObj)
			p.object(rn, rp, kp)
		case kt == "map" || kt == "any":
			p.add(rp, kp, modeLeaf)
		case kt == "array":
			// Only by a rename: the REST object's fields say where they go
			// (metadata.items into metadata[], tags.items into tags).
			p.add(rp, kp, modePass)
			p.object(rn, rp, kp)
		default:
			return false
		}
	case "map":
		if kt != "map" && kt != "any" && kt != "object" {
			return false
		}
		p.add(rp, kp, modeLeaf)
	case "array":
		it := p.itemType(kp)
		switch {
		case kt == "array" && rn.Items != nil && rn.Items.Type == "object" && it == "object":
			p.add(rp, kp, modeList)
			p.object(rn.Items, rp+"[]", kp+"[]")
		case kt == "array" && rn.Items != nil && rn.Items.Type == "object" && it == "union":
			p.add(rp, kp, modeLeaf)
		case kt == "array":
			p.add(rp, kp, modeLeaf)
		case kt == "object" && rn.Items != nil && rn.Items.Type == "object":
			p.add(rp, kp, modeOne)
			p.object(rn.Items, rp+"[]", kp)
		case kt == "any":
			p.add(rp, kp, modeLeaf)
		default:
			return false
		}
	default: // scalars
		if !(isScalar(kt) || kt == "ref" || kt == "union" || kt == "map" || kt == "secret") {
			return false
		}
		p.add(rp, kp, modeLeaf)
	}
	return true
}

// plural forms of a normalized name.
func numberForms(n string) []string {
	forms := []string{n, n + "s", n + "es"}
	if strings.HasSuffix(n, "ies") {
		forms = append(forms, strings.TrimSuffix(n, "ies")+"y")
	}
	if strings.HasSuffix(n, "y") {
		forms = append(forms, strings.TrimSuffix(n, "y")+"ies")
	}
	if strings.HasSuffix(n, "es") {
		forms = append(forms, strings.TrimSuffix(n, "es"))
	}
	if strings.HasSuffix(n, "s") {
		forms = append(forms, strings.TrimSuffix(n, "s"))
	}
	return forms
}

// match finds the child of KCC node kcc that REST field name pairs with.
func (p *pairer) match(name string, rn *restNode, kcc string) (string, bool) {
	best, bestScore, tie := "", 99, false
	nn := norm(name)
	forms := numberForms(nn)
	for _, c := range p.children[kcc] {
		kp := joinKCC(kcc, c)
		f := p.fields[kp]
		isRefField := f.Type == "ref" || f.Type == "union" || (f.Type == "array" && (p.itemType(kp) == "ref" || p.itemType(kp) == "union"))
		score := 99
		nc := norm(c)
		switch {
		case c == name:
			score = 1
		case nc == nn:
			score = 2
		case contains(forms, nc):
			score = 3
		case isRefField:
			base := strings.TrimSuffix(strings.TrimSuffix(c, "s"), "Ref")
			tf := f.TFName
			if f.Type == "array" {
				tf = p.fields[kp+"[]"].TFName
			}
			if contains(forms, norm(base)) || (tf != "" && contains(forms, norm(tf))) {
				score = 4
			}
		}
		if score == 99 {
			continue
		}
		switch {
		case score < bestScore:
			best, bestScore, tie = kp, score, false
		case score == bestScore:
			tie = true
		}
	}
	if best == "" || tie {
		return "", false
	}
	return best, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// statusPairs pairs every field of the REST tree (output-only ones
// included) with a status field of the same name, looking in status and
// status.observedState: $(ref.NAME.PATH) reads them from the live object.
func statusPairs(rn *restNode, status []string) []pairOut {
	children := map[string][]string{}
	isLeaf := map[string]bool{}
	for _, s := range status {
		isLeaf[s] = true
		for cur := s; cur != "status"; {
			parent, name := splitPath(cur)
			if name != "[]" {
				if !contains(children[parent], name) {
					children[parent] = append(children[parent], name)
				}
			}
			cur = parent
		}
	}
	var out []pairOut
	var walk func(n *restNode, rest string, kccs []string)
	walk = func(n *restNode, rest string, kccs []string) {
		for _, name := range sortedKeys(n.Props) {
			child := n.Props[name]
			rp := joinREST(rest, name)
			for _, k := range kccs {
				kp := ""
				nn := norm(name)
				for _, c := range children[k] {
					if norm(c) == nn {
						kp = k + "." + c
						break
					}
				}
				if kp == "" {
					for _, c := range children[k] {
						if contains(numberForms(nn), norm(c)) {
							kp = k + "." + c
							break
						}
					}
				}
				if kp == "" {
					continue
				}
				switch {
				case isLeaf[kp] && (isScalar(child.Type) || child.Type == "map" || child.Type == "array"):
					out = append(out, pairOut{REST: rp, KCC: kp, Mode: modeLeaf})
				case child.Type == "object":
					walk(child, rp, []string{kp})
				case child.Type == "array" && child.Items != nil && child.Items.Type == "object" && len(children[kp+"[]"]) > 0:
					walk(child.Items, rp+"[]", []string{kp + "[]"})
				default:
					continue
				}
				break
			}
		}
	}
	walk(rn, "", []string{"status", "status.observedState"})
	sort.Slice(out, func(i, j int) bool { return out[i].REST < out[j].REST })
	return out
}
