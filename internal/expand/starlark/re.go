package starlark

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/pyre"
)

// Python's re, as DM templates use it (internal-lb.py:
// re.compile(...).search(url).group(2)), on package pyre: Python's
// syntax (lookaround, backreferences, named groups, inline flags,
// VERBOSE), RE2 where a pattern needs nothing more, a backtracking engine
// bounded by Options.RegexTimeout where it does. Positions are byte
// offsets, as Starlark's string indices are.

// reModule is the part of Python's re that templates use; compiled
// patterns are cached in cache.
func reModule(timeout time.Duration, cache engine.Cache) starlark.StringDict {
	compile := func(v starlark.Value, flags int) (*rePattern, error) {
		return reCompile(v, flags, timeout, cache)
	}
	fn := func(name string, f func(th *starlark.Thread, p *rePattern, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
		return builtin("re."+name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("re.%s: missing pattern", name)
			}
			// The flags are the argument after the ones a method takes:
			// re.search(pattern, string, flags), re.sub(pattern, repl,
			// string, count, flags).
			flags, rest, kw, err := reTakeFlags(name, args[1:], kwargs)
			if err != nil {
				return nil, err
			}
			p, err := compile(args[0], flags)
			if err != nil {
				return nil, err
			}
			return f(th, p, rest, kw)
		})
	}
	d := starlark.StringDict{
		"compile": builtin("re.compile", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var pat starlark.Value
			var flags int
			if err := starlark.UnpackArgs("re.compile", args, kwargs, "pattern", &pat, "flags?", &flags); err != nil {
				return nil, err
			}
			return compile(pat, flags)
		}),
		"escape": builtin("re.escape", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var s string
			if err := starlark.UnpackPositionalArgs("re.escape", args, kwargs, 1, &s); err != nil {
				return nil, err
			}
			return starlark.String(reEscape(s)), nil
		}),
		"I": starlark.MakeInt(pyre.IgnoreCase), "IGNORECASE": starlark.MakeInt(pyre.IgnoreCase),
		"M": starlark.MakeInt(pyre.Multiline), "MULTILINE": starlark.MakeInt(pyre.Multiline),
		"S": starlark.MakeInt(pyre.DotAll), "DOTALL": starlark.MakeInt(pyre.DotAll),
		"U": starlark.MakeInt(pyre.Unicode), "UNICODE": starlark.MakeInt(pyre.Unicode),
		"X": starlark.MakeInt(pyre.Verbose), "VERBOSE": starlark.MakeInt(pyre.Verbose),
		"A": starlark.MakeInt(pyre.ASCII), "ASCII": starlark.MakeInt(pyre.ASCII),
		"L": starlark.MakeInt(pyre.Locale), "LOCALE": starlark.MakeInt(pyre.Locale),
	}
	for _, m := range []string{"search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"} {
		d[m] = fn(m, func(th *starlark.Thread, p *rePattern, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return p.call(th, m, args, kwargs)
		})
	}
	return d
}

// reArity is how many positional arguments each function takes after the
// pattern, before flags.
var reArity = map[string]int{"search": 1, "match": 1, "fullmatch": 1, "findall": 1, "finditer": 1, "sub": 3, "subn": 3, "split": 2}

// reTakeFlags separates the flags argument of a module-level function.
func reTakeFlags(name string, args starlark.Tuple, kwargs []starlark.Tuple) (int, starlark.Tuple, []starlark.Tuple, error) {
	flags := 0
	var flagVal starlark.Value
	if n := reArity[name]; len(args) > n+1 {
		return 0, nil, nil, fmt.Errorf("re.%s: too many arguments", name)
	} else if len(args) == n+1 {
		flagVal, args = args[n], args[:n]
	}
	var kw []starlark.Tuple
	for _, p := range kwargs {
		if string(p[0].(starlark.String)) == "flags" {
			flagVal = p[1]
			continue
		}
		kw = append(kw, p)
	}
	if flagVal != nil {
		if err := starlark.AsInt(flagVal, &flags); err != nil {
			return 0, nil, nil, fmt.Errorf("re.%s: flags: %v", name, err)
		}
	}
	return flags, args, kw, nil
}

