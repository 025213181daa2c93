package impact

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
)

// TestExpansionsShared: instances with the same source share one
// expansion, each with its own name and namespace; a template that makes
// something else of them is expanded per instance; an error names the
// instance and keeps its kind.
func TestExpansionsShared(t *testing.T) {
	var calls []string
	inner := deploy.ExpandFunc(func(_ context.Context, src deploy.Source) (*expand.Result, error) {
		calls = append(calls, src.Name+"@"+src.Namespace)
		switch src.Properties["mode"] {
		case "upper":
			return &expand.Result{Warnings: []string{strings.ToUpper(src.Name)}}, nil
		case "fail":
			return nil, derrors.Errorf(derrors.InvalidArgument, "%s in %s: bad", src.Name, src.Namespace)
		}
		return &expand.Result{Warnings: []string{src.Name + "." + src.Namespace}}, nil
	})
	e := newExpansions(inner)
	src := func(name, ns, mode string) deploy.Source {
		return deploy.Source{Name: name, Deployment: name, Namespace: ns, Properties: map[string]any{"mode": mode}}
	}
	for _, tc := range []struct{ name, ns, mode, want, err string }{
		{"a", "n1", "plain", "a.n1", ""},
		{"b", "n2", "plain", "b.n2", ""},
		{"c", "n1", "upper", "C", ""},
		{"d", "n1", "upper", "D", ""},
		{"e", "n3", "fail", "", "e in n3: bad"},
		{"f", "n3", "fail", "", "f in n3: bad"},
	} {
		x, err := e.Expand(context.Background(), src(tc.name, tc.ns, tc.mode))
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err || !errors.Is(err, derrors.InvalidArgument) {
				t.Errorf("%s: error %v, want %q (InvalidArgument)", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case x.Warnings[0] != tc.want:
			t.Errorf("%s: %q, want %q", tc.name, x.Warnings[0], tc.want)
		}
	}
	// plain and fail once each with the stand-ins; upper once with them,
	// then once per instance.
	if got := e.count.Load(); got != 5 || len(calls) != 5 {
		t.Errorf("%d expansions (%q), want 5", got, calls)
	}
}
