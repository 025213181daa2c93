package starlark

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/lib/math"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/dmhq/dm/internal/expand/engine"

	"github.com/dmhq/dm/internal/expand/value"
)

// starlarkOptions are the dialect .py templates run in: Python-like
// top-level code and while loops are allowed (steps bound them);
// recursion is not, since deep recursion grows the Go stack.
func starlarkOptions() *syntax.FileOptions {
	return &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}
}

// moduleExport is the name under which a loaded module exports itself, for
// `import x` (load cannot bind names with a leading underscore).
const moduleExport = "this_module"

// builtinModules names the Python modules dm provides, for messages.
const builtinModules = "collections, copy, hashlib, json, math, random, re, six, string, sys, yaml"

func isBuiltinModule(m string) bool {
	switch m {
	case "collections", "copy", "hashlib", "json", "math", "random", "re", "six", "string", "sys", "yaml":
		return true
	}
	return false
}

var (
	importRE     = regexp.MustCompile(`^import\s+(.+?)\s*(#.*)?$`)
	fromImportRE = regexp.MustCompile(`^from\s+([\w.]+)\s+import\s+\(?\s*(.+?)\s*\)?\s*(#.*)?$`)
	indentedRE   = regexp.MustCompile(`^\s+(import\s+[\w.]+|from\s+[\w.]+\s+import\s)`)
	dottedRE     = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$`)
	unsupported  = regexp.MustCompile(`^\s*(class|try|except|finally|with|raise|assert|nonlocal|yield|async|await|del|print\s+[^(\s=])\b`)
)

// pyImport is one name an import statement binds.
type pyImport struct {
	module string // dotted module name
	local  string // name bound in the importing file
	member string // member of the module, or moduleExport
	// root, for `import a.b.c`, binds local (a) to a package struct
	// holding the module at b.c.
	root bool
}

// rewriteImports turns the Python import statements DM templates use into
// Starlark load statements on the same lines, so positions stay true.
// exists reports whether a module file exists (for `from pkg import mod`).
func rewriteImports(file string, src []byte, exists func(module string) bool) ([]byte, error) {
	lines := strings.Split(string(src), "\n")
	rootLine := map[string]int{} // `import a.b` binds a once
	rootMods := map[string][]string{}
	var order []string
	loads := make([][]pyImport, len(lines))
	for i, l := range lines {
		t := strings.TrimRight(l, "\r")
		if m := indentedRE.FindStringSubmatch(t); m != nil {
			// An import inside a function runs when the function does, as
			// in Python (the Cloud Foundation Toolkit's cloud_function.py
			// imports upload only when it uploads).
			call, ok := lazyImport(t)
			if !ok {
				return nil, engine.At(file, i+1, engine.Invalid("cannot read import statement %q: dm runs an import inside a block as `from M import a, b` or `import M` (one module without dots)", strings.TrimSpace(t)))
			}
			lines[i] = call
			continue
		}
		if m := importRE.FindStringSubmatch(t); m != nil {
			for _, part := range strings.Split(m[1], ",") {
				f := strings.Fields(part)
				switch {
				case len(f) == 1 && dottedRE.MatchString(f[0]):
					mod := f[0]
					if !strings.Contains(mod, ".") {
						loads[i] = append(loads[i], pyImport{module: mod, local: mod, member: moduleExport})
						continue
					}
					root := mod[:strings.IndexByte(mod, '.')]
					if _, ok := rootLine[root]; !ok {
						rootLine[root] = i
						order = append(order, root)
					}
					rootMods[root] = append(rootMods[root], mod)
				case len(f) == 3 && f[1] == "as" && dottedRE.MatchString(f[0]):
					loads[i] = append(loads[i], pyImport{module: f[0], local: f[2], member: moduleExport})
				default:
					return nil, engine.At(file, i+1, engine.Invalid("cannot read import statement %q", strings.TrimSpace(t)))
				}
			}
			lines[i] = ""
			continue
		}
		if m := fromImportRE.FindStringSubmatch(t); m != nil {
			mod := m[1]
			lines[i] = ""
			if mod == "__future__" {
				continue
			}
			for _, part := range strings.Split(m[2], ",") {
				f := strings.Fields(part)
				var name, local string
				switch {
				case len(f) == 1:
					name, local = f[0], f[0]
				case len(f) == 3 && f[1] == "as":
					name, local = f[0], f[2]
				default:
					return nil, engine.At(file, i+1, engine.Invalid("cannot read import statement %q", strings.TrimSpace(t)))
				}
				if name == "*" {
					return nil, engine.At(file, i+1, engine.Invalid("from %s import * is not supported; import the names you use", mod))
				}
				if exists(mod + "." + name) {
					loads[i] = append(loads[i], pyImport{module: mod + "." + name, local: local, member: moduleExport})
				} else {
					loads[i] = append(loads[i], pyImport{module: mod, local: local, member: name})
				}
			}
			continue
		}
		if pop, ok := delAsPop(t); ok {
			lines[i] = pop
			continue
		}
		if m := unsupported.FindStringSubmatch(t); m != nil && !strings.HasPrefix(strings.TrimSpace(t), "#") {
			if m[1] == "class" {
				return nil, engine.At(file, i+1, engine.Invalid(`Python's "class" is supported only at the top level of a file (dm translates top-level classes of methods and attributes)`))
			}
			return nil, engine.At(file, i+1, engine.Invalid("Python's %q is not supported: dm runs .py templates as Starlark, with no with, yield, nonlocal, print statement, del of a name or re-raise", strings.TrimSpace(m[1])))
		}
	}
	for _, root := range order {
		loads[rootLine[root]] = append(loads[rootLine[root]], pyImport{module: strings.Join(rootMods[root], ","), local: root, member: moduleExport, root: true})
	}
	for i, ls := range loads {
		if len(ls) == 0 {
			continue
		}
		var stmts []string
		for _, imp := range ls {
			target := "mod:" + imp.module
			if imp.root {
				target = "pkg:" + imp.module
			}
			stmts = append(stmts, fmt.Sprintf("load(%q, %s=%q)", target, imp.local, imp.member))
		}
		lines[i] = strings.Join(stmts, "; ")
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// lazyImportRE matches an import statement inside a block: its
// indentation and the statement.
var lazyImportRE = regexp.MustCompile(`^(\s+)(?:from\s+([\w.]+)\s+import\s+\(?\s*(.+?)\s*\)?|import\s+(\w+)(?:\s+as\s+(\w+))?)\s*(#.*)?$`)

// lazyImport translates an import inside a block (a function's body) into
// a call of __dm_import__, which loads the module when the statement runs:
// `from M import a, b as c` is `a, c = __dm_import__("M", "a", "b")`,
// `import M as N` is `N = __dm_import__("M")`.
func lazyImport(line string) (string, bool) {
	m := lazyImportRE.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	if m[4] != "" {
		local := m[4]
		if m[5] != "" {
			local = m[5]
		}
		return fmt.Sprintf("%s%s = %s(%q)", m[1], local, starImport, m[4]), true
	}
	var locals, names []string
	for _, part := range strings.Split(m[3], ",") {
		f := strings.Fields(part)
		switch {
		case len(f) == 1 && f[0] != "*":
			locals, names = append(locals, f[0]), append(names, strconv.Quote(f[0]))
		case len(f) == 3 && f[1] == "as":
			locals, names = append(locals, f[2]), append(names, strconv.Quote(f[0]))
		default:
			return "", false
		}
	}
	return fmt.Sprintf("%s%s = %s(%q, %s)", m[1], strings.Join(locals, ", "), starImport, m[2], strings.Join(names, ", ")), true
}

// delRE matches a del statement: its indentation and its target.
var delRE = regexp.MustCompile(`^(\s*)del\s+(.+?)\s*(#.*)?$`)

// delAsPop translates `del x[key]`, one subscript of a dict or a list, to
// __dm_del__(x, key): x.pop(key), which removes the same item (and fails
// as del does when it is missing), or an object's __delitem__; other del
// statements (a name, a slice, several targets) stay unsupported.
func delAsPop(line string) (string, bool) {
	m := delRE.FindStringSubmatch(line)
	if m == nil || !strings.HasSuffix(m[2], "]") {
		return "", false
	}
	target := m[2]
	depth, open := 0, -1
	for i := 0; i < len(target); i++ {
		switch c := target[i]; c {
		case '[', '(', '{':
			if depth == 0 && c == '[' {
				open = i
			}
			depth++
		case ']', ')', '}':
			depth--
		case ',':
			if depth == 0 {
				return "", false // del a[1], b[2]
			}
		case ':':
			if depth == 1 && open >= 0 {
				return "", false // a slice
			}
		case '"', '\'':
			// A string literal: skip it, brackets and all.
			end, nl, ok := scanString(target, i)
			if !ok || nl > 0 {
				return "", false
			}
			i = end - 1
		}
	}
	if open <= 0 || depth != 0 {
		return "", false
	}
	return m[1] + starDel + "(" + target[:open] + ", " + target[open+1:len(target)-1] + ")", true
}

// moduleFile returns the file of a dotted module name: relative to the
// importing file's directory first (Python 2's implicit relative imports,
// which DM templates used), then from the root of the template's files.
func moduleFile(files map[string][]byte, fromDir, module string) (string, bool) {
	rel := strings.ReplaceAll(module, ".", "/")
	var cands []string
	if fromDir != "" && fromDir != "." {
		cands = append(cands, path.Join(fromDir, rel)+".py", path.Join(fromDir, rel, "__init__.py"))
	}
	cands = append(cands, rel+".py", path.Join(rel, "__init__.py"))
	for _, c := range cands {
		if _, ok := files[c]; ok {
			return c, true
		}
	}
	return "", false
}

// starlarkProgram compiles a .py file of a bundle, cached by content.
func (e *Engine) starlarkProgram(b *fileSet, file string) (*starlark.Program, error) {
	v, err := engine.Cached(e.cache, "star:"+b.key+":"+file, func() (any, error) {
		src, ok := b.files[file]
		if !ok {
			return nil, fmt.Errorf("no file %s", file)
		}
		src = universalNewlines(src)
		dir := path.Dir(file)
		exists := func(mod string) bool {
			if isBuiltinModule(mod) {
				return true
			}
			_, ok := moduleFile(b.files, dir, mod)
			return ok
		}
		classless, err := translateClasses(file, src)
		if err != nil {
			return nil, err
		}
		shimmed, err := rewritePython(file, classless)
		if err != nil {
			return nil, err
		}
		shimmed = rewriteOperators(shimmed)
		tried, hasTry, err := rewriteTry(file, rewriteStatements(shimmed))
		if err != nil {
			return nil, err
		}
		rewritten, err := rewriteImports(file, tried, exists)
		if err != nil {
			return nil, err
		}
		rewritten, hasGlobals, err := rewriteGlobals(file, rewritten)
		if err != nil {
			return nil, err
		}
		f, err := starlarkOptions().Parse(file, rewritten, 0)
		if err != nil {
			return nil, starlarkSyntaxError(file, src, err)
		}
		if hasGlobals {
			declareGlobalsDict(f)
		}
		if hasTry {
			if err := translateTry(file, f); err != nil {
				return nil, err
			}
		}
		boundStarlark(f)
		prog, err := starlark.FileProgram(f, func(name string) bool { _, ok := e.bounds[name]; return ok })
		if err != nil {
			return nil, starlarkSyntaxError(file, src, err)
		}
		return prog, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*starlark.Program), nil
}

// universalNewlines turns each lone carriage return (old Mac line ends)
// into a newline, as Python reads source and Starlark's scanner counts
// lines: the rewrites before the parse work on lines split at "\n", and
// must number them as the parser does. "\r\n" stays as it is.
func universalNewlines(src []byte) []byte {
	if !bytes.ContainsRune(src, '\r') {
		return src
	}
	out := slices.Clone(src)
	for i, c := range out {
		if c == '\r' && (i+1 == len(out) || out[i+1] != '\n') {
			out[i] = '\n'
		}
	}
	return out
}

func starlarkSyntaxError(file string, src []byte, err error) error {
	var se syntax.Error
	var rl resolve.ErrorList
	line, msg := 0, err.Error()
	switch {
	case errors.As(err, &se):
		line, msg = int(se.Pos.Line), se.Msg
	case errors.As(err, &rl) && len(rl) > 0:
		line, msg = int(rl[0].Pos.Line), rl[0].Msg
		if len(rl) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(rl)-1)
		}
	}
	return engine.At(file, line, engine.Invalid("%s (dm runs .py templates as Starlark, a Python dialect)", msg))
}

