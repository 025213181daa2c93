package starlark

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.starlark.net/starlark"

	"github.com/dmhq/dm/internal/expand/engine"
)

// Starlark has no classes. The two kinds DM templates write, a namespace
// of helper functions and a plain record (attributes set in __init__,
// methods that read them), are translated line for line:
//
//	class Port(object):          Port = __dm_class__("Port", lambda: {...}, None, (...), (...))
//	    PROTO = "TCP"            __dm_Port_PROTO = "TCP"
//	    def __init__(self, n):   def __dm_Port___init__(self, n):
//	        self.n = n               self.n = n
//	    @staticmethod
//	    def parse(s):            def __dm_Port_parse(s):
//
// __dm_class__ makes a class value: calling it makes an object (a mutable
// set of attributes) and runs __init__; attributes not set on the object
// come from the class, methods bound to the object (static methods not,
// class methods to the class). A base class must be another class of the
// same file. super(C, self) reaches the base's methods. Everything else
// in a class body (nested classes, other decorators, statements) is
// refused with an error naming class and the line.

const starClass = "__dm_class__"

var (
	classRE     = regexp.MustCompile(`^class\s+([A-Za-z_]\w*)\s*(?:\(\s*([\w.]*)\s*\))?\s*:\s*(#.*)?$`)
	memberDefRE = regexp.MustCompile(`^def\s+([A-Za-z_]\w*)\s*\(`)
	memberSetRE = regexp.MustCompile(`^([A-Za-z_]\w*)\s*=[^=]`)
)

// pyLineContinues reports for each line whether it starts inside a string
// literal, inside brackets, or after a backslash: a continuation whose
// indentation means nothing.
func pyLineContinues(s string) []bool {
	out := []bool{false}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			out = append(out, depth > 0)
		case '#':
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case '\\':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
				out = append(out, true)
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		case '\'', '"':
			end, _, ok := scanString(s, i)
			if !ok {
				return out // the parser reports it
			}
			for j := i; j < end-1; j++ {
				if s[j] == '\n' {
					out = append(out, true)
				}
			}
			i = end - 1
		}
	}
	return out
}

// translateClasses rewrites the top-level classes of a .py file as above.
func translateClasses(file string, src []byte) ([]byte, error) {
	s := string(src)
	if !strings.Contains(s, "class") {
		return src, nil
	}
	lines := strings.Split(s, "\n")
	cont := pyLineContinues(s)
	for len(cont) < len(lines) {
		cont = append(cont, false)
	}
	classes := map[string]bool{}
	changed := false
	for i := 0; i < len(lines); i++ {
		if cont[i] {
			continue
		}
		m := classRE.FindStringSubmatch(strings.TrimRight(lines[i], "\r"))
		if m == nil {
			continue
		}
		name, base := m[1], m[2]
		refuse := func(line int, format string, args ...any) error {
			return engine.At(file, line+1, engine.Invalid("class %s: %s; dm translates classes that hold only methods (plain, @staticmethod or @classmethod) and attributes", name, fmt.Sprintf(format, args...)))
		}
		baseExpr := "None"
		switch {
		case base == "" || base == "object":
		case classes[base]:
			baseExpr = base
		default:
			return nil, refuse(i, "its base %s is not a class of this file", base)
		}
		// The body: the lines after the header that are blank, comments,
		// continuations or indented.
		end := i + 1
		unit := ""
		for ; end < len(lines); end++ {
			l := strings.TrimRight(lines[end], "\r")
			t := strings.TrimSpace(l)
			if cont[end] || t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			if ind == "" {
				break
			}
			if unit == "" {
				unit = ind
			}
		}
		if unit == "" {
			return nil, refuse(i, "it has no body")
		}
		var members []string
		static, classm := []string{}, []string{}
		decorator := ""
		for j := i + 1; j < end; j++ {
			if cont[j] {
				continue
			}
			l := strings.TrimRight(lines[j], "\r")
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			if !strings.HasPrefix(l, unit) {
				return nil, refuse(j, "inconsistent indentation")
			}
			rest := l[len(unit):]
			if rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
				lines[j] = rest // inside a method: dedent one level
				continue
			}
			switch {
			case t == "@staticmethod" || t == "@classmethod":
				decorator = t
				lines[j] = ""
			case strings.HasPrefix(t, "@"):
				return nil, refuse(j, "decorator %s is not supported", t)
			case memberDefRE.MatchString(rest):
				mm := memberDefRE.FindStringSubmatch(rest)
				members = append(members, mm[1])
				switch decorator {
				case "@staticmethod":
					static = append(static, mm[1])
				case "@classmethod":
					classm = append(classm, mm[1])
				}
				decorator = ""
				lines[j] = "def " + classMember(name, mm[1]) + rest[len(mm[0])-1:]
			case memberSetRE.MatchString(rest):
				mm := memberSetRE.FindStringSubmatch(rest)
				members = append(members, mm[1])
				lines[j] = classMember(name, mm[1]) + rest[len(mm[1]):]
			case t == "pass" || strings.HasPrefix(t, `"`) || strings.HasPrefix(t, "'"):
				lines[j] = rest // a docstring
			default:
				return nil, refuse(j, "%q in a class body is not supported", t)
			}
			if decorator != "" && !strings.HasPrefix(t, "@") {
				return nil, refuse(j, "%s must precede a def", decorator)
			}
		}
		var table []string
		for _, mem := range members {
			table = append(table, fmt.Sprintf("%q: %s", mem, classMember(name, mem)))
		}
		lines[i] = fmt.Sprintf("%s = %s(%q, lambda: {%s}, %s, %s, %s)", name, starClass, name, strings.Join(table, ", "), baseExpr, pyStrTuple(static), pyStrTuple(classm))
		classes[name] = true
		changed = true
		i = end - 1
	}
	if !changed {
		return src, nil
	}
	return []byte(strings.Join(lines, "\n")), nil
}

