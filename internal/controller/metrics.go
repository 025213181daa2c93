package controller

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// instancesDesc describes dm_controller_instances. Reconcile counts and
// durations and the queue depth are controller-runtime's own
// (controller_runtime_reconcile_total, controller_runtime_reconcile_time_seconds,
// workqueue_depth{name="templateinstance"}).
var instancesDesc = prometheus.NewDesc("dm_controller_instances",
	"TemplateInstances by condition: Ready, Reconciling or Stalled with status True, and Suspended.",
	[]string{"condition"}, nil)

// instanceCollector counts the instances in the manager's cache at each
// scrape, so the numbers are never stale and nothing is kept in between.
type instanceCollector struct {
	c client.Reader
}

// Describe sends the collector's one metric.
func (ic instanceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- instancesDesc }

// Collect counts the instances by condition.
func (ic instanceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list v1alpha1.TemplateInstanceList
	if err := ic.c.List(ctx, &list); err != nil {
		return
	}
	counts := map[string]int{v1alpha1.ConditionReady: 0, v1alpha1.ConditionReconciling: 0, v1alpha1.ConditionStalled: 0, "Suspended": 0}
	for i := range list.Items {
		ti := &list.Items[i]
		if ti.Spec.Suspend {
			counts["Suspended"]++
		}
		for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled} {
			if meta.IsStatusConditionPresentAndEqual(ti.Status.Conditions, typ, metav1.ConditionTrue) {
				counts[typ]++
			}
		}
	}
	for cond, n := range counts {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n), cond)
	}
}

// registerMetrics adds the instance counts to controller-runtime's
// registry, served on --metrics-addr. A second controller in one process
// (tests) finds it registered already.
func registerMetrics(c client.Reader) {
	_ = metrics.Registry.Register(instanceCollector{c: c})
	_ = metrics.Registry.Register(rolloutCollector{c: c})
}

// rolloutMetrics counts roll-out events: dm_controller_rollout_events_total
// by policy (KIND/[NAMESPACE/]NAME) and reason (RolloutStarted,
// WaveStarted, WavePromoted, WaveFailed, WaveRolledBack, WaveHalted,
// RolloutSucceeded).
type rolloutMetrics struct {
	events *prometheus.CounterVec
}

// newRolloutMetrics registers the roll-out metrics, or finds them
// registered by another controller of the process (tests).
func newRolloutMetrics() *rolloutMetrics {
	cv := rolloutEventsVec()
	if err := metrics.Registry.Register(cv); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				cv = existing
			}
		}
	}
	return &rolloutMetrics{events: cv}
}

// rolloutEventsVec is dm_controller_rollout_events_total, unregistered.
func rolloutEventsVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dm_controller_rollout_events_total",
		Help: "Roll-out events by policy and reason: RolloutStarted, WaveStarted, WavePromoted, WaveFailed, WaveRolledBack, WaveHalted, RolloutSucceeded.",
	}, []string{"policy", "reason"})
}

func (m *rolloutMetrics) event(p policy, reason string) {
	name := p.kind() + "/" + p.obj.GetName()
	if ns := p.obj.GetNamespace(); ns != "" {
		name = p.kind() + "/" + ns + "/" + p.obj.GetName()
	}
	m.events.WithLabelValues(name, reason).Inc()
}

// rolloutWavesDesc describes dm_controller_rollout_waves.
var rolloutWavesDesc = prometheus.NewDesc("dm_controller_rollout_waves",
	"Waves of the roll-out policies' current roll-outs by state (Pending, Progressing, Soaking, Promoted, Failed, RolledBack, Halted).",
	[]string{"state"}, nil)

// rolloutCollector counts the waves by state at each scrape, from the
// manager's cache.
type rolloutCollector struct{ c client.Reader }

func (rc rolloutCollector) Describe(ch chan<- *prometheus.Desc) { ch <- rolloutWavesDesc }

func (rc rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts := map[v1alpha1.WaveState]int{}
	for _, s := range []v1alpha1.WaveState{v1alpha1.WavePending, v1alpha1.WaveProgressing, v1alpha1.WaveSoaking, v1alpha1.WavePromoted, v1alpha1.WaveFailed, v1alpha1.WaveRolledBack, v1alpha1.WaveHalted} {
		counts[s] = 0
	}
	var cl v1alpha1.TemplateRolloutPolicyList
	var nl v1alpha1.RolloutPolicyList
	if rc.c.List(ctx, &cl) != nil || rc.c.List(ctx, &nl) != nil {
		return
	}
	for _, p := range cl.Items {
		for _, w := range p.Status.Waves {
			counts[w.State]++
		}
	}
	for _, p := range nl.Items {
		for _, w := range p.Status.Waves {
			counts[w.State]++
		}
	}
	for s, n := range counts {
		ch <- prometheus.MustNewConstMetric(rolloutWavesDesc, prometheus.GaugeValue, float64(n), string(s))
	}
}
