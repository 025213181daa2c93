package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dmhq/dm/internal/catalog"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// namespace prefixes every registryd metric.
const namespace = "registryd"

// Metrics are registryd's Prometheus metrics, on a registry of their own
// (never the global default one). Create them before the registries, so
// that the hooks of the index, the GitHub sources and the blob caches can
// report into them, and hand them to New.
type Metrics struct {
	reg *prometheus.Registry

	indexDuration   *prometheus.HistogramVec
	indexResults    *prometheus.CounterVec
	githubRequests  *prometheus.CounterVec
	ociRequests     *prometheus.CounterVec
	cacheLookups    *prometheus.CounterVec
	resolveDuration prometheus.Histogram
	httpRequests    *prometheus.CounterVec
	workerExits     *prometheus.CounterVec
	adminFailures   prometheus.Counter
	shed            *prometheus.CounterVec
	tokenReviews    *prometheus.CounterVec
	tokensRefused   *prometheus.CounterVec

	registries *registryCollector
	examples   *exampleCollector

	// mu guards gone: the keys of registries forgotten lately, whose
	// refreshes and reads still under way record nothing, so that their
	// series stay gone. A registry opened anew under the key takes it
	// out.
	mu   sync.RWMutex
	gone map[string]time.Time
}

// goneFor is how long a forgotten registry's key records nothing: longer
// than any refresh or read still under way when it was forgotten.
const goneFor = 10 * time.Minute

// WorkerExit counts an expansion worker retired for reason
// (sandbox.Options.OnExit).
func (m *Metrics) WorkerExit(reason string) { m.workerExits.WithLabelValues(reason).Inc() }

// NewMetrics creates the metrics and a registry holding them, the Go
// runtime's and the process's.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		indexDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "index_duration_seconds",
			Help:      "Duration of registry refreshes (listing the source and building the index), by registry and result.",
			Buckets:   []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"registry", "result"}),
		indexResults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "index_results_total",
			Help:      "Registry refreshes by registry and result (ok, unchanged, error).",
		}, []string{"registry", "result"}),
		githubRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "github_requests_total",
			Help:      "Requests to the GitHub API by registry, endpoint (commit, tree, blob, other) and status code (0: no answer).",
		}, []string{"registry", "endpoint", "code"}),
		ociRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "oci_requests_total",
			Help:      "HTTP requests to OCI registries by registry, endpoint (ping, token, catalog, tags, manifest, blob, upload, referrers, other) and status code (0: no answer).",
		}, []string{"registry", "endpoint", "code"}),
		cacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "blob_cache_lookups_total",
			Help:      "File content lookups by registry and where they were answered (memory, disk, miss: from the source).",
		}, []string{"registry", "where"}),
		resolveDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "resolve_duration_seconds",
			Help:      "Time to answer GET /v1/resolve, parsing and resolving the reference and encoding the answer.",
			Buckets:   []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05},
		}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "http_requests_total",
			Help:      "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		workerExits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "expansion_worker_exits_total",
			Help:      "Expansion worker processes retired, by reason (recycled, memory, timeout, cpu, answer_size, canceled, crashed).",
		}, []string{"reason"}),
		adminFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "admin_auth_failures_total",
			Help:      "Requests with a wrong admin token (or Authorization scheme).",
		}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "requests_shed_total",
			Help:      "Requests turned away before their body was read, by reason (body_budget, webhook_reads, body_too_large, replay, long_poll).",
		}, []string{"reason"}),
		tokenReviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "token_reviews_total",
			Help:      "TokenReviews of callers' bearer tokens sent to the apiserver, by lane (known: authenticated lately; unknown) and result (authenticated, refused, error).",
		}, []string{"lane", "result"}),
		tokensRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "tokens_unreviewed_total",
			Help:      "Bearer tokens refused or throttled without a TokenReview, by reason (malformed, issuer, audience, expired, opaque; client_rate, queue: answered 429).",
		}, []string{"reason"}),
		registries: &registryCollector{},
		examples:   &exampleCollector{},
		gone:       map[string]time.Time{},
	}
	m.reg.MustRegister(
		m.indexDuration, m.indexResults, m.githubRequests, m.ociRequests, m.cacheLookups,
		m.resolveDuration, m.httpRequests, m.workerExits, m.adminFailures, m.shed, m.tokenReviews, m.tokensRefused, m.registries, m.examples,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// TokenReview counts a TokenReview (kubereg.AuthorizerOptions.OnReview).
func (m *Metrics) TokenReview(lane, result string) {
	m.tokenReviews.WithLabelValues(lane, result).Inc()
}

// TokenUnreviewed counts a token refused or throttled without a review
// (kubereg.AuthorizerOptions.OnRefuse).
func (m *Metrics) TokenUnreviewed(reason string) { m.tokensRefused.WithLabelValues(reason).Inc() }

// Forget drops the series of the registry of key (index.Registry.Key),
// no longer served: their memory returns with the registry's, and what
// its refreshes and reads still under way would record is not recorded.
func (m *Metrics) Forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for k, at := range m.gone {
		if now.Sub(at) > goneFor {
			delete(m.gone, k)
		}
	}
	m.gone[key] = now
	l := prometheus.Labels{"registry": key}
	m.indexDuration.DeletePartialMatch(l)
	m.indexResults.DeletePartialMatch(l)
	m.githubRequests.DeletePartialMatch(l)
	m.ociRequests.DeletePartialMatch(l)
	m.cacheLookups.DeletePartialMatch(l)
}

