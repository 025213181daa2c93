package expand

import (
	"path"

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
func importNames(files map[string][]byte, imports []Import, lim yamlLimits) (out map[string][]byte, names map[string]string, err error) {
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
		if _, ok := index.LanguageOf(k); ok {
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
			if _, ok := index.LanguageOf(full); ok {
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