// reEscape is Python 3's re.escape: a backslash before each character
// special in a pattern.
func reEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("()[]{}?*+-|^$\\.&~# \t\n\r\v\f", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// rePattern is a compiled pattern (re.compile's result).
type rePattern struct {
	src   string
	flags int
	re    *pyre.Regexp
}

var _ starlark.HasAttrs = (*rePattern)(nil)

func reCompile(v starlark.Value, flags int, timeout time.Duration, cache engine.Cache) (*rePattern, error) {
	if p, ok := v.(*rePattern); ok {
		return p, nil
	}
	s, ok := starlark.AsString(v)
	if !ok {
		return nil, fmt.Errorf("re: pattern is %s, not a string", v.Type())
	}
	re, err := engine.Cached(cache, "re:"+strconv.Itoa(flags)+":"+s, func() (any, error) {
		return pyre.Compile(s, flags, timeout)
	})
	if err != nil {
		return nil, fmt.Errorf("re: %w", err)
	}
	r := re.(*pyre.Regexp)
	return &rePattern{src: s, flags: r.Flags(), re: r}, nil
}

func (p *rePattern) String() string        { return "re.compile(" + strconv.Quote(p.src) + ")" }
func (p *rePattern) Type() string          { return "re.Pattern" }
func (p *rePattern) Freeze()               {}
func (p *rePattern) Truth() starlark.Bool  { return true }
func (p *rePattern) Hash() (uint32, error) { return starlark.String(p.src).Hash() }

func (p *rePattern) AttrNames() []string {
	return []string{"findall", "finditer", "flags", "fullmatch", "groupindex", "groups", "match", "pattern", "search", "split", "sub", "subn"}
}

func (p *rePattern) Attr(name string) (starlark.Value, error) {
	switch name {
	case "pattern":
		return starlark.String(p.src), nil
	case "flags":
		return starlark.MakeInt(p.flags), nil
	case "groups":
		return starlark.MakeInt(p.re.Groups()), nil
	case "groupindex":
		d := starlark.NewDict(0)
		for i, n := range p.re.GroupNames() {
			if n != "" {
				_ = d.SetKey(starlark.String(n), starlark.MakeInt(i)) // a fresh dict
			}
		}
		return d, nil
	}
	if _, ok := reArity[name]; !ok {
		return nil, nil
	}
	return builtin("Pattern."+name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return p.call(th, name, args, kwargs)
	}), nil
}

