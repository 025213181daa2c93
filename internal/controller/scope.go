package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dmhq/dm/internal/api"
)

// RegistryScopes tells which namespace a registry's templates are confined
// to. A namespaced Registry object's templates are for the instances of
// its namespace only; a ClusterRegistry's, and those of registryd's flags
// and configuration file, are for every namespace.
type RegistryScopes interface {
	// RegistryOf returns the registry that serves the resolved reference
	// ref and the namespace it is confined to ("": none); ok is false when
	// no registry known serves ref.
	RegistryOf(ctx context.Context, ref string) (registry, namespace string, ok bool, err error)
}

// errOutOfScope marks a template used outside the namespace of the
// Registry that serves it.
var errOutOfScope = errors.New("registry out of scope")

// checkScope refuses the first of refs (resolved references) that a
// namespaced Registry of a namespace other than ns serves; who names the
// user for the message. ns is "" for a cluster-scoped user (a
// TemplateDefinition), which only cluster-wide registries serve.
func checkScope(ctx context.Context, s RegistryScopes, ns, who string, refs ...string) error {
	if s == nil {
		return nil
	}
	for _, ref := range refs {
		reg, regNS, ok, err := s.RegistryOf(ctx, ref)
		if err != nil {
			return fmt.Errorf("finding the registry of %s: %w", ref, err)
		}
		if !ok || regNS == "" || regNS == ns {
			continue
		}
		where := "namespace " + ns
		if ns == "" {
			where = "no namespace"
		}
		return fmt.Errorf("template %s comes from registry %s, a Registry of namespace %s: its templates serve namespace %s only, and %s is in %s (a ClusterRegistry serves every namespace): %w",
			ref, reg, regNS, regNS, who, where, errOutOfScope)
	}
	return nil
}

// scopeTTL bounds how long a registry list read from registryd is used:
// a change of the index refreshes it sooner (see serverScopes.invalidate),
// but a prefix that moves from a Registry to a ClusterRegistry may leave
// every indexed version as it was.
const scopeTTL = time.Minute

// serverScopes reads the registries' scopes from registryd's registry list
// (GET /v1/registries), kept until the index changes or scopeTTL passes.
type serverScopes struct {
	list func(ctx context.Context) (*api.RegistryList, error)

	mu    sync.Mutex
	regs  []api.Registry
	read  time.Time
	stale bool
}

// newServerScopes returns the scopes of the registries c lists.
func newServerScopes(c *api.Client) *serverScopes {
	return &serverScopes{list: c.Registries, stale: true}
}

// invalidate makes the next lookup read the list again.
func (s *serverScopes) invalidate() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

// RegistryOf implements RegistryScopes. A reference no listed registry
// serves reads the list again, once: the registry may be new.
func (s *serverScopes) RegistryOf(ctx context.Context, ref string) (string, string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := false
	if s.stale || time.Since(s.read) > scopeTTL {
		if err := s.reload(ctx); err != nil {
			return "", "", false, err
		}
		fresh = true
	}
	reg, ok := servedBy(s.regs, ref)
	if !ok && !fresh {
		if err := s.reload(ctx); err != nil {
			return "", "", false, err
		}
		reg, ok = servedBy(s.regs, ref)
	}
	return reg.Name, reg.Namespace, ok, nil
}

// reload reads the registry list; s.mu is held.
func (s *serverScopes) reload(ctx context.Context) error {
	l, err := s.list(ctx)
	if err != nil {
		return err
	}
	s.regs, s.read, s.stale = l.Registries, time.Now(), false
	return nil
}

// servedBy returns the registry of regs whose prefix is the longest that
// ref starts with.
func servedBy(regs []api.Registry, ref string) (api.Registry, bool) {
	var best api.Registry
	found := false
	for _, r := range regs {
		if strings.HasPrefix(ref, r.Name+"/") && len(r.Name) > len(best.Name) {
			best, found = r, true
		}
	}
	return best, found
}
