package openshift

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// ProcessRequest processes a Template sent as a request body, as
// OpenShift's POST /processedTemplates does: with the parameter values
// the Template carries. registryd and its sandbox workers answer with it.
func ProcessRequest(body []byte) (*Template, error) {
	t, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	return t.Process(nil, Options{})
}

// DropUnknown deletes from params the names t does not define, as oc
// process --ignore-unknown-parameters does.
func (t *Template) DropUnknown(params map[string]string) {
	for k := range params {
		if !slices.ContainsFunc(t.Parameters, func(p Parameter) bool { return p.Name == k }) {
			delete(params, k)
		}
	}
}

// AddLabels adds labels to those Process puts on every object, over the
// Template's own.
func (t *Template) AddLabels(labels map[string]string) {
	if len(labels) == 0 {
		return
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	maps.Copy(t.Labels, labels)
}

// ParseLabels parses labels as oc process -l takes them:
// KEY=VALUE[,KEY=VALUE...], spaces around keys and values trimmed. The
// error quotes s; the caller says where it came from.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, derrors.Errorf(derrors.InvalidArgument, "%q: want KEY=VALUE[,KEY=VALUE...]", s)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// TextValues returns typed property values as parameter values: their
// text, as Missing and Process take them.
func TextValues(props map[string]any) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		out[k] = fmt.Sprint(v)
	}
	return out
}
