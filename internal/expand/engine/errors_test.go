package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWireLimit: the limit an error wraps crosses a pipe with its limit
// as text, so a duration still reads as one.
func TestWireLimit(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want *LimitError // nil: none
	}{
		{"duration", fmt.Errorf("render: %w", Limit("Timeout", 10*time.Second, "the template")), &LimitError{Field: "Timeout", Limit: "10s", What: "the template"}},
		{"located", At("a.yaml", 3, Limit("MaxOutputBytes", 10, "the output")), &LimitError{Field: "MaxOutputBytes", Limit: "10", What: "the output"}},
		{"none", errors.New("boom"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := WireLimit(tc.err)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("WireLimit = %#v, want %#v", got, tc.want)
			}
		})
	}
}