// call runs method name of the pattern.
func (p *rePattern) call(th *starlark.Thread, name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	switch name {
	case "search", "match", "fullmatch":
		var s string
		if err := starlark.UnpackArgs(name, args, kwargs, "string", &s); err != nil {
			return nil, err
		}
		mode := map[string]pyre.Mode{"search": pyre.Search, "match": pyre.Anchored, "fullmatch": pyre.Full}[name]
		loc, err := p.re.Find(s, mode)
		if err != nil {
			return nil, err
		}
		if loc == nil {
			return starlark.None, nil
		}
		return &reMatch{p: p, s: s, loc: loc}, nil
	case "findall", "finditer":
		var s string
		if err := starlark.UnpackArgs(name, args, kwargs, "string", &s); err != nil {
			return nil, err
		}
		var out []starlark.Value
		err := p.re.FindAll(s, func(loc []int) bool {
			m := &reMatch{p: p, s: s, loc: loc}
			switch n := p.re.Groups(); {
			case name == "finditer":
				out = append(out, m)
			case n == 0:
				out = append(out, m.group(0, starlark.String("")))
			case n == 1:
				out = append(out, m.group(1, starlark.String("")))
			default:
				out = append(out, m.groups(starlark.String("")))
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		return starlark.NewList(out), nil
	case "sub", "subn":
		var repl starlark.Value
		var s string
		count := 0
		if err := starlark.UnpackArgs(name, args, kwargs, "repl", &repl, "string", &s, "count?", &count); err != nil {
			return nil, err
		}
		out, n, err := p.sub(th, repl, s, count)
		if err != nil {
			return nil, err
		}
		if name == "subn" {
			return starlark.Tuple{starlark.String(out), starlark.MakeInt(n)}, nil
		}
		return starlark.String(out), nil
	case "split":
		var s string
		maxsplit := 0
		if err := starlark.UnpackArgs(name, args, kwargs, "string", &s, "maxsplit?", &maxsplit); err != nil {
			return nil, err
		}
		var out []starlark.Value
		last, n := 0, 0
		err := p.re.FindAll(s, func(loc []int) bool {
			if maxsplit > 0 && n >= maxsplit {
				return false
			}
			n++
			out = append(out, starlark.String(s[last:loc[0]]))
			m := &reMatch{p: p, s: s, loc: loc}
			for g := 1; g <= p.re.Groups(); g++ {
				out = append(out, m.group(g, starlark.None))
			}
			last = loc[1]
			return true
		})
		if err != nil {
			return nil, err
		}
		out = append(out, starlark.String(s[last:]))
		return starlark.NewList(out), nil
	}
	return nil, fmt.Errorf("re: no method %s", name)
}

// sub replaces up to count (0: all) matches in s by repl, a template
// (\1, \g<1>, \g<name>, \n) or a function of the match.
func (p *rePattern) sub(th *starlark.Thread, repl starlark.Value, s string, count int) (string, int, error) {
	if t, ok := starlark.AsString(repl); ok {
		// Python reads the template before matching: a bad group
		// reference fails even where nothing matches.
		if err := (&reMatch{p: p, loc: make([]int, 2*(p.re.Groups()+1))}).expand(&strings.Builder{}, t); err != nil {
			return "", 0, err
		}
	}
	var b strings.Builder
	last, n := 0, 0
	var failed error
	err := p.re.FindAll(s, func(loc []int) bool {
		if count > 0 && n >= count {
			return false
		}
		b.WriteString(s[last:loc[0]])
		m := &reMatch{p: p, s: s, loc: loc}
		if fn, ok := repl.(starlark.Callable); ok {
			v, err := starlark.Call(th, fn, starlark.Tuple{m}, nil)
			if err != nil {
				failed = err
				return false
			}
			r, ok := starlark.AsString(v)
			if !ok {
				failed = fmt.Errorf("re.sub: the replacement function returned %s, not a string", v.Type())
				return false
			}
			b.WriteString(r)
		} else {
			t, ok := starlark.AsString(repl)
			if !ok {
				failed = fmt.Errorf("re.sub: repl is %s, not a string or function", repl.Type())
				return false
			}
			if failed = m.expand(&b, t); failed != nil {
				return false
			}
		}
		last = loc[1]
		n++
		return true
	})
	if failed != nil {
		return "", 0, failed
	}
	if err != nil {
		return "", 0, err
	}
	b.WriteString(s[last:])
	return b.String(), n, nil
}

// reMatch is a match object.
type reMatch struct {
	p   *rePattern
	s   string
	loc []int
}

var _ starlark.HasAttrs = (*reMatch)(nil)

func (m *reMatch) String() string {
	return fmt.Sprintf("<re.Match object; span=(%d, %d), match=%s>", m.loc[0], m.loc[1], strconv.Quote(m.s[m.loc[0]:m.loc[1]]))
}
func (m *reMatch) Type() string          { return "re.Match" }
func (m *reMatch) Freeze()               {}
func (m *reMatch) Truth() starlark.Bool  { return true }
func (m *reMatch) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: re.Match") }

func (m *reMatch) AttrNames() []string {
	return []string{"end", "group", "groupdict", "groups", "pos", "re", "span", "start", "string"}
}

// index resolves a group given by number or name.
func (m *reMatch) index(v starlark.Value) (int, error) {
	if s, ok := starlark.AsString(v); ok {
		if i := m.p.re.GroupIndex(s); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("no such group %q", s)
	}
	var i int
	if err := starlark.AsInt(v, &i); err != nil || i < 0 || i > m.p.re.Groups() {
		return 0, fmt.Errorf("no such group %s", v)
	}
	return i, nil
}

// group is group i, or def when it did not take part in the match.
func (m *reMatch) group(i int, def starlark.Value) starlark.Value {
	if m.loc[2*i] < 0 {
		return def
	}
	return starlark.String(m.s[m.loc[2*i]:m.loc[2*i+1]])
}

func (m *reMatch) groups(def starlark.Value) starlark.Tuple {
	out := make(starlark.Tuple, m.p.re.Groups())
	for i := range out {
		out[i] = m.group(i+1, def)
	}
	return out
}

func (m *reMatch) Attr(name string) (starlark.Value, error) {
	switch name {
	case "string":
		return starlark.String(m.s), nil
	case "re":
		return m.p, nil
	case "pos":
		return starlark.MakeInt(0), nil
	}
	fn := func(f func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) (starlark.Value, error) {
		return builtin("Match."+name, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return f(args, kwargs)
		}), nil
	}
	switch name {
	case "group":
		return fn(func(args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if len(args) == 0 {
				return m.group(0, starlark.None), nil
			}
			out := make(starlark.Tuple, len(args))
			for k, a := range args {
				i, err := m.index(a)
				if err != nil {
					return nil, fmt.Errorf("Match.group: %v", err)
				}
				out[k] = m.group(i, starlark.None)
			}
			if len(out) == 1 {
				return out[0], nil
			}
			return out, nil
		})
	case "groups":
		return fn(func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var def starlark.Value = starlark.None
			if err := starlark.UnpackArgs("Match.groups", args, kwargs, "default?", &def); err != nil {
				return nil, err
			}
			return m.groups(def), nil
		})
	case "groupdict":
		return fn(func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var def starlark.Value = starlark.None
			if err := starlark.UnpackArgs("Match.groupdict", args, kwargs, "default?", &def); err != nil {
				return nil, err
			}
			d := starlark.NewDict(0)
			for i, n := range m.p.re.GroupNames() {
				if n != "" {
					if err := d.SetKey(starlark.String(n), m.group(i, def)); err != nil {
						return nil, err
					}
				}
			}
			return d, nil
		})
	case "start", "end", "span":
		return fn(func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var g starlark.Value = starlark.MakeInt(0)
			if err := starlark.UnpackArgs("Match."+name, args, kwargs, "group?", &g); err != nil {
				return nil, err
			}
			i, err := m.index(g)
			if err != nil {
				return nil, fmt.Errorf("Match.%s: %v", name, err)
			}
			start, end := starlark.MakeInt(m.loc[2*i]), starlark.MakeInt(m.loc[2*i+1])
			switch name {
			case "start":
				return start, nil
			case "end":
				return end, nil
			}
			return starlark.Tuple{start, end}, nil
		})
	}
	return nil, nil
}

