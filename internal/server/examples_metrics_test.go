package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/catalog"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsAfterExamples checks /metrics once examples have been tested,
// so that every family has samples, as `promtool check metrics` does: the
// exposition parses, and client_golang's promlint (the linter promtool
// runs) finds nothing.
func TestMetricsAfterExamples(t *testing.T) {
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
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	if len(fams) == 0 {
		t.Fatal("/metrics has no families")
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
