package main

import (
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"
)

// genFS is a read-only registry directory of collections x templates x
// versions template versions laid out as indextest.Files lays them out
// (a Jinja template, its schema and an example per version), generated on
// each read: a million versions need no disk and no memory of their own,
// so the process's memory is the index's.
type genFS struct {
	collections, templates, versions int
}

// node is what a path of a genFS names.
type node struct {
	dir     bool
	entries []string // a directory's, sorted
	data    string   // a file's
}

// versionName is the name of version directory v, as indextest.Files names
// it: v1.0.0 … v1.4.4, then v2.0.0 ….
func versionName(v int) string {
	return fmt.Sprintf("v%d.%d.%d", 1+v/25, (v/5)%5, v%5)
}

// numbered returns n when s is prefix followed by a number below limit.
func numbered(s, prefix string, limit int) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0 && n < limit
}

// lookup resolves a slash-separated path.
func (g *genFS) lookup(name string) (*node, bool) {
	if !fs.ValidPath(name) {
		return nil, false
	}
	if name == "." {
		var e []string
		for c := 1; c < g.collections; c++ {
			e = append(e, fmt.Sprintf("col%d", c))
		}
		for t := range g.templates {
			e = append(e, fmt.Sprintf("t%d", t))
		}
		slices.Sort(e)
		return &node{dir: true, entries: e}, true
	}
	parts := strings.Split(name, "/")
	col := ""
	if c, ok := numbered(parts[0], "col", g.collections); ok && c > 0 {
		col, parts = parts[0]+"/", parts[1:]
		if len(parts) == 0 {
			e := make([]string, g.templates)
			for t := range e {
				e[t] = fmt.Sprintf("t%d", t)
			}
			slices.Sort(e)
			return &node{dir: true, entries: e}, true
		}
	}
	if _, ok := numbered(parts[0], "t", g.templates); !ok {
		return nil, false
	}
	tmpl := parts[0]
	if len(parts) == 1 {
		e := make([]string, g.versions)
		for v := range e {
			e[v] = versionName(v)
		}
		slices.Sort(e)
		return &node{dir: true, entries: e}, true
	}
	v := -1
	for i := range g.versions {
		if versionName(i) == parts[1] {
			v = i
			break
		}
	}
	if v < 0 {
		return nil, false
	}
	dir := col + tmpl + "/" + parts[1]
	if len(parts) == 2 {
		e := []string{"example.yaml", tmpl + ".jinja", tmpl + ".jinja.schema"}
		slices.Sort(e)
		return &node{dir: true, entries: e}, true
	}
	if len(parts) > 3 {
		return nil, false
	}
	switch parts[2] {
	case tmpl + ".jinja":
		return &node{data: fmt.Sprintf("resources: [] # %s %d", dir, v)}, true
	case tmpl + ".jinja.schema":
		return &node{data: "properties: {}\n"}, true
	case "example.yaml":
		return &node{data: fmt.Sprintf("resources:\n- name: x\n  type: %s:v1\n", tmpl)}, true
	}
	return nil, false
}

// Open implements fs.FS.
func (g *genFS) Open(name string) (fs.File, error) {
	n, ok := g.lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &genFile{info: info{name: pathBase(name), n: n}, r: strings.NewReader(n.data), g: g, path: name}, nil
}

// ReadDir implements fs.ReadDirFS.
func (g *genFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, ok := g.lookup(name)
	if !ok || !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return n.dirEntries(g, name), nil
}

// ReadFile implements fs.ReadFileFS.
func (g *genFS) ReadFile(name string) ([]byte, error) {
	n, ok := g.lookup(name)
	if !ok || n.dir {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	return []byte(n.data), nil
}

// Stat implements fs.StatFS.
func (g *genFS) Stat(name string) (fs.FileInfo, error) {
	n, ok := g.lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return info{name: pathBase(name), n: n}, nil
}

func (n *node) dirEntries(g *genFS, name string) []fs.DirEntry {
	out := make([]fs.DirEntry, len(n.entries))
	for i, e := range n.entries {
		p := e
		if name != "." {
			p = name + "/" + e
		}
		c, _ := g.lookup(p)
		out[i] = fs.FileInfoToDirEntry(info{name: e, n: c})
	}
	return out
}

func pathBase(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// info is a genFS node's fs.FileInfo.
type info struct {
	name string
	n    *node
}

func (i info) Name() string { return i.name }
func (i info) Size() int64  { return int64(len(i.n.data)) }
func (i info) Mode() fs.FileMode {
	if i.n.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.n.dir }
func (i info) Sys() any           { return nil }

// genFile is an open genFS file or directory.
type genFile struct {
	info
	r    *strings.Reader
	g    *genFS
	path string
	off  int // directory entries read
}

func (f *genFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *genFile) Close() error               { return nil }
func (f *genFile) Read(b []byte) (int, error) {
	if f.n.dir {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	return f.r.Read(b)
}

// ReadDir implements fs.ReadDirFile.
func (f *genFile) ReadDir(count int) ([]fs.DirEntry, error) {
	if !f.n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: f.name, Err: fs.ErrInvalid}
	}
	rest := f.n.dirEntries(f.g, f.path)[f.off:]
	if count > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if count > 0 && count < len(rest) {
		rest = rest[:count]
	}
	f.off += len(rest)
	return rest, nil
}
