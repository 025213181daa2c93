package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/openshift"
)

// maxInputFile bounds a configuration, values or template file dm reads.
const maxInputFile = 8 << 20

// expandFlags are dm expand's own flags.
type expandFlags struct {
	values     []string
	layout     bool
	name       string
	deployment string
}

// cmdExpand expands a configuration file or a template reference and
// prints the result: the flat config, or with --layout (and always with
// -o json) the config, the layout and the resolved references.
func cmdExpand(ctx context.Context, g *globals, p *printer, arg string, f *expandFlags, stdin io.Reader) error {
	props, err := g.propertyValues(f.values)
	if err != nil {
		return err
	}
	// Templates see -n as env.namespace, as they will when deployed.
	ns := g.kube.namespace
	if ns == "" {
		ns = "default"
	}
	req := &api.ExpandRequest{Properties: props, Name: f.name, Deployment: f.deployment, Namespace: ns}
	if isConfigArg(arg) {
		if err := readConfig(req, arg, stdin); err != nil {
			return err
		}
	} else {
		req.Ref = arg
	}
	if req.Deployment == "" {
		req.Deployment = deploymentName(arg)
	}
	b, err := g.backend()
	if err != nil {
		return err
	}
	res, err := b.Expand(ctx, req)
	if err != nil {
		return err
	}
	switch {
	case p.g.output == "json":
		_, err := p.structured(res)
		return err
	case f.layout:
		return printYAML(p.w, res)
	default:
		return printYAML(p.w, res.Config)
	}
}

// isConfigArg reports whether dm expand's argument is a configuration file
// rather than a reference: "-" (standard input) or an existing file.
func isConfigArg(arg string) bool {
	if arg == "-" {
		return true
	}
	st, err := os.Stat(arg)
	return err == nil && st.Mode().IsRegular()
}

// readConfig reads a configuration and the files its imports name,
// relative to the configuration's directory.
func readConfig(req *api.ExpandRequest, name string, stdin io.Reader) error {
	var data []byte
	var err error
	dir := "."
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, maxInputFile+1))
		req.ConfigName = "stdin"
	} else {
		data, err = readFileLimited(name)
		req.ConfigName = filepath.Base(name)
		dir = filepath.Dir(name)
	}
	if err != nil {
		return err
	}
	req.Config = string(data)
	cfg, err := expand.ParseConfig(data, req.ConfigName)
	if err != nil {
		// A kind: Template document is not a configuration; the engine
		// tells the two apart and reports what is wrong.
		return nil
	}
	for _, imp := range cfg.Imports {
		p := path.Clean(imp.Path)
		if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("%s: import %q: imports are paths inside the configuration's directory: %w", req.ConfigName, imp.Path, derrors.InvalidArgument)
		}
		content, err := readFileLimited(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return fmt.Errorf("%s: import %q: %w", req.ConfigName, imp.Path, err)
		}
		if req.Imports == nil {
			req.Imports = map[string]string{}
		}
		req.Imports[imp.Path] = string(content)
	}
	return nil
}

func readFileLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInputFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > maxInputFile {
		return nil, fmt.Errorf("%s is over the %d-byte limit: %w", name, maxInputFile, derrors.LimitExceeded)
	}
	return b, nil
}

// deploymentName names a deployment after its configuration file or
// template.
func deploymentName(arg string) string {
	if arg == "-" {
		return "stdin"
	}
	if isConfigArg(arg) {
		return strings.TrimSuffix(filepath.Base(arg), filepath.Ext(arg))
	}
	if r, err := resolveParseTemplate(arg); err == nil {
		return r
	}
	return "deployment"
}

// resolveParseTemplate returns the template name of a reference without
// resolving it.
func resolveParseTemplate(ref string) (string, error) {
	s := ref
	if i := strings.IndexAny(s, ":@"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "", errors.New("no template name")
	}
	return s, nil
}

