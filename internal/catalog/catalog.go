// Package catalog is registryd's HTML catalog: server-rendered pages over
// the registries (html/template, assets embedded, no build step and
// nothing fetched from elsewhere), and the background tester of every
// version's example.yaml whose results the pages, the JSON API and the
// metrics show.
//
// Pages:
//
//	GET  /                          registries with their state, a search box, recently changed templates
//	GET  /search?q=                 templates matching every word, best first
//	GET  /r/{registry}              a registry's collections and templates, and its lint findings
//	GET  /t/{reference}             a version: README, versions with their short forms, properties,
//	                                example and its test, files, digest, Uses and Used by, the form
//	GET  /t/{reference}/diff?from=V the files of version V against the one reference resolves to
//	GET  /t/{reference}/-/file/{path}  one file's source
//	POST /t/{reference}/preview     the form (fields named by property path) -> the expanded
//	                                objects as YAML, or the errors next to their fields
//	GET  /static/...                CSS and a little JavaScript (the form works without it)
//
// Expansion goes through an api.Expander, so that the in-process engine
// and a sandbox of worker processes serve the catalog alike.
package catalog

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Catalog.
type Options struct {
	// Service answers the registry queries. Required.
	Service *api.Service
	// Expander expands the preview form; nil means Service.
	Expander api.Expander
	// Examples, if set, supplies tested examples, titles, Uses, Used by
	// and recent changes.
	Examples *Examples
	Logger   *slog.Logger
	// MaxPreviews bounds the previews expanding at once; zero means
	// GOMAXPROCS. Others wait up to 5 seconds, then get a 503 page.
	MaxPreviews int
	// PreviewTimeout bounds one preview; zero means 30 seconds.
	PreviewTimeout time.Duration
}

// Catalog serves the HTML pages.
type Catalog struct {
	svc      *api.Service
	expander api.Expander
	examples *Examples
	log      *slog.Logger
	pages    map[string]*template.Template
	static   http.Handler
	md       goldmark.Markdown
	previews chan struct{}
	timeout  time.Duration

	mu    sync.Mutex
	cache map[pageKey]*versionPage // canonical reference + digest -> what never changes
	// registryPages are rendered registry pages by what they show.
	registryPages map[pageKey][]byte
}

// pageKey keys what is cached of a page: the key of its registry
// (index.Registry.Key: registries of two namespaces may share a prefix)
// and what else it depends on.
type pageKey struct{ registry, of string }

// Forget drops the pages cached of the registry of key, no longer served.
func (c *Catalog) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.cache, func(k pageKey, _ *versionPage) bool { return k.registry == key })
	maps.DeleteFunc(c.registryPages, func(k pageKey, _ []byte) bool { return k.registry == key })
}

// maxCached bounds the version pages kept; the cache is dropped whole when
// full, which is rare and cheap to refill.
const maxCached = 4096

// New returns a catalog over opts.Service.
func New(opts Options) *Catalog {
	c := &Catalog{
		svc:      opts.Service,
		expander: opts.Expander,
		examples: opts.Examples,
		log:      opts.Logger,
		md:       goldmark.New(goldmark.WithExtensions(extension.GFM)),
		timeout:  opts.PreviewTimeout,
		cache:    map[pageKey]*versionPage{},

		registryPages: map[pageKey][]byte{},
	}
	if c.expander == nil {
		c.expander = opts.Service
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.timeout <= 0 {
		c.timeout = 30 * time.Second
	}
	if opts.MaxPreviews <= 0 {
		opts.MaxPreviews = runtime.GOMAXPROCS(0)
	}
	c.previews = make(chan struct{}, opts.MaxPreviews)
	c.pages = parsePages()
	sub, _ := fs.Sub(staticFS, "static")
	c.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	return c
}

var funcs = template.FuncMap{
	"at": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"since": func(t time.Time) string { return since(t, time.Now()) },
	"short": func(s string) string {
		s = strings.TrimPrefix(s, "sha256:")
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"tref": refPath,
	"rpath": func(name string) string {
		return "/r/" + name
	},
	"query": url.QueryEscape,
	// breakable is text that may wrap after a slash besides
	// its spaces, never inside a name: a long default such as
	// gcr.io/google-samples/gb-frontend:v4 wraps at its path's slashes.
	"breakable": func(s string) template.HTML {
		var b strings.Builder
		for _, r := range s {
			b.WriteString(template.HTMLEscapeString(string(r)))
			if r == '/' {
				b.WriteString("<wbr>")
			}
		}
		return template.HTML(b.String())
	},
	// plural counts n things: "1 version", "2 versions".
	"plural": func(n int, thing string) string {
		if n == 1 {
			return "1 " + thing
		}
		return strconv.Itoa(n) + " " + thing + "s"
	},
}

// since says how long before now t was, as people say it: "5 seconds
// ago", "3 hours ago", "12 days ago"; a date beyond 60 days.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	n, unit := 0, ""
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		n, unit = int(d/time.Second), "second"
	case d < time.Hour:
		n, unit = int(d/time.Minute), "minute"
	case d < 48*time.Hour:
		n, unit = int(d/time.Hour), "hour"
	case d < 60*24*time.Hour:
		n, unit = int(d/(24*time.Hour)), "day"
	default:
		return "on " + t.UTC().Format("2006-01-02")
	}
	if n == 1 {
		return "1 " + unit + " ago"
	}
	return strconv.Itoa(n) + " " + unit + "s ago"
}

