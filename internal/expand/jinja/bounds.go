package jinja

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/dmhq/dm/internal/expand/engine"

	"github.com/dmhq/dm/internal/expand/python"
)

// gonja's filters, string methods and lipsum() that allocate by an
// argument (a width, a count, a replacement) are wrapped to refuse results
// larger than limit before they allocate them: "x".zfill(2000000000) would
// otherwise take 2 GB from the process.

// strMethodNames are gonja v2's string methods; a MethodSet cannot be
// listed, so the bounded set is rebuilt from these names.
var strMethodNames = strings.Fields(`capitalize capwords casefold center count encode endswith
	expandtabs find format format_map isalnum isalpha isascii isdecimal isdigit islower
	isnumeric isprintable isspace istitle isupper join ljust lower lstrip partition
	removeprefix removesuffix replace rfind rjust rpartition rsplit rstrip split splitlines
	startswith strip swapcase title upper zfill`)

// formatWidthRE finds the numbers in replacement fields of a format
// string ("{:>2000000000}").
var formatWidthRE = regexp.MustCompile(`\{[^{}]*?(\d+)[^{}]*\}`)

func sizeErr(what string, n, limit int) error { return python.SizeErr(what, n, limit) }

func intArg(args *exec.VarArgs, i int, kw string) (int, bool) {
	if i < len(args.Args) && args.Args[i].IsInteger() {
		return args.Args[i].Integer(), true
	}
	if v, ok := args.KwArgs[kw]; ok && v.IsInteger() {
		return v.Integer(), true
	}
	return 0, false
}

func strArg(args *exec.VarArgs, i int) (string, bool) {
	if i < len(args.Args) {
		return args.Args[i].String(), true
	}
	return "", false
}

// checkStrMethod refuses a string method call whose result would exceed
// limit.
func checkStrMethod(name, self string, args *exec.VarArgs, limit int) error {
	switch name {
	case "center", "ljust", "rjust", "zfill":
		if w, ok := intArg(args, 0, "width"); ok && w > limit {
			return sizeErr(fmt.Sprintf("%s(%d)", name, w), w, limit)
		}
	case "expandtabs":
		if t, ok := intArg(args, 0, "tabsize"); ok && t > 0 {
			if n := len(self) + strings.Count(self, "\t")*t; n > limit {
				return sizeErr(fmt.Sprintf("expandtabs(%d)", t), n, limit)
			}
		}
	case "format", "format_map":
		for _, m := range formatWidthRE.FindAllStringSubmatch(self, -1) {
			if w, err := strconv.Atoi(m[1]); err != nil || w > limit {
				return sizeErr("format width "+m[1], w, limit)
			}
		}
	case "replace":
		old, ok1 := strArg(args, 0)
		new, ok2 := strArg(args, 1)
		if ok1 && ok2 {
			if n := engine.ReplacedSize(self, old, new); n > limit {
				return sizeErr("replace", n, limit)
			}
		}
	}
	return nil
}

// boundedMethods returns gonja's methods with the string methods checked.
func boundedMethods(limit int) exec.Methods {
	m := builtins.Methods
	orig := m.Str
	str := map[string]exec.Method[string]{}
	for _, name := range strMethodNames {
		fn, ok := orig.Get(name)
		if !ok {
			continue
		}
		str[name] = func(self string, sv *exec.Value, args *exec.VarArgs) (any, error) {
			if err := checkStrMethod(name, self, args, limit); err != nil {
				return nil, err
			}
			if name == "replace" && len(args.Args) == 2 && args.KwArgs["count"] == nil {
				// Python's count is optional (every occurrence); gonja's is not.
				args = &exec.VarArgs{Args: []*exec.Value{args.Args[0], args.Args[1], exec.AsValue(-1)}, KwArgs: args.KwArgs}
			}
			return fn(self, sv, args)
		}
	}
	// gonja's count finds one occurrence at most; Python's counts them.
	str["count"] = func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		sub, ok := strArg(args, 0)
		if !ok {
			return nil, errors.New("count() takes a string")
		}
		r := []rune(self)
		start, end := 0, len(r)
		if i, ok := intArg(args, 1, "start"); ok {
			start = i
		}
		if i, ok := intArg(args, 2, "end"); ok {
			end = i
		}
		norm := func(i int) int {
			if i < 0 {
				i += len(r)
			}
			return min(max(i, 0), len(r))
		}
		start, end = norm(start), norm(end)
		if start > end {
			return 0, nil
		}
		return strings.Count(string(r[start:end]), sub), nil
	}
	// gonja's split defaults its separator to an int, which it then
	// refuses; Python's splits on whitespace.
	str["split"] = func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		var sep *exec.Value
		if len(args.Args) > 0 {
			sep = args.Args[0]
		} else if v, ok := args.KwArgs["sep"]; ok {
			sep = v
		}
		maxsplit := -1
		if i, ok := intArg(args, 1, "maxsplit"); ok {
			maxsplit = i
		}
		var parts []string
		switch {
		case sep == nil || sep.IsNil():
			parts = splitWhitespace(self, maxsplit)
		case !sep.IsString():
			return nil, errors.New("split: the separator must be a string or None")
		case sep.String() == "":
			return nil, errors.New("empty separator")
		case maxsplit < 0:
			parts = strings.Split(self, sep.String())
		default:
			parts = strings.SplitN(self, sep.String(), maxsplit+1)
		}
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	}
	str["capitalize"] = func(self string, _ *exec.Value, _ *exec.VarArgs) (any, error) { return pyCapitalize(self), nil }
	str["title"] = func(self string, _ *exec.Value, _ *exec.VarArgs) (any, error) { return pyTitle(self), nil }
	m.Str = exec.NewMethodSet(str)
	return m
}

