package jinja

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	gparser "github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/python"
)

// guardKey is the context variable holding the per-render jinjaGuard. A
// template that overwrites it makes its checkpoints fail closed.
const guardKey = "__dm_guard__"

// jinjaEnv is the gonja environment of dm: the builtin filters and tests,
// a bounded range(), and control structures that check the render's
// guard in every loop iteration, macro call and include.
type jinjaEnv struct {
	env *exec.Environment
	cfg *config.Config
}

// newJinjaEnv builds the environment; limit (Options.MaxOutputBytes)
// bounds what operators, filters and methods may build.
func newJinjaEnv(limit int) *jinjaEnv {
	orig := controlStructures.All
	get := func(name string) gparser.ControlStructureParser {
		p, ok := orig.Get(name)
		if !ok {
			panic("gonja has no control structure " + name) // fixed at build time
		}
		return p
	}
	cs := map[string]gparser.ControlStructureParser{}
	for _, n := range []string{"autoescape", "block", "filter", "if", "import", "from", "raw", "set", "with", "do", "break", "continue", "trans", "call"} {
		cs[n] = get(n)
	}
	forParser, macroParser, includeParser, setParser := get("for"), get("macro"), get("include"), get("set")
	// The globals are made before the control structures: an import
	// without context runs the imported file in them alone.
	globals := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	cs["import"] = importParser(get("import"), globals)
	cs["from"] = fromParser(get("from"), globals)
	cs["call"] = parseCall
	cs["set"] = func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
		c, err := setParser(p, args)
		if err != nil {
			return nil, err
		}
		return newUndefinedSet(c), nil
	}
	cs["for"] = func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
		c, err := forParser(p, args)
		if err != nil {
			return nil, err
		}
		if f, ok := c.(*controlStructures.ForControlStructure); ok {
			orderedLoop(f)
			f.BodyWrapper.Nodes = append([]nodes.Node{checkpointNode(f.Position(), stepCheck)}, f.BodyWrapper.Nodes...)
		}
		return c, nil
	}
	cs["macro"] = func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
		c, err := macroParser(p, args)
		if err != nil {
			return nil, err
		}
		// The checkpoints live in the macro's body, so they run however the
		// macro is reached: by name, imported, or through caller().
		if m, ok := c.(*controlStructures.MacroControlStructure); ok {
			w := m.Macro.Wrapper
			w.Nodes = append(append([]nodes.Node{checkpointNode(m.Position(), enterCheck)}, w.Nodes...), checkpointNode(m.Position(), exitCheck))
			return &macroDef{m}, nil
		}
		return c, nil
	}
	cs["include"] = func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
		c, err := includeParser(p, args)
		if err != nil {
			return nil, err
		}
		return &guardedInclude{inner: c.(exec.ControlStructure)}, nil
	}
	cs["extends"] = func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
		// Extends loads its parent while parsing, where no guard runs: a
		// template extending itself would recurse without bound.
		return nil, p.Error("{% extends %} is not supported in dm templates; use {% import %} or {% include %}", p.Current())
	}
	// Every control structure, in every file (imported macros too), gets
	// its operators bounded as it is parsed.
	for name, parse := range cs {
		cs[name] = func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
			c, err := parse(p, args)
			if err == nil {
				boundOperators(reflect.ValueOf(c))
			}
			return c, err
		}
	}
	globals.Set("range", jinjaRange)
	globals.Set(arithFunc, jinjaArith)
	globals.Set(iterFunc, jinjaIter)
	globals.Set(dictFunc, jinjaDict)
	globals.Set(boolFunc, jinjaBool)
	filters := boundedFilters(limit)
	_ = filters.Replace("round", jinjaRound)
	_ = filters.Replace("tojson", jinjaToJSON(limit))
	_ = filters.Replace("format", jinjaFormat(limit))
	_ = filters.Replace("dictsort", jinjaDictsort)
	_ = filters.Replace("reverse", jinjaReverse)
	for name, f := range map[string]func(string) string{"capitalize": pyCapitalize, "title": jinjaTitle} {
		_ = filters.Replace(name, func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			if in.IsError() {
				return in
			}
			return exec.AsValue(f(jinjaText(in, engine.Sorted{})))
		})
	}
	// jinja2's trim, lower, upper, center and replace read str() of any
	// value (5 | trim is '5'); gonja's refuse what is not a string. None
	// reads as '': gonja holds an undefined value (a property not given,
	// far more common here than a None written out) as None, and
	// jinja2's str() of an undefined value is ''.
	for _, name := range []string{"trim", "lower", "upper", "center", "replace"} {
		f, ok := filters.Get(name)
		if !ok {
			continue
		}
		_ = filters.Replace(name, func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
			switch {
			case in.IsError() || in.IsString():
			case in.IsNil():
				in = exec.AsValue("")
			default:
				in = exec.AsValue(jinjaText(in, engine.Sorted{}))
			}
			return f(e, in, params)
		})
	}
	_ = filters.Replace("wordcount", func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
		if in.IsError() {
			return in
		}
		return exec.AsValue(len(wordRE.FindAllString(jinjaText(in, engine.Sorted{}), -1))) // jinja2's \w+
	})
	// string is Python's str(), as {{ }} prints; list refuses what is
	// not iterable, as Python's list() does.
	_ = filters.Replace("string", func(e *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
		if in.IsError() {
			return in
		}
		g, err := guardOf(e.Environment.Context)
		if err != nil {
			return exec.AsValue(err)
		}
		return exec.AsValue(jinjaText(in, g.order))
	})
	if list, ok := filters.Get("list"); ok {
		_ = filters.Replace("list", func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
			if !in.IsError() && (in.IsNumber() || in.IsBool() || in.IsNil()) {
				return exec.AsValue(fmt.Errorf("list: '%s' object is not iterable", python.TypeName(jinjaPlain(in, engine.Sorted{}))))
			}
			return list(e, in, params)
		})
	}
	// jinja2's lower and upper tests read str() of any value.
	tests := exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests)
	for name, f := range map[string]func(string) string{"lower": strings.ToLower, "upper": strings.ToUpper} {
		_ = tests.Replace(name, func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
			s := jinjaText(in, engine.Sorted{})
			return f(s) == s && strings.ToLower(s) != strings.ToUpper(s), nil
		})
	}
	// odd, even and divisibleby of any number, as Python's % reads it;
	// sequence of anything with a length and items (a dict too).
	mod := func(in *exec.Value, n float64) (float64, bool) {
		if in.IsBool() || !in.IsNumber() || n == 0 {
			return 0, false
		}
		m := math.Mod(in.Float(), n)
		if m != 0 && (m < 0) != (n < 0) {
			m += n
		}
		return m, true
	}
	_ = tests.Replace("odd", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		m, ok := mod(in, 2)
		return ok && m == 1, nil
	})
	_ = tests.Replace("even", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		m, ok := mod(in, 2)
		return ok && m == 0, nil
	})
	_ = tests.Replace("divisibleby", func(_ *exec.Context, in *exec.Value, params *exec.VarArgs) (bool, error) {
		if len(params.Args) != 1 || !params.Args[0].IsNumber() {
			return false, errors.New("divisibleby takes a number")
		}
		m, ok := mod(in, params.Args[0].Float())
		return ok && m == 0, nil
	})
	_ = tests.Replace("sequence", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		return in.IsString() || in.IsList() || in.IsDict(), nil
	})
	if f, ok := globals.Get("lipsum"); ok {
		globals.Set("lipsum", boundedLipsum(f))
	}
	return &jinjaEnv{
		env: &exec.Environment{
			Context:           globals,
			Filters:           filters,
			Tests:             tests,
			ControlStructures: exec.NewControlStructureSet(cs),
			Methods:           boundedMethods(limit),
		},
		cfg: config.New(),
	}
}

