// Package index turns a registry's tree listing into its collections,
// templates and versions, with lint findings for everything that breaks the
// registry conventions.
//
// A registry has an unnamed root collection, a collection for each top-level
// directory, and the collections that registry.yaml at its root maps to other
// paths. A collection holds template directories; a template directory holds
// version directories (v1, v1.2, v1.2.3, v2.0.0-rc.1); a version directory
// holds one top-level template file named for the template, an optional
// schema, example.yaml and helpers. Building an index reads only the listing
// (paths and content hashes) and registry.yaml, never file contents, so a
// GitHub registry is indexed in a few requests.
package index

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/fetch"
)

// MetadataFile is the registry metadata file at the root of a registry.
const MetadataFile = "registry.yaml"

// ExampleFile is the example configuration every version should carry.
const ExampleFile = "example.yaml"

// SignatureFile is the Sigstore bundle that signs a version in a GitHub
// or local registry (dm sign writes it): a file of the version directory
// that is not part of the version. It is left out of Files, so it changes
// neither the content digest nor what is pushed to OCI (where a signature
// is a referrer of the artifact instead).
const SignatureFile = "signature.sigstore.json"

// SchemaSuffix is appended to a template file's name to name its schema.
const SchemaSuffix = engine.SchemaSuffix

// Severity grades a lint finding.
type Severity string

