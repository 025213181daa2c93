package controller

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/dmhq/dm"
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
			st := statusFormFor(tt.file)
			out, err := renderStatus(context.Background(), exp, "status", tt.file, tt.src, st.Prefix, st.Suffix, in)
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

// registry-example's common/webapp ships a status template: over a live
// Service and Deployment it outputs the cluster IP, the URL and the ready
// replicas, and holds Ready back until every replica is ready.
func TestExampleWebappStatus(t *testing.T) {
	const file = "webapp.status.jinja"
	src, err := fs.ReadFile(dm.ExampleRegistry(), "common/webapp/v1.0.0/"+file)
	if err != nil {
		t.Fatal(err)
	}
	exp := api.NewService(resolve.New(resolve.Registry{}), expand.Options{})
	for _, tt := range []struct {
		name  string
		ready int
		want  string
	}{
		{"rolling out", 1, `{"clusterIP":"10.0.0.7","message":"1 of 2 replicas ready","ready":false,"readyReplicas":1,"replicas":2,"url":"http://shop.web.svc:8080"}`},
		{"ready", 2, `{"clusterIP":"10.0.0.7","readyReplicas":2,"replicas":2,"url":"http://shop.web.svc:8080"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := json.Marshal(map[string]any{
				"resources": map[string]any{
					"service":    map[string]any{"metadata": map[string]any{"name": "shop", "namespace": "web"}, "spec": map[string]any{"clusterIP": "10.0.0.7"}},
					"deployment": map[string]any{"spec": map[string]any{"replicas": 2}, "status": map[string]any{"readyReplicas": tt.ready}},
				},
				"instance":   map[string]any{"metadata": map[string]any{"name": "shop"}},
				"properties": map[string]any{"image": "x", "port": 8080},
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := renderStatus(context.Background(), exp, "status", file, string(src), statusFormFor(file).Prefix, statusFormFor(file).Suffix, in)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(out)
			if string(got) != tt.want {
				t.Errorf("outputs %s\nwant    %s", got, tt.want)
			}
		})
	}
}
