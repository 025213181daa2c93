package controller

import (
	"context"
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
}