func classMember(class, member string) string { return "__dm_" + class + "_" + member }

func pyStrTuple(l []string) string {
	if len(l) == 0 {
		return "()"
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "(" + strings.Join(q, ", ") + ",)"
}

// pyClass is a translated class.
type pyClass struct {
	name    string
	table   starlark.Callable // returns the members dict
	members *starlark.Dict
	base    *pyClass
	static  map[string]bool
	classm  map[string]bool
	frozen  bool
}

var (
	_ starlark.HasAttrs = (*pyClass)(nil)
	_ starlark.Callable = (*pyClass)(nil)
)

func (c *pyClass) String() string        { return "<class '" + c.name + "'>" }
func (c *pyClass) Type() string          { return "class" }
func (c *pyClass) Freeze()               { c.frozen = true }
func (c *pyClass) Truth() starlark.Bool  { return true }
func (c *pyClass) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: class") }
func (c *pyClass) Name() string          { return c.name }

// member looks a name up in the class and its bases.
func (c *pyClass) member(th *starlark.Thread, name string) (starlark.Value, *pyClass, error) {
	for k := c; k != nil; k = k.base {
		if k.members == nil {
			if th == nil {
				th = &starlark.Thread{Name: "class " + k.name}
			}
			v, err := starlark.Call(th, k.table, nil, nil)
			if err != nil {
				return nil, nil, err
			}
			d, ok := v.(*starlark.Dict)
			if !ok {
				return nil, nil, fmt.Errorf("class %s: bad member table", k.name)
			}
			k.members = d
		}
		if v, found, _ := k.members.Get(starlark.String(name)); found {
			return v, k, nil
		}
	}
	return nil, nil, nil
}

// Attr returns a class attribute; a class method comes bound to the class.
func (c *pyClass) Attr(name string) (starlark.Value, error) {
	v, owner, err := c.member(nil, name)
	if err != nil || v == nil {
		return nil, err
	}
	if owner.classm[name] {
		return bindMethod(name, v, c), nil
	}
	return v, nil
}

// AttrNames lists the members of the class and its bases.
func (c *pyClass) AttrNames() []string {
	seen := map[string]bool{}
	for k := c; k != nil; k = k.base {
		if _, _, err := k.member(nil, "__init__"); err != nil || k.members == nil {
			continue
		}
		for _, key := range k.members.Keys() {
			seen[string(key.(starlark.String))] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CallInternal makes an object and runs __init__.
func (c *pyClass) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	obj := &pyObject{class: c, attrs: map[string]starlark.Value{}}
	init, _, err := c.member(th, "__init__")
	if err != nil {
		return nil, err
	}
	if init == nil {
		if len(args)+len(kwargs) > 0 {
			return nil, fmt.Errorf("%s() takes no arguments", c.name)
		}
		return obj, nil
	}
	if _, err := starlark.Call(th, init, append(starlark.Tuple{obj}, args...), kwargs); err != nil {
		return nil, err
	}
	return obj, nil
}

func (c *pyClass) isSubclassOf(o *pyClass) bool {
	for k := c; k != nil; k = k.base {
		if k == o {
			return true
		}
	}
	return false
}

// pyObject is an instance of a translated class.
type pyObject struct {
	class  *pyClass
	attrs  map[string]starlark.Value
	frozen bool
}

var _ starlark.HasSetField = (*pyObject)(nil)

func (o *pyObject) String() string       { return "<" + o.class.name + " object>" }
func (o *pyObject) Type() string         { return o.class.name }
func (o *pyObject) Truth() starlark.Bool { return true }
func (o *pyObject) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable: %s object", o.class.name)
}

// Freeze freezes the object and its attributes.
func (o *pyObject) Freeze() {
	if o.frozen {
		return
	}
	o.frozen = true
	for _, v := range o.attrs {
		v.Freeze()
	}
}

// Attr returns an attribute of the object, else of its class (methods
// bound to the object).
func (o *pyObject) Attr(name string) (starlark.Value, error) {
	if v, ok := o.attrs[name]; ok {
		return v, nil
	}
	return boundMember(o.class, name, o)
}

// boundMember looks name up in class c and binds it for obj: a method to
// obj, a class method to obj's class, a static method or attribute not.
func boundMember(c *pyClass, name string, obj *pyObject) (starlark.Value, error) {
	v, owner, err := c.member(nil, name)
	if err != nil || v == nil {
		return nil, err
	}
	switch {
	case owner.static[name]:
		return v, nil
	case owner.classm[name]:
		return bindMethod(name, v, obj.class), nil
	}
	if _, ok := v.(starlark.Callable); ok {
		if _, isClass := v.(*pyClass); !isClass {
			return bindMethod(name, v, obj), nil
		}
	}
	return v, nil
}

// AttrNames lists the object's attributes and its class's members.
func (o *pyObject) AttrNames() []string {
	names := o.class.AttrNames()
	for n := range o.attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SetField sets an attribute (self.x = v).
func (o *pyObject) SetField(name string, v starlark.Value) error {
	if o.frozen {
		return fmt.Errorf("cannot set .%s of a frozen %s object", name, o.class.name)
	}
	o.attrs[name] = v
	return nil
}

func bindMethod(name string, fn, self starlark.Value) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return starlark.Call(th, fn, append(starlark.Tuple{self}, args...), kwargs)
	})
}