// refPath is the catalog path of a reference; its slashes and colon stay
// as they are, so that /t/github.com/acme/templates/redis:v1 reads well.
func refPath(ref string) string {
	return "/t/" + (&url.URL{Path: ref}).EscapedPath()
}

func parsePages() map[string]*template.Template {
	base := template.Must(template.New("base.html").Funcs(funcs).ParseFS(templateFS, "templates/base.html"))
	pages := map[string]*template.Template{}
	names, _ := fs.Glob(templateFS, "templates/*.html")
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "base" {
			continue
		}
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, n))
	}
	return pages
}

// Mount adds the catalog's routes to r.
func (c *Catalog) Mount(r chi.Router) {
	r.Get("/", c.handleHome)
	r.Get("/search", c.handleSearch)
	r.Get("/r/*", c.handleRegistry)
	r.Get("/t/*", c.handleTemplate)
	// A preview runs templates: a page of another site must not make its
	// visitors' browsers start one (a cross-site form POST needs no
	// preflight). Fetch metadata and Origin tell such a POST apart.
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.renderError(w, r, derrors.Errorf(derrors.Forbidden, "a preview is started from registryd's own pages, not from another site"), "")
	}))
	r.Method(http.MethodPost, "/t/*", csrf.Handler(http.HandlerFunc(c.handlePreview)))
	r.Get("/static/*", c.static.ServeHTTP)
}

// page is what every page's layout needs.
type page struct {
	Title string
	Query string
	Data  any
	// SearchPage leaves the header's search box out: the page has its own.
	SearchPage bool
}

// render writes the named page with status.
func (c *Catalog) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	body, err := c.page(name, title, r.URL.Query().Get("q"), data)
	if err != nil {
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	c.write(w, status, body)
}

// page renders the named page; q is the search box's text.
func (c *Catalog) page(name, title, q string, data any) ([]byte, error) {
	var buf bytes.Buffer
	p := page{Title: title, Data: data, Query: q, SearchPage: name == "search"}
	if err := c.pages[name].ExecuteTemplate(&buf, "base.html", p); err != nil {
		c.log.Error("rendering page", "page", name, "err", err)
		return nil, err
	}
	return buf.Bytes(), nil
}

var (
	ctHTML = []string{"text/html; charset=utf-8"}
	csp    = []string{"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'"}
)

// write answers with an HTML page.
func (c *Catalog) write(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = ctHTML
	h["X-Content-Type-Options"] = []string{"nosniff"}
	h["Content-Security-Policy"] = csp
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	w.Write(body)
}

// errorPage is the data of the error page.
type errorPage struct {
	Status  int
	Message string
	// Search suggests a search for what was not found.
	Search string
}

// renderError answers err as a page with its status.
func (c *Catalog) renderError(w http.ResponseWriter, r *http.Request, err error, search string) {
	status := derrors.HTTPStatus(err)
	msg := derrors.Message(err)
	if status >= 500 {
		c.log.Error("catalog request failed", "path", r.URL.Path, "status", status, "err", msg)
	}
	c.render(w, r, status, "error", http.StatusText(status), errorPage{Status: status, Message: msg, Search: search})
}

// NotFound answers a path no route matches with the 404 page.
func (c *Catalog) NotFound(w http.ResponseWriter, r *http.Request) {
	c.renderError(w, r, fmt.Errorf("no page %s: %w", r.URL.Path, derrors.NotFound), "")
}

// homePage is the data of /.
type homePage struct {
	Registries []api.Registry
	Recent     []recentRow
	Counts     ExampleCounts
	Examples   bool
}

type recentRow struct {
	Ref, Title string
	Change
}

