package starlark

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

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

const (
	starClass = "__dm_class__"
	// starDel is del x[k] (delAsPop).
	starDel = "__dm_del__"
)

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
			return engine.At(file, line+1, engine.Invalid("class %s: %s; dm translates classes that hold only methods (plain, @staticmethod, @classmethod or @property) and attributes", name, fmt.Sprintf(format, args...)))
		}
		baseExpr := "None"
		switch {
		case base == "" || base == "object":
		case classes[base]:
			baseExpr = base
		case pyExceptions[base]:
			// class Error(Exception): pass, for raise Error('...').
			baseExpr = fmt.Sprintf("%q", base)
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
		static, classm, props := []string{}, []string{}, []string{}
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
			case t == "@staticmethod" || t == "@classmethod" || t == "@property":
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
				case "@property":
					props = append(props, mm[1])
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
		lines[i] = fmt.Sprintf("%s = %s(%q, lambda: {%s}, %s, %s, %s, %s)", name, starClass, name, strings.Join(table, ", "), baseExpr, pyStrTuple(static), pyStrTuple(classm), pyStrTuple(props))
		classes[name] = true
		changed = true
		i = end - 1
	}
	if !changed {
		return src, nil
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// pyExceptions are the builtin exception classes a class may derive from.
var pyExceptions = map[string]bool{
	"Exception": true, "BaseException": true, "ValueError": true, "TypeError": true, "KeyError": true,
	"IndexError": true, "AttributeError": true, "RuntimeError": true, "LookupError": true, "NotImplementedError": true,
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
	props   map[string]bool
	// exception is the builtin exception class the class derives from
	// directly, if any: its objects keep their arguments in args.
	exception string
	frozen    bool
	// objects counts the objects made, for their identity hashes.
	objects atomic.Uint32
}

var (
	_ starlark.HasAttrs    = (*pyClass)(nil)
	_ starlark.HasSetField = (*pyClass)(nil)
	_ starlark.Callable    = (*pyClass)(nil)
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

// SetField sets a class attribute (C.x = v), which objects then read.
func (c *pyClass) SetField(name string, v starlark.Value) error {
	if c.frozen {
		return fmt.Errorf("cannot set .%s of a frozen class %s", name, c.name)
	}
	if _, _, err := c.member(nil, name); err != nil {
		return err
	}
	return c.members.SetKey(starlark.String(name), v)
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
	obj := &pyObject{class: c, attrs: map[string]starlark.Value{}, thread: th, id: c.objects.Add(1)}
	self, err := obj.self(th)
	if err != nil {
		return nil, err
	}
	init, _, err := c.member(th, "__init__")
	if err != nil {
		return nil, err
	}
	if init == nil {
		if c.isException() && len(kwargs) == 0 {
			obj.attrs["args"] = args
			return self, nil
		}
		if len(args)+len(kwargs) > 0 {
			return nil, fmt.Errorf("%s() takes no arguments", c.name)
		}
		return self, nil
	}
	if _, err := starlark.Call(th, init, append(starlark.Tuple{self}, args...), kwargs); err != nil {
		return nil, err
	}
	return self, nil
}

// isException reports whether the class derives from a builtin exception.
func (c *pyClass) isException() bool {
	for k := c; k != nil; k = k.base {
		if k.exception != "" {
			return true
		}
	}
	return false
}

func (c *pyClass) isSubclassOf(o *pyClass) bool {
	for k := c; k != nil; k = k.base {
		if k == o {
			return true
		}
	}
	return false
}

// pyObject is an instance of a translated class. Its Go type is one of
// pyObject, pyIterObject, pyCallObject and pyIterCallObject (self), so that
// only objects of a class with __iter__ are iterable and only those of a
// class with __call__ are callable, as in Python.
type pyObject struct {
	class *pyClass
	attrs map[string]starlark.Value
	// self is the value the object is (this or a wrapper of it): what
	// methods are bound to.
	value starlark.Value
	// thread is the thread that made the object, which its special
	// methods run on when Starlark calls them without one (o[k], str(o),
	// sorting): the expansion's, so its steps and cancellation bound them.
	thread *starlark.Thread
	id     uint32
	frozen bool
}

var (
	_ starlark.HasSetField = (*pyObject)(nil)
	_ starlark.HasSetKey   = (*pyObject)(nil)
	_ starlark.Container   = (*pyObject)(nil)
	_ starlark.Comparable  = (*pyObject)(nil)
	_ starlark.HasBinary   = (*pyObject)(nil)
	_ starlark.Sequence    = (*pyIterObject)(nil)
	_ starlark.Callable    = (*pyCallObject)(nil)
	_ starlark.Sequence    = (*pyIterCallObject)(nil)
	_ starlark.Callable    = (*pyIterCallObject)(nil)
)

// self makes the value the object is, by the special methods of its class.
func (o *pyObject) self(th *starlark.Thread) (starlark.Value, error) {
	iter, _, err := o.class.member(th, "__iter__")
	if err != nil {
		return nil, err
	}
	call, _, err := o.class.member(th, "__call__")
	if err != nil {
		return nil, err
	}
	switch {
	case iter != nil && call != nil:
		o.value = &pyIterCallObject{o}
	case iter != nil:
		o.value = &pyIterObject{o}
	case call != nil:
		o.value = &pyCallObject{o}
	default:
		o.value = o
	}
	return o.value, nil
}

// asObject returns the object a value of a translated class is.
func asObject(v starlark.Value) (*pyObject, bool) {
	switch v := v.(type) {
	case *pyObject:
		return v, true
	case *pyIterObject:
		return v.pyObject, true
	case *pyCallObject:
		return v.pyObject, true
	case *pyIterCallObject:
		return v.pyObject, true
	}
	return nil, false
}

// special returns the special method name of the object's class bound to
// the object, or nil: Python looks them up on the type, not the object.
func (o *pyObject) special(name string) (starlark.Value, error) {
	v, _, err := o.class.member(o.thread, name)
	if err != nil || v == nil {
		return nil, err
	}
	return bindMethod(name, v, o.value), nil
}

// callSpecial calls the special method name; found is false if the
// class has none.
func (o *pyObject) callSpecial(name string, args ...starlark.Value) (v starlark.Value, found bool, err error) {
	m, err := o.special(name)
	if err != nil || m == nil {
		return nil, false, err
	}
	v, err = starlark.Call(o.thread, m, args, nil)
	return v, true, err
}

// String is __str__, else __repr__, else Python's default.
func (o *pyObject) String() string {
	for _, name := range []string{"__str__", "__repr__"} {
		v, found, err := o.callSpecial(name)
		if !found {
			continue
		}
		if s, ok := v.(starlark.String); ok && err == nil {
			return string(s)
		}
		break
	}
	return o.defaultText()
}

// defaultText is what str makes of an object whose class defines neither
// __str__ nor __repr__: an exception's argument, else Python's default.
func (o *pyObject) defaultText() string {
	if args, ok := o.attrs["args"].(starlark.Tuple); ok && o.class.isException() {
		switch len(args) {
		case 0:
			return ""
		case 1:
			if s, ok := args[0].(starlark.String); ok {
				return string(s)
			}
			return args[0].String()
		}
		return args.String()
	}
	return "<" + o.class.name + " object>"
}

// pyStringOf is str(o) or repr(o) as Python runs them, the special
// method's failure an error; ok is false for a value of no class.
func pyStringOf(v starlark.Value, repr bool) (starlark.Value, bool, error) {
	o, ok := asObject(v)
	if !ok {
		return nil, false, nil
	}
	names := []string{"__str__", "__repr__"}
	if repr {
		names = names[1:]
	}
	for _, name := range names {
		s, found, err := o.callSpecial(name)
		if !found {
			continue
		}
		if err != nil {
			return nil, true, err
		}
		if _, isStr := s.(starlark.String); !isStr {
			return nil, true, fmt.Errorf("%s returned non-string (type %s)", name, s.Type())
		}
		return s, true, nil
	}
	return starlark.String(o.defaultText()), true, nil
}

// pyLenOf is len(o) by __len__; ok is false for a value of no class.
func pyLenOf(v starlark.Value) (starlark.Value, bool, error) {
	o, ok := asObject(v)
	if !ok {
		return nil, false, nil
	}
	n, found, err := o.callSpecial("__len__")
	switch {
	case !found && err == nil:
		return nil, true, fmt.Errorf("object of type '%s' has no len()", o.class.name)
	case err != nil:
		return nil, true, err
	}
	if _, isInt := n.(starlark.Int); !isInt {
		return nil, true, fmt.Errorf("'%s' object cannot be interpreted as an integer", n.Type())
	}
	return n, true, nil
}

func (o *pyObject) Type() string { return o.class.name }

// Truth is __bool__, else __len__ not 0, else true. A failing method
// reads as true: Starlark's truth cannot fail.
func (o *pyObject) Truth() starlark.Bool {
	if v, found, err := o.callSpecial("__bool__"); found {
		return err != nil || v.Truth() == starlark.True
	}
	if v, found, err := o.callSpecial("__len__"); found {
		return err != nil || v.Truth() == starlark.True
	}
	return true
}

// Hash is __hash__; an object of a class that defines __eq__ without it
// is unhashable (Python 3); others hash by identity.
func (o *pyObject) Hash() (uint32, error) {
	if v, found, err := o.callSpecial("__hash__"); found {
		if err != nil {
			return 0, err
		}
		i, ok := v.(starlark.Int)
		if !ok {
			return 0, fmt.Errorf("__hash__ method should return an integer")
		}
		return i.Hash()
	}
	if eq, _, err := o.class.member(o.thread, "__eq__"); err != nil || eq != nil {
		return 0, fmt.Errorf("unhashable type: '%s'", o.class.name)
	}
	return o.id*2654435761 ^ uint32(len(o.class.name)), nil
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
// bound to the object, a property's getter called).
func (o *pyObject) Attr(name string) (starlark.Value, error) {
	if v, ok := o.attrs[name]; ok {
		return v, nil
	}
	return boundMember(o.class, name, o)
}

// boundMember looks name up in class c and binds it for obj: a method to
// obj, a class method to obj's class, a static method or attribute not; a
// property's getter is called.
func boundMember(c *pyClass, name string, obj *pyObject) (starlark.Value, error) {
	v, owner, err := c.member(obj.thread, name)
	if err != nil || v == nil {
		return nil, err
	}
	switch {
	case owner.static[name]:
		return v, nil
	case owner.classm[name]:
		return bindMethod(name, v, obj.class), nil
	case owner.props[name]:
		return starlark.Call(obj.thread, v, starlark.Tuple{obj.value}, nil)
	}
	if _, ok := v.(starlark.Callable); ok {
		if _, isClass := v.(*pyClass); !isClass {
			return bindMethod(name, v, obj.value), nil
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

// SetField sets an attribute (self.x = v); a property has no setter.
func (o *pyObject) SetField(name string, v starlark.Value) error {
	if o.frozen {
		return fmt.Errorf("cannot set .%s of a frozen %s object", name, o.class.name)
	}
	if _, owner, err := o.class.member(o.thread, name); err == nil && owner != nil && owner.props[name] {
		return fmt.Errorf("can't set attribute %s of a %s object: it is a property without a setter", name, o.class.name)
	}
	o.attrs[name] = v
	return nil
}

// Get is o[k] by __getitem__.
func (o *pyObject) Get(k starlark.Value) (starlark.Value, bool, error) {
	v, found, err := o.callSpecial("__getitem__", k)
	if !found && err == nil {
		return nil, false, fmt.Errorf("'%s' object is not subscriptable", o.class.name)
	}
	return v, err == nil, err
}

// SetKey is o[k] = v by __setitem__.
func (o *pyObject) SetKey(k, v starlark.Value) error {
	_, found, err := o.callSpecial("__setitem__", k, v)
	if !found && err == nil {
		return fmt.Errorf("'%s' object does not support item assignment", o.class.name)
	}
	return err
}

// pyDelItem is del o[k] by __delitem__; ok is false for a value of no
// class.
func pyDelItem(x, k starlark.Value) (bool, error) {
	o, ok := asObject(x)
	if !ok {
		return false, nil
	}
	_, found, err := o.callSpecial("__delitem__", k)
	if !found && err == nil {
		return true, fmt.Errorf("'%s' object does not support item deletion", o.class.name)
	}
	return true, err
}

// Has is k in o: __contains__, else a walk of __iter__, as Python does.
func (o *pyObject) Has(k starlark.Value) (bool, error) {
	if v, found, err := o.callSpecial("__contains__", k); found {
		if err != nil {
			return false, err
		}
		return v.Truth() == starlark.True, nil
	}
	it, found, err := o.callSpecial("__iter__")
	if err != nil {
		return false, err
	}
	if !found {
		return false, fmt.Errorf("argument of type '%s' is not iterable", o.class.name)
	}
	seq, ok := it.(starlark.Iterable)
	if !ok {
		return false, fmt.Errorf("iter() returned non-iterator of type '%s'", it.Type())
	}
	iter := seq.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		if eq, err := starlark.Equal(x, k); err != nil || eq {
			return eq, err
		}
	}
	return false, nil
}

// compareMethods are the special methods of each comparison, and the
// reflected one Python tries on the right operand.
var compareMethods = map[syntax.Token][2]string{
	syntax.EQL: {"__eq__", "__eq__"},
	syntax.NEQ: {"__ne__", "__ne__"},
	syntax.LT:  {"__lt__", "__gt__"},
	syntax.LE:  {"__le__", "__ge__"},
	syntax.GT:  {"__gt__", "__lt__"},
	syntax.GE:  {"__ge__", "__le__"},
}

// CompareSameType compares by the class's special methods: == and != by
// identity where the class defines neither, an ordering only where it
// defines it (sorted needs __lt__), as Python 3 does.
func (o *pyObject) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	other, _ := asObject(y)
	names := compareMethods[op]
	if v, found, err := o.callSpecial(names[0], y); found {
		if err != nil {
			return false, err
		}
		return v.Truth() == starlark.True, nil
	}
	if other != nil && names[1] != names[0] {
		if v, found, err := other.callSpecial(names[1], o.value); found {
			if err != nil {
				return false, err
			}
			return v.Truth() == starlark.True, nil
		}
	}
	switch op {
	case syntax.EQL:
		return other == o, nil
	case syntax.NEQ:
		if v, found, err := o.callSpecial("__eq__", y); found {
			if err != nil {
				return false, err
			}
			return v.Truth() == starlark.False, nil
		}
		return other != o, nil
	}
	return false, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, o.class.name, y.Type())
}

// binaryMethods are the special methods of the arithmetic operators, and
// the reflected ones.
var binaryMethods = map[syntax.Token][2]string{
	syntax.PLUS:       {"__add__", "__radd__"},
	syntax.MINUS:      {"__sub__", "__rsub__"},
	syntax.STAR:       {"__mul__", "__rmul__"},
	syntax.SLASH:      {"__truediv__", "__rtruediv__"},
	syntax.SLASHSLASH: {"__floordiv__", "__rfloordiv__"},
	syntax.PERCENT:    {"__mod__", "__rmod__"},
}

// Binary runs an arithmetic operator by the class's special method (the
// reflected one when the object is on the right); nil, nil where the class
// has none, for Starlark's error.
func (o *pyObject) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	names, ok := binaryMethods[op]
	if !ok {
		return nil, nil
	}
	name := names[0]
	if side == starlark.Right {
		name = names[1]
	}
	v, _, err := o.callSpecial(name, y)
	return v, err
}

// pyIterObject is an object of a class with __iter__.
type pyIterObject struct{ *pyObject }

func (o *pyIterObject) Iterate() starlark.Iterator { return o.iterate() }
func (o *pyIterObject) Len() int                   { return o.length() }

// iterate walks what __iter__ returns. Starlark's iteration cannot fail:
// where __iter__ fails or returns no iterable, the object is not
// iterable (nil), and the loop says so.
func (o *pyObject) iterate() starlark.Iterator {
	v, found, err := o.callSpecial("__iter__")
	if !found || err != nil {
		return nil
	}
	if seq, ok := v.(starlark.Iterable); ok {
		return seq.Iterate()
	}
	return nil
}

// length is __len__, or -1 (no length) where it fails or is absent.
func (o *pyObject) length() int {
	v, found, err := o.callSpecial("__len__")
	if !found || err != nil {
		return -1
	}
	n, err := starlark.AsInt32(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// pyCallObject is an object of a class with __call__.
type pyCallObject struct{ *pyObject }

func (o *pyCallObject) Name() string { return o.class.name }
func (o *pyCallObject) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return o.call(th, args, kwargs)
}

func (o *pyObject) call(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	m, err := o.special("__call__")
	if err != nil {
		return nil, err
	}
	return starlark.Call(th, m, args, kwargs)
}

// pyIterCallObject is an object of a class with __iter__ and __call__.
type pyIterCallObject struct{ *pyObject }

func (o *pyIterCallObject) Iterate() starlark.Iterator { return o.iterate() }
func (o *pyIterCallObject) Len() int                   { return o.length() }
func (o *pyIterCallObject) Name() string               { return o.class.name }
func (o *pyIterCallObject) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return o.call(th, args, kwargs)
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
			if len(args) != 6 {
				return nil, fmt.Errorf("%s is internal to dm", starClass)
			}
			name, _ := starlark.AsString(args[0])
			table, ok := args[1].(starlark.Callable)
			if !ok {
				return nil, fmt.Errorf("%s is internal to dm", starClass)
			}
			c := &pyClass{name: name, table: table, static: names(args[3]), classm: names(args[4]), props: names(args[5])}
			switch b := args[2].(type) {
			case *pyClass:
				c.base = b
			case starlark.String:
				c.exception = string(b)
			}
			return c, nil
		}),
		starTry: builtin(starTry, tryBuiltin),
		starDel: builtin(starDel, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) != 2 || len(kwargs) != 0 {
				return nil, fmt.Errorf("%s is internal to dm", starDel)
			}
			if ok, err := pyDelItem(args[0], args[1]); ok {
				return starlark.None, err
			}
			var pop starlark.Value
			if a, ok := args[0].(starlark.HasAttrs); ok {
				pop, _ = a.Attr("pop")
			}
			if pop == nil {
				return nil, fmt.Errorf("'%s' object does not support item deletion", args[0].Type())
			}
			_, err := starlark.Call(th, pop, args[1:], nil)
			return starlark.None, err
		}),
		"super": builtin("super", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) != 2 {
				return nil, fmt.Errorf("super: dm supports super(Class, self)")
			}
			c, ok1 := args[0].(*pyClass)
			o, ok2 := asObject(args[1])
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
