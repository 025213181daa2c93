package server

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/catalog"
)

// TestMetricsPromtool checks /metrics with promtool, as Prometheus's own
// tooling reads it, once examples have been tested so that every family
// has samples.
func TestMetricsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing (apt-get install prometheus)")
		}
		t.Skip("promtool not installed: apt-get install prometheus")
	}
	e := newEnv(t, "", true)
	ctx := t.Context()
	go e.srv.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for e.srv.Examples().Counts().Pending > 0 || e.srv.Examples().Counts() == (catalog.ExampleCounts{}) {
		if time.Now().After(deadline) {
			t.Fatalf("examples not tested within 10s: %+v", e.srv.Examples().Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// GET /v1/template carries the example's test.
	if _, body := e.do(t, "GET", "/v1/template?ref=common/web:v1.0.0", nil); !bytes.Contains(body, []byte(`"example":{"status":"ok"}`)) || !bytes.Contains(body, []byte(`"example_file":"example.yaml"`)) {
		t.Errorf("/v1/template lacks the example's test: %s", body)
	}
	e.do(t, "GET", "/v1/resolve?ref=redis:v1.0", nil)
	e.do(t, "GET", "/", nil)
	_, body := e.do(t, "GET", "/metrics", nil)
	for _, want := range []string{`registryd_example_tests{status="ok"}`, `registryd_example_tests{status="pending"} 0`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	} else if s := strings.TrimSpace(string(out)); s != "" {
		t.Logf("promtool: %s", s)
	}
}