// record runs add unless the registry of key was forgotten.
func (m *Metrics) record(key string, add func()) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if _, gone := m.gone[key]; !gone {
		add()
	}
}

// opened notes that a registry of key is served (again).
func (m *Metrics) opened(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.gone, key)
}

// Series counts the series of the per-registry metrics labelled with the
// registry of key, for tests of Forget.
func (m *Metrics) Series(key string) int {
	n := 0
	mfs, _ := m.reg.Gather()
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "registry" && l.GetValue() == key {
					n++
				}
			}
		}
	}
	return n
}

// Registry returns the Prometheus registry that holds the metrics, for
// serving them and for tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveIndex records a refresh; its signature is index.Registry.OnIndex's.
func (m *Metrics) ObserveIndex(registry, result string, d time.Duration) {
	m.record(registry, func() {
		m.indexDuration.WithLabelValues(registry, result).Observe(d.Seconds())
		m.indexResults.WithLabelValues(registry, result).Inc()
	})
}

// GitHubRequestFunc returns a hook for fetch.GitHubOptions.OnRequest that
// counts one registry's GitHub requests.
func (m *Metrics) GitHubRequestFunc(registry string) func(endpoint string, status int) {
	m.opened(registry)
	return func(endpoint string, status int) {
		m.record(registry, func() { m.githubRequests.WithLabelValues(registry, endpoint, strconv.Itoa(status)).Inc() })
	}
}

// OCIRequestFunc returns a hook for oci.Options.OnRequest that counts
// one registry's requests to its OCI registry.
func (m *Metrics) OCIRequestFunc(registry string) func(endpoint string, status int) {
	return func(endpoint string, status int) {
		m.ociRequests.WithLabelValues(registry, endpoint, strconv.Itoa(status)).Inc()
	}
}

// CacheLookupFunc returns a hook for fetch.Cache.OnLookup that counts one
// registry's blob lookups.
func (m *Metrics) CacheLookupFunc(registry string) func(where string) {
	m.opened(registry)
	byWhere := map[string]prometheus.Counter{}
	for _, w := range []string{"memory", "disk", "miss"} {
		byWhere[w] = m.cacheLookups.WithLabelValues(registry, w)
	}
	return func(where string) {
		// Once forgotten, the counters above are no series any more:
		// counting into them records nothing.
		if c, ok := byWhere[where]; ok {
			c.Inc()
			return
		}
		m.record(registry, func() { m.cacheLookups.WithLabelValues(registry, where).Inc() })
	}
}

// Instrument sets g's OnIndex hook to record into m.
func (m *Metrics) Instrument(g *index.Registry) {
	g.OnIndex = m.ObserveIndex
}

