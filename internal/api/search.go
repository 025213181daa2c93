package api

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
)

// metaCacheEntries bounds the search metadata cache: one entry per
// template's latest version, so a registry of 10,000 versions fits.
const metaCacheEntries = 16384

// Search match kinds, best first: what a word of the query matched.
const (
	matchName        = "name"
	matchTitle       = "title"
	matchCollection  = "collection"
	matchTag         = "tag"
	matchProperty    = "property"
	matchDescription = "description"
	matchPath        = "path"
)

// Search finds templates matching every word of q, case-insensitively:
// in the name, the collection, the title, tags, property names and
// description of the latest version's schema (an OpenShift template's
// metadata and parameters), or a file path. Results are ranked by the
// worst-matching word: exact name, name prefix, name part, title,
// collection, tag, property, description, path; then by reference.
func (s *Service) Search(ctx context.Context, q, registry string) (*SearchResults, error) {
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 0 {
		return nil, fmt.Errorf("empty search: %w", derrors.InvalidArgument)
	}
	sel, err := s.selectRegistries(ctx, registry, "")
	if err != nil {
		return nil, err
	}
	return s.search.search(ctx, sel, words), nil
}

// searcher answers searches from the registries' snapshots, keeping a
// search index per recent snapshot and the metadata of the versions it
// has read.
type searcher struct {
	// metas caches search metadata by version.
	metas *lru.Cache[contentKey, *VersionMeta]
	// indexes holds the search index of each registry's current snapshot,
	// by the registry's identity: one per registry, replaced when its
	// snapshot is, so that no index keeps an older snapshot alive.
	indexes *lru.Cache[string, *searchIndex]
}

// indexEntries bounds the search indexes kept: one per registry.
const indexEntries = 1024

func newSearcher() *searcher {
	metas, _ := lru.New[contentKey, *VersionMeta](metaCacheEntries) // fails only for size <= 0
	indexes, _ := lru.New[string, *searchIndex](indexEntries)
	return &searcher{metas: metas, indexes: indexes}
}

// forget drops what is kept of the registry of identity id.
func (s *searcher) forget(id string) {
	s.indexes.Remove(id)
	for _, k := range s.metas.Keys() {
		if k.source == id {
			s.metas.Remove(k)
		}
	}
}