// expand writes template t with the match's groups (\1, \g<1>, \g<name>)
// and Python's escapes (\n, \t, \\).
func (m *reMatch) expand(b *strings.Builder, t string) error {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c != '\\' || i+1 == len(t) {
			b.WriteByte(c)
			continue
		}
		i++
		switch n := t[i]; {
		case n >= '0' && n <= '9':
			j := i + 1
			if j < len(t) && t[j] >= '0' && t[j] <= '9' {
				j++
			}
			g, _ := strconv.Atoi(t[i:j])
			if g > m.p.re.Groups() {
				return fmt.Errorf("re.sub: invalid group reference %d", g)
			}
			if v, ok := m.group(g, starlark.String("")).(starlark.String); ok {
				b.WriteString(string(v))
			}
			i = j - 1
		case n == 'g' && i+1 < len(t) && t[i+1] == '<':
			end := strings.IndexByte(t[i:], '>')
			if end < 0 {
				return fmt.Errorf("re.sub: missing > in group reference")
			}
			ref := t[i+2 : i+end]
			var gv starlark.Value = starlark.String(ref)
			if k, err := strconv.Atoi(ref); err == nil {
				gv = starlark.MakeInt(k)
			}
			g, err := m.index(gv)
			if err != nil {
				return fmt.Errorf("re.sub: %v", err)
			}
			if v, ok := m.group(g, starlark.String("")).(starlark.String); ok {
				b.WriteString(string(v))
			}
			i += end
		case n == 'n':
			b.WriteByte('\n')
		case n == 't':
			b.WriteByte('\t')
		case n == 'r':
			b.WriteByte('\r')
		case n == '\\':
			b.WriteByte('\\')
		default:
			b.WriteByte('\\')
			b.WriteByte(n)
		}
	}
	return nil
}