// starlarkRun is the state of one .py invocation: modules loaded so far.
type starlarkRun struct {
	e *Engine
	// b holds the invocation's files, by value: one allocation with the
	// run.
	b       fileSet
	modules map[string]starlark.StringDict
	loading map[string]bool
	dump    *dumpRecord
}

// dumpRecord remembers the last yaml.dump result, so a template returning
// it unchanged is not parsed again.
type dumpRecord struct {
	text  string
	value any
}

func (sr *starlarkRun) load(thread *starlark.Thread, module string) (starlark.StringDict, error) {
	if d, ok := sr.modules[module]; ok {
		return d, nil
	}
	if sr.loading[module] {
		return nil, fmt.Errorf("import cycle through %s", strings.TrimPrefix(module, "mod:"))
	}
	sr.loading[module] = true
	defer delete(sr.loading, module)
	from := ""
	for i := 0; i < thread.CallStackDepth(); i++ {
		// The importing file: the innermost frame with a position (an
		// import inside a function calls __dm_import__, a builtin).
		if fr := thread.CallFrame(i); fr.Pos.Filename() != "" {
			from = path.Dir(fr.Pos.Filename())
			break
		}
	}
	var d starlark.StringDict
	switch {
	case strings.HasPrefix(module, "pkg:"):
		// import a.b.c [, a.d]: a is a struct of structs.
		root := map[string]any{}
		for _, mod := range strings.Split(module[4:], ",") {
			md, err := sr.load(thread, "mod:"+mod)
			if err != nil {
				return nil, err
			}
			parts := strings.Split(mod, ".")
			cur := root
			for _, p := range parts[1 : len(parts)-1] {
				next, ok := cur[p].(map[string]any)
				if !ok {
					next = map[string]any{}
					cur[p] = next
				}
				cur = next
			}
			cur[parts[len(parts)-1]] = md[moduleExport]
		}
		d = starlark.StringDict{moduleExport: nestedStruct(root)}
	case strings.HasPrefix(module, "mod:"):
		name := module[4:]
		switch name {
		case "yaml":
			d = sr.yamlModule()
		case "json":
			d = jsonModule(sr.e.maxOut)
		case "six":
			d = sixModule(sr.e.bounds)
		case "copy":
			d = copyModule()
		case "hashlib":
			d = hashlibModule()
		case "re":
			d = reModule(sr.e.regexTimeout, sr.e.cache)
		case "collections":
			d = collectionsModule()
		case "string":
			d = stringModule()
		case "random":
			d = randomModule()
		case "sys":
			d = sysModule()
		case "math":
			d = starlark.StringDict{}
			for k, v := range math.Module.Members {
				d[k] = v
			}
		default:
			file, ok := moduleFile(sr.b.files, from, name)
			if !ok {
				return nil, fmt.Errorf("no module named %s; importable are %s and the template's own .py files (%s)", name, builtinModules, strings.Join(pyFiles(sr.b.files), ", "))
			}
			prog, err := sr.e.starlarkProgram(&sr.b, file)
			if err != nil {
				return nil, err
			}
			g, err := prog.Init(thread, sr.e.bounds)
			if err != nil {
				return nil, err
			}
			// Not frozen: as in Python, a helper may keep state in its
			// module (a dict it fills, names it declares global). The
			// module lives for this invocation only.
			d = g
		}
		m := make(starlark.StringDict, len(d)+1)
		for k, v := range d {
			m[k] = v
		}
		if isBuiltinModule(name) {
			recoverBuiltins(m)
		}
		m[moduleExport] = starlarkstruct.FromStringDict(starlark.String(name), d)
		d = m
	default:
		return nil, fmt.Errorf("cannot load %q", module)
	}
	sr.modules[module] = d
	return d, nil
}

