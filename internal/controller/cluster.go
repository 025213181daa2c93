package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/dmhq/dm/internal/deploy/chartlookup"
	"github.com/dmhq/dm/internal/expand/engine"
)

// Charts an instance renders see the cluster as under helm install:
// .Capabilities from discovery and lookup as the instance's account. The
// expansion runs in a sandbox worker that holds no credential, so the
// capabilities go with the request as data, and the worker's lookups come
// back to this process (sandbox's lookup call), answered with a Lookup
// that impersonates the instance's ServiceAccount.

// DefaultCapabilitiesRefresh is how long the cluster's capabilities are
// kept before discovery is read again; a CustomResourceDefinition added,
// changed or deleted has them read again at the next render.
const DefaultCapabilitiesRefresh = 10 * time.Minute

// discoveryTimeout bounds one read of the cluster's capabilities.
const discoveryTimeout = 30 * time.Second

// capabilities keeps the cluster's version and API versions, read by
// discovery with the controller's own account (discovery is readable by
// every authenticated account, so every instance's would read the same):
// once per refresh, not once per reconcile.
type capabilities struct {
	cfg     *rest.Config
	refresh time.Duration
	log     *slog.Logger

	mu          sync.Mutex
	kubeVersion string
	apiVersions []string
	read        time.Time
	stale       bool
}

func newCapabilities(cfg *rest.Config, log *slog.Logger) *capabilities {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = discoveryTimeout
	return &capabilities{cfg: cfg, refresh: DefaultCapabilitiesRefresh, log: log}
}

// get returns the cluster's capabilities, reading them when they are
// older than the refresh or stale. When a read fails, the last ones read
// serve (a new CRD waits for the next read); with none, the error.
func (c *capabilities) get() (string, []string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.IsZero() && !c.stale && time.Since(c.read) < c.refresh {
		return c.kubeVersion, c.apiVersions, nil
	}
	kv, apis, err := chartlookup.Capabilities(c.cfg)
	if err != nil {
		if c.read.IsZero() {
			return "", nil, fmt.Errorf("reading the cluster's capabilities for charts: %w", err)
		}
		c.log.Warn("reading the cluster's capabilities for charts; the last ones read serve", "err", err, "read", c.read)
		return c.kubeVersion, c.apiVersions, nil
	}
	c.kubeVersion, c.apiVersions, c.read, c.stale = kv, apis, time.Now(), false
	return kv, apis, nil
}

// invalidate has the next get read discovery again.
func (c *capabilities) invalidate() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

// watchCRDs invalidates c whenever a CustomResourceDefinition is added,
// changed (established) or deleted: a chart testing
// .Capabilities.APIVersions.Has for a new kind sees it at its next render.
// The informer is the manager's, metadata only.
func watchCRDs(mgr ctrl.Manager, c *capabilities) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	inf, err := mgr.GetCache().GetInformer(context.Background(), m, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("controller: watching CustomResourceDefinitions: %w", err)
	}
	changed := func(any) { c.invalidate() }
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, o any) { changed(o) },
		DeleteFunc: changed,
	})
	if err != nil {
		return fmt.Errorf("controller: watching CustomResourceDefinitions: %w", err)
	}
	return nil
}

// cluster returns what charts rendered for the instance applying as user
// read of the cluster: its capabilities, and a lookup as user.
func (r *InstanceReconciler) cluster(user string) (*engine.Cluster, error) {
	kv, apis, err := r.caps.get()
	if err != nil {
		return nil, err
	}
	l, err := r.clients.lookupAs(user)
	if err != nil {
		return nil, err
	}
	return &engine.Cluster{KubeVersion: kv, APIVersions: apis, Lookup: l}, nil
}
