package gcp

import (
	"slices"
	"strconv"
	"strings"
)

// refRE matches a value reference $(ref.NAME.PATH) (as the engine's).
var refRE = lazyRegexp(`\$\(ref\.([^.\[\)\s]+)((?:\.[^.\[\)\s]+|\[\d+\])*)\)`)

func hasRef(s string) bool { return strings.Contains(s, "$(ref.") }

// indexRE finds list indices in a path: networkInterfaces[0].networkIP.
var indexRE = lazyRegexp(`\[(\d+)\]`)

// lookupRef says where $(ref.NAME.PATH) of resource it is: a value known
// now (the name), or a field of its live object. path is PATH without its
// leading dot.
func lookupRef(it *item, ref, path string) (any, bool, Read, error) {
	rd := Read{Ref: ref, Resource: it.res.Name, APIVersion: it.kind.APIVersion, Kind: it.kind.Kind, Name: it.objName}
	if path == "name" {
		return restName(it), true, Read{}, nil
	}
	if v, ok := propertyAt(it.res.Properties, path); ok && !containsRef(v) {
		// A property of the resource, as the engine resolves them.
		return v, true, Read{}, nil
	}
	if slices.Contains(it.kind.NameFrom, path) || slices.Contains(it.kind.Wrappers, path) {
		// A property that names the resource (an App Engine version's
		// id) the body left to the resource's name: its Google Cloud name.
		return it.gcpName, true, Read{}, nil
	}
	// The pattern of the path (networkInterfaces[].networkIP) and its
	// indices, which fill the pattern of the live path in order.
	var idx []int
	for _, m := range indexRE().FindAllStringSubmatch(path, -1) {
		n, _ := strconv.Atoi(m[1])
		idx = append(idx, n)
	}
	pattern := indexRE().ReplaceAllString(path, "[]")
	live := it.kind.live(pattern)
	if p := it.kind.pair(pattern); live == "" && p != nil && p.Mode == mLeaf {
		if f := it.kind.field(p.KCC); f != nil && f.Type <= tBoolean {
			// A field of the body the API fills when the body leaves it
			// out (a subnetwork's gateway): KCC writes the value Google
			// Cloud chose into the spec when asked to.
			live = "spec." + p.KCC
		}
	}
	if live == "" {
		have := []string{"name"}
		for _, l := range it.kind.Live {
			if !slices.Contains(have, l.REST) {
				have = append(have, l.REST)
			}
		}
		msg := "the live " + it.kind.Kind + " carries no " + path + " (it carries: " + strings.Join(have, ", ") + ")"
		return nil, false, Read{}, invalid("%s: %s", ref, msg)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(live); i++ {
		if strings.HasPrefix(live[i:], "[]") {
			if n < len(idx) {
				b.WriteString("[" + strconv.Itoa(idx[n]) + "]")
			} else {
				b.WriteString("[0]")
			}
			n++
			i++
			continue
		}
		b.WriteByte(live[i])
	}
	rd.Path = b.String()
	if strings.HasPrefix(rd.Path, "spec.") {
		// KCC writes what Google Cloud chose into the spec only when
		// asked to.
		it.merge = true
		if it.obj != nil {
			setAnnotation(it.obj, StateIntoSpecAnnotation, "merge")
		}
	}
	return nil, false, rd, nil
}

// restName is the value of the REST resource's name field: the Google
// Cloud name, or the path the kind's RESTName spells.
func restName(it *item) string {
	t := it.kind.RESTName
	if t == "" {
		return it.gcpName
	}
	r := strings.NewReplacer("{project}", it.project, "{name}", it.gcpName, "{location}", it.location,
		"{zone}", it.location, "{region}", it.location, "{parent}", it.parent)
	return r.Replace(t)
}

// fillString replaces the references of s that are known now (names) and
// defers the others; ptr is where s goes in the object. A string that is
// one reference to a known value becomes that value.
func (oc *objConv) fillString(s, ptr string) (any, error) {
	if !hasRef(s) {
		return s, nil
	}
	ms := refRE().FindAllStringSubmatchIndex(s, -1)
	var reads []Read
	var b strings.Builder
	last := 0
	var whole any
	for _, m := range ms {
		text, name, path := s[m[0]:m[1]], s[m[2]:m[3]], strings.TrimPrefix(s[m[4]:m[5]], ".")
		b.WriteString(s[last:m[0]])
		last = m[1]
		target := oc.c.byName[name]
		if target == nil || target.err != nil && target.kind == nil {
			if target == nil {
				// Not a Google Cloud resource of this conversion: the
				// caller resolves it.
				reads = append(reads, Read{Ref: text, Resource: name, Path: path})
				b.WriteString(text)
				continue
			}
			return nil, invalid("%s: resource %s cannot be converted itself", text, name)
		}
		oc.addDep(target.index)
		v, ok, rd, err := lookupRef(target, text, path)
		if err != nil {
			return nil, err
		}
		if ok {
			if len(ms) == 1 && m[0] == 0 && m[1] == len(s) {
				whole = v
			}
			b.WriteString(formatValue(v))
			continue
		}
		reads = append(reads, rd)
		b.WriteString(text)
	}
	b.WriteString(s[last:])
	if whole != nil {
		return whole, nil
	}
	out := b.String()
	for _, rd := range reads {
		oc.deferred = append(oc.deferred, Deferred{Field: ptr, Template: out, Read: rd})
	}
	return out, nil
}

func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return formatNumber(v)
}