// jinjaGuard is the budget of one render.
type jinjaGuard struct {
	ctx             context.Context
	steps, maxSteps int
	depth, maxDepth int
	// order is the expansion's key order, which dicts iterate and print
	// in.
	order engine.KeyOrder
	// maxBytes bounds strings and lists that operators build.
	maxBytes int
	// line is the line of the statement running, for panics.
	line int
	// err is the limit error the guard raised: gonja flattens errors
	// raised inside macros into strings, losing the chain.
	err error
	// undefined are the names {% set %} last bound to an undefined key or
	// attribute (jinja2's Undefined, which gonja holds as nil): they print
	// nothing, as jinja2 prints them, rather than None.
	undefined map[string]bool
}

func (g *jinjaGuard) step(n int) error {
	g.steps += n
	if g.steps > g.maxSteps {
		g.err = engine.Limit("JinjaSteps", g.maxSteps, "template ran more than %d loop iterations and macro calls", g.maxSteps)
		return g.err
	}
	if g.steps&63 == 0 || n > 1 {
		if err := g.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (g *jinjaGuard) enter() error {
	g.depth++
	if g.depth > g.maxDepth {
		g.err = engine.Limit("JinjaCallDepth", g.maxDepth, "macro calls and includes nested more than %d deep (a recursive macro?)", g.maxDepth)
		return g.err
	}
	return g.step(1)
}

func guardOf(c *exec.Context) (*jinjaGuard, error) {
	v, _ := c.Get(guardKey)
	g, ok := v.(*jinjaGuard)
	if !ok {
		return nil, errors.New("the render guard " + guardKey + " was overwritten")
	}
	return g, nil
}

type checkKind int

const (
	stepCheck checkKind = iota
	enterCheck
	exitCheck
)

// checkpoint is an invisible control structure that charges the guard.
type checkpoint struct {
	pos  *tokens.Token
	kind checkKind
}

func checkpointNode(pos *tokens.Token, k checkKind) nodes.Node {
	return &nodes.ControlStructureBlock{Location: pos, Name: "dm-checkpoint", ControlStructure: &checkpoint{pos: pos, kind: k}}
}

func (c *checkpoint) Position() *tokens.Token { return c.pos }
func (c *checkpoint) String() string          { return "dm-checkpoint" }

// Execute charges the guard.
func (c *checkpoint) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	g, err := guardOf(r.Environment.Context)
	if err != nil {
		return err
	}
	switch c.kind {
	case enterCheck:
		return g.enter()
	case exitCheck:
		g.depth--
		return nil
	default:
		return g.step(1)
	}
}

// guardedInclude counts an include as a call, so a template including
// itself ends in an error.
type guardedInclude struct{ inner exec.ControlStructure }

func (gi *guardedInclude) Position() *tokens.Token { return gi.inner.Position() }
func (gi *guardedInclude) String() string          { return gi.inner.String() }

// Execute runs the include within the guard's depth budget.
func (gi *guardedInclude) Execute(r *exec.Renderer, b *nodes.ControlStructureBlock) error {
	g, err := guardOf(r.Environment.Context)
	if err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer func() { g.depth-- }()
	if inc, ok := gi.inner.(*controlStructures.IncludeControlStructure); ok {
		return executeInclude(r, inc)
	}
	return gi.inner.Execute(r, b)
}

// jinjaRange is range() returning a list charged to the step budget
// (gonja's own range feeds a channel from a goroutine that leaks when a
// loop breaks early).
func jinjaRange(e *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	start, stop, step := 0, 0, 1
	ints := make([]int, len(params.Args))
	for i, a := range params.Args {
		if !a.IsInteger() {
			return nil, exec.ErrInvalidCall(errors.New("range: arguments must be integers"))
		}
		ints[i] = a.Integer()
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, exec.ErrInvalidCall(errors.New("range: expected [start, ]stop[, step]"))
	}
	if step == 0 {
		return nil, exec.ErrInvalidCall(errors.New("range: step cannot be 0"))
	}
	n := 0
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		n = (start - stop - step - 1) / -step
	}
	g, err := guardOf(e.Environment.Context)
	if err != nil {
		return nil, err
	}
	if err := g.step(n); err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// bundleLoader serves a bundle's files to {% import %} and {% include %}.
// Names resolve from the bundle's root (as DM's loader did) and, failing
// that, relative to the including file; nothing outside the bundle exists.
type bundleLoader struct {
	files map[string][]byte
	dir   string
}

func (l *bundleLoader) Read(name string) (io.Reader, error) {
	p, err := l.Resolve(name)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(jinjaSource(l.files[p])), nil
}

func (l *bundleLoader) Resolve(name string) (string, error) {
	// Import names may contain ../ (issue 7): only keys of files exist, so
	// joining without rooting cannot reach anything else.
	for _, p := range []string{name, strings.TrimPrefix(path.Clean("/"+name), "/"), path.Join(l.dir, name)} {
		if _, ok := l.files[p]; ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("no file %q among the template's imports (%s)", name, strings.Join(engine.SortedKeys(l.files), ", "))
}

func (l *bundleLoader) Inherit(from string) (loaders.Loader, error) {
	p, err := l.Resolve(from)
	if err != nil {
		return nil, err
	}
	d := path.Dir(p)
	if d == "." {
		d = ""
	}
	return &bundleLoader{files: l.files, dir: d}, nil
}

// Engine renders Jinja templates with gonja, made to behave as jinja2
// does for DM's templates. It is safe for concurrent use.
type Engine struct {
	env      *jinjaEnv
	cache    engine.Cache
	maxOut   int
	maxSteps int
	maxDepth int
}

// New returns an engine whose renders are bounded by maxOutputBytes
// (Options.MaxOutputBytes), steps loop iterations and macro calls
// (Options.JinjaSteps) and depth nested calls and includes
// (Options.JinjaCallDepth), caching compiled templates in cache.
func New(maxOutputBytes, steps, depth int, cache engine.Cache) *Engine {
	return &Engine{env: newJinjaEnv(maxOutputBytes), cache: cache, maxOut: maxOutputBytes, maxSteps: steps, maxDepth: depth}
}

// Name returns "jinja".
func (*Engine) Name() string { return "jinja" }

// Check parses a Jinja template. Not cached: Render caches templates
// after rewriting their operators, which a check does not need.
func (e *Engine) Check(_ context.Context, files map[string][]byte, file string) error {
	l := &bundleLoader{files: files, dir: path.Dir(file)}
	if _, err := exec.NewTemplate(file, e.env.cfg, l, e.env.env); err != nil {
		return jinjaParseError(file, err)
	}
	return nil
}

// Render renders a .jinja template; its output is YAML text.
func (e *Engine) Render(ctx context.Context, inv engine.Invocation) (_ engine.Output, err error) {
	var g *jinjaGuard
	defer engine.Recover("Jinja", inv.File, func() int {
		if g != nil {
			return g.line
		}
		return 0
	}, &err)
	v, err := engine.Cached(e.cache, "jinja:"+inv.FilesKey+":"+inv.File, func() (any, error) {
		l := &bundleLoader{files: inv.Files, dir: path.Dir(inv.File)}
		t, err := exec.NewTemplate(inv.File, e.env.cfg, l, e.env.env)
		if err != nil {
			return nil, jinjaParseError(inv.File, err)
		}
		boundOperators(reflect.ValueOf(t).Elem().FieldByName("root"))
		return t, nil
	})
	if err != nil {
		return engine.Output{}, err
	}
	t := v.(*exec.Template)
	order := inv.Order
	if order == nil {
		order = engine.Sorted{}
	}
	g = &jinjaGuard{order: order, ctx: ctx, maxSteps: e.maxSteps, maxDepth: e.maxDepth, maxBytes: e.maxOut}
	// Jinja dicts have update, pop and clear: give the template copies so
	// it cannot change the layout or the shared imports.
	data := exec.NewContext(map[string]any{
		"properties": copyOrdered(order, inv.Properties),
		"env":        inv.Env,
		"imports":    maps.Clone(inv.Imports()),
		guardKey:     g,
	})
	w := &engine.LimitWriter{Ctx: ctx, Limit: e.maxOut, Buf: make([]byte, 0, 2*len(inv.Source))}
	if err := t.Execute(w, data); err != nil {
		if g.err != nil {
			return engine.Output{}, engine.At(inv.File, 0, g.err)
		}
		// String methods have no way to the guard; their limit errors
		// arrive flattened into gonja's text.
		if msg := err.Error(); strings.Contains(msg, "(Options.MaxOutputBytes)") {
			if i := strings.LastIndex(msg, ": "); i >= 0 {
				msg = msg[:i]
			}
			if i := strings.LastIndex(msg, ": "); i >= 0 {
				msg = msg[i+2:]
			}
			return engine.Output{}, engine.At(inv.File, 0, engine.Limit("MaxOutputBytes", e.maxOut, "%s", msg))
		}
		return engine.Output{}, jinjaExecError(inv.File, err)
	}
	return engine.Output{YAML: w.Buf}, nil
}

func jinjaParseError(file string, err error) error {
	line := 0
	var se *gparser.SyntaxError
	if errors.As(err, &se) {
		line = se.Line
	}
	// NewTemplate's message quotes the whole source; keep only the cause.
	msg := err.Error()
	if i := strings.LastIndex(msg, "': "); i >= 0 && strings.HasPrefix(msg, "failed to parse template '") {
		msg = msg[i+3:]
	}
	msg = strings.ReplaceAll(msg, "(Line: 0 Col: 0, ", "(")
	return engine.At(file, line, engine.Invalid("%s", msg))
}

// wordRE is jinja2's word for wordcount: \w+, Unicode.
var wordRE = regexp.MustCompile(`[\p{L}\p{N}_]+`)

var (
	jinjaLineRE  = regexp.MustCompile(`(?i)\bline:? (\d+)`)
	outputWrapRE = regexp.MustCompile(`Unable to execute controlStructure at line \d+: dm-output: `)
	arithCallErr = "invalid call to function '" + arithFunc + "': "
)

// jinjaExecError keeps the cause of a render error and the line of the
// outermost statement, which is in the template file itself.
func jinjaExecError(file string, err error) error {
	var le *engine.LimitError
	if errors.As(err, &le) {
		return engine.At(file, 0, le)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "unable to execute template: ")
	msg = outputWrapRE.ReplaceAllString(msg, "")
	line := 0
	if m := jinjaLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	// An operator's error quotes dm's rewrite of the expression; the
	// cause is what the user needs.
	if i := strings.LastIndex(msg, arithCallErr); i >= 0 {
		return engine.At(file, line, engine.Invalid("%s", msg[i+len(arithCallErr):]))
	}
	// Errors inside macros repeat the call chain at every level; keep the
	// outermost statement and the cause.
	if parts := strings.Split(msg, ": Unable to "); len(parts) > 2 {
		msg = parts[0] + ": ... " + parts[len(parts)-1]
	}
	return engine.At(file, line, engine.Invalid("%s", msg))
}
