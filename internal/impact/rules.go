package impact

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
)

// Rule is one --fail-on-change: a kind (or * for any) and, optionally, a
// field path or an action.
//
//	Deployment                  any change of a Deployment
//	Deployment:spec.selector    an update of spec.selector or a field below it
//	Deployment:delete           a Deployment deleted (create: one created)
//	delete                      any object deleted (*:delete)
type Rule struct {
	// Kind is a kind (Deployment) or "*".
	Kind string
	// Field is a field path; "" with Action, or for any change.
	Field string
	// Action is deploy.ActionCreate or ActionDelete; "" for any.
	Action string
	// Text is the rule as written.
	Text string
}

var (
	ruleKind  = regexp.MustCompile(`^(\*|[A-Za-z][A-Za-z0-9]*)$`)
	ruleField = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*|\[[0-9]+\]|\["[^"]+"\])*$`)
)

// ParseRule parses a --fail-on-change value.
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	bad := func(format string, args ...any) (Rule, error) {
		return Rule{}, fmt.Errorf("--fail-on-change %q: %s: %w", s, fmt.Sprintf(format, args...), derrors.InvalidArgument)
	}
	if s == deploy.ActionDelete || s == deploy.ActionCreate {
		r.Kind, r.Action = "*", s
		return r, nil
	}
	kind, field, hasField := strings.Cut(s, ":")
	if !ruleKind.MatchString(kind) {
		return bad("want KIND[:FIELD] with KIND a kind such as Deployment, or *")
	}
	r.Kind = kind
	switch {
	case !hasField:
	case field == deploy.ActionDelete || field == deploy.ActionCreate:
		r.Action = field
	case ruleField.MatchString(field):
		r.Field = field
	default:
		return bad("FIELD %q is not a field path such as spec.selector or metadata.labels, nor create or delete", field)
	}
	return r, nil
}

// Matches tells whether the rule matches change c.
func (r Rule) Matches(c Change) bool {
	if r.Kind != "*" && r.Kind != c.Kind {
		return false
	}
	switch {
	case r.Action != "":
		return c.Action == r.Action
	case r.Field != "":
		if c.Action != deploy.ActionUpdate {
			return false
		}
		for _, f := range c.Fields {
			if kube.FieldWithin(f, r.Field) {
				return true
			}
		}
		return false
	}
	return true
}

// Match is a change a rule matched.
type Match struct {
	Rule     string
	Instance *Instance
	Change   *Change
}

// Matches returns what rules match in the report, in its order.
func (r *Report) Matches(rules []Rule) []Match {
	var out []Match
	for i := range r.Instances {
		in := &r.Instances[i]
		for j := range in.Changes {
			for _, rule := range rules {
				if rule.Matches(in.Changes[j]) {
					out = append(out, Match{Rule: rule.Text, Instance: in, Change: &in.Changes[j]})
					break
				}
			}
		}
	}
	return out
}
