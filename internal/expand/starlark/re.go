package starlark

import (
	"fmt"
	"regexp"
	"strings"

	"go.starlark.net/starlark"
)

// Python's re module, as templates use it (deploymentmanager-samples'
// internal-lb parses instance group URLs with re.compile(...).search):
// compile, search, match, fullmatch, findall, sub, split and escape, the
// flags I, M and S, and match objects' group, groups, groupdict, start,
// end and span. Patterns run on Go's regexp (RE2): linear in the input,
// without backreferences or lookaround, which a pattern using them is
// refused for, naming it.

// Python's flag values.
const (
	reIgnoreCase = 2
	reMultiline  = 8
	reDotAll     = 16
)

// reModule is the module's members.
func reModule() starlark.StringDict {
	d := starlark.StringDict{
		"I": starlark.MakeInt(reIgnoreCase), "IGNORECASE": starlark.MakeInt(reIgnoreCase),
		"M": starlark.MakeInt(reMultiline), "MULTILINE": starlark.MakeInt(reMultiline),
		"S": starlark.MakeInt(reDotAll), "DOTALL": starlark.MakeInt(reDotAll),
	}
	d["compile"] = builtin("re.compile", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var pattern string
		flags := 0
		if err := starlark.UnpackArgs("re.compile", args, kwargs, "pattern", &pattern, "flags?", &flags); err != nil {
			return nil, err
		}
		return compileRE("re.compile", pattern, flags)
	})
	d["escape"] = builtin("re.escape", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var s string
		if err := starlark.UnpackPositionalArgs("re.escape", args, kwargs, 1, &s); err != nil {
			return nil, err
		}
		return starlark.String(regexp.QuoteMeta(s)), nil
	})
	// re.search(pattern, string, flags=0) and the others: the pattern's
	// method of the same name.
	// flagsAt is where each function takes flags positionally.
	flagsAt := map[string]int{"search": 2, "match": 2, "fullmatch": 2, "findall": 2, "split": 3, "sub": 4}
	for name, at := range flagsAt {
		d[name] = builtin("re."+name, func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) < 1 {
				return nil, fmt.Errorf("re.%s: missing the pattern", name)
			}
			pattern, ok := starlark.AsString(args[0])
			if !ok {
				return nil, fmt.Errorf("re.%s: the pattern is a %s, not a string", name, args[0].Type())
			}
			flags := 0
			if len(args) > at {
				if err := starlark.AsInt(args[at], &flags); err != nil {
					return nil, fmt.Errorf("re.%s: flags: %w", name, err)
				}
				args = args[:at]
			}
			var rest []starlark.Tuple
			for _, kv := range kwargs {
				if k, _ := starlark.AsString(kv[0]); k == "flags" {
					if err := starlark.AsInt(kv[1], &flags); err != nil {
						return nil, fmt.Errorf("re.%s: flags: %w", name, err)
					}
					continue
				}
				rest = append(rest, kv)
			}
			p, err := compileRE("re."+name, pattern, flags)
			if err != nil {
				return nil, err
			}
			m, _ := p.Attr(name)
			return starlark.Call(th, m, args[1:], rest)
		})
	}
	return d
}

// rePattern is a compiled pattern (re.compile's result).
type rePattern struct {
	pattern string
	re      *regexp.Regexp
	flags   int
}

