package crds

import (
	"slices"
	"testing"
)

func TestAll(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	want := []string{"templatedefinitions.dm.io", "templateinstances.dm.io"}
	if !slices.Equal(names, want) {
		t.Fatalf("CRDs %v, want %v", names, want)
	}
	ti := all[1]
	var cols []string
	for _, c := range ti.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if want := []string{"Template", "Resolved", "Ready", "Age"}; !slices.Equal(cols, want) {
		t.Errorf("printer columns %v, want %v", cols, want)
	}
	if ti.Spec.Versions[0].Subresources == nil || ti.Spec.Versions[0].Subresources.Status == nil {
		t.Error("TemplateInstance has no status subresource")
	}
}
