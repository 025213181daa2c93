package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

func exampleServer(t *testing.T) *httptest.Server {
	t.Helper()
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(dm.ExampleRegistry())}
	if err := reg.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry(dm.ExampleRegistryPrefix)
	hs := httptest.NewServer(New(Options{Resolver: resolve.New(def, reg)}))
	t.Cleanup(hs.Close)
	return hs
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, sb.String()
}

func TestExpandRoute(t *testing.T) {
	hs := exampleServer(t)
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"reference", `{"ref":"redis:v1","properties":{"port":7000},"deployment":"d"}`, 200, `"resolved":"github.com/acme/templates/redis:v1.0.2"`},
		{"configuration", `{"config":"resources:\n- name: c\n  type: common/configmap:v1\n  properties: {data: {a: b}}\n"}`, 200, `"type":"ConfigMap"`},
		{"template given directly", `{"config":"kind: Template\napiVersion: v1\nparameters: [{name: NAME, value: x}]\nobjects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: '${NAME}'}}]\n"}`, 200, `"name":"x"`},
		{"schema violation", `{"ref":"redis:v1","properties":{"port":"x"}}`, 400, "properties.port: expected integer, got string; \\\"skip_schema_validation\\\": true expands without validating"},
		{"schema not validated", `{"ref":"redis:v1","properties":{"port":"x"},"skip_schema_validation":true}`, 200, `"warnings":["redis (github.com/acme/templates/redis:v1.0.2): not validated (--skip-schema-validation): redis.jinja.schema: invalid properties: properties.port`},
		{"unknown version", `{"ref":"redis:v1.9"}`, 404, "v1.9 not found"},
		{"neither", `{}`, 400, "give either config or ref"},
		{"env field", `{"config":"imports: [t.jinja]\nresources:\n- {name: a, type: t.jinja}\n","imports":{"t.jinja":"resources:\n- {name: o, type: compute.v1.network, properties: {p: '{{ env.project }}', r: '{{ env.region }}'}}\n"},"env":{"project":"acme","region":"eu"}}`, 200, `"properties":{"p":"acme","r":"eu"}`},
		{"unknown field", `{"refs":"x"}`, 400, `unknown field \"refs\"`},
		{"not JSON", `{`, 400, "request body"},
		{"trailing data", `{"ref":"redis:v1"} {}`, 400, "data after the JSON object"},
		{"empty", ``, 400, "request body is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, hs.URL+"/v1/expand", tt.body)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("status %d, body %s; want %d with %q", status, body, tt.status, tt.want)
			}
			if status != 200 {
				var e api.Error
				if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
					t.Errorf("error answer is not {\"error\": ...}: %s", body)
				}
			}
		})
	}
	status, body := post(t, hs.URL+"/v1/expand", `{"config":"`+strings.Repeat("x", maxExpandBody)+`"}`)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limit") {
		t.Errorf("oversized body: %d %s", status, body)
	}
}

func TestProcessedTemplates(t *testing.T) {
	hs := exampleServer(t)
	tmpl, err := os.ReadFile("../../registry-example/postgres/v1.1.0/postgres.yaml")
	if err != nil {
		t.Fatal(err)
	}
	status, body := post(t, hs.URL+"/processedTemplates", string(tmpl))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var out struct {
		Kind       string           `json:"kind"`
		Objects    []map[string]any `json:"objects"`
		Parameters []struct {
			Name, Value string
		} `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.Kind != "Template" || len(out.Objects) == 0 {
		t.Fatalf("answer is not a processed Template: %v\n%s", err, body)
	}
	for _, p := range out.Parameters {
		if p.Value == "" {
			t.Errorf("parameter %s has no value after processing", p.Name)
		}
	}
	if strings.Contains(body, "${") {
		t.Errorf("unsubstituted parameter references remain:\n%s", body)
	}
	for _, tt := range []struct{ body, want string }{
		{"kind: ConfigMap\napiVersion: v1\n", "Template"},
		{"kind: Template\nparameters: [{name: X, required: true}]\nobjects: []\n", "required parameters without a value: X"},
	} {
		if status, body := post(t, hs.URL+"/processedTemplates", tt.body); status != 400 || !strings.Contains(body, tt.want) {
			t.Errorf("%q: %d %s; want 400 with %q", tt.body, status, body, tt.want)
		}
	}
}

// Expansions beyond MaxExpansions wait, then are turned away with 503.
func TestExpandConcurrencyLimit(t *testing.T) {
	reg := &index.Registry{Name: dm.ExampleRegistryPrefix, Source: fetch.NewLocal(dm.ExampleRegistry())}
	if err := reg.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry(dm.ExampleRegistryPrefix)
	srv := New(Options{Resolver: resolve.New(def, reg), MaxExpansions: 1, ExpansionQueueWait: 50 * time.Millisecond})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	srv.expansions <- struct{}{} // the only slot is taken
	status, body := post(t, hs.URL+"/v1/expand", `{"ref":"redis:v1"}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "expansions are running") {
		t.Errorf("with no free slot: %d %s", status, body)
	}
	<-srv.expansions
	if status, body := post(t, hs.URL+"/v1/expand", `{"ref":"redis:v1"}`); status != 200 {
		t.Errorf("with a free slot: %d %s", status, body)
	}
}

// rawExpander answers as a worker pool does: the expansion's JSON.
type rawExpander struct{ raw json.RawMessage }

func (rawExpander) Expand(context.Context, *api.ExpandRequest) (*api.ExpandResult, error) {
	return nil, errors.New("Expand called; ExpandJSON expected")
}

func (e rawExpander) ExpandJSON(context.Context, *api.ExpandRequest) (json.RawMessage, error) {
	return e.raw, nil
}

// TestExpandJSONAsIs: a worker's answer is written as it came, not
// encoded again.
func TestExpandJSONAsIs(t *testing.T) {
	raw := json.RawMessage(`{"config":{"resources":[{"name":"a\u003cb","type":"ConfigMap"}]},"layout":{"resources":[]}}`)
	hs := httptest.NewServer(New(Options{Expander: rawExpander{raw}}))
	defer hs.Close()
	status, body := post(t, hs.URL+"/v1/expand", `{"config":"resources: []"}`)
	if status != 200 || body != string(raw)+"\n" {
		t.Errorf("got %d %q, want 200 and the worker's answer", status, body)
	}
}