func (c *Catalog) handleHome(w http.ResponseWriter, r *http.Request) {
	regs, err := c.svc.Registries(r.Context())
	if err != nil {
		c.renderError(w, r, err, "")
		return
	}
	// The catalog is public: no host paths on it.
	for i := range regs.Registries {
		regs.Registries[i].HideLocalPath()
	}
	p := homePage{Registries: regs.Registries, Examples: c.examples != nil}
	if c.examples != nil {
		visible := c.visible(r.Context())
		p.Counts = c.examples.CountsIn(visible)
		for _, ch := range c.examples.Recent(visible) {
			p.Recent = append(p.Recent, recentRow{Ref: ch.Ref, Change: ch, Title: c.title(ch.Registry, ch.Ref)})
		}
	}
	c.render(w, r, http.StatusOK, "home", "Template registries", p)
}

// title returns the title of the version with canonical reference ref of
// the registry of key registry, if the tester knows it.
func (c *Catalog) title(registry, ref string) string {
	if c.examples == nil {
		return ""
	}
	r, _ := c.examples.ByRef(registry, ref)
	return r.Title
}

// visible returns whether ctx's caller may see the registry of a key: the
// catalog's lists that span registries show only those.
func (c *Catalog) visible(ctx context.Context) func(key string) bool {
	keys := map[string]bool{}
	for _, g := range c.svc.Resolver().Visible(ctx) {
		keys[g.Key()] = true
	}
	return func(key string) bool { return keys[key] }
}

// searchPage is the data of /search.
type searchPage struct {
	Q       string
	Results []searchRow
	// Total counts every match; Results holds the best maxResults.
	Total int
	Error string
}

// maxResults bounds the results a search page lists, and pageSize the
// templates a registry page lists.
const (
	maxResults = 100
	pageSize   = 100
)

type searchRow struct {
	api.SearchResult
	Title  string
	Status string
}

func (c *Catalog) handleSearch(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	p := searchPage{Q: q}
	if q != "" {
		res, err := c.svc.Search(r.Context(), q, "")
		if err != nil {
			if derrors.HTTPStatus(err) >= 500 {
				c.renderError(w, r, err, "")
				return
			}
			p.Error = err.Error()
		} else {
			p.Total = len(res.Results)
			for _, s := range res.Results[:min(len(res.Results), maxResults)] {
				row := searchRow{SearchResult: s}
				row.Title, row.Status = c.latestFacts(index.Key(s.Namespace, s.Registry), s.Ref, s.Latest)
				if s.Title != "" {
					row.Title = s.Title
				}
				p.Results = append(p.Results, row)
			}
		}
	}
	title := "Search"
	if q != "" {
		title = "Search: " + q
	}
	c.render(w, r, http.StatusOK, "search", title, p)
}

// latestFacts returns the title and example status of version of the
// template ref names, as far as the tester knows them.
func (c *Catalog) latestFacts(registry, ref, version string) (title, status string) {
	if c.examples == nil || version == "" {
		return "", ""
	}
	r, _ := c.examples.ByRef(registry, ref+":"+version)
	return r.Title, r.Status
}

// registryPage is the data of /r/{name}.
type registryPage struct {
	Registry    *api.Registry
	Collections []collectionRows
	// Page is this page's number (from 1) of Pages; First and Last count
	// the templates shown, of Total.
	Page, Pages, First, Last, Total int
}

// PrevPage and NextPage are the neighbouring page numbers, 0 for none.
func (p registryPage) PrevPage() int {
	if p.Page > 1 {
		return p.Page - 1
	}
	return 0
}

// NextPage is the next page's number, 0 for none.
func (p registryPage) NextPage() int {
	if p.Page < p.Pages {
		return p.Page + 1
	}
	return 0
}

type collectionRows struct {
	Name      string
	Templates []templateRow
}

type templateRow struct {
	Ref, Name, Latest, Language, Title, Status string
	Versions                                   int
	Problems                                   int
}

