package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// kindSpec is one entry of internal/gcp/kinds.yaml: a Config Connector
// kind, the Google Cloud REST method whose request body DM templates write
// for it, the DM type spellings that mean it, and the hints that pair the
// body's fields with the kind's where names alone do not.
type kindSpec struct {
	Kind string `json:"kind"`
	// API is the discovery document (compute/beta) and Method the REST
	// method DM calls to create the resource (instances.insert): its
	// request schema and its parameters are the DM properties.
	API    string `json:"api"`
	Method string `json:"method"`
	// REST is the Google Cloud REST resource the kind stands for, as its
	// reference page names it (v1.instances); -refresh checks it.
	REST string `json:"rest"`
	// IAM says IAMPolicyMember may name the kind (its reference page:
	// "Can Be Referenced by IAMPolicy/IAMPolicyMember"); -refresh checks it.
	IAM   bool       `json:"iam"`
	Types []typeSpec `json:"types"`
	// Rename maps a REST path (a.b[].c) to the KCC field it fills,
	// relative to the KCC node its parent pairs with: a name, a dotted
	// path into objects, or "." to lift its children into that node.
	Rename map[string]string `json:"rename"`
	// Hand lists the REST paths internal/gcp maps in code.
	Hand []string `json:"hand"`
	// Variants pair a REST subtree a second time with another KCC node,
	// for code that chooses between them (an instance's boot disk and
	// its other disks): REST paths LABEL:PATH.
	Variants []variantSpec `json:"variants"`
	// Body is the path in the method's request body of what this kind
	// stands for, when it is a part of another resource's body (a
	// router's nats[], a map's values table.columnFamilies{}); Parts are the lists of a body whose items are
	// objects of another kind (a router's NATs, a cluster's node pools),
	// As the REST path under which that kind's pairs read an item.
	Body  string     `json:"body"`
	Parts []partSpec `json:"parts"`
	// Resource is the field of a wrapped request body that holds the
	// resource itself (CreateClusterRequest's cluster): what
	// $(ref.NAME.PATH) reads.
	Resource string `json:"resource"`
	// Live maps a path DM references may read ($(ref.vm.PATH)) to where
	// the live KCC object holds it (status.x, or spec.y which the object
	// then carries with cnrm.cloud.google.com/state-into-spec: merge),
	// beside those paired by name with the kind's status.
	Live map[string]string `json:"live"`
	// Name lists the properties that hold the Google Cloud name, first
	// found first (default: name); a value with slashes
	// (projects/p/topics/t) names its last segment.
	Name []string `json:"name"`
	// RESTName is the REST resource's name field as $(ref.X.name) reads
	// it, when it is a path: projects/{project}/topics/{name}; {parent},
	// {location}, {zone}, {region} are the resource's.
	RESTName string `json:"restName"`
	Note     string `json:"note"`
	// Ignore lists REST fields Config Connector has no field for whose
	// value changes nothing Config Connector would do (a deprecated field
	// the API no longer reads, a type marker): why, and the one value each
	// may take (none: any).
	Ignore map[string]ignoreSpec `json:"ignore"`
	// Defaults fill a field Config Connector requires that the REST API
	// defaulted when the body left it out (a VM service account's scopes):
	// the REST path, the value the API took and where that is said.
	Defaults map[string]defaultSpec `json:"defaults"`
	// Refuse says why a REST field is refused: one with no Config
	// Connector field, where more can be said than that Config Connector
	// lacks it, or one whose Config Connector field of the same name takes
	// another form (it is then refused rather than paired).
	Refuse map[string]string `json:"refuse"`
}

// ignoreSpec is why a REST field is ignored and the value it may take.
type ignoreSpec struct {
	Why string `json:"why"`
	// Value is the only value the field may have; nil, any.
	Value any `json:"value"`
}

func (s *ignoreSpec) UnmarshalJSON(b []byte) error {
	var why string
	if json.Unmarshal(b, &why) == nil {
		s.Why = why
		return nil
	}
	type plain ignoreSpec
	return json.Unmarshal(b, (*plain)(s))
}

