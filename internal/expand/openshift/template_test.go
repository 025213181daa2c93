package openshift

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

// TestParseAliasBomb checks that a YAML "billion laughs" document is
// rejected by the decoder instead of being expanded.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: Template\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, refs)
	}
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") || !errors.Is(err, derrors.InvalidArgument) {
		t.Fatalf("Parse error = %v, want excessive aliasing", err)
	}
}