func nestedStruct(m map[string]any) starlark.Value {
	d := starlark.StringDict{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			d[k] = nestedStruct(sub)
		} else {
			d[k] = v.(starlark.Value)
		}
	}
	return starlarkstruct.FromStringDict(starlarkstruct.Default, d)
}

func pyFiles(files map[string][]byte) []string {
	var out []string
	for f := range files {
		if strings.HasSuffix(f, ".py") {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// yamlModule provides PyYAML's dump, safe_dump, load and safe_load.
func (sr *starlarkRun) yamlModule() starlark.StringDict {
	dump := func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) < 1 {
			return nil, fmt.Errorf("%s: missing the value to dump", b.Name())
		}
		out, err := pyYAMLDumps(b.Name(), args[0], kwargs, sr.e.maxOut)
		if err != nil {
			return nil, err
		}
		s := string(out)
		// The value dumped, kept so that returning the text costs no
		// parse; one dm's values cannot hold (a mapping with integer
		// keys, which PyYAML dumps) is parsed from the text if returned.
		sr.dump = nil
		if v, err := fromStarlark(args[0]); err == nil {
			sr.dump = &dumpRecord{text: s, value: v}
		}
		return starlark.String(s), nil
	}
	load := func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		// yaml.load(s, Loader=yaml.FullLoader): every loader reads as
		// safe_load does here.
		var s string
		if err := starlark.UnpackPositionalArgs(b.Name(), args, nil, 1, &s); err != nil {
			return nil, err
		}
		order := engine.NewOrder()
		v, err := sr.e.decodeYAML([]byte(s), order)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		return starlarkValue(order, v), nil // PyYAML's resolution, document order
	}
	return starlark.StringDict{
		"dump":      starlark.NewBuiltin("yaml.dump", dump),
		"safe_dump": starlark.NewBuiltin("yaml.safe_dump", dump),
		"load":      starlark.NewBuiltin("yaml.load", load),
		"safe_load": starlark.NewBuiltin("yaml.safe_load", load),
		// Loader classes exist for yaml.load(s, Loader=...).
		"Loader":     starlark.String("Loader"),
		"SafeLoader": starlark.String("SafeLoader"),
		"FullLoader": starlark.String("FullLoader"),
		"BaseLoader": starlark.String("BaseLoader"),
	}
}

