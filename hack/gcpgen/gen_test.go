package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate fails when internal/gcp/zz_generated.go is not
// what the vendored inputs and kinds.yaml generate: run
// go run ./hack/gcpgen (make generate-gcp) and commit the result.
func TestGeneratedUpToDate(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	g, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(root, outFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, g.source) {
		t.Errorf("%s is stale: run go run ./hack/gcpgen (make generate-gcp) and commit it", outFile)
	}
	table, err := os.ReadFile(filepath.Join(root, tableFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(table, g.table) {
		t.Errorf("%s is stale: run go run ./hack/gcpgen (make generate-gcp) and commit it", tableFile)
	}
}

// TestVendoredUnchanged checks that the vendored CRDs, service mappings
// and LICENSE are the files -refresh copied from Config Connector (their
// checksums in third_party/kcc/SHA256SUMS) and that no file was added or
// removed by hand; with Config Connector's tree beside the repository
// (../shared/kcc), that they are still its copies.
func TestVendoredUnchanged(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, sumsFile))
	if err != nil {
		t.Fatal(err)
	}
	have, err := sums(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("third_party/kcc differs from what go run ./hack/gcpgen -refresh copied (%s):\n%s", sumsFile, lineDiff(string(want), string(have)))
	}
	src := filepath.Join(root, defaultKCCDir)
	if _, err := os.Stat(src); err != nil {
		return // SHA256SUMS checked them
	}
	files, err := vendoredFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(root, "third_party/kcc", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(f)))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !bytes.Equal(have, want) {
			t.Errorf("third_party/kcc/%s differs from %s's: run go run ./hack/gcpgen -refresh", f, src)
		}
	}
}

// lineDiff lists the lines of want missing from have (-) and of have
// missing from want (+).
func lineDiff(want, have string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, h := in(want), in(have)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if l != "" && !h[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(have, "\n") {
		if l != "" && !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// TestEveryKindVendored checks that every kind of kinds.yaml has its CRD
// in the tree, and no CRD is left over.
func TestEveryKindVendored(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kf, err := readKinds(root)
	if err != nil {
		t.Fatal(err)
	}
	byKind, err := indexCRDs(filepath.Join(root, crdDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kf.Kinds {
		if _, ok := byKind[k.Kind]; !ok {
			t.Errorf("%s: no CRD in %s", k.Kind, crdDir)
		}
		delete(byKind, k.Kind)
	}
	for kind, f := range byKind {
		t.Errorf("%s (%s) is vendored but not mapped", kind, filepath.Base(f))
	}
}

func TestExpandBraces(t *testing.T) {
	got := expandBraces("compute.{v1,beta}.x{a,b}")
	want := []string{"compute.v1.xa", "compute.v1.xb", "compute.beta.xa", "compute.beta.xb"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("got %v, want %v", got, want)
		}
	}
}