func (c *Catalog) handleRegistry(w http.ResponseWriter, r *http.Request) {
	name := strings.Trim(chi.URLParam(r, "*"), "/")
	reg, err := c.svc.Registry(r.Context(), name)
	if err != nil {
		c.renderError(w, r, err, "")
		return
	}
	reg.HideLocalPath()
	// The page changes only with the registry's state, its snapshot and
	// the examples' results: keep it until one of them does.
	var snap *index.Snapshot
	if g, ok := c.svc.Resolver().Registry(r.Context(), reg.Name); ok {
		snap = g.Snapshot()
	}
	var gen uint64
	if c.examples != nil {
		gen = c.examples.Generation()
	}
	pageNum, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || pageNum < 1 || pageNum > (reg.Templates+pageSize-1)/pageSize {
		pageNum = 1
	}
	key := pageKey{index.Key(reg.Namespace, reg.Name), fmt.Sprintf("%p|%d|%s|%s|%s|%d|%d", snap, gen, reg.Status, reg.LastSuccess, reg.LastError, reg.FindingCount, pageNum)}
	c.mu.Lock()
	body, ok := c.registryPages[key]
	c.mu.Unlock()
	if ok {
		c.write(w, http.StatusOK, body)
		return
	}
	// Straight from the snapshot: only the page's templates are described.
	var all []*index.Template
	if snap != nil {
		all = snap.AllTemplates()
	}
	p := registryPage{Registry: reg, Total: len(all), Page: 1}
	p.Pages = max(1, (p.Total+pageSize-1)/pageSize)
	if pageNum <= p.Pages {
		p.Page = pageNum
	}
	from, to := (p.Page-1)*pageSize, min(p.Page*pageSize, p.Total)
	p.First, p.Last = from+1, to
	byColl := map[string]int{}
	for _, t := range all[from:to] {
		info := api.TemplateInfo(reg.Name, t)
		row := templateRow{Ref: info.Ref, Name: t.Name, Latest: info.Latest, Versions: len(t.Versions)}
		for _, v := range t.Versions {
			if v.Problem != "" {
				row.Problems++
			}
			if v.Semver == info.Latest {
				row.Language = string(v.Language)
				if c.examples != nil {
					res, _ := c.examples.Result(index.Key(reg.Namespace, reg.Name), v.Digest)
					row.Title, row.Status = res.Title, res.Status
				}
			}
		}
		i, ok := byColl[t.Collection]
		if !ok {
			i = len(p.Collections)
			byColl[t.Collection] = i
			p.Collections = append(p.Collections, collectionRows{Name: t.Collection})
		}
		p.Collections[i].Templates = append(p.Collections[i].Templates, row)
	}
	body, err = c.page("registry", reg.Name, "", p)
	if err != nil {
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	c.mu.Lock()
	if len(c.registryPages) >= maxCached {
		c.registryPages = map[pageKey][]byte{}
	}
	c.registryPages[key] = body
	c.mu.Unlock()
	c.write(w, http.StatusOK, body)
}

// splitAction splits a /t/ path into the reference and what is asked of
// it: "" (the page), "diff", "preview" or "file" with the file's path.
func splitAction(p string) (ref, action, file string) {
	p = strings.Trim(p, "/")
	if ref, file, ok := strings.Cut(p, "/-/file/"); ok {
		return ref, "file", file
	}
	for _, a := range []string{"diff", "preview"} {
		if ref, ok := strings.CutSuffix(p, "/"+a); ok {
			return ref, a, ""
		}
	}
	return p, "", ""
}

// tpath returns the /t/ path of the request, unescaped.
func tpath(r *http.Request) (string, error) {
	raw := chi.URLParam(r, "*")
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("reference %q: %v: %w", raw, err, derrors.InvalidArgument)
	}
	return p, nil
}

func (c *Catalog) handleTemplate(w http.ResponseWriter, r *http.Request) {
	p, err := tpath(r)
	if err != nil {
		c.renderError(w, r, err, "")
		return
	}
	ref, action, file := splitAction(p)
	switch action {
	case "diff":
		c.handleDiff(w, r, ref)
	case "file":
		c.handleFile(w, r, ref, file)
	case "preview":
		// A preview is a POST; GET shows the page with its form.
		http.Redirect(w, r, refPath(ref)+"#preview", http.StatusSeeOther)
	default:
		vp, note, err := c.version(r.Context(), ref)
		if err != nil {
			c.renderError(w, r, err, templateName(ref))
			return
		}
		c.renderVersion(w, r, http.StatusOK, vp, note, nil)
	}
}

// templateName returns the template name of a reference, for suggesting a
// search when it is not found.
func templateName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	ref, _, _ = strings.Cut(ref, ":")
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	return ref
}

func (c *Catalog) handleFile(w http.ResponseWriter, r *http.Request, ref, file string) {
	f, err := c.svc.File(r.Context(), ref, "", file)
	if err != nil {
		c.renderError(w, r, err, "")
		return
	}
	data := struct {
		Resolved, Path, Content string
		// Raw is the file through GET /v1/file, which serves it as inert
		// data (text/plain or application/octet-stream, CSP sandbox).
		Raw    string
		Size   int64
		Binary bool
	}{Resolved: f.Resolved, Path: f.File.Path, Size: f.File.Size, Content: string(f.Content), Binary: bytes.IndexByte(f.Content, 0) >= 0,
		Raw: "/v1/file?ref=" + url.QueryEscape(ref) + "&path=" + url.QueryEscape(file)}
	if data.Binary {
		data.Content = ""
	}
	c.render(w, r, http.StatusOK, "file", f.File.Path+" · "+f.Resolved, data)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