// propertyValues merges --values files (in order) and then --properties.
func (g *globals) propertyValues(files []string) (map[string]any, error) {
	props := map[string]any{}
	for _, f := range files {
		b, err := readFileLimited(f)
		if err != nil {
			return nil, fmt.Errorf("--values: %w", err)
		}
		v, err := expand.DecodeValue(b)
		if err != nil {
			return nil, fmt.Errorf("--values %s: %w", f, err)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, fmt.Errorf("--values %s: want a mapping of property names to values: %w", f, derrors.InvalidArgument)
		}
		mergeValues(props, m)
	}
	for _, s := range g.properties {
		kv, err := parseProperties(s)
		if err != nil {
			return nil, err
		}
		mergeValues(props, kv)
	}
	if len(props) == 0 {
		return nil, nil
	}
	return props, nil
}

// mergeValues merges src into dst, recursing into mappings both have.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// parseProperties parses --properties: comma-separated KEY=VALUE pairs.
// VALUE is typed the way YAML types it (replicas=3 is a number, on=true a
// boolean, ports=[80,443] a list); KEY may be a dotted path into nested
// mappings (resources.limits.memory=1Gi). Commas inside brackets, braces or
// quotes do not separate pairs, and \, is a literal comma.
func parseProperties(s string) (map[string]any, error) {
	out := map[string]any{}
	for _, pair := range splitPairs(s) {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--properties %q: want KEY=VALUE: %w", pair, derrors.InvalidArgument)
		}
		var val any = ""
		if strings.TrimSpace(v) != "" {
			d, err := expand.DecodeValue([]byte(v))
			if err != nil {
				return nil, fmt.Errorf("--properties %s: value %q: %w", k, v, err)
			}
			val = d
		}
		keys := strings.Split(k, ".")
		m := out
		for i, part := range keys {
			if part == "" {
				return nil, fmt.Errorf("--properties %q: empty key segment: %w", k, derrors.InvalidArgument)
			}
			if i == len(keys)-1 {
				m[part] = val
				break
			}
			next, ok := m[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[part] = next
			}
			m = next
		}
	}
	return out, nil
}

func splitPairs(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
			continue
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case c == ',' && depth == 0:
			out = append(out, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return append(out, cur.String())
}

// processFlags are dm process's flags.
type processFlags struct {
	file        string
	params      []string
	paramFile   string
	rawTemplate bool
}

// cmdProcess processes an OpenShift-style template like oc process: the
// objects as a List, or the processed Template with --raw-template. JSON
// unless -o yaml.
func cmdProcess(f *processFlags, output string, w io.Writer, stdin io.Reader) error {
	if f.file == "" {
		return &usageError{errors.New("dm process needs -f FILE (or -f - for standard input)")}
	}
	var data []byte
	var err error
	if f.file == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, maxInputFile+1))
	} else {
		data, err = readFileLimited(f.file)
	}
	if err != nil {
		return err
	}
	t, err := openshift.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", f.file, err)
	}
	params := map[string]string{}
	if f.paramFile != "" {
		b, err := readFileLimited(f.paramFile)
		if err != nil {
			return fmt.Errorf("--param-file: %w", err)
		}
		if params, err = openshift.ParseParamFile(b); err != nil {
			return fmt.Errorf("--param-file %s: %w", f.paramFile, err)
		}
	}
	flags, err := openshift.ParseParamFlags(f.params)
	if err != nil {
		return err
	}
	for k, v := range flags {
		params[k] = v
	}
	out, err := t.Process(params, openshift.Options{})
	if err != nil {
		return fmt.Errorf("%s: %w", f.file, err)
	}
	var v any = out.ToList()
	if f.rawTemplate {
		v = out
	}
	return printDocument(w, output, v)
}

// printDocument prints v as YAML when output is "yaml", else as indented JSON.
func printDocument(w io.Writer, output string, v any) error {
	if output == "yaml" {
		return printYAML(w, v)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func printYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
