package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/resolve"
)

// A status template's error names the status template and the line its
// author wrote, whatever the wrapping that runs it.
func TestRenderStatusErrorLine(t *testing.T) {
	exp := api.NewService(resolve.New(resolve.Registry{}), expand.Options{})
	in := []byte(`{"resources":{"cm":{"data":{"greeting":"hi"}}},"instance":{},"properties":{}}`)
	for _, tt := range []struct {
		name, file, src, want string
	}{
		{"ok", "w.status.jinja", "greeting: {{ resources.cm.data.greeting }}\n", ""},
		{"first line", "w.status.jinja", "nope: {{ 1 // 0 }}\n", "w.status.jinja:1: integer division or modulo by zero"},
		{"second line", "w.status.jinja", "ok: yes\nnope: {{ 1 // 0 }}\n", "w.status.jinja:2: integer division or modulo by zero"},
		{"undefined", "w.status.jinja", "a: 1\n\n{{ nothing.at }}\n", "w.status.jinja:3: Unable to render expression at line 3"},
		{"in a loop", "w.status.jinja", "a: 1\n{% for x in [1] %}\nb: {{ x // 0 }}\n{% endfor %}\n", "w.status.jinja:2: integer division"},
		{"go template", "w.status.gotmpl", "ok: yes\nnope: {{ .nothing.at.all }}\n", "w.status.gotmpl:2:17: executing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prefix, suffix := statusPrefix, statusSuffix
			if strings.HasSuffix(tt.file, ".gotmpl") {
				prefix, suffix = gotmplPrefix, gotmplSuffix
			}
			out, err := renderStatus(context.Background(), exp, "status", tt.file, tt.src, prefix, suffix, in)
			if tt.want == "" {
				if err != nil || out["greeting"] != "hi" {
					t.Fatalf("got %v, %v; want greeting hi", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}
