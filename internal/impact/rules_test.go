package impact

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rule
		err  string
	}{
		{in: "Deployment", want: Rule{Kind: "Deployment"}},
		{in: "Deployment:spec.selector", want: Rule{Kind: "Deployment", Field: "spec.selector"}},
		{in: "*:delete", want: Rule{Kind: "*", Action: "delete"}},
		{in: "delete", want: Rule{Kind: "*", Action: "delete"}},
		{in: "ConfigMap:create", want: Rule{Kind: "ConfigMap", Action: "create"}},
		{in: `ConfigMap:metadata.annotations["a/b"]`, want: Rule{Kind: "ConfigMap", Field: `metadata.annotations["a/b"]`}},
		{in: "", err: `--fail-on-change "": want KIND[:FIELD]`},
		{in: "apps/Deployment", err: "KIND a kind"},
		{in: "Deployment:", err: `FIELD "" is not a field path`},
		{in: "Deployment:spec..x", err: `FIELD "spec..x"`},
	} {
		got, err := ParseRule(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRule(%q): error %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		tc.want.Text = tc.in
		if err != nil || got != tc.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestRuleMatches(t *testing.T) {
	upd := Change{Kind: "Deployment", Action: "update", Fields: []string{"spec.replicas", "spec.selector.matchLabels.app"}}
	del := Change{Kind: "ConfigMap", Action: "delete", Fields: []string{}}
	for _, tc := range []struct {
		rule string
		c    Change
		want bool
	}{
		{"Deployment", upd, true},
		{"Service", upd, false},
		{"Deployment:spec.selector", upd, true},
		{"Deployment:spec.template", upd, false},
		{"Deployment:delete", upd, false},
		{"delete", del, true},
		{"*:delete", del, true},
		{"ConfigMap:data", del, false},
		{"*", del, true},
	} {
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Matches(tc.c); got != tc.want {
			t.Errorf("%s matches %+v: %v, want %v", tc.rule, tc.c, got, tc.want)
		}
	}
}
