package main

import (
	"reflect"
	"testing"
)

func obj(props map[string]*restNode) *restNode { return &restNode{Type: "object", Props: props} }
func leaf(t string) *restNode                  { return &restNode{Type: t} }
func list(items *restNode) *restNode           { return &restNode{Type: "array", Items: items} }

// TestPair checks the pairing rules on a made-up kind.
func TestPair(t *testing.T) {
	k := &kccKind{Kind: "X", Spec: []kccField{
		{Path: "allow", Type: "array"},
		{Path: "allow[]", Type: "object"},
		{Path: "allow[].protocol", Type: "string"},
		{Path: "ipProtocol", Type: "string"},
		{Path: "networkInterface", Type: "array"},
		{Path: "networkInterface[]", Type: "object"},
		{Path: "networkInterface[].natIpRef", Type: "ref", Targets: []string{"ComputeAddress"}, TFName: "nat_ip"},
		{Path: "networkInterface[].networkRef", Type: "ref"},
		{Path: "serviceAccount", Type: "object"},
		{Path: "serviceAccount.scopes", Type: "array"},
		{Path: "serviceAccount.scopes[]", Type: "string"},
		{Path: "metadata", Type: "array"},
		{Path: "metadata[]", Type: "object"},
		{Path: "metadata[].key", Type: "string"},
		{Path: "metadata[].value", Type: "string"},
		{Path: "size", Type: "integer"},
		{Path: "sizeA", Type: "integer"},
		{Path: "sizeB", Type: "integer"},
	}}
	rest := obj(map[string]*restNode{
		"allowed":    list(obj(map[string]*restNode{"IPProtocol": leaf("string")})),
		"IPProtocol": leaf("string"),
		"networkInterfaces": list(obj(map[string]*restNode{
			"natIP":   leaf("string"),
			"network": leaf("string"),
		})),
		"serviceAccounts": list(obj(map[string]*restNode{"scopes": list(leaf("string"))})),
		"metadata":        obj(map[string]*restNode{"items": list(obj(map[string]*restNode{"key": leaf("string"), "value": leaf("string")}))}),
		"kind":            {Type: "string", ReadOnly: true},
		"nothing":         leaf("string"),
		"name":            leaf("string"),
		"zone":            leaf("string"),
	})
	p := newPairer(k)
	p.rename = map[string]string{"allowed": "allow", "allowed[].IPProtocol": "protocol", "serviceAccounts": "serviceAccount", "metadata": "metadata", "metadata.items": "."}
	p.hand, p.names = map[string]bool{}, map[string]bool{"name": true}
	p.object(rest, "", "")
	want := []pairOut{
		{"IPProtocol", "ipProtocol", modeLeaf},
		{"allowed", "allow", modeList},
		{"allowed[].IPProtocol", "allow[].protocol", modeLeaf},
		{"metadata", "metadata", modePass},
		{"metadata.items", "metadata", modeList},
		{"metadata.items[].key", "metadata[].key", modeLeaf},
		{"metadata.items[].value", "metadata[].value", modeLeaf},
		{"networkInterfaces", "networkInterface", modeList},
		{"networkInterfaces[].natIP", "networkInterface[].natIpRef", modeLeaf},
		{"networkInterfaces[].network", "networkInterface[].networkRef", modeLeaf},
		{"serviceAccounts", "serviceAccount", modeOne},
		{"serviceAccounts[].scopes", "serviceAccount.scopes", modeLeaf},
	}
	if !reflect.DeepEqual(p.pairs, want) {
		t.Errorf("pairs:\n%v\nwant\n%v", p.pairs, want)
	}
	if !reflect.DeepEqual(p.unmatched, []string{"nothing"}) {
		t.Errorf("unmatched %v, want [nothing]", p.unmatched)
	}
	if len(p.errs) > 0 {
		t.Errorf("errors %v", p.errs)
	}
}

func TestStatusPairs(t *testing.T) {
	rest := obj(map[string]*restNode{
		"selfLink":          {Type: "string", ReadOnly: true},
		"address":           leaf("string"),
		"networkInterfaces": list(obj(map[string]*restNode{"networkIP": leaf("string")})),
		"id":                leaf("integer"),
	})
	got := statusPairs(rest, []string{"status.selfLink", "status.observedState.address", "status.instanceId"})
	want := []pairOut{{"address", "status.observedState.address", modeLeaf}, {"selfLink", "status.selfLink", modeLeaf}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("status pairs %v, want %v", got, want)
	}
}

// TestRestAt: a path steps into a list's items with [] and a map's values
// with {} (a table's column families by name), and only into those.
func TestRestAt(t *testing.T) {
	family := obj(map[string]*restNode{"gcRule": obj(map[string]*restNode{"maxNumVersions": leaf("integer")})})
	rest := obj(map[string]*restNode{
		"table": obj(map[string]*restNode{"columnFamilies": {Type: "map", Items: family}}),
		"nats":  list(obj(map[string]*restNode{"name": leaf("string")})),
	})
	for path, want := range map[string]*restNode{
		"table.columnFamilies{}":        family,
		"table.columnFamilies{}.gcRule": family.Props["gcRule"],
		"nats[]":                        rest.Props["nats"].Items,
		"table.columnFamilies[]":        nil,
		"nats{}":                        nil,
		"table.nothing{}":               nil,
	} {
		if got := restAt(rest, path); got != want {
			t.Errorf("restAt(%s) = %v, want %v", path, got, want)
		}
	}
}