// compileRE compiles a Python pattern with Python's flags on Go's regexp.
func compileRE(fn, pattern string, flags int) (*rePattern, error) {
	prefix := ""
	if flags&reIgnoreCase != 0 {
		prefix += "i"
	}
	if flags&reMultiline != 0 {
		prefix += "m"
	}
	if flags&reDotAll != 0 {
		prefix += "s"
	}
	src := pattern
	if prefix != "" {
		src = "(?" + prefix + ")" + pattern
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%s(%q): %v (patterns run on Go's regexp, RE2: no backreferences or lookaround)", fn, pattern, err)
	}
	return &rePattern{pattern: pattern, re: re, flags: flags}, nil
}

func (p *rePattern) String() string        { return fmt.Sprintf("re.compile(%q)", p.pattern) }
func (p *rePattern) Type() string          { return "re.Pattern" }
func (p *rePattern) Freeze()               {}
func (p *rePattern) Truth() starlark.Bool  { return true }
func (p *rePattern) Hash() (uint32, error) { return starlark.String(p.pattern).Hash() }
func (p *rePattern) AttrNames() []string {
	return []string{"findall", "flags", "fullmatch", "match", "pattern", "search", "split", "sub"}
}

// Attr returns the pattern's methods and fields.
func (p *rePattern) Attr(name string) (starlark.Value, error) {
	switch name {
	case "pattern":
		return starlark.String(p.pattern), nil
	case "flags":
		return starlark.MakeInt(p.flags), nil
	case "search", "match", "fullmatch":
		return builtin("Pattern."+name, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var s string
			if err := starlark.UnpackPositionalArgs("Pattern."+name, args, kwargs, 1, &s); err != nil {
				return nil, err
			}
			loc := p.re.FindStringSubmatchIndex(s)
			switch {
			case loc == nil:
				return starlark.None, nil
			case name == "match" && loc[0] != 0, name == "fullmatch" && (loc[0] != 0 || loc[1] != len(s)):
				// Anchored: retry anchored at the start (and end), since
				// the leftmost match need not be the one that starts at 0.
				anchored := `\A(?:` + p.re.String() + `)`
				if name == "fullmatch" {
					anchored += `\z`
				}
				loc = regexp.MustCompile(anchored).FindStringSubmatchIndex(s)
				if loc == nil {
					return starlark.None, nil
				}
			}
			return &reMatch{p: p, s: s, loc: loc}, nil
		}), nil
	case "findall":
		return builtin("Pattern.findall", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var s string
			if err := starlark.UnpackPositionalArgs("Pattern.findall", args, kwargs, 1, &s); err != nil {
				return nil, err
			}
			var out []starlark.Value
			for _, m := range p.re.FindAllStringSubmatch(s, -1) {
				switch len(m) {
				case 1:
					out = append(out, starlark.String(m[0]))
				case 2:
					out = append(out, starlark.String(m[1]))
				default:
					t := make(starlark.Tuple, len(m)-1)
					for i, g := range m[1:] {
						t[i] = starlark.String(g)
					}
					out = append(out, t)
				}
			}
			return starlark.NewList(out), nil
		}), nil
	case "split":
		return builtin("Pattern.split", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var s string
			maxsplit := 0
			if err := starlark.UnpackArgs("Pattern.split", args, kwargs, "string", &s, "maxsplit?", &maxsplit); err != nil {
				return nil, err
			}
			n := -1
			if maxsplit > 0 {
				n = maxsplit + 1
			}
			var out []starlark.Value
			for _, e := range p.re.Split(s, n) {
				out = append(out, starlark.String(e))
			}
			return starlark.NewList(out), nil
		}), nil
	case "sub":
		return builtin("Pattern.sub", func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var repl starlark.Value
			var s string
			count := 0
			if err := starlark.UnpackArgs("Pattern.sub", args, kwargs, "repl", &repl, "string", &s, "count?", &count); err != nil {
				return nil, err
			}
			return p.sub(th, repl, s, count)
		}), nil
	}
	return nil, nil
}

// sub replaces the first count matches (all if 0) of p in s with repl: a
// string, where \N and \g<name> are groups, or a function of the match.
func (p *rePattern) sub(th *starlark.Thread, repl starlark.Value, s string, count int) (starlark.Value, error) {
	var b strings.Builder
	last, n := 0, 0
	for _, loc := range p.re.FindAllStringSubmatchIndex(s, -1) {
		if count > 0 && n == count {
			break
		}
		n++
		b.WriteString(s[last:loc[0]])
		m := &reMatch{p: p, s: s, loc: loc}
		if str, ok := starlark.AsString(repl); ok {
			out, err := m.expand(str)
			if err != nil {
				return nil, err
			}
			b.WriteString(out)
		} else {
			v, err := starlark.Call(th, repl, starlark.Tuple{m}, nil)
			if err != nil {
				return nil, err
			}
			str, ok := starlark.AsString(v)
			if !ok {
				return nil, fmt.Errorf("Pattern.sub: the replacement function returned a %s, not a string", v.Type())
			}
			b.WriteString(str)
		}
		last = loc[1]
	}
	b.WriteString(s[last:])
	return starlark.String(b.String()), nil
}

// reMatch is a match object.
type reMatch struct {
	p   *rePattern
	s   string
	loc []int
}

func (m *reMatch) String() string {
	return fmt.Sprintf("<re.Match object; span=(%d, %d), match=%q>", m.loc[0], m.loc[1], m.s[m.loc[0]:m.loc[1]])
}
func (m *reMatch) Type() string          { return "re.Match" }
func (m *reMatch) Freeze()               {}
func (m *reMatch) Truth() starlark.Bool  { return true }
func (m *reMatch) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: re.Match") }
func (m *reMatch) AttrNames() []string {
	return []string{"end", "group", "groupdict", "groups", "span", "start", "string"}
}

