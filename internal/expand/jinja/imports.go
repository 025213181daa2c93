package jinja

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strings"
	"unsafe"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	gparser "github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Imports, macros and {% call %} as jinja2 runs them. gonja binds an
// imported template's macros to the importing template, so a macro that
// calls another macro of its own file fails ("inner is not callable"),
// the file's variables are not exported, "without context" still sees
// the importer's variables, and caller() reaches only macros defined at
// the top of the calling file; {% call(args) %} does not parse. Here:
//
//   - {% import 'f' as m %} and {% from 'f' import a, b as c %] run f as a
//     module, in a context of its own: the environment's globals alone
//     (without context, jinja2's default for imports) or a child of the
//     importer's context (with context). Its macros run in that module
//     context, so they see the module's other macros and variables; m
//     holds every name f binds at its top level (macros, {% set %}),
//     except those starting with an underscore, as jinja2 exports them.
//   - {% call(x, y=1) m(...) %}body{% endcall %} passes the body to the
//     macro it calls, and only to it, as its caller(), whose arguments
//     bind x and y.

// callerKwarg is the keyword argument through which {% call %} hands its
// caller to the macro it calls; every macro (macroDef) takes it out.
const callerKwarg = "__dm_caller__"

// callerVar holds the caller while the call expression is evaluated.
const callerVar = "__dm_caller_fn__"

// gonjaCaller is where gonja's macros look for a caller.
const gonjaCaller = "__gonja_caller__"

// unexportedField reads field name of the struct v points to.
func unexportedField(v any, name string) any {
	f := reflect.ValueOf(v).Elem().FieldByName(name)
	if !f.IsValid() {
		return nil
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
}

// contextData is the names a context binds itself (not its parents').
func contextData(c *exec.Context) map[string]any {
	m, _ := unexportedField(c, "data").(map[string]any)
	return m
}

// macroDef is {% macro %}: the macro, bound to the context it is defined
// in, takes its caller from callerKwarg.
type macroDef struct {
	*controlStructures.MacroControlStructure
}

// Execute binds the macro's name.
func (d *macroDef) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	fn, err := exec.MacroNodeToFunc(d.Macro, r)
	if err != nil {
		return fmt.Errorf("unable to parse macro '%s': %w", d.Name, err)
	}
	r.Environment.Context.Set(d.Name, callerMacro(fn, r.Environment.Context))
	return nil
}

// callerMacro makes fn, a macro bound to the context ctx, take its
// caller from callerKwarg rather than from wherever gonja's {% call %}
// left it.
func callerMacro(fn exec.Macro, ctx *exec.Context) exec.Macro {
	return func(params *exec.VarArgs) *exec.Value {
		if c, ok := params.KwArgs[callerKwarg]; ok {
			kw := maps.Clone(params.KwArgs)
			delete(kw, callerKwarg)
			params = &exec.VarArgs{Args: params.Args, KwArgs: kw}
			ctx.Set(gonjaCaller, c.Interface())
		} else {
			ctx.Set(gonjaCaller, nil)
		}
		return fn(params)
	}
}

// callBlock is {% call(params) m(...) %}body{% endcall %}.
type callBlock struct {
	Location *tokens.Token
	Call     *nodes.Call
	Params   []*nodes.Pair // the caller's parameters, Value its default or nil
	Body     *nodes.Wrapper
}

func (c *callBlock) Position() *tokens.Token { return c.Location }
func (c *callBlock) String() string          { return fmt.Sprintf("call(Line=%d)", c.Location.Line) }

// parseCall reads a call block.
func parseCall(p, args *gparser.Parser) (nodes.ControlStructure, error) {
	cs := &callBlock{Location: p.Current()}
	if args.Match(tokens.LeftParenthesis) != nil {
		for args.Match(tokens.RightParenthesis) == nil {
			name := args.Match(tokens.Name)
			if name == nil {
				return nil, args.Error("expected a parameter name in call(...)", args.Current())
			}
			param := &nodes.Pair{Key: &nodes.String{Location: name, Val: name.Val}}
			if args.Match(tokens.Assign) != nil {
				def, err := args.ParseExpression()
				if err != nil {
					return nil, err
				}
				param.Value = def
			}
			cs.Params = append(cs.Params, param)
			if args.Match(tokens.RightParenthesis) != nil {
				break
			}
			if args.Match(tokens.Comma) == nil {
				return nil, args.Error("expected ',' or ')' in call(...)", args.Current())
			}
		}
	}
	expr, err := args.ParseExpression()
	if err != nil {
		return nil, err
	}
	call, ok := expr.(*nodes.Call)
	if !ok {
		return nil, args.Error("expected a macro call after {% call %}", args.Current())
	}
	cs.Call = call
	if !args.End() {
		return nil, args.Error("malformed {% call %} tag", args.Current())
	}
	wrapper, endargs, err := p.WrapUntil("endcall")
	if err != nil {
		return nil, err
	}
	if !endargs.End() {
		return nil, endargs.Error("endcall takes no arguments", nil)
	}
	cs.Body = wrapper
	return cs, nil
}

