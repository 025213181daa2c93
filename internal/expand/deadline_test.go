package expand

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDeadlineNames: a deadline error names the deadline that fired: the
// template's Timeout, the expansion's TotalTimeout or the caller's.
func TestDeadlineNames(t *testing.T) {
	spin := map[string][]byte{"spin.gotmpl": []byte("{{range 100000000000}}{{end}}")}
	one := Request{Config: []byte("resources:\n- name: s\n  type: spin.gotmpl\n"), Imports: spin}
	// Forty steps of a million iterations each: every one well under
	// Timeout, all of them over TotalTimeout.
	var cfg strings.Builder
	cfg.WriteString("resources:\n")
	for i := range 40 {
		fmt.Fprintf(&cfg, "- {name: s%d, type: step.gotmpl}\n", i)
	}
	many := Request{Config: []byte(cfg.String()), Imports: map[string][]byte{"step.gotmpl": []byte("{{range 1000000}}{{end}}resources: []\n")}}
	for _, c := range []struct {
		name    string
		opts    Options
		req     Request
		caller  time.Duration
		want    string
		notWant string
	}{
		{"template", Options{Timeout: 100 * time.Millisecond}, one, 0, "(Options.Timeout)", "TotalTimeout"},
		{"total", Options{Timeout: 10 * time.Second, TotalTimeout: 100 * time.Millisecond}, many, 0, "(Options.TotalTimeout)", "(Options.Timeout)"},
		{"caller", Options{Timeout: 10 * time.Second}, one, 100 * time.Millisecond, "caller's deadline", "Options."},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			if c.caller > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.caller)
				defer cancel()
			}
			_, err := New(c.opts).Expand(ctx, c.req)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.notWant) {
				t.Fatalf("got %v, want an error with %q and without %q", err, c.want, c.notWant)
			}
			if c.caller > 0 && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the caller's deadline: %v does not wrap context.DeadlineExceeded", err)
			}
		})
	}
}