// jsonModule provides Python's json.dumps and json.loads.
func jsonModule(limit int) starlark.StringDict {
	loads := func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var s string
		if err := starlark.UnpackPositionalArgs(b.Name(), args, nil, 1, &s); err != nil {
			return nil, err
		}
		v, err := value.DecodeJSON([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("json.loads: %w", err)
		}
		return toStarlark(v), nil
	}
	return starlark.StringDict{
		"dumps": jsonDumps(limit),
		"loads": starlark.NewBuiltin("json.loads", loads),
	}
}

// toStarlark converts a plain value to Starlark; maps in sorted key order.
func toStarlark(v any) starlark.Value {
	switch v := v.(type) {
	case nil:
		return starlark.None
	case string:
		return starlark.String(v)
	case bool:
		return starlark.Bool(v)
	case int64:
		return starlark.MakeInt64(v)
	case int:
		return starlark.MakeInt(v)
	case float64:
		return starlark.Float(v)
	case []any:
		l := make([]starlark.Value, len(v))
		for i, e := range v {
			l[i] = toStarlark(e)
		}
		return starlark.NewList(l)
	case map[string]any:
		d := starlark.NewDict(len(v))
		for _, k := range engine.SortedKeys(v) {
			_ = d.SetKey(starlark.String(k), toStarlark(v[k])) // a fresh dict is not frozen
		}
		return d
	default:
		return starlark.String(fmt.Sprint(v))
	}
}

