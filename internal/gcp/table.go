package gcp

import (
	"regexp"
	"sort"
	"strings"
	"sync"
)

// The shapes of the generated tables (zz_generated.go, from kinds.yaml by
// hack/gcpgen) and lookups in them. The tables are sorted and never
// written after initialization.

// dmType is one DM type spelling and the kind it maps to. Scope is the
// location the spelling implies for kinds with several (zone, region,
// global), or "".
type dmType struct {
	Type, Kind, Scope string
}

// unsupportedType is a DM type with no Config Connector kind.
type unsupportedType struct {
	Type, Why string
}

// fieldType is the type of a KCC spec field.
type fieldType uint8

const (
	tString fieldType = iota
	tInteger
	tNumber
	tBoolean
	tObject
	tArray
	tMap    // an object of arbitrary keys (labels)
	tAny    // any value (x-kubernetes-preserve-unknown-fields)
	tRef    // a reference: {name, namespace} or {external}
	tUnion  // an object holding one reference per kind it accepts
	tSecret // {value} or {valueFrom: {secretKeyRef}}
)

var fieldTypeNames = [...]string{"string", "integer", "number", "boolean", "object", "list", "map", "any", "reference", "reference", "secret"}

func (t fieldType) String() string { return fieldTypeNames[t] }

// field is one field of a kind's spec. Path is dotted, [] standing for a
// list's items (networkInterface[].networkRef). A reference's Target is
// the kind it names and TargetField the field of that kind it resolves to
// (selfLink, name, address), when KCC's service mapping says.
type field struct {
	Path        string
	Type        fieldType
	Target      string
	TargetField string
	Required    bool
}

// mode says how a paired REST field fills its KCC field.
type mode uint8

const (
	mLeaf mode = iota // copied, converted to the KCC field's type
	mObj              // an object whose fields pair one by one
	mList             // a list of objects, item by item
	mOne              // a list of at most one object into an object
	mPass             // an object with no KCC node of its own
)

// pair pairs a REST path (LABEL:PATH for a variant) with a KCC path.
type pair struct {
	REST, KCC string
	Mode      mode
}

// part is a list of a body (REST, a dotted path) whose items are objects
// of Kind (a router's NATs), As the REST path under which Kind's pairs read
// an item ("" for the top).
type part struct {
	REST, Kind, As string
}

// fate is what becomes of a REST field that pairs with no KCC field of
// its own (docs/gcp-fields.md lists every field's).
type fate uint8

const (
	fRule    fate = iota // a rule of rules.go maps it
	fName                // the Google Cloud name
	fGeneric             // the project or the location
	fLabels              // metadata.labels
	fPart                // its items are objects of another kind
	fOutput              // output only: the API ignored it in requests
	fIgnored             // ignored: Note says why, Value the one value it may take
	fDefault             // paired with KCC, filled with Value when absent
	fRefused             // Config Connector has no field for it: Note says why
)

// restFate is the fate of one REST field (LABEL:PATH in a variant).
// Value is JSON, or from:name (the Google Cloud name) or from:resource
// (the DM resource's name) for a default.
type restFate struct {
	REST  string
	Fate  fate
	KCC   string
	Note  string
	Value string
}

// kindInfo is one Config Connector kind: its CRD's spec and status
// fields and how a DM body fills them.
type kindInfo struct {
	Kind, APIVersion, Plural string
	// REST is the Google Cloud REST resource (v1.instances), Body the
	// discovery document and method whose request body DM writes.
	REST, Body string
	// IAM says IAMPolicyMember may name objects of the kind.
	IAM bool
	// CRD is the file of its CustomResourceDefinition in
	// third_party/kcc/crds.
	CRD string
	// NameFrom lists the properties holding the Google Cloud name;
	// RESTName is what $(ref.X.name) reads, when a path.
	NameFrom []string
	RESTName string
	// Wrappers are properties DM bodies used that the REST body lacks:
	// the resource's ID as a string (function: my-fn), or the body
	// wrapped in an object (function: {...} beside parent and
	// functionId), which is unwrapped.
	Wrappers []string
	// Parts are lists of the body whose items are objects of another kind.
	Parts  []part
	Spec   []field
	Status []string
	Pairs  []pair
	// Fates are what becomes of the REST fields Pairs do not pair, by
	// REST path.
	Fates []restFate
	// IgnoreUnknown says the API ignored a property its schema lacks (a
	// misspelt field) rather than refusing the call, UnknownWhy how that
	// is known; Schema names the REST body (compute/beta Instance).
	IgnoreUnknown bool
	UnknownWhy    string
	Schema        string
	// Live pairs a REST path with where the live object holds it.
	Live []pair
}

