package expand

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestGoTemplateHelm checks the behaviour Helm users expect of .gotmpl
// templates: missing keys render empty, required, fail, include and tpl.
func TestGoTemplateHelm(t *testing.T) {
	tests := []struct {
		name, body string
		want       string // the value of data.v, or
		wantErr    string // a substring of the error
	}{
		{name: "missing key is empty", body: `v: "{{ .properties.nope }}"`, want: ""},
		{name: "missing nested key is empty", body: `v: "[{{ .env.nope }}]"`, want: "[]"},
		{name: "required present", body: `v: {{ required "name is required" .properties.name }}`, want: "web"},
		{name: "required missing", body: `v: {{ required "tag is required" .properties.tag }}`, wantErr: "tag is required"},
		{name: "fail", body: `{{ if not .properties.tag }}{{ fail "set tag, please" }}{{ end }}`, wantErr: "set tag, please"},
		{name: "include", body: `{{ define "full" }}{{ .name }}-{{ .tier | default "web" }}{{ end }}v: {{ include "full" .properties | upper }}`, want: "WEB-WEB"},
		{name: "include unknown", body: `v: {{ include "nope" . }}`, wantErr: `no template "nope"`},
		{name: "tpl", body: `v: {{ tpl "{{ .name }}-y" .properties }}`, want: "web-y"},
		{name: "tpl sees definitions", body: `{{ define "n" }}N{{ end }}v: {{ tpl "{{ include \"n\" . }}{{ .name }}" .properties }}`, want: "Nweb"},
		{name: "tpl bad text", body: `v: {{ tpl "{{ .name" .properties }}`, wantErr: "unclosed action"},
		{name: "include recursion", body: `{{ define "r" }}{{ include "r" . }}{{ end }}v: {{ include "r" . }}`, wantErr: "nested more than 1000 deep"},
	}
	x := New(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fmt.Sprintf("resources:\n- name: cm\n  type: ConfigMap\n  properties:\n    data:\n      %s\n", tt.body)
			if strings.HasPrefix(tt.body, "{{ if") {
				src = tt.body + "\nresources: []\n"
			}
			req := Request{
				Config:  []byte("imports: [{path: t.gotmpl}]\nresources:\n- {name: t, type: t.gotmpl, properties: {name: web}}\n"),
				Imports: map[string][]byte{"t.gotmpl": []byte(src)},
			}
			res, err := x.Expand(context.Background(), req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := res.Config.Resources[0].Properties["data"].(map[string]any)
			if got := fmt.Sprint(data["v"]); got != tt.want {
				t.Errorf("data.v = %q, want %q", got, tt.want)
			}
		})
	}
}
