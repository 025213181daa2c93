package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Discovery reads the server's aggregated discovery documents (/api and
// /apis, two requests; Kubernetes 1.27 and later; older servers answer with
// the legacy documents, and then each group version is read too) and keeps what dm needs
// of them in memory and, like kubectl's ~/.kube/cache/discovery, on disk
// for DiscoveryTTL. It does not use client-go's discovery package, whose
// dependencies register every built-in API group at program start.

// DiscoveryTTL is how long a discovery cache on disk is trusted. A kind it
// does not know always triggers a fresh read from the server.
const DiscoveryTTL = 6 * time.Hour

// aggregatedAccept asks for aggregated discovery, v2 or v2beta1, else the
// legacy documents.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

// apiResource is one resource of one group version.
type apiResource struct {
	Group      string   `json:"group,omitempty"`
	Version    string   `json:"version"`
	Resource   string   `json:"resource"`
	Singular   string   `json:"singular,omitempty"`
	Kind       string   `json:"kind"`
	Namespaced bool     `json:"namespaced,omitempty"`
	Verbs      []string `json:"verbs,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
}

// discoveryDoc is the part of an APIGroupDiscoveryList dm reads.
type discoveryDoc struct {
	Kind  string `json:"kind"`
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Versions []struct {
			Version   string `json:"version"`
			Resources []struct {
				Resource     string `json:"resource"`
				ResponseKind *struct {
					Group   string `json:"group"`
					Version string `json:"version"`
					Kind    string `json:"kind"`
				} `json:"responseKind"`
				Scope            string   `json:"scope"`
				SingularResource string   `json:"singularResource"`
				Verbs            []string `json:"verbs"`
				ShortNames       []string `json:"shortNames"`
			} `json:"resources"`
		} `json:"versions"`
	} `json:"items"`
}

// discovered is one read of discovery, with the mapper built from it.
type discovered struct {
	resources []apiResource // groups and versions in the server's order of preference
	mapper    *meta.DefaultRESTMapper
	fromDisk  bool
	fetched   time.Time // when it was read from the server
}

// discoveryState is the Client's discovery, loaded lazily.
type discoveryState struct {
	mu       sync.Mutex
	current  *discovered
	file     string // cache file; "" for none
	skipDisk bool   // after a refresh, only the server will do
}

// discover returns the current discovery, reading it from the disk cache
// or the server the first time and after refresh.
func (c *Client) discover(ctx context.Context) (*discovered, error) {
	c.disc.mu.Lock()
	defer c.disc.mu.Unlock()
	if c.disc.current != nil {
		return c.disc.current, nil
	}
	if d := c.readCache(); d != nil {
		c.disc.current = d
		return d, nil
	}
	fetched := time.Now()
	res, err := c.fetchDiscovery(ctx)
	if err != nil {
		return nil, err
	}
	c.writeCache(res)
	c.disc.current = newDiscovered(res, false)
	c.disc.current.fetched = fetched
	return c.disc.current, nil
}

// refresh makes the next discover read the server again.
func (c *Client) refresh() { c.refreshBefore(time.Now()) }

// invalidate makes the next discover read the server again if d is still
// the current discovery, so that concurrent misses share one read.
func (c *Client) invalidate(d *discovered) {
	c.disc.mu.Lock()
	defer c.disc.mu.Unlock()
	if c.disc.current == d {
		c.disc.current = nil
		c.disc.skipDisk = true
	}
}

// refreshBefore makes the next discover read the server again unless the
// current discovery was read from it at or after t: callers that saw a miss
// pass when they started, so concurrent misses share one read.
func (c *Client) refreshBefore(t time.Time) {
	c.disc.mu.Lock()
	defer c.disc.mu.Unlock()
	if d := c.disc.current; d != nil && !d.fromDisk && !d.fetched.Before(t) {
		return
	}
	c.disc.current = nil
	c.disc.skipDisk = true
}

func newDiscovered(res []apiResource, fromDisk bool) *discovered {
	var order []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range res {
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		if !seen[gv] {
			seen[gv] = true
			order = append(order, gv)
		}
	}
	m := meta.NewDefaultRESTMapper(order)
	for _, r := range res {
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		singular := r.Singular
		if singular == "" {
			singular = strings.ToLower(r.Kind)
		}
		m.AddSpecific(gv.WithKind(r.Kind), gv.WithResource(r.Resource), gv.WithResource(singular), scope)
	}
	return &discovered{resources: res, mapper: m, fromDisk: fromDisk}
}

// fetchDiscovery reads /api and /apis in parallel.
func (c *Client) fetchDiscovery(ctx context.Context) ([]apiResource, error) {
	var docs [2][]apiResource
	var errs [2]error
	var wg sync.WaitGroup
	for i, p := range []string{"/api", "/apis"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			docs[i], errs[i] = c.fetchDoc(ctx, p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return append(docs[0], docs[1]...), nil
}

func (c *Client) fetchDoc(ctx context.Context, path string) ([]apiResource, error) {
	data, err := body(c.raw.Get().AbsPath(path).SetHeader("Accept", aggregatedAccept).Do(ctx))
	if err != nil {
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}
	var doc discoveryDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}
	if doc.Kind != "APIGroupDiscoveryList" {
		return c.fetchLegacy(ctx, path, data)
	}
	var out []apiResource
	for _, g := range doc.Items {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				if r.ResponseKind == nil || r.ResponseKind.Kind == "" {
					continue
				}
				out = append(out, apiResource{
					Group:      g.Metadata.Name,
					Version:    v.Version,
					Resource:   r.Resource,
					Singular:   r.SingularResource,
					Kind:       r.ResponseKind.Kind,
					Namespaced: r.Scope == "Namespaced",
					Verbs:      r.Verbs,
					ShortNames: r.ShortNames,
				})
			}
		}
	}
	return out, nil
}

// legacyDoc is the part of APIVersions (/api), APIGroupList (/apis) and
// APIResourceList (/api/v1, /apis/GROUP/VERSION) dm reads.
type legacyDoc struct {
	Versions []string `json:"versions"`
	Groups   []struct {
		Name     string `json:"name"`
		Versions []struct {
			Version string `json:"version"`
		} `json:"versions"`
		PreferredVersion struct {
			Version string `json:"version"`
		} `json:"preferredVersion"`
	} `json:"groups"`
	Resources []struct {
		Name         string   `json:"name"`
		SingularName string   `json:"singularName"`
		Namespaced   bool     `json:"namespaced"`
		Kind         string   `json:"kind"`
		Verbs        []string `json:"verbs"`
		ShortNames   []string `json:"shortNames"`
	} `json:"resources"`
}

// fetchLegacy reads the group versions that the legacy document top of
// path (/api or /apis) lists, preferred versions first, in parallel.
func (c *Client) fetchLegacy(ctx context.Context, path string, top []byte) ([]apiResource, error) {
	var doc legacyDoc
	if err := json.Unmarshal(top, &doc); err != nil {
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}
	var gvs []schema.GroupVersion
	for _, v := range doc.Versions {
		gvs = append(gvs, schema.GroupVersion{Version: v})
	}
	for _, g := range doc.Groups {
		gvs = append(gvs, schema.GroupVersion{Group: g.Name, Version: g.PreferredVersion.Version})
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				gvs = append(gvs, schema.GroupVersion{Group: g.Name, Version: v.Version})
			}
		}
	}
	lists := make([][]apiResource, len(gvs))
	errs := make([]error, len(gvs))
	idx := indexes(len(gvs))
	parallel(c.cfg.Concurrency, idx, func(i int) {
		gv := gvs[i]
		p := "/apis/" + gv.Group + "/" + gv.Version
		if gv.Group == "" {
			p = "/api/" + gv.Version
		}
		data, err := body(c.raw.Get().AbsPath(p).Do(ctx))
		if err != nil {
			errs[i] = fmt.Errorf("discovery %s: %w", p, err)
			return
		}
		var doc legacyDoc
		if err := json.Unmarshal(data, &doc); err != nil {
			errs[i] = fmt.Errorf("discovery %s: %w", p, err)
			return
		}
		for _, r := range doc.Resources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			lists[i] = append(lists[i], apiResource{
				Group: gv.Group, Version: gv.Version, Resource: r.Name, Singular: r.SingularName, Kind: r.Kind,
				Namespaced: r.Namespaced, Verbs: r.Verbs, ShortNames: r.ShortNames,
			})
		}
	})
	var out []apiResource
	for _, l := range lists {
		out = append(out, l...)
	}
	return out, errors.Join(errs...)
}

// cacheFile is the discovery cache file of server under dir.
func cacheFile(dir, server string) string {
	u, err := url.Parse(server)
	host := server
	if err == nil && u.Host != "" {
		host = u.Host + u.Path
	}
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, host)
	return filepath.Join(dir, safe+".json")
}

// readCache returns the disk cache when it is fresh and not skipped.
func (c *Client) readCache() *discovered {
	if c.disc.file == "" || c.disc.skipDisk {
		return nil
	}
	st, err := os.Stat(c.disc.file)
	if err != nil || time.Since(st.ModTime()) > DiscoveryTTL {
		return nil
	}
	data, err := os.ReadFile(c.disc.file)
	if err != nil {
		return nil
	}
	var res []apiResource
	if json.Unmarshal(data, &res) != nil || len(res) == 0 {
		return nil
	}
	return newDiscovered(res, true)
}

// writeCache replaces the disk cache atomically; failing to is not an error.
func (c *Client) writeCache(res []apiResource) {
	if c.disc.file == "" {
		return
	}
	data, err := json.Marshal(res)
	if err != nil {
		return
	}
	dir := filepath.Dir(c.disc.file)
	if os.MkdirAll(dir, 0o750) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".discovery-*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), c.disc.file) != nil {
		os.Remove(f.Name())
	}
}