// wholeRef splits s when it is exactly one reference.
func wholeRef(s string) (name, path string, ok bool) {
	if !strings.HasPrefix(s, "$(ref.") || !strings.HasSuffix(s, ")") {
		return "", "", false
	}
	m := refRE().FindStringSubmatch(s)
	if m == nil || m[0] != s {
		return "", "", false
	}
	return m[1], strings.TrimPrefix(m[2], "."), true
}

// refPaths are the reference fields a KCC reference resolves by itself.
var refPaths = map[string]bool{"selfLink": true, "name": true, "id": true}

// identities are fields beside refPaths that identify a resource of a kind
// (a service account's email): a reference to one in a field that refers
// to that kind is the object.
var identities = map[string]map[string]bool{
	"IAMServiceAccount": {"email": true, "uniqueId": true},
	"ComputeAddress":    {"address": true},
}

// ref converts a REST value into a KCC reference field: {name: OBJECT} for
// a resource of the deployment (by reference, selfLink or name),
// {external: VALUE} otherwise; a reference KCC cannot resolve itself is
// deferred into external; "" is none.
func (oc *objConv) ref(v any, f *field, path []seg, rp string) (any, error) {
	s, ok := v.(string)
	if !ok {
		if m, isMap := v.(map[string]any); isMap && (m["name"] != nil || m["external"] != nil) {
			return m, nil // already a KCC reference
		}
		return nil, invalid("%s is %s; Config Connector's %s.%s is a reference (a name, selfLink or $(ref.NAME.selfLink))", displayPath(rp), describe(v), oc.kind.Kind, dotted(f.Path))
	}
	if s == "" {
		return nil, nil // no resource, as Google Cloud's APIs read "" (a cluster's subnetwork)
	}
	if name, p, ok := wholeRef(s); ok {
		if target := oc.c.byName[name]; target != nil && target.kind != nil {
			if (refPaths[p] || p == f.TargetField || f.Target == target.kind.Kind && identities[f.Target][p]) && (f.Target == "" || f.Target == anyKind || f.Target == target.kind.Kind) {
				oc.addDep(target.index)
				return nameRef(f, target), nil
			}
			// Another kind than the field's (a legacy HTTP health check
			// where KCC names a ComputeHealthCheck), or a field KCC does not
			// resolve: the live value, in external.
		}
	}
	if hasRef(s) {
		filled, err := oc.fillString(s, pointer(append(path, seg{key: "external"})))
		if err != nil {
			return nil, err
		}
		fs, isStr := filled.(string)
		if !isStr {
			fs = formatValue(filled)
		}
		if hasRef(fs) {
			return map[string]any{"external": fs}, nil
		}
		s = fs // names filled in: a plain value now
	}
	if target := oc.c.match(s, f.Target); target != nil {
		oc.addDep(target.index)
		return nameRef(f, target), nil
	}
	return map[string]any{"external": externalForm(s)}, nil
}