// Execute calls the macro with the body as its caller.
func (c *callBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	caller := func(va *exec.VarArgs) *exec.Value {
		var buf bytes.Buffer
		sub := r.Inherit()
		sub.Output = &buf
		for i, p := range c.Params {
			name := p.Key.(*nodes.String).Val
			var v *exec.Value
			switch kw, ok := va.KwArgs[name]; {
			case i < len(va.Args):
				v = va.Args[i]
			case ok:
				v = kw
			case p.Value != nil:
				v = r.Eval(p.Value)
			default:
				v = exec.AsValue(nil)
			}
			sub.Environment.Context.Set(name, v)
		}
		if len(va.Args) > len(c.Params) {
			return exec.AsValue(fmt.Errorf("caller() takes %d arguments, got %d", len(c.Params), len(va.Args)))
		}
		if err := sub.ExecuteWrapper(c.Body); err != nil {
			return exec.AsValue(err)
		}
		return exec.AsSafeValue(buf.String())
	}
	sub := r.Inherit()
	sub.Environment.Context.Set(callerVar, caller)
	call := *c.Call
	call.Kwargs = maps.Clone(c.Call.Kwargs)
	if call.Kwargs == nil {
		call.Kwargs = map[string]nodes.Expression{}
	}
	call.Kwargs[callerKwarg] = &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: callerVar, Line: c.Location.Line, Col: c.Location.Col}}
	v := sub.Eval(&call)
	if v.IsError() {
		return fmt.Errorf("unable to execute {%% call %%}: %w", v)
	}
	_, err := io.WriteString(r.Output, v.String())
	return err
}

// moduleImport is {% import %} or {% from ... import %}.
type moduleImport struct {
	location    *tokens.Token
	file        nodes.Expression
	withContext bool
	as          string            // import: the module's name
	names       map[string]string // from: alias -> exported name
	globals     *exec.Context     // the environment's globals
}

func (m *moduleImport) Position() *tokens.Token { return m.location }
func (m *moduleImport) String() string          { return fmt.Sprintf("import(Line=%d)", m.location.Line) }

// importParser and fromParser read the statements with gonja's parsers.
func importParser(gonja gparser.ControlStructureParser, globals *exec.Context) gparser.ControlStructureParser {
	return func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
		c, err := gonja(p, args)
		if err != nil {
			return nil, err
		}
		ics, ok := c.(*controlStructures.ImportControlStructure)
		if !ok {
			return c, nil
		}
		file, _ := unexportedField(ics, "filenameExpression").(nodes.Expression)
		as, _ := unexportedField(ics, "as").(string)
		with, _ := unexportedField(ics, "withContext").(bool)
		return &moduleImport{location: ics.Position(), file: file, as: as, withContext: with, globals: globals}, nil
	}
}

func fromParser(gonja gparser.ControlStructureParser, globals *exec.Context) gparser.ControlStructureParser {
	return func(p, args *gparser.Parser) (nodes.ControlStructure, error) {
		c, err := gonja(p, args)
		if err != nil {
			return nil, err
		}
		fcs, ok := c.(*controlStructures.FromImportControlStructure)
		if !ok {
			return c, nil
		}
		return &moduleImport{location: fcs.Position(), file: fcs.FilenameExpression, names: fcs.As, withContext: fcs.WithContext, globals: globals}, nil
	}
}

// Execute runs the imported file as a module and binds what it exports.
func (m *moduleImport) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	g, err := guardOf(r.Environment.Context)
	if err != nil {
		return err
	}
	nameV := r.Eval(m.file)
	if nameV.IsError() {
		return fmt.Errorf("unable to evaluate filename: %w", nameV)
	}
	file, err := r.Loader.Resolve(nameV.String())
	if err != nil {
		return fmt.Errorf("failed to resolve filename: %w", err)
	}
	loader, err := r.Loader.Inherit(file)
	if err != nil {
		return fmt.Errorf("failed to inherit loader from '%s': %w", file, err)
	}
	t, err := exec.NewTemplate(file, r.Config, loader, r.Environment)
	if err != nil {
		return fmt.Errorf("unable to load template '%s': %w", file, err)
	}
	boundOperators(reflect.ValueOf(t.Root()))
	var ctx *exec.Context
	if m.withContext {
		ctx = r.Environment.Context.Inherit()
	} else {
		ctx = m.globals.Inherit()
		ctx.Set(guardKey, g)
	}
	env := &exec.Environment{
		Context:           ctx,
		Filters:           r.Environment.Filters,
		Tests:             r.Environment.Tests,
		ControlStructures: r.Environment.ControlStructures,
		Methods:           r.Environment.Methods,
	}
	// A module importing itself recurses: it counts as a call.
	if err := g.enter(); err != nil {
		return err
	}
	err = exec.NewRenderer(env, io.Discard, r.Config.Inherit(), loader, t).Execute()
	g.depth--
	if err != nil {
		return fmt.Errorf("unable to import template '%s': %w", file, err)
	}
	exports := map[string]any{}
	for k, v := range contextData(ctx) {
		if strings.HasPrefix(k, "_") || k == "self" || k == guardKey {
			continue
		}
		exports[k] = v
	}
	if m.names == nil {
		r.Environment.Context.Set(m.as, exports)
		return nil
	}
	for alias, name := range m.names {
		if v, ok := exports[name]; ok {
			r.Environment.Context.Set(alias, v)
		}
		// A name the module does not export stays undefined, as in jinja2,
		// where using it fails.
	}
	return nil
}