// index is the number of group g (an int or a group's name).
func (m *reMatch) index(g starlark.Value) (int, error) {
	if name, ok := starlark.AsString(g); ok {
		if i := m.p.re.SubexpIndex(name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("no such group %q in %s", name, m.p)
	}
	var i int
	if err := starlark.AsInt(g, &i); err != nil {
		return 0, fmt.Errorf("a group is a number or a name, not a %s", g.Type())
	}
	if i < 0 || 2*i >= len(m.loc) {
		return 0, fmt.Errorf("no such group %d in %s", i, m.p)
	}
	return i, nil
}

// group is group i's text, or def if it did not take part.
func (m *reMatch) group(i int, def starlark.Value) starlark.Value {
	if m.loc[2*i] < 0 {
		return def
	}
	return starlark.String(m.s[m.loc[2*i]:m.loc[2*i+1]])
}

// expand is a sub replacement string with \N, \g<N> and \g<name> filled.
func (m *reMatch) expand(repl string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '\\' || i+1 == len(repl) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c := repl[i]; {
		case c >= '0' && c <= '9':
			j := i
			for j < len(repl) && j < i+2 && repl[j] >= '0' && repl[j] <= '9' {
				j++
			}
			var g int
			fmt.Sscan(repl[i:j], &g)
			if 2*g >= len(m.loc) {
				return "", fmt.Errorf("Pattern.sub: invalid group reference %d in %q", g, repl)
			}
			if v, ok := m.group(g, starlark.String("")).(starlark.String); ok {
				b.WriteString(string(v))
			}
			i = j - 1
		case c == 'g' && i+1 < len(repl) && repl[i+1] == '<':
			end := strings.IndexByte(repl[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("Pattern.sub: unterminated group name in %q", repl)
			}
			name := repl[i+2 : i+end]
			var gv starlark.Value = starlark.String(name)
			var n int
			if _, err := fmt.Sscan(name, &n); err == nil {
				gv = starlark.MakeInt(n)
			}
			g, err := m.index(gv)
			if err != nil {
				return "", fmt.Errorf("Pattern.sub: %w", err)
			}
			if v, ok := m.group(g, starlark.String("")).(starlark.String); ok {
				b.WriteString(string(v))
			}
			i += end
		case c == 'n':
			b.WriteByte('\n')
		case c == 't':
			b.WriteByte('\t')
		case c == '\\':
			b.WriteByte('\\')
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Attr returns the match's methods.
func (m *reMatch) Attr(name string) (starlark.Value, error) {
	switch name {
	case "string":
		return starlark.String(m.s), nil
	case "group":
		return builtin("Match.group", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(kwargs) > 0 {
				return nil, fmt.Errorf("Match.group takes no keyword arguments")
			}
			if len(args) == 0 {
				args = starlark.Tuple{starlark.MakeInt(0)}
			}
			out := make(starlark.Tuple, len(args))
			for i, a := range args {
				g, err := m.index(a)
				if err != nil {
					return nil, fmt.Errorf("Match.group: %w", err)
				}
				out[i] = m.group(g, starlark.None)
			}
			if len(out) == 1 {
				return out[0], nil
			}
			return out, nil
		}), nil
	case "groups":
		return builtin("Match.groups", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var def starlark.Value = starlark.None
			if err := starlark.UnpackArgs("Match.groups", args, kwargs, "default?", &def); err != nil {
				return nil, err
			}
			out := make(starlark.Tuple, len(m.loc)/2-1)
			for i := range out {
				out[i] = m.group(i+1, def)
			}
			return out, nil
		}), nil
	case "groupdict":
		return builtin("Match.groupdict", func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var def starlark.Value = starlark.None
			if err := starlark.UnpackArgs("Match.groupdict", args, kwargs, "default?", &def); err != nil {
				return nil, err
			}
			d := starlark.NewDict(0)
			for i, name := range m.p.re.SubexpNames() {
				if name != "" {
					if err := d.SetKey(starlark.String(name), m.group(i, def)); err != nil {
						return nil, err
					}
				}
			}
			return d, nil
		}), nil
	case "start", "end", "span":
		return builtin("Match."+name, func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var gv starlark.Value = starlark.MakeInt(0)
			if err := starlark.UnpackPositionalArgs("Match."+name, args, kwargs, 0, &gv); err != nil {
				return nil, err
			}
			g, err := m.index(gv)
			if err != nil {
				return nil, fmt.Errorf("Match.%s: %w", name, err)
			}
			start, end := m.loc[2*g], m.loc[2*g+1]
			switch name {
			case "start":
				return starlark.MakeInt(start), nil
			case "end":
				return starlark.MakeInt(end), nil
			}
			return starlark.Tuple{starlark.MakeInt(start), starlark.MakeInt(end)}, nil
		}), nil
	}
	return nil, nil
}