// anyKind is the target of a reference that names its kind itself
// ({kind, name}).
const anyKind = "*"

// nameRef is a reference to the object of target.
func nameRef(f *field, target *item) map[string]any {
	r := map[string]any{"name": target.objName}
	if f.Target == anyKind {
		r["kind"] = target.kind.Kind
	}
	return r
}

// externalForm is a resource path as KCC's external references take it: a
// full resource name (//pubsub.googleapis.com/projects/p/topics/t) without
// its service.
func externalForm(s string) string {
	if rest, ok := strings.CutPrefix(s, "//"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 && strings.HasSuffix(rest[:i], ".googleapis.com") {
			return rest[i+1:]
		}
	}
	return s
}

// match finds the resource of the deployment a plain value names: a
// selfLink or path whose last segment is its Google Cloud name (and whose
// collection is its kind's), or, when the field names the kind it refers
// to, that name alone.
func (c *converter) match(s, target string) *item {
	if s == "" {
		return nil
	}
	name, collection := s, ""
	if strings.Contains(s, "/") {
		parts := strings.Split(strings.TrimRight(s, "/"), "/")
		name = parts[len(parts)-1]
		if len(parts) > 1 {
			collection = parts[len(parts)-2]
		}
	} else if target == "" {
		return nil
	}
	var found *item
	for _, it := range c.items {
		if it.kind == nil || it.gcpName != name {
			continue
		}
		if target != "" && it.kind.Kind != target {
			continue
		}
		if collection != "" && restCollection(it.kind) != "" && !strings.EqualFold(collection, restCollection(it.kind)) {
			continue
		}
		if found != nil {
			return nil // two candidates: leave it to Google Cloud
		}
		found = it
	}
	return found
}

// restCollection is the collection a kind's selfLinks name: that of the
// method creating it (compute/beta instanceGroups.insert -> instanceGroups),
// else the last segment of its REST resource (v1.instances -> instances).
// The method comes first: the REST resource is the one KCC's reference
// page names, which is not always the collection (ComputeInstanceGroup's
// page names v1.instances, ComputeBackendBucket's v1.backendBucket).
func restCollection(k *kindInfo) string {
	if _, method, ok := strings.Cut(k.Body, " "); ok {
		if parts := strings.Split(method, "."); len(parts) > 1 {
			switch parts[len(parts)-1] {
			case "insert", "create":
				return parts[len(parts)-2]
			}
		}
	}
	r := k.REST
	if i := strings.LastIndexAny(r, "./"); i >= 0 {
		r = r[i+1:]
	}
	return r
}

// unionHints say what to do instead when a union cannot name a kind.
var unionHints = map[string]string{
	"ComputeForwardingRule.ComputeTargetPool":     " (Config Connector's forwarding rules cannot target a target pool: front the instances with a compute.v1.regionBackendService, loadBalancingScheme EXTERNAL, and set backendService instead of target)",
	"ComputeForwardingRule.ComputeTargetInstance": " (Config Connector's forwarding rules cannot target a target instance: put the instance in an instance group behind a compute.v1.regionBackendService and set backendService instead of target)",
}

