// Package gotmpl is the Go template language of dm's engine table:
// text/template with sprig's functions (those that reach the OS or the
// network removed, those that allocate by a count bounded) and Helm's
// required, fail, include and tpl, over .properties, .env and .imports.
package gotmpl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"text/template"
	"text/template/parse"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	yaml "go.yaml.in/yaml/v2"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/value"
)

// funcs returns sprig's functions without those that reach the OS
// or the network, with size-bounded versions of those that allocate by a
// count, plus the functions of seed 002.
func funcs(maxOut int, decodeYAML func([]byte) (any, error)) template.FuncMap {
	f := sprig.TxtFuncMap()
	for _, name := range []string{"env", "expandenv", "getHostByName"} {
		delete(f, name)
	}
	bound := func(name string, n int) error {
		if n > maxOut {
			return engine.Limit("MaxOutputBytes", maxOut, "%s(%d) would exceed the output limit", name, n)
		}
		return nil
	}
	untilFn := f["until"].(func(int) []int)
	f["until"] = func(n int) ([]int, error) {
		if err := bound("until", n); err != nil {
			return nil, err
		}
		return untilFn(n), nil
	}
	untilStep := f["untilStep"].(func(int, int, int) []int)
	f["untilStep"] = func(start, stop, step int) ([]int, error) {
		if step != 0 {
			if err := bound("untilStep", (stop-start)/step); err != nil {
				return nil, err
			}
		}
		return untilStep(start, stop, step), nil
	}
	seq := f["seq"].(func(...int) string)
	f["seq"] = func(params ...int) (string, error) {
		if len(params) > 0 {
			lo, hi := 1, params[len(params)-1]
			if len(params) > 1 {
				lo = params[0]
			}
			if err := bound("seq", hi-lo); err != nil {
				return "", err
			}
		}
		return seq(params...), nil
	}
	f["repeat"] = func(count int, s string) (string, error) {
		if len(s) > 0 && count > maxOut/len(s) {
			return "", bound("repeat", maxOut+1)
		}
		if count < 0 {
			count = 0
		}
		return string(bytes.Repeat([]byte(s), count)), nil
	}
	for _, name := range []string{"randAlphaNum", "randAlpha", "randNumeric", "randAscii", "randBytes"} {
		fn, ok := f[name].(func(int) string)
		if !ok {
			continue
		}
		f[name] = func(n int) (string, error) {
			if err := bound(name, n); err != nil {
				return "", err
			}
			return fn(n), nil
		}
	}
	for _, name := range []string{"indent", "nindent"} {
		fn, ok := f[name].(func(int, string) string)
		if !ok {
			continue
		}
		f[name] = func(n int, s string) (string, error) {
			if err := bound(name, n*(1+bytes.Count([]byte(s), []byte("\n")))); err != nil {
				return "", err
			}
			return fn(n, s), nil
		}
	}
	f["toYaml"] = func(v any) string {
		b, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return string(bytes.TrimSuffix(b, []byte("\n")))
	}
	f["fromYaml"] = func(s string) map[string]any {
		v, err := decodeYAML([]byte(s))
		if err != nil {
			return map[string]any{"Error": err.Error()}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return map[string]any{"Error": fmt.Sprintf("YAML document is %s, not a mapping", value.Kind(v))}
		}
		return m
	}
	f["toJson"] = func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	f["fromJson"] = func(s string) map[string]any {
		v, err := value.DecodeJSON([]byte(s))
		if err != nil {
			return map[string]any{"Error": err.Error()}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return map[string]any{"Error": fmt.Sprintf("JSON document is %s, not an object", value.Kind(v))}
		}
		return m
	}
	f["toToml"] = func(v any) string {
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(v); err != nil {
			return err.Error()
		}
		return buf.String()
	}
	f["marshalJSON"] = func(v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	f["unmarshalJSON"] = func(s string) (map[string]any, error) {
		v, err := value.DecodeJSON([]byte(s))
		if err != nil {
			return nil, err
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("JSON document is %s, not an object", value.Kind(v))
		}
		return m, nil
	}
	f["b64enc"] = func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f["b64dec"] = func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	sprigReplace := f["replace"].(func(string, string, string) string)
	f["replace"] = func(old, new, src string) (string, error) {
		if n := engine.ReplacedSize(src, old, new); n > maxOut {
			return "", engine.Limit("MaxOutputBytes", maxOut, "replace would make a value of %d bytes", n)
		}
		return sprigReplace(old, new, src), nil
	}
	// Helm's functions, so templates written by Helm users work: required
	// and fail here; include and tpl execute templates of the set being
	// rendered, so each render binds them anew (helmFuncs) and these
	// stand-ins only let templates that use them parse.
	f["required"] = func(msg string, v any) (any, error) {
		if v == nil || v == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	f["include"] = func(string, any) (string, error) { return "", errors.New("include is not bound to a template") }
	f["tpl"] = func(string, any) (string, error) { return "", errors.New("tpl is not bound to a template") }
	// The builtins that build strings, overridden so the bound below
	// covers them too.
	f["print"], f["printf"], f["println"] = fmt.Sprint, fmt.Sprintf, fmt.Sprintln
	for name, fn := range f {
		f[name] = boundResult(name, fn, maxOut)
	}
	return f
}

// boundResult wraps fn so that a string, slice or map result larger than
// limit (an element counts as 16 bytes) is an error. Loops in Go templates
// hit a checkpoint every iteration, so a value doubled in a loop
// ({{ $s = print $s $s }}, {{ $l = concat $l $l }}) stops at the first
// result over the limit instead of growing to gigabytes.
func boundResult(name string, fn any, limit int) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || t.NumOut() == 0 {
		return fn
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		var out []reflect.Value
		if t.IsVariadic() {
			out = v.CallSlice(args)
		} else {
			out = v.Call(args)
		}
		r := out[0]
		n := 0
		switch r.Kind() {
		case reflect.String:
			n = r.Len()
		case reflect.Slice, reflect.Map:
			if r.Type().Elem().Kind() == reflect.Uint8 {
				n = r.Len()
			} else {
				n = 16 * r.Len()
			}
		case reflect.Interface:
			if e := r.Elem(); e.IsValid() && (e.Kind() == reflect.String || e.Kind() == reflect.Slice || e.Kind() == reflect.Map) {
				n = e.Len()
				if e.Kind() != reflect.String {
					n *= 16
				}
			}
		}
		if n > limit {
			// text/template turns a function's panic into an error of
			// the call, keeping the error's chain.
			panic(engine.Limit("MaxOutputBytes", limit, "%s would make a value of %d bytes", name, n))
		}
		return out
	}).Interface()
}

