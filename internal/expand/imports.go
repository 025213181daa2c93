package expand

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/index"
)

// importNames returns files with every import also reachable by its name,
// as Deployment Manager's client arranged: a configuration's imports
// ({path, name}) and, for every template, the files its schema
// (<template>.schema) lists under its own imports, recursively. A
// schema's import path is relative to the schema's directory and may use
// ../ (the client keeps reads inside the import root); the file must be
// among files under the joined, cleaned path. Names that are already file
// paths keep their file. files is not modified. names maps each name
// added to its file's path (a type names the template by either).
func importNames(langs *engine.Registry, files map[string][]byte, imports []Import, lim yamlLimits) (out map[string][]byte, names map[string]string, err error) {
	out = files
	names = map[string]string{}
	copied := false
	// set makes name another key of p's file (and of its schema).
	set := func(name, p string) {
		if !copied {
			out = make(map[string][]byte, len(files)+4)
			for k, v := range files {
				out[k] = v
			}
			copied = true
		}
		out[name] = out[p]
		names[name] = p
		if s, ok := out[p+index.SchemaSuffix]; ok {
			if _, taken := out[name+index.SchemaSuffix]; !taken {
				out[name+index.SchemaSuffix] = s
			}
		}
	}
	for _, imp := range imports {
		if imp.Name != "" && imp.Name != imp.Path {
			if _, ok := files[imp.Name]; !ok {
				set(imp.Name, imp.Path)
			}
		}
	}
	// real maps every template name to its file's path, whose directory
	// a schema's imports are relative to.
	real := map[string]string{}
	var todo []string
	for _, k := range sortedKeys(out) {
		if _, ok := langs.ForFile(k); ok {
			real[k] = k
			todo = append(todo, k)
		}
	}
	for _, imp := range imports {
		if imp.Name != "" {
			real[imp.Name] = imp.Path
		}
	}
	done := map[string]bool{}
	for len(todo) > 0 {
		t := todo[0]
		todo = todo[1:]
		p := real[t]
		if done[p] {
			continue
		}
		done[p] = true
		sch, ok := out[p+index.SchemaSuffix]
		if !ok {
			continue
		}
		imps, err := schemaImports(sch, p+index.SchemaSuffix, lim)
		if err != nil {
			return nil, nil, err
		}
		for i, imp := range imps {
			full := path.Join(path.Dir(p), imp.Path)
			if _, ok := out[full]; !ok {
				return nil, nil, at(p+index.SchemaSuffix, 0, invalid("imports[%d]: %s (%s from the schema's directory) was not sent with the configuration", i, imp.Path, full))
			}
			name := imp.Name
			if name == "" {
				name = imp.Path
			}
			if _, ok := out[name]; !ok {
				set(name, full)
			}
			if _, ok := langs.ForFile(full); ok {
				real[name] = full
				todo = append(todo, name)
			}
		}
	}
	return out, names, nil
}

// SchemaImports returns the imports a schema lists (strings or {path,
// name}); file names the schema in errors. Paths are relative to the
// schema's directory. dm uses it to send a template's schema imports along.
func SchemaImports(data []byte, file string) ([]Import, error) {
	return schemaImports(data, file, yamlLimits{maxBytes: defaultMaxInputBytes, bytesField: "MaxInputBytes", maxAliases: defaultMaxYAMLAliases})
}

func schemaImports(data []byte, file string, lim yamlLimits) ([]Import, error) {
	v, err := decodeYAML(data, lim)
	if err != nil {
		return nil, at(file, yamlErrorLine(err), invalid("%v", err))
	}
	m, ok := v.(map[string]any)
	if !ok || m["imports"] == nil {
		return nil, nil
	}
	cfg, err := configFromDoc(map[string]any{"imports": m["imports"]}, func(...any) int { return 0 })
	if err != nil {
		return nil, at(file, 0, err)
	}
	return cfg.Imports, nil
}

// finiteLayout applies finite to the properties of a layout.
func finiteLayout(l []*LayoutResource) {
	for _, n := range l {
		finite(n.Properties)
		for i := range n.Outputs {
			n.Outputs[i].Value = finite(n.Outputs[i].Value)
		}
		finiteLayout(n.Resources)
	}
}

// ReadImports reads the files a configuration imports, as Deployment
// Manager's client gathered them to send along: each import by its path
// as written, a template's schema (<file>.schema) when there is one, and
// the files a schema lists under imports (relative to the schema's
// directory), recursively. read reads a slash path relative to the
// configuration's directory; an error wrapping fs.ErrNotExist or
// derrors.NotFound for a schema means the template has none. dm reads a configuration's imports
// from disk with it, and registryd a tested example's from the version's
// files.
func ReadImports(cfg *Config, name string, read func(p string) ([]byte, error)) (map[string][]byte, error) {
	files := map[string][]byte{}
	var todo []string
	langs := engine.Default()
	get := func(key, from string) error {
		if _, done := files[key]; done {
			return nil
		}
		if path.IsAbs(key) {
			return fmt.Errorf("%s: import %q: imports are paths relative to the configuration: %w", from, key, derrors.InvalidArgument)
		}
		b, err := read(key)
		if err != nil {
			return fmt.Errorf("%s: import %q: %w", from, key, err)
		}
		files[key] = b
		if _, ok := langs.ForFile(key); ok {
			todo = append(todo, key)
		}
		return nil
	}
	for _, imp := range cfg.Imports {
		if err := urlImport(imp.Path, name); err != nil {
			return nil, err
		}
	}
	for _, imp := range cfg.Imports {
		if err := get(imp.Path, name); err != nil {
			return nil, err
		}
	}
	for len(todo) > 0 {
		key := todo[0]
		todo = todo[1:]
		sk := key + index.SchemaSuffix
		if _, done := files[sk]; done {
			continue
		}
		b, err := read(sk)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, derrors.NotFound) {
			continue // no schema
		}
		if err != nil {
			return nil, fmt.Errorf("%s: schema %q: %w", key, sk, err)
		}
		files[sk] = b
		imps, err := SchemaImports(b, sk)
		if err != nil {
			return nil, err
		}
		for _, imp := range imps {
			if err := urlImport(imp.Path, sk); err != nil {
				return nil, err
			}
		}
		for _, imp := range imps {
			if err := get(path.Join(path.Dir(path.Clean(key)), imp.Path), sk); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// urlImport refuses an import that is a URL (path: https://...), which
// gcloud downloaded for Deployment Manager: dm reads imports from files,
// and expanding a configuration does not reach the network.
func urlImport(p, from string) error {
	lower := strings.ToLower(p)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return nil
	}
	return fmt.Errorf("%s: import %q is a URL, which gcloud downloaded for Deployment Manager; dm reads imports from files only: save the file beside the configuration and import it by its path, with name: set to the name templates use: %w", from, p, derrors.InvalidArgument)
}

// ReadVersionImports is ReadImports for a configuration that is a file of
// a registry version (its example), at example relative to the version
// directory: imports are read with read, by their path relative to the
// version directory, and may not leave it, since a version is
// self-contained.
func ReadVersionImports(cfg *Config, example string, read func(rel string) ([]byte, error)) (map[string][]byte, error) {
	dir := path.Dir(example)
	return ReadImports(cfg, example, func(key string) ([]byte, error) {
		rel := path.Join(dir, key)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("leaves the version directory: %w", derrors.InvalidArgument)
		}
		return read(rel)
	})
}
