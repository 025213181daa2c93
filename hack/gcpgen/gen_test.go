package main

import (
	"bytes"
	"os"
	"path/filepath"
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
}

// TestVendoredUnchanged checks that the vendored CRDs and service
// mappings are copies of Config Connector's, when a copy of its resource
// definitions is beside the repository (../shared/kcc).
func TestVendoredUnchanged(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, defaultKCCDir)
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no %s to compare with", src)
	}
	for _, dir := range []string{"crds", "servicemappings"} {
		files, err := filepath.Glob(filepath.Join(root, "third_party/kcc", dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no vendored %s: %v", dir, err)
		}
		for _, f := range files {
			have, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(src, dir, filepath.Base(f)))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if !bytes.Equal(have, want) {
				t.Errorf("%s differs from %s's: run go run ./hack/gcpgen -refresh", f, src)
			}
		}
	}
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
