package controller

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
)

// waveGauge sends one sample of dm_controller_rollout_waves.
type waveGauge struct{}

func (waveGauge) Describe(ch chan<- *prometheus.Desc) { ch <- rolloutWavesDesc }
func (waveGauge) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(rolloutWavesDesc, prometheus.GaugeValue, 2, "Promoted")
}

// The roll-out metrics follow Prometheus' naming rules.
func TestRolloutMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	ev := rolloutEventsVec()
	reg.MustRegister(ev, waveGauge{})
	ev.WithLabelValues("TemplateRolloutPolicy/web", "WavePromoted").Inc()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := promlint.New(bytes.NewReader(buf.Bytes())).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if len(mfs) != 2 {
		t.Errorf("%d metric families, want 2", len(mfs))
	}
}