// union converts a REST value into a KCC object that holds one reference
// per kind it accepts (and maybe a plain value, ip), choosing by the kind
// of the resource referred to.
func (oc *objConv) union(v any, f *field, path []seg, rp string) (any, error) {
	s, ok := v.(string)
	if !ok {
		if m, isMap := v.(map[string]any); isMap {
			return m, nil
		}
		return nil, invalid("%s is %s, not a reference", displayPath(rp), describe(v))
	}
	var members []*field
	var plain *field
	prefix := f.Path + "."
	for i := range oc.kind.Spec {
		m := &oc.kind.Spec[i]
		if !strings.HasPrefix(m.Path, prefix) || strings.Contains(m.Path[len(prefix):], ".") {
			continue
		}
		switch m.Type {
		case tRef:
			members = append(members, m)
		case tString:
			plain = m
		}
	}
	pick := func(kind string) *field {
		for _, m := range members {
			if m.Target == kind {
				return m
			}
		}
		return nil
	}
	var member *field
	var targets []string
	for _, m := range members {
		targets = append(targets, m.Target)
	}
	if name, p, ok := wholeRef(s); ok {
		if target := oc.c.byName[name]; target != nil && target.kind != nil {
			member = pick(target.kind.Kind)
			if member == nil && !refPaths[p] {
				// A field naming another resource ($(ref.igm.instanceGroup)):
				// the member of the kind it names.
				field := p[strings.LastIndexAny(p, ".]")+1:]
				for _, m := range members {
					if strings.HasSuffix(strings.ToLower(m.Target), strings.ToLower(field)) {
						member = m
					}
				}
			}
			if member == nil {
				return nil, invalid("%s is %s, a %s; Config Connector's %s.%s takes a %s%s", displayPath(rp), s, target.kind.Kind, oc.kind.Kind, dotted(f.Path), strings.Join(targets, " or "), unionHints[oc.kind.Kind+"."+target.kind.Kind])
			}
		}
	} else if target := oc.c.match(s, ""); target != nil {
		member = pick(target.kind.Kind)
	}
	if member == nil && !hasRef(s) && strings.Contains(s, "/") {
		// A selfLink: its collection says the kind.
		parts := strings.Split(strings.TrimRight(s, "/"), "/")
		if len(parts) > 1 {
			col := parts[len(parts)-2]
			for _, m := range members {
				if k := lookupKind(m.Target); k != nil && strings.EqualFold(restCollection(k), col) {
					member = m
				}
			}
		}
	}
	if member == nil && plain != nil && !strings.Contains(s, "/") {
		if k := lastSegment(strings.ReplaceAll(plain.Path, ".", "/")); plainValues[k] != nil && !hasRef(s) && !plainValues[k][s] {
			// A bare name is no bundle: it names a target without its
			// kind, which only its selfLink says.
			return nil, invalid("%s is %s: a target named without its kind; write its selfLink (global/targetHttpProxies/NAME, regions/R/targetPools/NAME, ...) or $(ref.NAME.selfLink) (Config Connector's %s.%s takes %s only as %s)",
				displayPath(rp), describe(s), oc.kind.Kind, dotted(plain.Path), strings.Join(sortedKeys(plainValues[k]), " or "), k)
		}
		x, err := oc.fillString(s, pointer(append(path, seg{key: lastSegment(strings.ReplaceAll(plain.Path, ".", "/"))})))
		if err != nil {
			return nil, err
		}
		return map[string]any{lastSegment(strings.ReplaceAll(plain.Path, ".", "/")): x}, nil
	}
	if member == nil && len(members) == 1 {
		member = members[0]
	}
	if member == nil {
		return nil, invalid("%s is %s: cannot tell which of %s it names (Config Connector's %s.%s holds one of them)", displayPath(rp), describe(s), strings.Join(targets, ", "), oc.kind.Kind, dotted(f.Path))
	}
	key := member.Path[len(prefix):]
	r, err := oc.ref(s, member, append(path, seg{key: key}), rp)
	if err != nil {
		return nil, err
	}
	return map[string]any{key: r}, nil
}

// plainValues are the values a union's plain string member takes, where
// the API names them: a forwarding rule's target is a Google APIs bundle
// only as all-apis or vpc-sc (Private Service Connect), and any other
// bare name is a target whose kind is unknown.
var plainValues = map[string]map[string]bool{
	"googleAPIsBundle": {"all-apis": true, "vpc-sc": true},
}

// propertyAt reads a reference path (a.b[0].c) in properties.
func propertyAt(props map[string]any, path string) (any, bool) {
	var cur any = props
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
		for rest != "" {
			n, after, found := strings.Cut(rest, "]")
			if !found {
				return nil, false
			}
			i, err := strconv.Atoi(n)
			l, ok := cur.([]any)
			if err != nil || !ok || i < 0 || i >= len(l) {
				return nil, false
			}
			cur = l[i]
			rest = strings.TrimPrefix(after, "[")
		}
	}
	switch cur.(type) {
	case string, bool, int, int64, float64:
		return cur, true
	}
	return nil, false // an object or list: its fields are referenced one by one
}

func containsRef(v any) bool {
	s, ok := v.(string)
	return ok && hasRef(s)
}