// fate returns the fate of REST path rest, or nil.
func (k *kindInfo) fate(rest string) *restFate {
	i := sort.Search(len(k.Fates), func(i int) bool { return k.Fates[i].REST >= rest })
	if i < len(k.Fates) && k.Fates[i].REST == rest {
		return &k.Fates[i]
	}
	return nil
}

func lookupKind(kind string) *kindInfo {
	i := sort.Search(len(kinds), func(i int) bool { return kinds[i].Kind >= kind })
	if i < len(kinds) && kinds[i].Kind == kind {
		return &kinds[i]
	}
	return nil
}

// lookupType is the entry of DM type spelling t.
func lookupType(t string) (dmType, bool) {
	if d, ok := findType(t); ok {
		return d, true
	}
	// DM's short spelling API.VERSION.COLLECTION naming the collection
	// rather than the type (compute.v1.instanceGroupManagers, which
	// Deployment Manager took as compute.v1.instanceGroupManager) is
	// gcp-types/API-VERSION:COLLECTION.
	if shortTypeRE().MatchString(t) {
		parts := strings.SplitN(t, ".", 3)
		if d, ok := findType("gcp-types/" + parts[0] + "-" + parts[1] + ":" + parts[2]); ok {
			d.Type = t
			return d, true
		}
	}
	return dmType{}, false
}

// findType is the table's entry of spelling t.
func findType(t string) (dmType, bool) {
	i := sort.Search(len(dmTypes), func(i int) bool { return dmTypes[i].Type >= t })
	if i < len(dmTypes) && dmTypes[i].Type == t {
		return dmTypes[i], true
	}
	return dmType{}, false
}

func lookupUnsupported(t string) (string, bool) {
	i := sort.Search(len(unsupportedTypes), func(i int) bool { return unsupportedTypes[i].Type >= t })
	if i < len(unsupportedTypes) && unsupportedTypes[i].Type == t {
		return unsupportedTypes[i].Why, true
	}
	return "", false
}

// field returns the spec field at path (a.b[].c), or nil.
func (k *kindInfo) field(path string) *field {
	i := sort.Search(len(k.Spec), func(i int) bool { return k.Spec[i].Path >= path })
	if i < len(k.Spec) && k.Spec[i].Path == path {
		return &k.Spec[i]
	}
	return nil
}

// pair returns the pair of a REST path, or nil.
func (k *kindInfo) pair(rest string) *pair {
	i := sort.Search(len(k.Pairs), func(i int) bool { return k.Pairs[i].REST >= rest })
	if i < len(k.Pairs) && k.Pairs[i].REST == rest {
		return &k.Pairs[i]
	}
	return nil
}

// live returns where the live object holds REST path rest, or "".
func (k *kindInfo) live(rest string) string {
	i := sort.Search(len(k.Live), func(i int) bool { return k.Live[i].REST >= rest })
	if i < len(k.Live) && k.Live[i].REST == rest {
		return k.Live[i].KCC
	}
	return ""
}

// children lists the REST fields paired under REST path prefix (for
// errors: what the kind takes there).
func (k *kindInfo) restChildren(prefix string) []string {
	var out []string
	start := prefix
	if prefix != "" && !strings.HasSuffix(prefix, ":") {
		start += "."
	}
	i := sort.Search(len(k.Pairs), func(i int) bool { return k.Pairs[i].REST >= start })
	for ; i < len(k.Pairs) && strings.HasPrefix(k.Pairs[i].REST, start); i++ {
		rest := k.Pairs[i].REST[len(start):]
		if !strings.ContainsAny(rest, ".[:") {
			out = append(out, rest)
		}
	}
	return out
}

// has says whether the spec has a top-level field name.
func (k *kindInfo) has(name string) bool { return k.field(name) != nil }

// group is the kind's API group.
func (k *kindInfo) group() string {
	g, _, _ := strings.Cut(k.APIVersion, "/")
	return g
}

// lazyRegexp compiles expr on first use, so that a program linking the
// package (every dm command) pays for its expressions only when it converts.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