// Severities of findings. Errors make `dm lint` fail.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// A Finding is one lint result.
type Finding struct {
	Path     string   `json:"path"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s", f.Path, f.Severity, f.Message)
}

// Language is the template language, chosen by the template file's
// extension: the name of a language of the engine table
// (engine.Default).
type Language string

// Template languages, as the engine table names them.
const (
	Jinja     Language = "jinja"
	Python    Language = "python"
	GoTmpl    Language = "gotmpl"
	OpenShift Language = "openshift"
)

// LanguageOf returns the language of a template file by its extension and
// whether it has one. A .yaml/.yml/.json file is reported as OpenShift.
func LanguageOf(name string) (Language, bool) {
	return languageOf(engine.Default(), name)
}

func languageOf(langs *engine.Registry, name string) (Language, bool) {
	l, ok := langs.ForFile(name)
	return Language(l.Name), ok
}

// Version is one version directory of a template.
type Version struct {
	// Name is the directory name as written (v1); Semver is its canonical
	// form (v1.0.0).
	Name   string `json:"name"`
	Semver string `json:"version"`
	// Ref is the canonical reference that names this version.
	Ref string `json:"ref"`
	// Path is the version directory's path in the registry.
	Path string `json:"path"`
	// Files lists the directory's files, paths relative to Path, sorted.
	Files []fetch.Entry `json:"files"`
	// Template is the top-level template file, relative to Path; empty when
	// Problem says why there is none.
	Template string   `json:"template,omitempty"`
	Language Language `json:"language,omitempty"`
	Schema   string   `json:"schema,omitempty"`
	Example  string   `json:"example,omitempty"`
	// Digest is sha256 over the sorted relative paths and content hashes.
	Digest string `json:"digest"`
	// Signature is the version's SignatureFile, if it has one; it is not
	// among Files.
	Signature *fetch.Entry `json:"signature,omitempty"`
	// Source is the Identity of the registry that listed the version.
	// Content is cached by Source and Digest together, never by Digest
	// alone: another registry's listing may name the same hashes without
	// being able to read the files (see Registry.Identity).
	Source string `json:"source,omitempty"`
	// Problem, when set, makes the version unusable (no or several
	// template files).
	Problem string `json:"problem,omitempty"`
	// Findings are the lint findings under Path.
	Findings []Finding `json:"findings,omitempty"`

	// Num is Semver parsed, so resolution compares numbers, not strings.
	Num Semver `json:"-"`
}

// CacheKey keys what is cached of v's content: its Source and Digest.
func (v *Version) CacheKey() string { return v.Source + "@" + v.Digest }

// Prerelease reports whether v is a pre-release version.
func (v *Version) Prerelease() bool { return v.Num.Pre != "" }

// Semver is a parsed semantic version.
type Semver struct {
	Major, Minor, Patch int64
	Pre                 string
}

// ParseSemver parses a version as written in a directory name or a
// reference (v1, v1.2, v1.2.3-rc.1); omitted parts are zero. It is on the
// resolution hot path, so the common forms are parsed by hand.
func ParseSemver(v string) (Semver, bool) {
	var s Semver
	if len(v) < 2 || len(v) > 64 || v[0] != 'v' {
		return s, false
	}
	parts := [3]*int64{&s.Major, &s.Minor, &s.Patch}
	i, n := 1, 0
	for ; n < 3; n++ {
		start := i
		var x int64
		for i < len(v) && '0' <= v[i] && v[i] <= '9' {
			if x > (1<<62)/10 {
				return Semver{}, false
			}
			x = x*10 + int64(v[i]-'0')
			i++
		}
		if i == start || v[start] == '0' && i-start > 1 {
			return Semver{}, false // empty or leading zero
		}
		*parts[n] = x
		if i == len(v) || v[i] != '.' {
			break
		}
		i++
	}
	if n == 3 {
		return Semver{}, false // a fourth part
	}
	if i < len(v) {
		if v[i] != '-' || !semver.IsValid(v) || semver.Build(v) != "" {
			return Semver{}, false
		}
		s.Pre = v[i:]
	}
	return s, true
}

// File returns the entry of the file at rel, relative to the version
// directory.
func (v *Version) File(rel string) (fetch.Entry, bool) {
	i := sort.Search(len(v.Files), func(i int) bool { return v.Files[i].Path >= rel })
	if i < len(v.Files) && v.Files[i].Path == rel {
		return v.Files[i], true
	}
	return fetch.Entry{}, false
}

// Template is a template directory.
type Template struct {
	Name       string `json:"name"`
	Collection string `json:"collection"`
	Path       string `json:"path"`
	// Versions are sorted by semantic version, lowest first; directories
	// naming the same version (v1 and v1.0.0) are adjacent.
	Versions []*Version `json:"versions"`
}

// Collection is a directory holding template directories.
type Collection struct {
	// Name is empty for the root collection.
	Name string `json:"name"`
	Path string `json:"path"`
	// Mapped reports that registry.yaml placed the collection.
	Mapped    bool                 `json:"mapped,omitempty"`
	Templates map[string]*Template `json:"-"`
}

// Names returns the collection's template names, sorted.
func (c *Collection) Names() []string {
	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Metadata is the content of registry.yaml.
//
//	collections:
//	  apps: stacks/apps   # collection name -> directory in the registry
type Metadata struct {
	Collections map[string]string `json:"collections"`
}

// Snapshot is an immutable index of one registry at one version.
type Snapshot struct {
	// Registry is the reference prefix, such as github.com/acme/templates.
	Registry string `json:"registry"`
	// Tree is the listing the snapshot was built from.
	Tree *fetch.Tree `json:"-"`
	// Metadata is the raw registry.yaml, if any.
	Metadata []byte `json:"-"`
	// Collections by name; "" is the root collection.
	Collections map[string]*Collection `json:"-"`
	Findings    []Finding              `json:"findings"`
	Built       time.Time              `json:"built"`
	// Templates and Versions count what the snapshot holds.
	Templates, Versions int
}

// setSource marks every version as listed by the registry of identity id.
func (s *Snapshot) setSource(id string) {
	for _, c := range s.Collections {
		for _, t := range c.Templates {
			for _, v := range t.Versions {
				v.Source = id
			}
		}
	}
}

// Template returns the named template of a collection.
func (s *Snapshot) Template(collection, name string) (*Template, bool) {
	c, ok := s.Collections[collection]
	if !ok {
		return nil, false
	}
	t, ok := c.Templates[name]
	return t, ok
}

// VersionByRef returns the version whose canonical reference (Version.Ref,
// such as github.com/acme/templates/db/redis:v1.0.2) is ref; of two
// directories naming one version (v1 and v1.0.0), the later listed.
func (s *Snapshot) VersionByRef(ref string) (*Version, bool) {
	rest, ok := strings.CutPrefix(ref, s.Registry+"/")
	if !ok {
		return nil, false
	}
	path, _, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, false
	}
	collection, name := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		collection, name = path[:i], path[i+1:]
	}
	t, ok := s.Template(collection, name)
	if !ok {
		return nil, false
	}
	for i := len(t.Versions) - 1; i >= 0; i-- {
		if t.Versions[i].Ref == ref {
			return t.Versions[i], true
		}
	}
	return nil, false
}

// CollectionNames returns the collection names, sorted, the root ("") first.
func (s *Snapshot) CollectionNames() []string {
	names := make([]string, 0, len(s.Collections))
	for n := range s.Collections {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AllTemplates returns every template, sorted by collection then name.
func (s *Snapshot) AllTemplates() []*Template {
	var ts []*Template
	for _, c := range s.CollectionNames() {
		col := s.Collections[c]
		for _, n := range col.Names() {
			ts = append(ts, col.Templates[n])
		}
	}
	return ts
}

// Errors returns the number of error findings.
func (s *Snapshot) Errors() int {
	n := 0
	for _, f := range s.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

// dir is a directory of the listing, built for one Build. Its children
// are slices, not maps: a large registry has a directory per version,
// most holding a file or two, and a map per directory cost five times as
// much while the registry was indexed.
type dir struct {
	path, name string
	dirs       []*dir   // sorted by name
	files      []string // base names of the direct children
}

// child returns d's subdirectory name, or nil.
func (d *dir) child(name string) *dir {
	i, ok := slices.BinarySearchFunc(d.dirs, name, func(c *dir, name string) int { return strings.Compare(c.name, name) })
	if !ok {
		return nil
	}
	return d.dirs[i]
}

// hasFile reports whether d holds a file named name.
func (d *dir) hasFile(name string) bool { return slices.Contains(d.files, name) }

// Build indexes tree for the registry named by prefix. meta is the content
// of registry.yaml, or nil. Build never fails on a bad registry: what is
// wrong becomes findings, and what is usable is indexed.
func Build(prefix string, tree *fetch.Tree, meta []byte) *Snapshot {
	return build(engine.Default(), prefix, tree, meta)
}

// build is Build with the languages of langs.
func build(langs *engine.Registry, prefix string, tree *fetch.Tree, meta []byte) *Snapshot {
	b := &builder{
		s: &Snapshot{
			Registry:    prefix,
			Tree:        tree,
			Metadata:    meta,
			Collections: map[string]*Collection{},
			Built:       time.Now(),
		},
		entries:   tree.Entries,
		templates: map[string]bool{},
		langs:     langs,
		messages:  map[string]string{},
	}
	b.root = b.tree()
	b.collections()
	b.undiscoverable()
	sort.SliceStable(b.s.Findings, func(i, j int) bool { return b.s.Findings[i].Path < b.s.Findings[j].Path })
	if len(b.s.Findings) < cap(b.s.Findings)*3/4 {
		// The snapshot keeps its findings as long as it is served: not
		// the room appending left.
		b.s.Findings = slices.Clone(b.s.Findings)
	}
	b.versionFindings()
	return b.s
}

// versionFindings gives each version its findings as a part of the
// snapshot's, which are sorted by path: a version's are those at its
// directory, held once (a copy per version doubled what a large
// registry's findings cost, most of them one warning per version).
func (b *builder) versionFindings() {
	fs := b.s.Findings
	for _, c := range b.s.Collections {
		for _, t := range c.Templates {
			for _, v := range t.Versions {
				lo := sort.Search(len(fs), func(i int) bool { return fs[i].Path >= v.Path })
				hi := lo
				for hi < len(fs) && fs[hi].Path == v.Path {
					hi++
				}
				if hi > lo {
					// Capped: appending to a version's findings must not
					// write over the next version's.
					v.Findings = fs[lo:hi:hi]
				}
			}
		}
	}
}

type builder struct {
	s         *Snapshot
	entries   []fetch.Entry
	root      *dir
	templates map[string]bool // paths of indexed template directories
	langs     *engine.Registry
	// messages holds each finding's message once: a warning most versions
	// of a large registry get (no example) would otherwise keep a copy of
	// its text per version.
	messages map[string]string
}

func (b *builder) find(sev Severity, p, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if m, ok := b.messages[msg]; ok {
		msg = m
	} else {
		b.messages[msg] = msg
	}
	b.s.Findings = append(b.s.Findings, Finding{Path: p, Severity: sev, Message: msg})
}

func (b *builder) tree() *dir {
	root := &dir{}
	dirs := map[string]*dir{"": root}
	var ensure func(p string) *dir
	ensure = func(p string) *dir {
		if d, ok := dirs[p]; ok {
			return d
		}
		parent, name := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			parent, name = p[:i], p[i+1:]
		}
		d := &dir{path: p, name: name}
		dirs[p] = d
		pd := ensure(parent)
		pd.dirs = append(pd.dirs, d)
		return d
	}
	for _, e := range b.entries {
		parent, name := "", e.Path
		if i := strings.LastIndexByte(e.Path, '/'); i >= 0 {
			parent, name = e.Path[:i], e.Path[i+1:]
		}
		// A listing names a path once; were it not so, the copies of a
		// sorted one are adjacent.
		d := ensure(parent)
		if n := len(d.files); n == 0 || d.files[n-1] != name {
			d.files = append(d.files, name)
		}
	}
	// A sorted listing adds most children in order, but not all: a.b/x
	// sorts before a/y, while the directory a sorts before a.b.
	for _, d := range dirs {
		slices.SortFunc(d.dirs, func(x, y *dir) int { return strings.Compare(x.name, y.name) })
	}
	return root
}

func (b *builder) lookup(p string) *dir {
	d := b.root
	if p == "" {
		return d
	}
	for _, part := range strings.Split(p, "/") {
		if d = d.child(part); d == nil {
			return nil
		}
	}
	return d
}

func (b *builder) collections() {
	paths := map[string]string{"": ""}
	mapped := map[string]bool{}
	for _, c := range b.root.dirs {
		paths[c.name] = c.name
	}
	if b.s.Metadata != nil {
		var m Metadata
		if err := yaml.UnmarshalStrict(b.s.Metadata, &m); err != nil {
			b.find(Error, MetadataFile, "cannot parse: %v; collections fall back to top-level directories", err)
		}
		for name, p := range m.Collections {
			clean := strings.Trim(path.Clean("/"+p), "/")
			switch {
			case name == "" || strings.Contains(name, "/"):
				b.find(Error, MetadataFile, "collection name %q: must be non-empty and contain no slash", name)
				continue
			case p == "" || strings.Contains(p, ".."):
				b.find(Error, MetadataFile, "collection %q: path %q must be a directory inside the registry", name, p)
				continue
			case b.lookup(clean) == nil:
				b.find(Warning, MetadataFile, "collection %q: path %q does not exist", name, p)
				continue
			}
			paths[name] = clean
			mapped[name] = true
		}
	}
	for name, p := range paths {
		d := b.lookup(p)
		if d == nil {
			continue
		}
		c := &Collection{Name: name, Path: p, Mapped: mapped[name], Templates: map[string]*Template{}}
		for _, td := range d.dirs {
			tn := td.name
			if !b.isTemplateDir(tn, td) {
				continue
			}
			if t := b.template(c, tn, td); len(t.Versions) > 0 {
				c.Templates[tn] = t
			}
		}
		if len(c.Templates) > 0 || name == "" || mapped[name] {
			b.s.Collections[name] = c
			b.s.Templates += len(c.Templates)
			for _, t := range c.Templates {
				b.s.Versions += len(t.Versions)
			}
		}
	}
}

// isTemplateDir reports whether d, named name, looks like a template
// directory: a child is a version directory, or holds a file named for the
// template.
func (b *builder) isTemplateDir(name string, d *dir) bool {
	for _, vd := range d.dirs {
		if IsVersion(vd.name) {
			return true
		}
		for _, fn := range vd.files {
			if strings.TrimSuffix(fn, path.Ext(fn)) == name {
				if _, ok := b.langs.ForFile(fn); ok {
					return true
				}
			}
		}
	}
	return false
}

// IsVersion reports whether name is a valid version directory name:
// v + MAJOR[.MINOR[.PATCH]], optionally with a pre-release.
func IsVersion(name string) bool {
	_, ok := ParseSemver(name)
	return ok
}

func (b *builder) template(c *Collection, name string, d *dir) *Template {
	t := &Template{Name: name, Collection: c.Name, Path: d.path}
	b.templates[d.path] = true
	for _, vd := range d.dirs {
		vn := vd.name
		if !IsVersion(vn) {
			b.find(Error, vd.path, "version directory name %q is not a version (want v<MAJOR>[.<MINOR>[.<PATCH>]], such as v1.2.3)", vn)
			continue
		}
		t.Versions = append(t.Versions, b.version(c, name, vn, vd))
	}
	sort.SliceStable(t.Versions, func(i, j int) bool {
		if c := semver.Compare(t.Versions[i].Semver, t.Versions[j].Semver); c != 0 {
			return c < 0
		}
		return t.Versions[i].Name < t.Versions[j].Name
	})
	for i := 1; i < len(t.Versions); i++ {
		a, v := t.Versions[i-1], t.Versions[i]
		if a.Semver == v.Semver {
			// Each directory is flagged: either may be the one to rename.
			b.find(Error, a.Path, "duplicate version: %s and %s are both %s", a.Name, v.Name, v.Semver)
			b.find(Error, v.Path, "duplicate version: %s and %s are both %s", a.Name, v.Name, v.Semver)
		}
	}
	return t
}

// canonicalVersion expands v1 to v1.0.0 and v1.2-rc.1 to v1.2.0-rc.1.
func canonicalVersion(v string) string {
	c := semver.Canonical(v)
	if c == "" {
		return v
	}
	return c
}

func (b *builder) version(c *Collection, tmpl, name string, d *dir) *Version {
	v := &Version{Name: name, Semver: canonicalVersion(name), Path: d.path}
	v.Num, _ = ParseSemver(name)
	v.Ref = RefString(b.s.Registry, c.Name, tmpl, v.Semver)
	// Entries under a directory are contiguous in a sorted listing.
	prefix := d.path + "/"
	lo := sort.Search(len(b.entries), func(i int) bool { return b.entries[i].Path >= prefix })
	hi := lo
	for hi < len(b.entries) && strings.HasPrefix(b.entries[hi].Path, prefix) {
		hi++
	}
	v.Files = make([]fetch.Entry, 0, hi-lo)
	for _, e := range b.entries[lo:hi] {
		e.Path = e.Path[len(prefix):]
		if e.Path == SignatureFile {
			v.Signature = &e
			continue
		}
		v.Files = append(v.Files, e)
	}
	v.Digest = Digest(v.Files)

	// The version's findings are set from the snapshot's once all are
	// found (versionFindings).
	note := func(sev Severity, format string, args ...any) {
		b.find(sev, d.path, format, args...)
	}
	var code, data []string
	for _, fn := range d.files {
		if fn == SignatureFile {
			continue
		}
		if l, ok := b.langs.ForFile(fn); ok && l.Marker == fn {
			code = append(code, fn) // a directory template (Chart.yaml)
			continue
		}
		base, ext := strings.TrimSuffix(fn, path.Ext(fn)), path.Ext(fn)
		if base != tmpl {
			continue
		}
		if b.langs.IsCode(fn) {
			code = append(code, fn)
		} else if b.langs.IsTemplateExt(ext) {
			data = append(data, fn)
		}
	}
	sort.Strings(code)
	sort.Strings(data)
	switch {
	case len(code) == 1:
		v.Template = code[0]
	case len(code) > 1:
		v.Problem = fmt.Sprintf("several template files: %s", strings.Join(code, ", "))
	case len(data) == 1:
		v.Template = data[0]
	case len(data) > 1:
		v.Problem = fmt.Sprintf("several template files: %s", strings.Join(data, ", "))
	default:
		v.Problem = fmt.Sprintf("no template file (want %s)", b.langs.Describe(tmpl, true))
	}
	if v.Problem != "" {
		note(Error, "%s", v.Problem)
	} else {
		v.Language, _ = languageOf(b.langs, v.Template)
		// A language with a fixed schema name (values.schema.json).
		if l, _ := b.langs.Lookup(string(v.Language)); l.SchemaFile != "" {
			if d.hasFile(l.SchemaFile) {
				v.Schema = l.SchemaFile
			}
		}
	}
	for _, fn := range d.files {
		if !strings.HasSuffix(fn, SchemaSuffix) {
			continue
		}
		target := strings.TrimSuffix(fn, SchemaSuffix)
		switch {
		case target == v.Template:
			v.Schema = fn
		case v.Template == "":
			note(Error, "schema %s has no template file to describe", fn)
		default:
			note(Error, "schema %s is named for %s, not for the template file %s (want %s%s)", fn, target, v.Template, v.Template, SchemaSuffix)
		}
	}
	if d.hasFile(ExampleFile) {
		v.Example = ExampleFile
	} else {
		note(Warning, "no %s: every version should carry an example configuration", ExampleFile)
	}
	return v
}

// undiscoverable warns about template directories that no collection
// reaches, since no reference can name them.
func (b *builder) undiscoverable() {
	var walk func(d *dir, depth int)
	walk = func(d *dir, depth int) {
		for _, c := range d.dirs {
			n := c.name
			if depth > 0 && !b.templates[c.path] && b.isTemplateDir(n, c) && hasVersionDir(c) {
				b.find(Warning, c.path, "template directory %s is not at the root of a collection, so no reference reaches it (map its parent in %s)", n, MetadataFile)
			}
			walk(c, depth+1)
		}
	}
	walk(b.root, 0)
}

func hasVersionDir(d *dir) bool {
	for _, c := range d.dirs {
		if IsVersion(c.name) {
			return true
		}
	}
	return false
}

// RefString formats a canonical registry reference.
func RefString(registry, collection, template, version string) string {
	var sb strings.Builder
	sb.Grow(len(registry) + len(collection) + len(template) + len(version) + 3)
	sb.WriteString(registry)
	sb.WriteByte('/')
	if collection != "" {
		sb.WriteString(collection)
		sb.WriteByte('/')
	}
	sb.WriteString(template)
	if version != "" {
		sb.WriteByte(':')
		sb.WriteString(version)
	}
	return sb.String()
}

// Digest returns the content digest of a version directory's files: sha256
// over each relative path and content hash, in path order. It depends only on
// content, so it is the same from every source and across restarts.
func Digest(files []fetch.Entry) string {
	return fetch.ListingHashPrefixed("sha256:", files)
}