// defaultSpec is the value the REST API gave a field the body left out.
type defaultSpec struct {
	Value any `json:"value"`
	// From names a value of the resource instead: "name", its Google
	// Cloud name, or "resource", its Deployment Manager name.
	From string `json:"from"`
	Why  string `json:"why"`
}

// apiSpec says what an API did with a property its request schema does
// not have (a misspelt field, another method's parameter) when Deployment
// Manager sent it: ignored it (the resource was made without it) or
// refused the call.
type apiSpec struct {
	// Unknown is ignore or refuse.
	Unknown string `json:"unknown"`
	// Why says how that is known (documentation, configurations it took).
	Why string `json:"why"`
}

type typeSpec struct {
	Type  string `json:"type"`
	Scope string `json:"scope"`
}

func (t *typeSpec) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		t.Type = s
		return nil
	}
	type plain typeSpec
	return json.Unmarshal(b, (*plain)(t))
}

type partSpec struct {
	REST string `json:"rest"`
	Kind string `json:"kind"`
	As   string `json:"as"`
}

type variantSpec struct {
	Label  string            `json:"label"`
	REST   string            `json:"rest"`
	KCC    string            `json:"kcc"`
	Rename map[string]string `json:"rename"`
	Hand   []string          `json:"hand"`
}

// unsupportedSpec is a DM type with no Config Connector kind, and what to
// do instead.
type unsupportedSpec struct {
	Types []string `json:"types"`
	Why   string   `json:"why"`
}

type kindsFile struct {
	// APIs are what each API (a discovery document's name: compute)
	// did with unknown properties; an API not listed refused them.
	APIs        map[string]apiSpec `json:"apis"`
	Kinds       []kindSpec         `json:"kinds"`
	Unsupported []unsupportedSpec  `json:"unsupported"`
}

func readKinds(root string) (*kindsFile, error) {
	b, err := os.ReadFile(filepath.Join(root, kindsFile_))
	if err != nil {
		return nil, err
	}
	var kf kindsFile
	if err := yaml.UnmarshalStrict(b, &kf); err != nil {
		return nil, fmt.Errorf("%s: %w", kindsFile_, err)
	}
	seen := map[string]bool{}
	for i, k := range kf.Kinds {
		if k.Kind == "" || k.API == "" || k.Method == "" {
			return nil, fmt.Errorf("%s: entry %d needs kind, api and method", kindsFile_, i)
		}
		if seen[k.Kind] {
			return nil, fmt.Errorf("%s: kind %s is listed twice", kindsFile_, k.Kind)
		}
		seen[k.Kind] = true
		for path, ig := range k.Ignore {
			if ig.Why == "" {
				return nil, fmt.Errorf("%s: %s: ignore %s says no why", kindsFile_, k.Kind, path)
			}
		}
		for path, d := range k.Defaults {
			if d.Why == "" || (d.Value == nil) == (d.From == "") || (d.From != "" && d.From != "name" && d.From != "resource") {
				return nil, fmt.Errorf("%s: %s: default %s needs why and a value or from (name or resource)", kindsFile_, k.Kind, path)
			}
		}
	}
	for name, a := range kf.APIs {
		if (a.Unknown != "ignore" && a.Unknown != "refuse") || a.Why == "" {
			return nil, fmt.Errorf("%s: api %s: unknown must be ignore or refuse, with why", kindsFile_, name)
		}
	}
	return &kf, nil
}

// expandBraces expands {a,b} groups: compute.{v1,beta}.x -> compute.v1.x,
// compute.beta.x.
func expandBraces(s string) []string {
	i := strings.IndexByte(s, '{')
	if i < 0 {
		return []string{s}
	}
	j := strings.IndexByte(s[i:], '}')
	if j < 0 {
		return []string{s}
	}
	j += i
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		out = append(out, expandBraces(s[:i]+alt+s[j+1:])...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