// fromStarlark converts a Starlark value to a plain value.
func fromStarlark(v starlark.Value) (any, error) {
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.String:
		return string(v), nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return i, nil
		}
		f, _ := new(big.Float).SetInt(v.BigInt()).Float64()
		return f, nil
	case starlark.Float:
		return float64(v), nil
	case *starlark.List:
		out := make([]any, v.Len())
		for i := range out {
			e, err := fromStarlark(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case starlark.Tuple:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := fromStarlark(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case *starlark.Dict:
		out := make(map[string]any, v.Len())
		for _, item := range v.Items() {
			k, ok := item[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s; want a string", item[0], item[0].Type())
			}
			e, err := fromStarlark(item[1])
			if err != nil {
				return nil, err
			}
			out[string(k)] = e
		}
		return out, nil
	case *starlarkstruct.Struct:
		d := starlark.StringDict{}
		v.ToStringDict(d)
		out := make(map[string]any, len(d))
		for k, e := range d {
			c, err := fromStarlark(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	default:
		return nil, fmt.Errorf("cannot convert a %s to YAML", v.Type())
	}
}

// Engine runs Python-style (.py) templates as Starlark, after rewriting
// the Python that Starlark lacks (classes, global, literals, Python 2
// forms), with shims for yaml, json, six, copy and Python's str methods.
// It is safe for concurrent use.
type Engine struct {
	cache  engine.Cache
	maxOut int
	steps  uint64
	// regexTimeout bounds a match of the re module on the backtracking
	// engine.
	regexTimeout time.Duration
	// bounds are the builtins of boundStarlark's rewrite, built once.
	bounds     starlark.StringDict
	decodeYAML func(data []byte, order *engine.Order) (any, error)
}

// New returns an engine whose runs are bounded by maxOutputBytes
// (Options.MaxOutputBytes) and steps Starlark steps
// (Options.StarlarkSteps), and matches of the re module by regexTimeout
// (Options.RegexTimeout), caching compiled programs in cache.
// yaml.load decodes with decodeYAML, recording key order in order, so
// that values read as in configurations.
func New(maxOutputBytes int, steps uint64, regexTimeout time.Duration, cache engine.Cache, decodeYAML func(data []byte, order *engine.Order) (any, error)) *Engine {
	return &Engine{cache: cache, maxOut: maxOutputBytes, steps: steps, regexTimeout: regexTimeout, bounds: starlarkBounds(maxOutputBytes), decodeYAML: decodeYAML}
}

// Name returns "python".
func (*Engine) Name() string { return "python" }

// Check compiles a Python-style template and the modules it loads.
func (e *Engine) Check(_ context.Context, files map[string][]byte, file string) error {
	_, err := e.starlarkProgram(&fileSet{key: "imports:" + engine.FilesKey(files), files: files}, file)
	return err
}

// Render runs a .py template's GenerateConfig(context): its output is YAML
// text or a configuration value.
func (e *Engine) Render(ctx context.Context, inv engine.Invocation) (engine.Output, error) {
	v, err := e.render(ctx, inv)
	if err != nil {
		return engine.Output{}, err
	}
	if b, ok := v.([]byte); ok {
		return engine.Output{YAML: b}, nil
	}
	return engine.Output{Value: v}, nil
}

func (e *Engine) render(ctx context.Context, inv engine.Invocation) (_ any, err error) {
	defer engine.Recover("Starlark", inv.File, nil, &err)
	sr := &starlarkRun{e: e, b: fileSet{key: inv.FilesKey, files: inv.Files}, modules: map[string]starlark.StringDict{}, loading: map[string]bool{}}
	prog, err := e.starlarkProgram(&sr.b, inv.File)
	if err != nil {
		return nil, err
	}
	var order engine.KeyOrder = engine.Sorted{}
	if inv.Order != nil {
		order = inv.Order
	}
	// The print function captures these, not inv, which would then
	// escape to the heap.
	invFile, label, printFn := inv.File, inv.Label, inv.Print
	thread := &starlark.Thread{
		Name: inv.File,
		Load: sr.load,
		Print: func(th *starlark.Thread, msg string) {
			file, line := invFile, 0
			if th.CallStackDepth() > 1 {
				if fr := th.CallFrame(1); fr.Pos.Filename() != "" {
					file, line = fr.Pos.Filename(), int(fr.Pos.Line)
				}
			}
			if printFn != nil {
				printFn(ctx, label, file, line, msg)
			}
		},
	}
	thread.SetMaxExecutionSteps(e.steps)
	stop := context.AfterFunc(ctx, func() { thread.Cancel("timeout") })
	defer stop()

	globals, err := prog.Init(thread, e.bounds)
	if err != nil {
		return nil, e.starlarkError(ctx, thread, inv.File, err)
	}
	fn, ok := globals["GenerateConfig"]
	if !ok {
		fn, ok = globals["generate_config"]
	}
	if !ok {
		return nil, engine.At(inv.File, 0, engine.Invalid("no function GenerateConfig(context)"))
	}
	cctx := newNamespace("context", contextAttrs,
		toStarlark(inv.Env),
		toStarlark(inv.Imports()),
		starlarkValue(order, inv.Properties), // document order
	)
	ret, err := starlark.Call(thread, fn, starlark.Tuple{cctx}, nil)
	if err != nil {
		return nil, e.starlarkError(ctx, thread, inv.File, err)
	}
	switch r := ret.(type) {
	case starlark.String:
		if sr.dump != nil && sr.dump.text == string(r) {
			return sr.dump.value, nil // yaml.dump's input, not its text
		}
		if len(r) > e.maxOut {
			return nil, engine.Limit("MaxOutputBytes", e.maxOut, "output is %d bytes", len(r))
		}
		return []byte(r), nil
	case *starlark.Dict:
		v, err := fromStarlark(r)
		if err != nil {
			return nil, engine.At(inv.File, 0, engine.Invalid("GenerateConfig result: %v", err))
		}
		recordStarlark(order, r, v)
		return v, nil
	default:
		return nil, engine.At(inv.File, 0, engine.Invalid("GenerateConfig returned a value of type %s; want a YAML string or a dict with resources", ret.Type()))
	}
}

// contextAttrs are the attributes of GenerateConfig's context, sorted;
// SetField copies the slice before adding one.
var contextAttrs = []string{"env", "imports", "properties"}

var loadPrefixRE = regexp.MustCompile(`cannot load (mod|pkg):([^:]+): `)

// starlarkError maps a Starlark failure to a located error, and
// cancellations to the limit that caused them.
func (e *Engine) starlarkError(ctx context.Context, thread *starlark.Thread, file string, err error) error {
	var ee *starlark.EvalError
	line, msg := 0, err.Error()
	if errors.As(err, &ee) {
		msg = ee.Msg
		for i := 0; i < len(ee.CallStack); i++ {
			fr := ee.CallStack.At(i)
			if fn := fr.Pos.Filename(); fn != "<builtin>" && fn != "" {
				file, line = fn, int(fr.Pos.Line)
				break
			}
		}
	}
	var le *engine.LimitError
	if errors.As(err, &le) {
		return engine.At(file, line, le)
	}
	if strings.Contains(msg, "Starlark computation cancelled") {
		if thread.ExecutionSteps() >= e.steps {
			return engine.At(file, line, engine.Limit("StarlarkSteps", e.steps, "template ran more than %d steps", e.steps))
		}
		if ctx.Err() != nil {
			return engine.At(file, line, engine.Stopped(ctx))
		}
	}
	var loc *engine.Located
	if errors.As(err, &loc) {
		return err
	}
	msg = loadPrefixRE.ReplaceAllString(msg, "import $2: ")
	msg = strings.TrimPrefix(msg, "fail: ") // raise and assert (rewriteStatements)
	return engine.At(file, line, engine.Invalid("%s", msg))
}