// search matches words (lower-cased, at least one) against the templates
// of sel and ranks the matches, as Search says.
func (s *searcher) search(ctx context.Context, sel selection, words []string) *SearchResults {
	type scored struct {
		r     SearchResult
		score int
	}
	var hits []scored
	for _, g := range sel.regs {
		snap := g.Snapshot()
		if snap == nil {
			continue
		}
		ix := s.indexOf(g.ID(), snap)
		for i := range ix.entries {
			e := &ix.entries[i]
			t := e.t
			if sel.hasColl && t.Collection != sel.collection {
				continue
			}
			meta := e.meta.Load()
			if meta == nil {
				meta = s.meta(ctx, g, e.latest)
				if meta.read {
					e.meta.Store(meta)
				}
			}
			score, kind := e.match(meta, words)
			if kind == "" {
				continue
			}
			info := TemplateInfo(g.Name, t)
			r := SearchResult{Ref: info.Ref, Registry: g.Name, Namespace: g.Namespace, Collection: t.Collection, Template: t.Name, Latest: info.Latest, Match: kind,
				Title: meta.Title, Description: meta.Description, Versions: make([]string, 0, len(t.Versions))}
			for _, v := range t.Versions {
				r.Versions = append(r.Versions, v.Semver)
			}
			hits = append(hits, scored{r, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score < hits[j].score
		}
		return hits[i].r.Ref < hits[j].r.Ref
	})
	out := &SearchResults{Results: make([]SearchResult, len(hits))}
	for i, h := range hits {
		out.Results[i] = h.r
	}
	return out
}

// VersionMeta is what a version says of itself beyond its name: the
// title, description, tags and property names of its schema, or of an
// OpenShift template's metadata and parameters.
type VersionMeta struct {
	Title, Description string
	Tags               []string
	Properties         []string
	// lower holds the fields lower-cased for matching:
	// title, description, tags..., properties...
	lower []string
	// read reports that the version's files were read (not a passing
	// fault), so the result may be kept.
	read bool
}

// meta returns the metadata of version v, cached by its registry and
// content digest (Version.CacheKey: another registry's listing may name
// the same hashes), so a version's schema is read once however often it
// is searched.
func (s *searcher) meta(ctx context.Context, g *index.Registry, v *index.Version) *VersionMeta {
	if v == nil {
		return &VersionMeta{read: true}
	}
	if m, ok := s.metas.Get(contentKeyOf(v)); ok {
		return m
	}
	m, err := readMeta(ctx, g, v)
	if err != nil {
		return m // not cached: a passing fault is retried next time
	}
	m.read = true
	s.metas.Add(contentKeyOf(v), m)
	return m
}

// searchIndex is what Search matches in one snapshot, lower-cased once:
// a query then costs string comparisons, not allocations.
type searchIndex struct {
	snap    *index.Snapshot
	entries []searchEntry
}

// indexOf returns the search index of snap, the current snapshot of the
// registry of identity id, building it on first use.
func (s *searcher) indexOf(id string, snap *index.Snapshot) *searchIndex {
	if ix, ok := s.indexes.Get(id); ok && ix.snap == snap {
		return ix
	}
	all := snap.AllTemplates()
	ix := &searchIndex{snap: snap, entries: make([]searchEntry, len(all))}
	for i, t := range all {
		e := &ix.entries[i]
		e.t, e.name, e.coll = t, strings.ToLower(t.Name), strings.ToLower(t.Collection)
		seen := map[string]bool{}
		var b strings.Builder
		b.WriteString(strings.ToLower(t.Path))
		for _, v := range t.Versions {
			for _, f := range v.Files {
				if !seen[f.Path] {
					seen[f.Path] = true
					b.WriteByte('\n')
					b.WriteString(strings.ToLower(f.Path))
				}
			}
		}
		e.paths = b.String()
		for j := len(t.Versions) - 1; j >= 0; j-- {
			if e.latest == nil || !t.Versions[j].Prerelease() {
				e.latest = t.Versions[j]
				if !e.latest.Prerelease() {
					break
				}
			}
		}
	}
	s.indexes.Add(id, ix)
	return ix
}

// searchEntry is one template of a searchIndex.
type searchEntry struct {
	t          *index.Template
	latest     *index.Version // the highest stable version, else the highest
	name, coll string
	paths      string // every file path of every version, "\n"-separated
	meta       atomic.Pointer[VersionMeta]
}

// readMeta reads a version's schema (or OpenShift template) for its
// metadata.
func readMeta(ctx context.Context, g *index.Registry, v *index.Version) (*VersionMeta, error) {
	var tv TemplateVersion
	m := &VersionMeta{}
	read := func(name string) ([]byte, error) {
		e, ok := v.File(name)
		if !ok {
			return nil, fmt.Errorf("no file %q: %w", name, derrors.NotFound)
		}
		return g.Blob(ctx, e.SHA)
	}
	if d := Describer(string(v.Language), v.Schema); d != nil {
		read, readErr := readsFailing(read)
		desc, err := d.Describe(ctx, v.Template, read)
		if *readErr != nil {
			return m, *readErr
		}
		fromDescription(&tv, desc, err)
		if desc != nil {
			m.Tags = desc.Tags
		}
	} else if v.Schema != "" {
		b, err := read(v.Schema)
		if err != nil {
			return m, err
		}
		describeSchema(&tv, b, v.Schema) // a broken schema still has a name
		m.Tags = schemaTags(b)
	}
	m.Title, m.Description = tv.Title, tv.Description
	m.lower = append(m.lower, strings.ToLower(m.Title), strings.ToLower(m.Description))
	for _, tag := range m.Tags {
		m.lower = append(m.lower, strings.ToLower(tag))
	}
	for _, p := range tv.Properties {
		m.Properties = append(m.Properties, p.Name)
		m.lower = append(m.lower, strings.ToLower(p.Name))
	}
	return m, nil
}

// schemaTags reads info.tags of a schema: a list of strings, or one
// comma-separated string.
func schemaTags(b []byte) []string {
	var doc struct {
		Info struct {
			Tags any `json:"tags"`
		} `json:"info"`
	}
	if yaml.Unmarshal(b, &doc) != nil {
		return nil
	}
	return tagList(doc.Info.Tags)
}

func tagList(v any) []string {
	var tags []string
	switch v := v.(type) {
	case string:
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				tags = append(tags, t)
			}
		}
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok && s != "" {
				tags = append(tags, s)
			}
		}
	}
	return tags
}

// match scores a template against every word: the worst match of any
// word decides (see Search for the order).
func (e *searchEntry) match(meta *VersionMeta, words []string) (int, string) {
	nTags := len(meta.Tags)
	inMeta := func(w string, from, to int) bool {
		for _, f := range meta.lower[min(from, len(meta.lower)):min(to, len(meta.lower))] {
			if strings.Contains(f, w) {
				return true
			}
		}
		return false
	}
	worst := 0
	for _, w := range words {
		score := -1
		switch {
		case e.name == w:
			score = 0
		case strings.HasPrefix(e.name, w):
			score = 1
		case strings.Contains(e.name, w):
			score = 2
		case inMeta(w, 0, 1):
			score = 3
		case strings.Contains(e.coll, w):
			score = 4
		case inMeta(w, 2, 2+nTags):
			score = 5
		case inMeta(w, 2+nTags, len(meta.lower)):
			score = 6
		case inMeta(w, 1, 2):
			score = 7
		case strings.Contains(e.paths, w):
			score = 8
		}
		if score < 0 {
			return 0, ""
		}
		worst = max(worst, score)
	}
	return worst, [...]string{matchName, matchName, matchName, matchTitle, matchCollection, matchTag, matchProperty, matchDescription, matchPath}[worst]
}
