package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/release"
)

// The deploy commands' usage errors, found before any cluster is
// contacted (the end-to-end tests are in the repository root and
// internal/deploy).
func TestDeployUsageErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"deploy"}, 2, "deploy needs REF|CONFIG.yaml|template:NAMESPACE/NAME (usage: dm deploy"},
		{[]string{"deploy", "redis:v1", "--dry-run=bogus"}, 2, `--dry-run="bogus": want client or server`},
		{[]string{"rollback", "cache", "two"}, 2, `revision "two": want a positive number`},
		{[]string{"rollback", "cache", "0"}, 2, `revision "0"`},
		{[]string{"update"}, 2, "update needs NAME (usage: dm update NAME [REF|CONFIG.yaml])"},
		{[]string{"get", "a", "b"}, 2, `get takes NAME; "b" is one argument too many (usage: dm get NAME)`},
		{[]string{"--kubeconfig", missing, "list"}, 1, "kubeconfig"},
		{[]string{"--kubeconfig", missing, "deploy", "nosuch.yaml"}, 1, "configuration file"},
	} {
		r := dmRun(t, nil, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("dm %v = %d %q, want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}

// A deployment dm-controller manages is marked in list and history.
func TestStatusCellMarksController(t *testing.T) {
	for _, tt := range []struct {
		rec  release.Record
		want string
	}{
		{release.Record{Status: release.StatusDeployed}, "deployed"},
		{release.Record{Status: release.StatusDeployed, Controller: "TemplateInstance ns/web"}, "deployed (controller)"},
	} {
		if got := statusCell(&tt.rec); got != tt.want {
			t.Errorf("statusCell(%+v) = %q, want %q", tt.rec, got, tt.want)
		}
	}
}

// A dry run prints the hooks the action would run around its objects, in
// the order it would run them, each marked with its event, weight and
// layout path: by a comment in the YAML stream (the default, and -o
// yaml), in a hooks field beside the List's items with -o json.
func TestDryRunPrintsHooks(t *testing.T) {
	obj := func(kind, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name}}}
	}
	res := &deploy.Result{
		Objects: []*unstructured.Unstructured{obj("ConfigMap", "web-app")},
		Hooks: []deploy.Hook{
			{Event: "pre-install", Weight: -5, Path: "web/web-sa", Object: obj("ServiceAccount", "web-sa")},
			{Event: "pre-install", Weight: 5, Path: "web/web-migrate", Object: obj("Job", "web-migrate")},
			{Event: "post-install", Weight: 0, Path: "web/web-post", Object: obj("ConfigMap", "web-post")},
		},
	}
	stream := `---
# hook: pre-install, weight -5, layout path web/web-sa
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web-sa
---
# hook: pre-install, weight 5, layout path web/web-migrate
apiVersion: v1
kind: Job
metadata:
  name: web-migrate
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-app
---
# hook: post-install, weight 0, layout path web/web-post
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-post
`
	for _, tt := range []struct {
		output, dryRun string
		want           string // stdout; for json, checked by decoding
		stderr         string
	}{
		{"table", "client", stream, ""},
		{"yaml", "client", stream, ""},
		{"json", "client", "", ""},
		{"table", "server", stream, "dm: server dry run: the server accepted 1 objects and 3 hooks; nothing was applied or recorded\n"},
	} {
		t.Run(tt.output+" "+tt.dryRun, func(t *testing.T) {
			var out, errOut bytes.Buffer
			p := &printer{w: &out, g: &globals{output: tt.output, stderr: &errOut}}
			if err := p.applied(nil, res, tt.dryRun, nil); err != nil {
				t.Fatal(err)
			}
			if errOut.String() != tt.stderr {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.stderr)
			}
			if tt.output != "json" {
				if out.String() != tt.want {
					t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), tt.want)
				}
				return
			}
			var list struct {
				Kind  string           `json:"kind"`
				Items []map[string]any `json:"items"`
				Hooks []struct {
					Event  string         `json:"event"`
					Weight int            `json:"weight"`
					Path   string         `json:"path"`
					Object map[string]any `json:"object"`
				} `json:"hooks"`
			}
			if err := json.Unmarshal(out.Bytes(), &list); err != nil {
				t.Fatalf("%v:\n%s", err, out.String())
			}
			if list.Kind != "List" || len(list.Items) != 1 || list.Items[0]["kind"] != "ConfigMap" {
				t.Errorf("items: %s", out.String())
			}
			var hooks []string
			for _, h := range list.Hooks {
				hooks = append(hooks, fmt.Sprintf("%s %d %s %v", h.Event, h.Weight, h.Path, h.Object["kind"]))
			}
			if got := strings.Join(hooks, ", "); got != "pre-install -5 web/web-sa ServiceAccount, pre-install 5 web/web-migrate Job, post-install 0 web/web-post ConfigMap" {
				t.Errorf("hooks: %s", got)
			}
		})
	}
}
