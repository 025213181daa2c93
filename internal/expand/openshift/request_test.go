package openshift

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

const requestTemplate = `apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: t}
labels: {app: t}
parameters:
- {name: NAME, value: web}
objects:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: '${NAME}'}}
`

func TestProcessRequest(t *testing.T) {
	out, err := ProcessRequest([]byte(requestTemplate))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Objects) != 1 || out.Objects[0]["metadata"].(map[string]any)["name"] != "web" {
		t.Errorf("objects %v", out.Objects)
	}
	for _, body := range []string{"kind: ConfigMap\n", "{"} {
		if _, err := ProcessRequest([]byte(body)); err == nil || !strings.HasPrefix(err.Error(), "request body: ") {
			t.Errorf("ProcessRequest(%q): %v, want an error about the request body", body, err)
		}
	}
}

func TestDropUnknownAndAddLabels(t *testing.T) {
	tmpl, err := Parse([]byte(requestTemplate))
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"NAME": "db", "OTHER": "x"}
	tmpl.DropUnknown(params)
	if !maps.Equal(params, map[string]string{"NAME": "db"}) {
		t.Errorf("after DropUnknown: %v", params)
	}
	tmpl.AddLabels(map[string]string{"tier": "back", "app": "u"})
	if !maps.Equal(tmpl.Labels, map[string]string{"app": "u", "tier": "back"}) {
		t.Errorf("labels %v: given labels win over the Template's", tmpl.Labels)
	}
	var bare Template
	bare.AddLabels(map[string]string{"a": "b"})
	if bare.Labels["a"] != "b" {
		t.Errorf("labels of a Template without any: %v", bare.Labels)
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"a=b", map[string]string{"a": "b"}},
		{"a=b, c = d ", map[string]string{"a": "b", "c": "d"}},
		{"a=", map[string]string{"a": ""}},
		{"bad", nil},
		{"=v", nil},
		{"a=b,", nil},
	}
	for _, tt := range tests {
		got, err := ParseLabels(tt.in)
		if tt.want == nil {
			if !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), "want KEY=VALUE") {
				t.Errorf("ParseLabels(%q) = %v, %v; want an InvalidArgument error", tt.in, got, err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestTextValues(t *testing.T) {
	got := TextValues(map[string]any{"n": int64(3), "b": true, "s": "x", "f": 1.5})
	if want := map[string]string{"n": "3", "b": "true", "s": "x", "f": "1.5"}; !maps.Equal(got, want) {
		t.Errorf("TextValues = %v, want %v", got, want)
	}
}
