package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/api"
)

// TestChart: a Helm chart in a registry, through registryd's HTTP API
// with its sandbox workers (which re-execute this test binary, so they
// attach Helm's engine as registryd's do): indexed as language helm,
// described from Chart.yaml and its values, linted by Helm's rules with
// file and line, resolved, expanded by POST /v1/expand and the catalog's
// preview form, and its example tested.
func TestChart(t *testing.T) {
	dir := t.TempDir()
	src, err := filepath.Abs("../../registry-example/charts/hello/v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "charts/hello/v0.1.0"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// v0.2.0 has a template that does not parse: Helm's lint rule names it.
	if err := os.CopyFS(filepath.Join(dir, "charts/hello/v0.2.0"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{
		"charts/hello/v0.2.0/templates/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name\n",
	})
	d := start(t, []string{"--registry-dir", "github.com/acme/tpl=" + dir, "--expand-workers", "1"}, nil)

	var tv api.TemplateVersion
	if code := d.get(t, "/v1/template?ref=charts/hello:v0.1", &tv); code != 200 {
		t.Fatalf("GET /v1/template: %d", code)
	}
	if tv.Resolved != "github.com/acme/tpl/charts/hello:v0.1.0" || tv.Language != "helm" || tv.TemplateFile != "Chart.yaml" || tv.Schema != "values.schema.json" {
		t.Errorf("resolved %s, language %q, template %q, schema %q: want charts/hello:v0.1.0, helm, Chart.yaml, values.schema.json", tv.Resolved, tv.Language, tv.TemplateFile, tv.Schema)
	}
	if tv.Title != "hello" || !strings.Contains(tv.Description, "nginx") {
		t.Errorf("title %q, description %q: want Chart.yaml's name and description", tv.Title, tv.Description)
	}
	props := map[string]api.Property{}
	for _, p := range tv.Properties {
		props[p.Name] = p
	}
	if p := props["image.repository"]; p.Type != "string" || p.Default != "nginx" || p.Description != "Image repository." {
		t.Errorf("image.repository: %+v, want a string defaulting to nginx (values.yaml) described by the schema", p)
	}
	if p := props["replicaCount"]; p.Type != "integer" || p.Default != float64(1) {
		t.Errorf("replicaCount: %+v, want an integer defaulting to 1", p)
	}
	if len(tv.Findings) != 0 {
		t.Errorf("findings of a clean chart: %+v", tv.Findings)
	}

	var bad api.TemplateVersion
	if code := d.get(t, "/v1/template?ref=charts/hello:v0.2.0", &bad); code != 200 {
		t.Fatalf("GET /v1/template v0.2.0: %d", code)
	}
	found := false
	for _, f := range bad.Findings {
		found = found || f.Severity == "error" && strings.HasPrefix(f.Message, "templates/broken.yaml:5: ")
	}
	if !found {
		t.Errorf("findings of a chart with a broken template: %+v, want Helm's error at templates/broken.yaml:5", bad.Findings)
	}

	// POST /v1/expand: the chart's objects, the release named after the
	// resource (a reference expanded alone: the template's name), the
	// values over values.yaml's.
	body := `{"ref":"charts/hello:v0.1.0","deployment":"web","properties":{"message":"hi","service":{"port":8080}}}`
	resp, err := http.Post(d.url+"/v1/expand", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out api.ExpandResult
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST /v1/expand: %d %v", resp.StatusCode, err)
	}
	b, _ := json.Marshal(out.Config)
	for _, want := range []string{`"name":"hello-page"`, `"index.html":"hi"`, `"port":8080`, `"image":"nginx:1.27.3"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("expanded chart lacks %s:\n%s", want, b)
		}
	}

	// The catalog's preview form expands it in the sandbox too.
	resp, err = http.PostForm(d.url+"/t/charts/hello:v0.1.0/preview", url.Values{"message": {"from the form"}, "replicaCount": {"3"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"index.html: from the form", "replicas: 3"} {
		if resp.StatusCode != 200 || !bytes.Contains(page, []byte(want)) {
			t.Errorf("preview: %d, page lacks %q", resp.StatusCode, want)
		}
	}

	// The example is tested in the background.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		tv = api.TemplateVersion{}
		d.get(t, "/v1/template?ref=charts/hello:v0.1.0", &tv)
		if tv.ExampleTest != nil && tv.ExampleTest.Status != "pending" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("example not tested within 30s: %+v", tv.ExampleTest)
		}
	}
	if tv.ExampleTest.Status != "ok" {
		t.Errorf("example: %+v, want ok", tv.ExampleTest)
	}
}