// watch makes the registry gauges report r's registries.
func (m *Metrics) watch(r *resolve.Resolver) { m.registries.resolver.Store(r) }

// registryCollector reports what each registry's current snapshot holds,
// read at scrape time.
type registryCollector struct {
	resolver atomic.Pointer[resolve.Resolver]
}

var (
	descTemplates = prometheus.NewDesc(namespace+"_templates", "Templates in the registry's current index.", []string{"registry"}, nil)
	descVersions  = prometheus.NewDesc(namespace+"_template_versions", "Template versions in the registry's current index.", []string{"registry"}, nil)
	descFindings  = prometheus.NewDesc(namespace+"_lint_findings", "Lint findings of the registry's current index, by severity.", []string{"registry", "severity"}, nil)
	descReady     = prometheus.NewDesc(namespace+"_registry_ready", "1 when the registry has an index to serve (fresh or loaded from the cache), else 0.", []string{"registry"}, nil)
	descSuccess   = prometheus.NewDesc(namespace+"_index_last_success_timestamp_seconds", "When the registry was last refreshed successfully, in seconds since the epoch (0: never since start).", []string{"registry"}, nil)
)

// Describe sends the descriptors of the registry gauges.
func (c *registryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTemplates, descVersions, descFindings, descReady, descSuccess} {
		ch <- d
	}
}

// Collect reads every registry's current snapshot.
func (c *registryCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.resolver.Load()
	if r == nil {
		return
	}
	for _, g := range r.Registries() {
		// By key: registries of two namespaces may share a name.
		name := g.Key()
		snap := g.Snapshot()
		ready := 0.0
		var templates, versions, errs, warns float64
		if snap != nil {
			ready = 1
			templates, versions = float64(snap.Templates), float64(snap.Versions)
			errs = float64(snap.Errors())
			warns = float64(len(snap.Findings)) - errs
		}
		var success float64
		if t := g.Status().LastSuccess; !t.IsZero() {
			success = float64(t.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(descTemplates, prometheus.GaugeValue, templates, name)
		ch <- prometheus.MustNewConstMetric(descVersions, prometheus.GaugeValue, versions, name)
		ch <- prometheus.MustNewConstMetric(descFindings, prometheus.GaugeValue, errs, name, string(index.Error))
		ch <- prometheus.MustNewConstMetric(descFindings, prometheus.GaugeValue, warns, name, string(index.Warning))
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready, name)
		ch <- prometheus.MustNewConstMetric(descSuccess, prometheus.GaugeValue, success, name)
	}
}

// watchExamples makes the example gauges report e's counts.
func (m *Metrics) watchExamples(e *catalog.Examples) { m.examples.examples.Store(e) }

// exampleCollector reports the tested examples by status, read at scrape
// time.
type exampleCollector struct {
	examples atomic.Pointer[catalog.Examples]
}

var descExamples = prometheus.NewDesc(namespace+"_example_tests", "Template versions whose example.yaml has been expanded in the background, by result (ok, error, pending: not tested yet).", []string{"status"}, nil)

var descExamplesRun = prometheus.NewDesc(namespace+"_example_tests_run_total", "Template versions whose example this process has tested since it started (replicas sharing one tester: each version counts in one replica only).", nil, nil)

// Describe sends the descriptors of the example metrics.
func (c *exampleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descExamples
	ch <- descExamplesRun
}

// Collect counts the examples by status.
func (c *exampleCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.examples.Load()
	if e == nil {
		return
	}
	n := e.Counts()
	ch <- prometheus.MustNewConstMetric(descExamplesRun, prometheus.CounterValue, float64(e.TestsRun()))
	ch <- prometheus.MustNewConstMetric(descExamples, prometheus.GaugeValue, float64(n.OK), catalog.StatusOK)
	ch <- prometheus.MustNewConstMetric(descExamples, prometheus.GaugeValue, float64(n.Error), catalog.StatusError)
	ch <- prometheus.MustNewConstMetric(descExamples, prometheus.GaugeValue, float64(n.Pending), catalog.StatusPending)
}
