// Package controller reconciles dm's custom resources (package v1alpha1)
// with controller-runtime: a TemplateInstance is a dm deployment that the
// controller keeps applied, through package deploy exactly as dm deploy
// applies (server-side apply in tiers, prune, history as Secrets in the
// instance's namespace), as the instance's ServiceAccount (impersonation).
//
// Each instance is one deployment, named after the instance, recorded with
// release.Record.Controller set to "TemplateInstance NS/NAME" so that dm
// update, rollback and delete refuse it. An instance is reconciled when it
// changes, when an object it rendered changes (drift: the objects are
// watched, metadata only, and mapped back by dm's labels), when a registry
// it resolves through is indexed anew (a new patch release), and every
// spec.interval; a reconcile that finds nothing changed writes nothing.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/controller/instance"
	"github.com/dmhq/dm/internal/deploy/chartlookup"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/expand/engine"
)

// Options configure the controller.
type Options struct {
	// Expander expands templates: a sandbox pool over the controller's
	// registries, or a registryd client (--server).
	Expander api.Expander
	// Files reads a template version's files (its status template); nil
	// means status templates are not run.
	Files FileReader
	// Templates describes template versions (their schemas) for
	// TemplateDefinitions; nil leaves definitions Stalled.
	Templates TemplateDescriber
	// DefinitionGroups are the API groups TemplateDefinitions may define
	// kinds of; a definition of another group is Stalled
	// (GroupNotAllowed) and no CRD is written. None: no definition is.
	DefinitionGroups []string
	// DefaultRegistry is the registry short references resolve against,
	// [host/]owner/repo[/collection]; "" means the expander's default.
	DefaultRegistry string
	// Server is the registryd URL expansions go to, recorded with each
	// revision as dm deploy --server records it; "" for in-process.
	Server string
	// DefaultServiceAccount is the ServiceAccount, in the instance's
	// namespace, that instances without spec.serviceAccountName apply as;
	// "" refuses them.
	DefaultServiceAccount string
	// Concurrency is the number of instances reconciled at once; default
	// DefaultConcurrency.
	Concurrency int
	// DMVersion is recorded with every revision.
	DMVersion string
	// Pod names the controller's pod (NAMESPACE/NAME) in the leases it
	// holds on the deployments it applies, which dm history shows.
	Pod string
	// Logger receives the controller's log; nil discards it.
	Logger *slog.Logger
}

// DefaultConcurrency is Options.Concurrency's default.
const DefaultConcurrency = 4

// DefaultInterval is spec.interval's default.
const DefaultInterval = 10 * time.Minute

// FieldManager is the server-side apply field manager of the objects the
// controller applies.
const FieldManager = instance.FieldManager

// Finalizer holds an instance until what it rendered is pruned (or, with
// deletionPolicy Orphan, released).
const Finalizer = "dm.io/prune"

// Scheme returns a scheme with the Kubernetes built-in kinds, the CRD kind
// and dm's kinds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("controller: building the scheme: %w", err)
		}
	}
	return s, nil
}

// clients keeps one kube.Client per user the controller impersonates, so
// that discovery is read once per account, not per reconcile; and one
// chart Lookup per user, likewise.
type clients struct {
	base    *rest.Config
	mu      sync.Mutex
	lru     *lru.Cache[string, *kube.Client]
	lookups *lru.Cache[string, engine.Lookup]
}

// maxClients bounds the impersonating clients kept (of each sort).
const maxClients = 256

func newClients(base *rest.Config) *clients {
	c, _ := lru.New[string, *kube.Client](maxClients) // fails only for size <= 0
	l, _ := lru.New[string, engine.Lookup](maxClients)
	return &clients{base: base, lru: c, lookups: l}
}

// config returns the controller's connection impersonating user.
func (c *clients) config(user string) *rest.Config {
	rc := rest.CopyConfig(c.base)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	rc.UserAgent = FieldManager
	return rc
}

// as returns a client that acts as user, its namespace ns.
func (c *clients) as(ctx context.Context, user, ns string) (*kube.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := user + "\x00" + ns
	if k, ok := c.lru.Get(key); ok {
		return k, nil
	}
	k, err := kube.New(ctx, kube.Config{REST: c.config(user), Namespace: ns, FieldManager: FieldManager, DiscoveryCache: "-", QPS: -1})
	if err != nil {
		return nil, err
	}
	c.lru.Add(key, k)
	return k, nil
}

// lookupAs returns the Lookup of charts deployed as user: it reads the
// cluster with user's rights, so a chart sees what its instance's
// account may see and nothing more.
func (c *clients) lookupAs(user string) (engine.Lookup, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.lookups.Get(user); ok {
		return l, nil
	}
	l, err := chartlookup.NewLookup(c.config(user))
	if err != nil {
		return nil, err
	}
	c.lookups.Add(user, l)
	return l, nil
}

// errNoAccount is an instance with no ServiceAccount to apply as.
var errNoAccount = instance.ErrNoAccount
