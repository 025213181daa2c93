package openshift

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

// TestParseAliasBomb checks that a YAML "billion laughs" document is
// rejected before it is expanded.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: Template\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, refs)
	}
	_, err := Parse([]byte(b.String()))
	if !errors.Is(err, derrors.LimitExceeded) || !strings.Contains(err.Error(), "Options.MaxYAMLAliasBytes") {
		t.Fatalf("Parse error = %v, want a limit error naming Options.MaxYAMLAliasBytes", err)
	}
}

// TestParseAliasAmplification: a big scalar aliased many times (within
// the alias count) is refused before yaml.v2 writes it out again and
// again (issue 9).
func TestParseAliasAmplification(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: Template\napiVersion: template.openshift.io/v1\nmetadata: {name: t, annotations: {big: &big " + strings.Repeat("x", 100000) + "}}\nobjects:\n")
	for range 100 {
		b.WriteString("- {kind: ConfigMap, apiVersion: v1, data: {a: *big}}\n")
	}
	for _, parse := range []func([]byte) error{
		func(d []byte) error { _, err := Parse(d); return err },
		func(d []byte) error { _, err := ParseParamFile(d); return err },
	} {
		err := parse([]byte(b.String()))
		if !errors.Is(err, derrors.LimitExceeded) || !strings.Contains(err.Error(), "Options.MaxYAMLAliasBytes") {
			t.Errorf("got %v, want a limit error naming Options.MaxYAMLAliasBytes", err)
		}
	}
}