// Engine renders Go templates. It is safe for concurrent use.
type Engine struct {
	maxOut int
	cache  engine.Cache
	// funcs is built once: sprig's map is large.
	funcs template.FuncMap
}

// New returns an engine whose renders and function results are bounded
// by maxOutputBytes (Options.MaxOutputBytes), caching parsed templates in
// cache. fromYaml decodes with decodeYAML, so that values type as they do
// in configurations.
func New(maxOutputBytes int, cache engine.Cache, decodeYAML func([]byte) (any, error)) *Engine {
	return &Engine{maxOut: maxOutputBytes, cache: cache, funcs: funcs(maxOutputBytes, decodeYAML)}
}

// Name returns "gotmpl".
func (*Engine) Name() string { return "gotmpl" }

// Check parses a Go template.
func (e *Engine) Check(_ context.Context, files map[string][]byte, file string) error {
	if _, err := template.New(file).Funcs(e.funcs).Parse(string(files[file])); err != nil {
		return parseError(file, err)
	}
	return nil
}

// Render executes a .gotmpl template with .properties, .env and
// .imports as data. text/template cannot be interrupted, so it runs in its
// own goroutine: on timeout the caller returns, and the render stops at its
// next write (the writer checks the context); guardTemplate makes sure
// every loop iteration and template call writes.
func (e *Engine) Render(ctx context.Context, inv engine.Invocation) (_ engine.Output, err error) {
	defer engine.Recover("Go template", inv.File, nil, &err)
	v, err := engine.Cached(e.cache, "gotmpl:"+inv.FilesKey+":"+inv.File, func() (any, error) {
		// A missing key renders empty, as in Helm (text/template would
		// print "<no value>"; see noValue).
		t, err := template.New(inv.File).Option("missingkey=zero").Funcs(e.funcs).Parse(string(inv.Source))
		if err != nil {
			return nil, parseError(inv.File, err)
		}
		guardTemplate(t)
		return t, nil
	})
	if err != nil {
		return engine.Output{}, err
	}
	t := v.(*template.Template)
	if usesHelmCalls(inv.Source) {
		// A clone binds include and tpl to this render; most templates
		// call neither and skip the copy of the function map.
		if t, err = t.Clone(); err != nil {
			return engine.Output{}, parseError(inv.File, err)
		}
		t.Funcs(e.helmFuncs(ctx, t))
	}
	data := map[string]any{"properties": inv.Properties, "env": inv.Env, "imports": inv.Imports()}
	w := &engine.LimitWriter{Ctx: ctx, Limit: e.maxOut, Buf: make([]byte, 0, 2*len(inv.Source))}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("template function panicked: %v", p)
			}
		}()
		done <- t.Execute(w, data)
	}()
	select {
	case err := <-done:
		if err != nil {
			return engine.Output{}, parseError(inv.File, err)
		}
		return engine.Output{YAML: noValue(w.Buf)}, nil
	case <-ctx.Done():
		return engine.Output{}, engine.At(inv.File, 0, engine.Stopped(ctx))
	}
}