// pyCapitalize is Python's str.capitalize: the first character upper
// case (title case), the rest lower.
func pyCapitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToTitle(r)) + strings.ToLower(s[n:])
}

// pyTitle is Python's str.title: a cased character after an uncased one
// is upper case, the others lower ("they're" is "They'Re").
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		cased := unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
		switch {
		case cased && !prevCased:
			b.WriteRune(unicode.ToTitle(r))
		case cased:
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
		prevCased = cased
	}
	return b.String()
}

// titleSplitRE is jinja2's _word_beginning_split_re, where its title
// filter starts words.
var titleSplitRE = regexp.MustCompile(`[-\s({\[<]+`)

// jinjaTitle is jinja2's title filter: each word (after a blank, -, (, {,
// [ or <) with its first character upper case and the rest lower.
func jinjaTitle(s string) string {
	var b strings.Builder
	last := 0
	word := func(w string) {
		if w != "" {
			r, n := utf8.DecodeRuneInString(w)
			b.WriteString(string(unicode.ToUpper(r)) + strings.ToLower(w[n:]))
		}
	}
	for _, loc := range titleSplitRE.FindAllStringIndex(s, -1) {
		word(s[last:loc[0]])
		b.WriteString(s[loc[0]:loc[1]])
		last = loc[1]
	}
	word(s[last:])
	return b.String()
}

// splitWhitespace is Python's s.split() with maxsplit (-1: all).
func splitWhitespace(s string, maxsplit int) []string {
	var out []string
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return out
		}
		if maxsplit >= 0 && len(out) == maxsplit {
			return append(out, strings.TrimRightFunc(s, unicode.IsSpace))
		}
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			return append(out, s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

// boundedFilters returns a copy of gonja's filters with the ones that
// allocate by an argument checked.
func boundedFilters(limit int) *exec.FilterSet {
	fs := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	wrap := func(name string, check func(in *exec.Value, args *exec.VarArgs) error) {
		orig, ok := fs.Get(name)
		if !ok {
			return
		}
		_ = fs.Replace(name, func(e *exec.Evaluator, in *exec.Value, args *exec.VarArgs) *exec.Value {
			if err := check(in, args); err != nil {
				// Record it on the render's guard: gonja flattens filter
				// errors into text.
				if g, gerr := guardOf(e.Environment.Context); gerr == nil {
					g.err = err
				}
				return exec.AsValue(err)
			}
			return orig(e, in, args)
		})
	}
	wrap("center", func(in *exec.Value, args *exec.VarArgs) error {
		if w, ok := intArg(args, 0, "width"); ok && w > limit {
			return sizeErr(fmt.Sprintf("center(%d)", w), w, limit)
		}
		return nil
	})
	wrap("indent", func(in *exec.Value, args *exec.VarArgs) error {
		if w, ok := intArg(args, 0, "width"); ok && w > 0 {
			if n := len(in.String()) + (strings.Count(in.String(), "\n")+1)*w; n > limit {
				return sizeErr(fmt.Sprintf("indent(%d)", w), n, limit)
			}
		}
		return nil
	})
	wrap("replace", func(in *exec.Value, args *exec.VarArgs) error {
		old, ok1 := strArg(args, 0)
		new, ok2 := strArg(args, 1)
		if ok1 && ok2 {
			if n := engine.ReplacedSize(in.String(), old, new); n > limit {
				return sizeErr("replace", n, limit)
			}
		}
		return nil
	})
	return fs
}

// boundedLipsum is lipsum() with at most 100 paragraphs of at most 1,000
// words.
func boundedLipsum(orig any) any {
	fn, ok := orig.(func(*exec.Evaluator, *exec.VarArgs) *exec.Value)
	if !ok {
		return nil
	}
	return func(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
		for i, kw := range []string{"n", "html", "min", "max"} {
			if kw == "html" {
				continue
			}
			if v, ok := intArg(args, i, kw); ok && (v > 1000 || kw == "n" && v > 100) {
				return exec.AsValue(fmt.Errorf("lipsum: %s=%d is more than dm allows", kw, v))
			}
		}
		return fn(e, args)
	}
}