// classBuiltins are __dm_class__ and super.
func classBuiltins() starlark.StringDict {
	names := func(v starlark.Value) map[string]bool {
		out := map[string]bool{}
		if t, ok := v.(starlark.Tuple); ok {
			for _, e := range t {
				if s, ok := e.(starlark.String); ok {
					out[string(s)] = true
				}
			}
		}
		return out
	}
	return starlark.StringDict{
		starClass: builtin(starClass, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) != 5 {
				return nil, fmt.Errorf("%s is internal to dm", starClass)
			}
			name, _ := starlark.AsString(args[0])
			table, ok := args[1].(starlark.Callable)
			if !ok {
				return nil, fmt.Errorf("%s is internal to dm", starClass)
			}
			c := &pyClass{name: name, table: table, static: names(args[3]), classm: names(args[4])}
			if b, ok := args[2].(*pyClass); ok {
				c.base = b
			}
			return c, nil
		}),
		"super": builtin("super", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) != 2 {
				return nil, fmt.Errorf("super: dm supports super(Class, self)")
			}
			c, ok1 := args[0].(*pyClass)
			o, ok2 := args[1].(*pyObject)
			if !ok1 || !ok2 || c.base == nil {
				return nil, fmt.Errorf("super: want a class with a base and one of its objects")
			}
			return &pySuper{class: c.base, obj: o}, nil
		}),
	}
}

// pySuper is super(C, self): the methods of C's base, bound to self.
type pySuper struct {
	class *pyClass
	obj   *pyObject
}

func (s *pySuper) String() string        { return "<super: " + s.class.name + ">" }
func (s *pySuper) Type() string          { return "super" }
func (s *pySuper) Freeze()               {}
func (s *pySuper) Truth() starlark.Bool  { return true }
func (s *pySuper) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: super") }
func (s *pySuper) AttrNames() []string   { return s.class.AttrNames() }

// Attr returns a member of the base class bound to the object.
func (s *pySuper) Attr(name string) (starlark.Value, error) {
	return boundMember(s.class, name, s.obj)
}