// maxIncludeDepth bounds nested include and tpl calls, as Helm does: each
// starts a fresh execution, so text/template's own depth limit does not
// see them, and unbounded recursion would overflow the stack.
const maxIncludeDepth = 1000

// helmFuncs returns include and tpl bound to one render of t. They render
// into writers with the render's deadline and output limit.
func (e *Engine) helmFuncs(ctx context.Context, t *template.Template) template.FuncMap {
	depth := 0 // a render runs in one goroutine
	exec := func(what string, run func(w *engine.LimitWriter) error) (string, error) {
		if depth >= maxIncludeDepth {
			return "", fmt.Errorf("%s: nested more than %d deep (a template that includes itself?)", what, maxIncludeDepth)
		}
		depth++
		defer func() { depth-- }()
		w := &engine.LimitWriter{Ctx: ctx, Limit: e.maxOut}
		if err := run(w); err != nil {
			return "", err
		}
		return string(noValue(w.Buf)), nil
	}
	return template.FuncMap{
		"include": func(name string, data any) (string, error) {
			return exec(fmt.Sprintf("include %q", name), func(w *engine.LimitWriter) error { return t.ExecuteTemplate(w, name, data) })
		},
		"tpl": func(text string, data any) (string, error) {
			return exec("tpl", func(w *engine.LimitWriter) error {
				// A clone, so the text's definitions stay out of t.
				c, err := t.Clone()
				if err != nil {
					return err
				}
				nt, err := c.New("tpl").Parse(text)
				if err != nil {
					return err
				}
				guardTemplate(nt)
				return nt.Execute(w, data)
			})
		},
	}
}

// usesHelmCalls reports whether src may call include or tpl.
func usesHelmCalls(src []byte) bool {
	return bytes.Contains(src, []byte("include")) || bytes.Contains(src, []byte("tpl"))
}

// noValue removes the "<no value>" text/template prints for a missing
// map key even with missingkey=zero, as Helm does.
func noValue(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte("<no value>"), nil)
}

var gotmplLineRE = regexp.MustCompile(`^template: [^:]+:(\d+):(?:\d+:)? ?`)

func parseError(file string, err error) error {
	var le *engine.LimitError
	if errors.As(err, &le) {
		return engine.At(file, 0, le)
	}
	msg := err.Error()
	line := 0
	if m := gotmplLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	return engine.At(file, line, engine.Invalid("%s", msg))
}

// guardTemplate puts a checkpoint at the start of every range body and
// every template definition of t, so that a loop or a recursion that
// writes nothing ({{range 100000000000}}{{end}}) still stops at the
// timeout instead of running on in its goroutine after the caller gave up.
func guardTemplate(t *template.Template) {
	// A checkpoint is an action that prints the empty string: fmt.Fprint
	// calls Write even for nothing, and the render's writer checks the
	// deadline on every Write.
	cp := template.Must(template.New("checkpoint").Parse(`{{""}}`)).Tree.Root.Nodes[0]
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			guardList(tt.Tree.Root, cp)
			prependCheckpoint(tt.Tree.Root, cp)
		}
	}
}

func guardList(l *parse.ListNode, cp parse.Node) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.RangeNode:
			guardList(n.List, cp)
			prependCheckpoint(n.List, cp)
			guardList(n.ElseList, cp)
		case *parse.IfNode:
			guardList(n.List, cp)
			guardList(n.ElseList, cp)
		case *parse.WithNode:
			guardList(n.List, cp)
			guardList(n.ElseList, cp)
		}
	}
}

func prependCheckpoint(l *parse.ListNode, cp parse.Node) {
	l.Nodes = append([]parse.Node{cp.Copy()}, l.Nodes...)
}
