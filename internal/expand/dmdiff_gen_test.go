package expand

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The cases of the differential test: Python and Jinja templates from a
// grammar (typed expressions, so that most cases run and their values
// are compared, rather than both failing), schemas with Python's
// regular expressions, and mutations of the corpus's templates. Each
// generator counts the features it uses (coverage).

type diffGen struct {
	rng    *rand.Rand
	corpus []diffCase
	cov    map[string]int
	// used are the features of the case being made.
	used map[string]int
	// all makes cases with the known differences too.
	all bool
	// skipped counts the cases dropped for a known difference.
	skipped map[string]int
}

func newDiffGen(rng *rand.Rand, corpus []diffCase) *diffGen {
	return &diffGen{rng: rng, corpus: corpus, cov: map[string]int{}, skipped: map[string]int{}}
}

// knownDifferences are the features of generated cases where dm still
// differs from the reference, each with the reason (docs/dm-compatibility.md
// lists them). Cases using one are not run unless DMDIFF_ALL is set, so
// that make test checks everything else; make dmdiff DMDIFF_ALL=1 shows
// them.
var knownDifferences = map[string]string{}

// corpusTemplates reads the corpus cases (testdata/dmcorpus) as cases
// to mutate.
func corpusTemplates(t testing.TB) []diffCase {
	dirs, err := filepath.Glob("testdata/dmcorpus/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []diffCase
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		c := diffCase{Files: map[string]string{}, Kind: "mutant"}
		var cfgDir string
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if filepath.Base(p) == "config.yaml" {
				cfgDir = filepath.Dir(p)
			}
			return nil
		})
		if err != nil || cfgDir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "env.yaml")); err == nil {
			continue // the differential's env is the base one
		}
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(cfgDir, p)
			switch filepath.Base(p) {
			case "config.yaml":
				c.Config = string(b)
			case "want.json":
			default:
				c.Files[filepath.ToSlash(rel)] = string(b)
			}
			return nil
		})
		out = append(out, c)
	}
	return out
}

func (g *diffGen) use(feature string) {
	if g.used != nil {
		g.used[feature]++
	}
}

// coverage lists the features reached, most used first.
func (g *diffGen) coverage() string {
	keys := make([]string, 0, len(g.cov))
	for k := range g.cov {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if g.cov[a] != g.cov[b] {
			return g.cov[b] - g.cov[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, g.cov[k])
	}
	return fmt.Sprintf("%d features: %s", len(keys), b.String())
}

func (g *diffGen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }
func (g *diffGen) chance(p float64) bool    { return g.rng.Float64() < p }

// next makes a case that uses no known difference (unless g.all).
func (g *diffGen) next() diffCase {
	for {
		g.used = map[string]int{}
		c := g.make()
		known := ""
		for f := range g.used {
			if _, ok := knownDifferences[f]; ok && !g.all {
				known = f
				break
			}
		}
		if known == "" {
			for f, n := range g.used {
				g.cov[f] += n
			}
			return c
		}
		g.skipped[known]++
	}
}

// make makes a case.
func (g *diffGen) make() diffCase {
	switch r := g.rng.IntN(20); {
	case r < 8:
		return g.pythonCase()
	case r < 16:
		return g.jinjaCase()
	case r < 18:
		return g.schemaCase()
	default:
		if len(g.corpus) == 0 {
			return g.pythonCase()
		}
		return g.mutantCase()
	}
}

// ---- literals ----

// strLit is a Python (or Jinja) string literal and the feature it
// exercises: plain, every escape Python knows, escapes it leaves alone
// (a backslash kept), raw strings, both quotes, unicode.
func (g *diffGen) strLit(jinja bool) string {
	words := []string{"a", "web", "db-1", "x_y", "Hello World", "us-central1", "10.0.0.1", "", " pad ", "MiXeD", "a,b,c", "k=v", "tcp:80", "ünï", "日本"}
	w := words[g.rng.IntN(len(words))]
	q := g.pick("'", `"`)
	switch g.rng.IntN(10) {
	case 0:
		g.use("escape known")
		e := g.pick(`\n`, `\t`, `\\`, `\'`, `\"`, `\x41`, `\101`, `\0`, `\u00e9`, `\r`, `\a`, `\b`, `\f`, `\v`)
		if jinja && (e == `\a` || e == `\u00e9`) {
			e = `\n`
		}
		return q + w + e + w + q
	case 1:
		g.use("escape left alone")
		e := g.pick(`\+`, `\/`, `\d`, `\.`, `\-`, `\s`, `\w`, `\$`, `\(`, `\[`, `\{`, `\ `, `\|`, `\*`, `\?`, `\^`)
		return q + w + e + w + q
	case 2:
		if jinja {
			return q + w + q
		}
		g.use("raw string")
		return "r" + q + w + g.pick(`\n`, `\d+`, `\\`, `\+`, `\.`) + w + q
	case 3:
		g.use("string quote inside")
		if q == "'" {
			return `"` + w + `'s"`
		}
		return `'say "` + w + `"'`
	case 4:
		if jinja {
			return q + w + q
		}
		g.use("triple-quoted string")
		return q + q + q + w + "\\n" + w + q + q + q
	default:
		return q + w + q
	}
}

func (g *diffGen) intLit() string {
	return g.pick("0", "1", "2", "3", "7", "10", "42", "100", "-3", "255", "1000000", "2**40", "0x1f", "0o17")
}

func (g *diffGen) floatLit() string {
	return g.pick("0.5", "1.5", "2.0", "3.25", "-0.1", "1e3", "1e-3", "0.1", "100.0", "1e16", "123456789.125", ".5")
}

// ---- Python ----

// pyScope is the variables of a Python function by type.
type pyScope struct {
	vars map[string][]string
	n    int
}

func (s *pyScope) fresh(typ string) string {
	s.n++
	name := fmt.Sprintf("%s%d", typ[:1], s.n)
	s.vars[typ] = append(s.vars[typ], name)
	return name
}

func (g *diffGen) pyVar(s *pyScope, typ string) (string, bool) {
	vs := s.vars[typ]
	if len(vs) == 0 {
		return "", false
	}
	return vs[g.rng.IntN(len(vs))], true
}

// pyExpr is a Python expression of type typ: str, int, float, bool,
// list (of str) or dict (str to str or int).
func (g *diffGen) pyExpr(s *pyScope, typ string, depth int) string {
	if depth <= 0 || g.chance(0.25) {
		if v, ok := g.pyVar(s, typ); ok && g.chance(0.6) {
			return v
		}
		switch typ {
		case "str":
			return g.strLit(false)
		case "int":
			return g.intLit()
		case "float":
			return g.floatLit()
		case "bool":
			return g.pick("True", "False")
		case "list":
			return "[" + g.strLit(false) + ", " + g.strLit(false) + "]"
		case "dict":
			return "{" + g.strLit(false) + ": " + g.intLit() + "}"
		}
	}
	d := depth - 1
	S := func() string { return g.pyExpr(s, "str", d) }
	I := func() string { return g.pyExpr(s, "int", d) }
	F := func() string { return g.pyExpr(s, "float", d) }
	L := func() string { return g.pyExpr(s, "list", d) }
	D := func() string { return g.pyExpr(s, "dict", d) }
	B := func() string { return g.pyExpr(s, "bool", d) }
	alt := func(feature string, text string) string {
		g.use("py " + feature)
		return text
	}
	switch typ {
	case "str":
		switch g.rng.IntN(30) {
		case 0:
			return alt("str concat", S()+" + "+S())
		case 1:
			return alt("str method", S()+"."+g.pick("upper", "lower", "strip", "title", "capitalize", "swapcase", "lstrip", "rstrip")+"()")
		case 2:
			return alt("str.replace", S()+".replace("+g.strLit(false)+", "+S()+")")
		case 3:
			return alt("str.join", g.strLit(false)+".join("+L()+")")
		case 4:
			return alt("%-format", "'%s-%d' % ("+S()+", "+I()+")")
		case 5:
			return alt("%-format float", "'%"+g.pick("", "05", "-8", ".2", "10.3", "+")+g.pick("f", "e", "g", "d", "s", "r", "x")+"' % ("+g.pick(F(), I())+",)")
		case 6:
			return alt("str.format", "'{}:{}'.format("+S()+", "+I()+")")
		case 7:
			return alt("str.format spec", "'{0:"+g.pick(">8", "<6", "^7", "05d", ",", ".3f", "x", "08.2f", "+d", "e")+"}'.format("+g.pick(I(), F())+")")
		case 8:
			return alt("str()", "str("+g.pick(I(), F(), B(), L(), D())+")")
		case 9:
			return alt("repr()", "repr("+g.pick(S(), I(), F(), L())+")")
		case 10:
			return alt("slice", S()+"["+g.pick("1:", ":2", "::-1", "1:-1", "-3:", "::2")+"]")
		case 11:
			return alt("json.dumps", "json.dumps("+g.pick(D(), L(), S(), I(), F())+g.pick("", ", sort_keys=True", ", indent=2", ", separators=(',', ':')")+")")
		case 12:
			return alt("hashlib", "hashlib."+g.pick("md5", "sha1", "sha256")+"("+S()+".encode('utf-8')).hexdigest()"+g.pick("", "[:8]"))
		case 13:
			return alt("re.sub", "re.sub("+g.rePattern(false)+", "+g.pick("'_'", `r'<\1>'`, `'\\g<0>'`, "''")+", "+S()+")")
		case 14:
			return alt("string module", "string."+g.pick("ascii_lowercase", "digits", "ascii_uppercase", "hexdigits", "punctuation")+"["+g.pick(":3", "2:5", "-2:")+"]")
		case 15:
			return alt("conditional expression", "("+S()+" if "+B()+" else "+S()+")")
		case 16:
			return alt("str padding", S()+"."+g.pick("zfill(6)", "ljust(8, '.')", "rjust(7)", "center(9, '*')", "center(8)"))
		case 17:
			return alt("str index", S()+"[0] if "+S()+" else 'e'")
		case 18:
			return alt("env and properties", g.pick("context.env['deployment']", "context.env['name']", "context.properties['name']", "context.env['project']", "str(context.properties.get('n', 3))", "context.properties['tag']"))
		case 19:
			return alt("str split join", g.strLit(false)+".join("+S()+".split("+g.pick("','", "'-'", "", "None", "' ', 1")+"))")
		case 20:
			return alt("sys", g.pick("str(sys.maxsize)", "str(sys.maxsize > 2**31)", "sys.platform[:0]", "str(len(sys.argv) >= 0)"))
		case 21:
			return alt("dict get", D()+".get("+S()+", "+S()+")")
		case 22:
			return alt("str multiply", S()+" * "+g.pick("2", "3", "0"))
		case 23:
			return alt("str.partition", S()+"."+g.pick("partition", "rpartition")+"("+g.strLit(false)+")[0]")
		case 24:
			return alt("re.match group", "(re.match("+g.rePattern(false)+", "+S()+") or re.match('', '')).group(0)")
		case 25:
			return alt("chr ord", "chr(ord("+g.pick("'a'", "'Z'", "'0'")+") + "+g.pick("1", "2", "25")+")")
		case 26:
			return alt("str.format named", "'{a}/{b}'.format(a="+S()+", b="+I()+")")
		case 27:
			return alt("%-format dict", "'%(x)s=%(y)03d' % {'x': "+S()+", 'y': "+I()+"}")
		case 28:
			return alt("str.split index", "("+S()+" + '.z').split('.')["+g.pick("0", "-1", "1")+"]")
		default:
			return alt("str.format repr", "'{!r}'.format("+g.pick(S(), L())+")")
		}
	case "int":
		switch g.rng.IntN(20) {
		case 0:
			return alt("int +-*", "("+I()+" "+g.pick("+", "-", "*")+" "+I()+")")
		case 1:
			return alt("floor division", "("+I()+" // "+g.pick("2", "3", "-2", "7")+")")
		case 2:
			return alt("modulo", "("+I()+" % "+g.pick("2", "3", "-3", "10")+")")
		case 3:
			return alt("len", "len("+g.pick(S(), L(), D())+")")
		case 4:
			return alt("int()", "int("+g.pick(F(), "'"+g.pick("12", "-7", "0", " 3 ")+"'", B())+")")
		case 5:
			return alt("round()", "round("+F()+")")
		case 6:
			return alt("min max", g.pick("min", "max")+"("+I()+", "+I()+")")
		case 7:
			return alt("abs", "abs("+I()+")")
		case 8:
			return alt("str.count find", S()+"."+g.pick("count", "find", "rfind")+"("+g.strLit(false)+")")
		case 9:
			return alt("power", "("+g.pick("2", "3", "-2", "10")+" ** "+g.pick("0", "3", "10", "18")+")")
		case 10:
			return alt("bitwise", "("+I()+" "+g.pick("&", "|", "^", "<<", ">>")+" "+g.pick("1", "3", "4")+")")
		case 11:
			return alt("sum", "sum(["+I()+", "+I()+"])")
		case 12:
			return alt("math floor ceil", "int(math."+g.pick("floor", "ceil")+"("+F()+"))")
		case 13:
			return alt("bool arithmetic", "("+B()+" + "+I()+")")
		case 14:
			return alt("int base", "int("+g.pick("'ff', 16", "'17', 8", "'101', 2", "'z', 36")+")")
		case 15:
			return alt("list index", "["+I()+", "+I()+"]["+g.pick("0", "-1")+"]")
		case 16:
			return alt("divmod", "divmod("+I()+", "+g.pick("3", "-4")+")["+g.pick("0", "1")+"]")
		case 17:
			return alt("hash of props", "context.properties.get('n', 3) * 2")
		case 18:
			return alt("unary minus", "-"+I())
		default:
			return alt("list.index", "[3, 1, 2].index("+g.pick("1", "2", "3")+")")
		}
	case "float":
		switch g.rng.IntN(10) {
		case 0:
			return alt("true division", "("+I()+" / "+g.pick("2", "3", "4", "-8", "7")+")")
		case 1:
			return alt("float arithmetic", "("+F()+" "+g.pick("+", "-", "*")+" "+g.pick(F(), I())+")")
		case 2:
			return alt("float()", "float("+g.pick(I(), "'"+g.pick("1.5", "2", "-0.25", "1e3", "inf")+"'")+")")
		case 3:
			return alt("round ndigits", "round("+F()+", "+g.pick("0", "1", "2", "-1")+")")
		case 4:
			return alt("math", "math."+g.pick("sqrt(2)", "pi", "e", "log(10)", "pow(2, 0.5)", "fabs(-1.5)", "exp(1)"))
		case 5:
			return alt("float floor division", "("+F()+" // "+g.pick("2", "0.3")+")")
		case 6:
			return alt("float modulo", "("+F()+" % "+g.pick("2", "-0.75", "1.5")+")")
		case 7:
			return alt("float power", "("+F()+" ** 2)")
		default:
			return alt("mixed compare min", "min("+F()+", "+I()+" * 1.0)")
		}
	case "bool":
		switch g.rng.IntN(10) {
		case 0:
			return alt("compare", "("+I()+" "+g.pick("<", "<=", "==", "!=", ">", ">=")+" "+I()+")")
		case 1:
			return alt("str compare", "("+S()+" "+g.pick("<", "==", "!=", ">")+" "+S()+")")
		case 2:
			return alt("in", "("+S()+" in "+g.pick(S(), L(), D())+")")
		case 3:
			return alt("and or not", "("+B()+" "+g.pick("and", "or")+" not "+B()+")")
		case 4:
			return alt("isinstance", "isinstance("+g.pick(S(), I(), L(), D(), F())+", "+g.pick("str", "int", "list", "dict", "float", "(int, float)", "basestring")+")")
		case 5:
			return alt("str predicates", S()+"."+g.pick("startswith", "endswith")+"("+g.strLit(false)+")")
		case 6:
			return alt("str is*", S()+"."+g.pick("isdigit", "isalpha", "isalnum", "islower", "isupper", "isspace")+"()")
		case 7:
			return alt("any all", g.pick("any", "all")+"([x "+g.pick("== 'a'", "!= ''")+" for x in "+L()+"])")
		case 8:
			return alt("chained compare", "(0 < "+I()+" <= 100)")
		default:
			return alt("truthiness", "bool("+g.pick(S(), L(), D(), I())+")")
		}
	case "list":
		switch g.rng.IntN(16) {
		case 0:
			return alt("list comprehension", "[x"+g.pick("", ".upper()", " + '-'")+" for x in "+L()+g.pick("", " if x", " if len(x) > 1")+"]")
		case 1:
			return alt("sorted", "sorted("+L()+g.pick("", ", reverse=True", ", key=len", ", key=lambda x: x[::-1]", ", key=str.lower")+")")
		case 2:
			return alt("list concat", L()+" + "+L())
		case 3:
			return alt("str.split", S()+".split("+g.pick("", "','", "'-'", "' ', 1")+")")
		case 4:
			return alt("dict keys", "sorted("+D()+".keys())")
		case 5:
			return alt("set", "sorted(set("+L()+g.pick("", " + "+L())+"))")
		case 6:
			return alt("set operations", "sorted(set("+L()+") "+g.pick("|", "&", "-", "^")+" set("+L()+"))")
		case 7:
			return alt("str map", "[str(i) for i in range("+g.pick("3", "0", "1, 7, 2", "5, 0, -1")+")]")
		case 8:
			return alt("list slice", L()+"["+g.pick("1:", ":1", "::-1", "::2")+"]")
		case 9:
			return alt("reversed", "list(reversed("+L()+"))")
		case 10:
			return alt("enumerate", "['%d:%s' % (i, x) for i, x in enumerate("+L()+")]")
		case 11:
			return alt("zip", "['%s=%s' % (a, b) for a, b in zip("+L()+", "+L()+")]")
		case 12:
			return alt("map filter", "list(map(lambda x: x + '!', "+g.pick("filter(None, "+L()+")", L())+"))")
		case 13:
			return alt("dict items", "['%s:%s' % (k, v) for k, v in sorted("+D()+".items())]")
		case 14:
			return alt("re.findall", "re.findall("+g.rePattern(false)+", "+S()+")")
		default:
			return alt("re.split", "re.split("+g.pick("','", `r'\s+'`, `'[-_]'`, `'(-)'`)+", "+S()+")")
		}
	case "dict":
		switch g.rng.IntN(8) {
		case 0:
			g.use("py duplicate dict key")
			k := g.strLit(false)
			return "{" + k + ": " + I() + ", " + g.strLit(false) + ": " + I() + ", " + k + ": " + I() + "}"
		case 1:
			return alt("dict comprehension", "{x: len(x) for x in "+L()+"}")
		case 2:
			return alt("dict()", "dict("+g.pick("a=1, b=2", "[('k', 1), ('j', 2)]", "zip(['p', 'q'], [1, 2])")+")")
		case 3:
			return alt("copy.deepcopy", "copy.deepcopy("+D()+")")
		case 4:
			return alt("OrderedDict", "dict(collections.OrderedDict([('z', 1), ('a', 2)]))")
		case 5:
			return alt("dict merge", "dict(list("+D()+".items()) + list("+D()+".items()))")
		case 6:
			return alt("json.loads", "json.loads('{\"a\": 1, \"b\": [1, 2.5, null, true]}')")
		default:
			return alt("dict literal", "{"+g.strLit(false)+": "+I()+", 'name': "+S()+"}")
		}
	}
	return "None"
}

// pyStmts is a block of statements at indent ind, binding new
// variables in s.
func (g *diffGen) pyStmts(s *pyScope, ind string, n int) []string {
	var out []string
	types := []string{"str", "int", "float", "bool", "list", "dict"}
	for i := 0; i < n; i++ {
		typ := types[g.rng.IntN(len(types))]
		switch r := g.rng.IntN(28); {
		case r < 10:
			e := g.pyExpr(s, typ, 3)
			out = append(out, ind+s.fresh(typ)+" = "+e)
		case r == 10:
			if l, ok := g.pyVar(s, "list"); ok {
				g.use("py list mutation")
				out = append(out, ind+l+"."+g.pick("append("+g.pyExpr(s, "str", 1)+")", "extend("+g.pyExpr(s, "list", 1)+")", "insert(0, "+g.pyExpr(s, "str", 1)+")", "sort()", "reverse()", "sort(reverse=True)"))
			}
		case r == 11:
			if d, ok := g.pyVar(s, "dict"); ok {
				g.use("py item assignment")
				out = append(out, ind+d+"["+g.strLit(false)+"] = "+g.pyExpr(s, "int", 2))
			}
		case r == 12:
			if d, ok := g.pyVar(s, "dict"); ok {
				g.use("py dict mutation")
				out = append(out, ind+d+"."+g.pick("update({'u': 1})", "setdefault('s', 2)", "pop('zz', None)", "update(w=3)"))
			}
		case r == 13:
			g.use("py context attribute assignment")
			name := "attr" + fmt.Sprint(s.n)
			out = append(out, ind+"context."+name+" = "+g.pyExpr(s, "str", 2))
			v := s.fresh("str")
			out = append(out, ind+v+" = context."+name)
		case r == 14:
			g.use("py object attribute assignment")
			o := fmt.Sprintf("o%d", s.n)
			s.n++
			out = append(out, ind+o+" = Box("+g.pyExpr(s, "int", 1)+")", ind+o+".label = "+g.pyExpr(s, "str", 1))
			out = append(out, ind+s.fresh("str")+" = "+o+".describe()")
		case r == 15:
			g.use("py if elif else")
			c := g.pyExpr(s, "bool", 2)
			v := s.fresh("str")
			out = append(out, ind+"if "+c+":", ind+"  "+v+" = "+g.pyExpr(s, "str", 1), ind+"elif "+g.pyExpr(s, "bool", 1)+":", ind+"  "+v+" = 'elif'", ind+"else:", ind+"  "+v+" = "+g.strLit(false))
		case r == 16:
			g.use("py for loop")
			acc := s.fresh("list")
			out = append(out, ind+acc+" = []")
			src := g.pyExpr(s, "list", 1)
			out = append(out, ind+"for i, x in enumerate("+src+"):")
			out = append(out, ind+"  if i > 5:", ind+"    break", ind+"  "+acc+".append(x * 2 + str(i))")
		case r == 17:
			g.use("py while loop")
			v := s.fresh("int")
			out = append(out, ind+v+" = 0", ind+"while "+v+" < "+g.pick("3", "5", "0")+":", ind+"  "+v+" += 1")
		case r == 18:
			g.use("py augmented assignment")
			switch typ {
			case "str", "int", "list":
				if v, ok := g.pyVar(s, typ); ok {
					out = append(out, ind+v+" += "+g.pyExpr(s, typ, 1))
				}
			}
		case r == 19:
			g.use("py helper function")
			v := s.fresh("str")
			out = append(out, ind+v+" = helper("+g.pyExpr(s, "str", 1)+g.pick("", ", 5", ", n=0")+")")
		case r == 20:
			g.use("py raise")
			out = append(out, ind+"if "+g.pyExpr(s, "bool", 1)+" and "+g.pick("False", "len('x') > 3")+":", ind+"  raise ValueError('bad ' + "+g.pyExpr(s, "str", 1)+")")
		case r == 22:
			g.use("py special methods")
			bg := fmt.Sprintf("bg%d", s.n)
			s.n++
			k := g.strLit(false)
			out = append(out, ind+bg+" = Bag("+g.pyExpr(s, "list", 1)+")", ind+bg+"["+k+"] = "+g.pyExpr(s, "str", 1))
			out = append(out, ind+s.fresh("str")+" = "+bg+"["+k+"] + str("+bg+") + repr("+bg+") + '%s' % "+bg)
			out = append(out, ind+s.fresh("list")+" = [len("+bg+"), "+k+" in "+bg+", 'zz' in "+bg+", bool("+bg+"), "+bg+".first, "+bg+".KIND] + [x for x in "+bg+"]")
			if g.chance(0.5) {
				out = append(out, ind+"del "+bg+"["+k+"]", ind+s.fresh("bool")+" = "+k+" in "+bg)
			}
		case r == 23:
			g.use("py sorting objects")
			out = append(out, ind+s.fresh("str")+" = str(sorted([Ver("+g.intLit()+"), Ver("+g.intLit()+"), Ver("+g.intLit()+")])) + str(Ver(1) == Ver(1)) + str(Ver(1) != Ver(2)) + str(len(set([Ver(2), Ver(2)]))) + str(Ver(3)(2)) + repr(Ver(1) + Ver(2))")
		case r == 24:
			g.use("py assert")
			out = append(out, ind+"assert "+g.pyExpr(s, "bool", 1)+g.pick("", ", 'assertion '", ", (\n"+ind+"    'over lines ' + "+g.pyExpr(s, "str", 1)+")"))
		case r == 25:
			g.use("py try except")
			if d, ok := g.pyVar(s, "dict"); ok && g.chance(0.5) {
				v := s.fresh("str")
				out = append(out, ind+"try:", ind+"  "+v+" = str("+d+"["+g.strLit(false)+"])", ind+"except "+g.pick("KeyError", "LookupError", "(KeyError, IndexError)", "Exception")+g.pick("", " as e")+":", ind+"  "+v+" = 'missing'")
				break
			}
			e := g.pyExpr(s, "str", 1)
			v := s.fresh("str")
			out = append(out, ind+"try:", ind+"  "+v+" = str(int("+e+"))", ind+"except "+g.pick("ValueError", "Exception", "(TypeError, ValueError)")+":", ind+"  "+v+" = 'nan'", ind+"else:", ind+"  "+v+" += '!'")
		case r == 26:
			g.use("py try except index")
			e := g.pyExpr(s, "list", 1)
			v := s.fresh("str")
			out = append(out, ind+"try:", ind+"  "+v+" = str("+e+"["+g.pick("0", "5", "-1")+"])", ind+"except IndexError:", ind+"  "+v+" = 'none'")
		case r == 27:
			g.use("py bool bitwise")
			e := "(" + g.pyExpr(s, "bool", 1) + ") " + g.pick("^", "&", "|") + " (" + g.pyExpr(s, "bool", 1) + ")"
			out = append(out, ind+s.fresh("bool")+" = "+e)
		default:
			g.use("py del")
			if d, ok := g.pyVar(s, "dict"); ok {
				k := g.strLit(false)
				out = append(out, ind+d+"["+k+"] = 1", ind+"del "+d+"["+k+"]")
			}
		}
	}
	return out
}

// rePattern is a Python regular expression literal: RE2's syntax and
// what only Python's re has (lookaround, backreferences, named groups,
// inline flags, \Z).
func (g *diffGen) rePattern(jinja bool) string {
	p := g.pick(`[a-z]+`, `\d+`, `^\w`, `(\w)(\w)`, `[^a-z]`, `\s+`, `-`, `(?i)web`, `(?P<w>[a-z])`, `(?=a)`, `(?!x)\w`, `(?<=-)\w+`, `(\w)\1`, `(?P<c>.)(?P=c)`, `a|b`, `\b\w`, `$`, `x*`, `\.`, `[.-]`, `(?:ab)+`, `\Z`, `(?<!a)b`, `(?s).`, `(?m)^.`, `[a-z]{2,}`, `\w+?`, `(?x) a b`)
	g.use("re " + p)
	if !jinja && g.chance(0.5) {
		return "r'" + p + "'"
	}
	return "'" + strings.ReplaceAll(p, `\`, `\\`) + "'"
}

// diffPyClasses are the classes generated templates use: special
// methods, a property, comparisons and hashing.
const diffPyClasses = `class Bag(object):
  KIND = 'bag'

  def __init__(self, items):
    self.items = list(items)
    self.props = {}

  def __getitem__(self, k):
    return self.props[k]

  def __setitem__(self, k, v):
    self.props[k] = v

  def __delitem__(self, k):
    del self.props[k]

  def __contains__(self, k):
    return k in self.props

  def __len__(self):
    return len(self.items)

  def __iter__(self):
    return iter(self.items)

  def __str__(self):
    return 'Bag(%s)' % len(self.items)

  def __repr__(self):
    return 'Bag!'

  @property
  def first(self):
    return self.items[0] if self.items else None


class Ver(object):

  def __init__(self, n):
    self.n = n

  def __eq__(self, o):
    return self.n == o.n

  def __ne__(self, o):
    return self.n != o.n

  def __lt__(self, o):
    return self.n < o.n

  def __hash__(self):
    return self.n

  def __call__(self, x):
    return self.n * x

  def __add__(self, o):
    return Ver(self.n + o.n)

  def __repr__(self):
    return 'Ver%d' % self.n


`

// pythonCase is a Python template, a helper module and a configuration.
func (g *diffGen) pythonCase() diffCase {
	g.use("python template")
	s := &pyScope{vars: map[string][]string{}}
	var b strings.Builder
	mods := []string{"re", "json", "copy", "math", "string", "collections", "hashlib", "sys"}
	b.WriteString("import " + strings.Join(mods, ", ") + "\n")
	if g.chance(0.3) {
		g.use("py import helper module")
		b.WriteString("import helpers\nfrom helpers import PREFIX as P\n")
	}
	b.WriteString("\n\nclass Box(object):\n  \"\"\"A plain record.\"\"\"\n  KIND = 'box'\n\n  def __init__(self, n):\n    self.n = n\n\n  def describe(self):\n    return '%s:%s:%s' % (self.KIND, self.n, getattr(self, 'label', '-'))\n\n\n")
	b.WriteString(diffPyClasses)
	b.WriteString("def helper(s, n=2):\n  return (s + '|') * n\n\n\n")
	b.WriteString("def GenerateConfig(context):\n")
	for _, l := range g.pyStmts(s, "  ", 3+g.rng.IntN(8)) {
		b.WriteString(l + "\n")
	}
	var props []string
	for _, typ := range []string{"str", "int", "float", "bool", "list", "dict"} {
		for _, v := range s.vars[typ] {
			props = append(props, fmt.Sprintf("'%s': %s", v, v))
		}
	}
	props = append(props, "'e': "+g.pyExpr(s, g.pick("str", "int", "float", "list", "dict", "bool"), 3))
	if g.chance(0.2) {
		props = append(props, "'m': helpers.shout("+g.pyExpr(s, "str", 1)+") + P")
		if !strings.Contains(b.String(), "import helpers") {
			b.WriteString("  import helpers\n  P = helpers.PREFIX\n")
		}
	}
	fmt.Fprintf(&b, "  props = {%s}\n", strings.Join(props, ", "))
	outs := ""
	if g.chance(0.4) {
		g.use("py outputs")
		outs = ", 'outputs': [{'name': 'first', 'value': " + g.pyExpr(s, "str", 1) + "}]"
	}
	switch g.rng.IntN(3) {
	case 0:
		g.use("py returns yaml.dump")
		b.WriteString("  import yaml\n  return yaml.dump({'resources': [{'name': 'r', 'type': 'T', 'properties': props}]" + outs + "})\n")
	default:
		b.WriteString("  return {'resources': [{'name': context.env['name'] + '-r', 'type': 'T', 'properties': props}]" + outs + "}\n")
	}
	files := map[string]string{
		"t.py":       b.String(),
		"helpers.py": "PREFIX = 'p-'\nCOUNT = {'n': 0}\n\n\ndef shout(s):\n  COUNT['n'] += 1\n  return s.upper() + '!' * COUNT['n']\n",
	}
	cfg := "imports:\n- path: t.py\n- path: helpers.py\nresources:\n- name: a\n  type: t.py\n  properties:\n    name: " + g.pick("alpha", "'b-2'", "web") + "\n    tag: " + g.pick("'x\\y'", "v1", "'\\d+'", "'a+b'") + "\n"
	if strings.Contains(outs, "first") {
		cfg += "- name: use\n  type: T\n  properties: {v: $(ref.a.first)}\noutputs:\n- name: top\n  value: $(ref.a.first)\n"
	}
	return diffCase{Kind: "python", Config: cfg, Files: files}
}

// ---- Jinja ----

// jExpr is a Jinja expression of type typ (str, int, float, bool,
// list, dict).
func (g *diffGen) jExpr(vars map[string][]string, typ string, depth int) string {
	if depth <= 0 || g.chance(0.25) {
		if vs := vars[typ]; len(vs) > 0 && g.chance(0.6) {
			return vs[g.rng.IntN(len(vs))]
		}
		switch typ {
		case "str":
			return g.strLit(true)
		case "int":
			return g.pick("0", "1", "2", "3", "7", "10", "-4", "100")
		case "float":
			return g.pick("0.5", "1.5", "2.25", "-0.1", "1e3", "10.0")
		case "bool":
			return g.pick("true", "false", "True", "False")
		case "list":
			return "[" + g.strLit(true) + ", " + g.strLit(true) + ", 'b']"
		case "dict":
			return "{'k': 1, " + g.strLit(true) + ": 2}"
		}
	}
	d := depth - 1
	S := func() string { return g.jExpr(vars, "str", d) }
	I := func() string { return g.jExpr(vars, "int", d) }
	F := func() string { return g.jExpr(vars, "float", d) }
	L := func() string { return g.jExpr(vars, "list", d) }
	D := func() string { return g.jExpr(vars, "dict", d) }
	B := func() string { return g.jExpr(vars, "bool", d) }
	alt := func(feature, text string) string {
		g.use("jinja " + feature)
		return text
	}
	switch typ {
	case "str":
		switch g.rng.IntN(24) {
		case 0:
			return alt("~ concat", "("+S()+" ~ "+g.pick(I(), S(), F())+")")
		case 1:
			return alt("str filter", "("+S()+" | "+g.pick("upper", "lower", "title", "capitalize", "trim", "string", "e", "reverse")+")")
		case 2:
			return alt("replace filter", "("+S()+" | replace("+g.strLit(true)+", "+S()+"))")
		case 3:
			return alt("join filter", "("+L()+" | join("+g.pick("', '", "'-'", "")+"))")
		case 4:
			return alt("% format", "('%s-%d' % ("+S()+", "+I()+"))")
		case 5:
			return alt("format filter", "('%s=%05.1f' | format("+S()+", "+F()+"))")
		case 6:
			return alt("str method", S()+"."+g.pick("upper()", "lower()", "strip()", "replace('a', 'b')", "title()", "split('-')[0]", "format(1)")+"")
		case 7:
			return alt("conditional expression", "("+S()+" if "+B()+" else "+S()+")")
		case 8:
			return alt("default filter", "(properties.missing | default("+S()+"))")
		case 9:
			return alt("env and properties", g.pick("env['deployment']", "env.name", "properties['name']", "properties.tag", "env['project']"))
		case 10:
			return alt("slice", S()+"["+g.pick("1:", ":2", "::-1")+"]")
		case 11:
			return alt("macro call", "m_"+g.pick("wrap", "twice")+"("+S()+")")
		case 12:
			return alt("imported macro", g.pick("h.outer", "h.inner", "outer2")+"("+S()+")")
		case 13:
			return alt("imported variable", "h.GREETING")
		case 14:
			return alt("string of value", "("+g.pick(I(), F(), L(), D(), B(), "none")+" | string)")
		case 15:
			return alt("first last", "("+L()+" | "+g.pick("first", "last")+")")
		case 16:
			return alt("indent center", "("+S()+" | "+g.pick("center(9)", "truncate(5)", "wordcount | string", "length | string")+")")
		case 17:
			return alt("title capitalize", "("+S()+" | "+g.pick("title", "capitalize")+")")
		case 18:
			return alt("call block", "m_callblock()")
		case 19:
			return alt("from import with context", "ctx_name()")
		case 20:
			return alt("dict get", "("+D()+".get('k', "+S()+") | string)")
		case 21:
			return alt("str repeat", "("+S()+" * "+g.pick("2", "0")+")")
		case 22:
			return alt("int filter", "("+g.pick("'12'", "'x'", "3.7", "'0x1f'")+" | int | string)")
		default:
			return alt("round filter", "("+F()+" | round("+g.pick("0", "1", "2")+g.pick("", ", 'floor'", ", 'ceil'")+") | string)")
		}
	case "int":
		switch g.rng.IntN(10) {
		case 0:
			return alt("int arithmetic", "("+I()+" "+g.pick("+", "-", "*", "//", "%")+" "+g.pick("2", "3", "-3", I())+")")
		case 1:
			return alt("length", "("+g.pick(S(), L(), D())+" | length)")
		case 2:
			return alt("power", "("+g.pick("2", "3")+" ** "+g.pick("0", "3", "10")+")")
		case 3:
			return alt("sum", "([1, 2, "+I()+"] | sum)")
		case 4:
			return alt("min max", "([3, "+I()+", 1] | "+g.pick("min", "max")+")")
		case 5:
			return alt("abs", "("+I()+" | abs)")
		case 6:
			return alt("loop-free count", S()+".count('a')")
		case 7:
			return alt("int()", "("+F()+" | int)")
		case 8:
			return alt("range sum", "(range("+g.pick("3", "1, 5", "10, 0, -3")+") | sum)")
		default:
			return alt("property int", "properties.get('n', 3)")
		}
	case "float":
		switch g.rng.IntN(5) {
		case 0:
			return alt("true division", "("+I()+" / "+g.pick("2", "4", "3")+")")
		case 1:
			return alt("float arithmetic", "("+F()+" "+g.pick("+", "-", "*")+" "+g.pick(F(), I())+")")
		case 2:
			return alt("float filter", "("+g.pick("'1.5'", "3", "'x'")+" | float)")
		case 3:
			return alt("round", "("+F()+" | round("+g.pick("1", "2")+"))")
		default:
			return alt("float floor division", "("+F()+" // 2)")
		}
	case "bool":
		switch g.rng.IntN(8) {
		case 0:
			return alt("compare", "("+I()+" "+g.pick("<", "==", "!=", ">=")+" "+I()+")")
		case 1:
			return alt("in", "("+S()+" in "+g.pick(L(), S(), D())+")")
		case 2:
			if g.chance(0.2) {
				return alt("test of undefined", "(properties.missing is "+g.pick("defined", "undefined")+")")
			}
			if g.chance(0.3) {
				return alt("number test", "("+I()+" is "+g.pick("odd", "even", "divisibleby(3)")+")")
			}
			return alt("test", "("+g.pick(I(), S(), L(), D(), F())+" is "+g.pick("defined", "undefined", "none", "number", "string", "mapping", "sequence", "iterable", "lower", "upper", "integer", "float")+")")
		case 3:
			return alt("and or not", "("+B()+" "+g.pick("and", "or")+" not "+B()+")")
		case 4:
			return alt("startswith", S()+".startswith('a')")
		case 5:
			return alt("is not", "("+S()+" is not "+g.pick("none", "defined", "string")+")")
		case 6:
			return alt("str isdigit", S()+".isdigit()")
		default:
			return alt("truthiness", "("+g.pick(L(), S(), I())+" | list | length > 0)")
		}
	case "list":
		switch g.rng.IntN(12) {
		case 0:
			return alt("sort filter", "("+L()+" | sort"+g.pick("", "(reverse=true)", "(case_sensitive=true)")+" | list)")
		case 1:
			return alt("list concat", "("+L()+" + "+L()+")")
		case 2:
			return alt("split", S()+".split("+g.pick("", "'-'", "','")+")")
		case 3:
			return alt("map filter", "("+L()+" | map('upper') | list)")
		case 4:
			return alt("select reject", "("+g.pick("[1, 2, 3, 4]", "range(6)")+" | "+g.pick("select", "reject")+"('"+g.pick("odd", "even")+"') | list)")
		case 5:
			return alt("unique", "("+L()+" | unique | list)")
		case 6:
			return alt("dict keys", "("+D()+".keys() | list | sort)")
		case 7:
			return alt("dictsort", "("+D()+" | dictsort | map('first') | list)")
		case 8:
			return alt("range list", "(range("+g.pick("3", "2, 8, 2")+") | map('string') | list)")
		case 9:
			return alt("batch", "("+L()+" | batch(2) | map('join', '+') | list)")
		case 10:
			return alt("reverse", "("+L()+" | reverse | list)")
		default:
			return alt("items", "("+D()+".items() | map('last') | map('string') | list)")
		}
	case "dict":
		switch g.rng.IntN(3) {
		case 0:
			g.use("jinja duplicate dict key")
			return "{'d': 1, " + g.strLit(true) + ": " + I() + ", 'd': " + I() + "}"
		case 1:
			return alt("dict()", "dict(a="+I()+", b="+S()+")")
		default:
			return alt("dict literal", "{'name': "+S()+", 'n': "+I()+"}")
		}
	}
	return "none"
}

// jinjaCase is a Jinja template importing a macro module, and a
// configuration.
func (g *diffGen) jinjaCase() diffCase {
	g.use("jinja template")
	vars := map[string][]string{}
	var b strings.Builder
	switch g.rng.IntN(3) {
	case 0:
		g.use("jinja import as")
		b.WriteString("{% import 'helpers.jinja' as h %}\n")
	case 1:
		g.use("jinja import with context")
		b.WriteString("{% import 'helpers.jinja' as h with context %}\n")
	default:
		g.use("jinja import without context")
		b.WriteString("{% import 'helpers.jinja' as h without context %}\n")
	}
	switch g.rng.IntN(3) {
	case 0:
		g.use("jinja from import")
		b.WriteString("{% from 'helpers.jinja' import outer as outer2, ctx_name %}\n")
	case 1:
		g.use("jinja from import with context")
		b.WriteString("{% from 'helpers.jinja' import outer as outer2, ctx_name with context %}\n")
	default:
		g.use("jinja from import without context")
		b.WriteString("{% from 'helpers.jinja' import outer as outer2, ctx_name without context %}\n")
	}
	b.WriteString("{% macro m_wrap(s, pre='<') -%}{{ pre }}{{ s }}>{%- endmacro %}\n")
	b.WriteString("{% macro m_twice(s) %}{{ m_wrap(s) }}{{ m_wrap(s, pre='[') }}{% endmacro %}\n")
	b.WriteString("{% macro m_callblock() %}{% call(x) h.each(['a', 'b']) %}<{{ x }}>{% endcall %}{% endmacro %}\n")
	types := []string{"str", "int", "float", "bool", "list", "dict"}
	n := 0
	for i := 0; i < 2+g.rng.IntN(6); i++ {
		typ := types[g.rng.IntN(len(types))]
		n++
		name := fmt.Sprintf("%s%d", typ[:1], n)
		switch g.rng.IntN(6) {
		case 0:
			g.use("jinja set block")
			b.WriteString("{% set " + name + " %}" + g.pick("x{{ 1 + 2 }}y", "{{ env.name }}", "{% for i in range(3) %}{{ i }}{% endfor %}") + "{% endset %}\n")
			vars["str"] = append(vars["str"], name)
			continue
		case 1:
			g.use("jinja namespace")
			b.WriteString("{% set ns = namespace(c=0) %}{% for x in " + g.jExpr(vars, "list", 1) + " %}{% set ns.c = ns.c + 1 %}{% endfor %}{% set " + name + " = ns.c %}\n")
			vars["int"] = append(vars["int"], name)
			continue
		}
		b.WriteString("{% set " + name + " = " + g.jExpr(vars, typ, 3) + " %}\n")
		vars[typ] = append(vars[typ], name)
	}
	b.WriteString("resources:\n- name: {{ env['name'] }}-r\n  type: T\n  properties:\n")
	for _, typ := range types {
		for _, v := range vars[typ] {
			fmt.Fprintf(&b, "    %s: {{ %s | tojson }}\n", v, v)
		}
	}
	fmt.Fprintf(&b, "    e: {{ %s | tojson }}\n", g.jExpr(vars, g.pick(types...), 3))
	// Printing: {{ x }} is Python's str() of x.
	fmt.Fprintf(&b, "    text: |-\n      %s\n", g.jPrint(vars))
	// Loops.
	if g.chance(0.6) {
		g.use("jinja for loop")
		fmt.Fprintf(&b, "    loop: |-\n      {%% for x in %s %%}{{ loop.index }}/{{ loop.length }}{{ '' if loop.last else ',' }}{{ x }}{{ loop.cycle('a', 'b') }}{%% else %%}empty{%% endfor %%}\n", g.pick(g.jExpr(vars, "list", 2), "[]", "properties['items'] | default([])"))
	}
	if g.chance(0.3) {
		g.use("jinja for over dict")
		fmt.Fprintf(&b, "    dloop: |-\n      {%% for k, v in %s.items() %%}{{ k }}={{ v }};{%% endfor %%}\n", g.jExpr(vars, "dict", 2))
	}
	if g.chance(0.3) {
		g.use("jinja whitespace control")
		b.WriteString("    ws: |-\n      {%- if true %} a {% endif -%} b {#- c -#}\n")
	}
	if g.chance(0.2) {
		g.use("jinja include")
		b.WriteString("{% include 'part.jinja' %}\n")
	}
	outs := ""
	if g.chance(0.3) {
		g.use("jinja outputs")
		outs = "outputs:\n- name: first\n  value: {{ " + g.jExpr(vars, "str", 1) + " | tojson }}\n"
		b.WriteString(outs)
	}
	files := map[string]string{
		"t.jinja": b.String(),
		"helpers.jinja": "{% set GREETING = 'hi' %}\n" +
			"{% macro inner(s) %}({{ s }}){% endmacro %}\n" +
			"{% macro outer(s) %}{{ inner(s) }}{{ GREETING }}{% endmacro %}\n" +
			"{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}\n" +
			"{% macro ctx_name() %}{{ env['name'] if env is defined else 'no-env' }}{% endmacro %}\n",
		"part.jinja": "- name: part-{{ env['name'] }}\n  type: T\n  properties: {p: {{ properties['name'] | tojson }}}\n",
	}
	cfg := "imports:\n- path: t.jinja\n- path: helpers.jinja\n- path: part.jinja\nresources:\n- name: a\n  type: t.jinja\n  properties:\n    name: " + g.pick("alpha", "'b-2'", "web") + "\n    tag: " + g.pick("v1", "'x\\y'", "'a b'") + "\n    items: [1, two, 3.5]\n"
	if outs != "" {
		cfg += "outputs:\n- name: top\n  value: $(ref.a.first)\n"
	}
	return diffCase{Kind: "jinja", Config: cfg, Files: files}
}

// jPrint is a line of text with {{ }} printing values as Python's str().
func (g *diffGen) jPrint(vars map[string][]string) string {
	var parts []string
	for i := 0; i < 1+g.rng.IntN(3); i++ {
		typ := g.pick("str", "int", "float", "bool", "list", "dict")
		g.use("jinja print " + typ)
		parts = append(parts, "{{ "+g.jExpr(vars, typ, 2)+" }}")
	}
	if g.chance(0.2) {
		g.use("jinja print none")
		parts = append(parts, "{{ none }}", "{{ properties.missing }}")
	}
	return strings.Join(parts, " | ")
}

// ---- schemas ----

// schemaCase is a template whose schema constrains a property with a
// pattern (Python's re syntax), and a value that may or may not match.
func (g *diffGen) schemaCase() diffCase {
	g.use("schema pattern")
	type pv struct{ pattern, value string }
	cases := []pv{
		{`^[a-z]([-a-z0-9]*[a-z0-9])?$`, g.pick("web-1", "Web", "a-", "abc")},
		{`^(?!-)[a-z0-9-]+$`, g.pick("-x", "x-1", "ok")},
		{`^(?=.*\d)[a-z0-9]+$`, g.pick("abc", "ab1", "1")},
		{`^(?P<zone>[a-z]+-[a-z]+\d)-[a-z]$`, g.pick("us-central1-a", "us-central-a")},
		{`^(\w)\w*\1$`, g.pick("abca", "abc", "aa")},
		{`(?i)^web`, g.pick("WEB-1", "wob")},
		{`^\d{1,3}(\.\d{1,3}){3}$`, g.pick("10.0.0.1", "10.0.0", "1.2.3.4.5")},
		{`^[^\s]+\Z`, g.pick("abc", "a b")},
		{`^.{0,1023}$`, g.pick("short", strings.Repeat("y", 1030))},
		{`^(?<!x)y+$`, g.pick("yy", "xy")},
		{`^a+$`, g.pick("aaa\n", "aaa", "aa\n\n")},
		{`^(?:(?!--).)*$`, g.pick("a-b", "a--b")},
		{`^[a-z]{,3}$`, g.pick("ab", "abcd")},
		{`^\w+$`, g.pick("über", "a b", "x_1")},
		{`^\d+$`, g.pick("١٢", "12")},
	}
	c := cases[g.rng.IntN(len(cases))]
	g.use("schema pattern " + c.pattern)
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	valueYAML := quote(c.value)
	if strings.Contains(c.value, "\n") {
		valueYAML = `"` + strings.ReplaceAll(c.value, "\n", `\n`) + `"`
	}
	schema := "info: {title: T}\nproperties:\n  v:\n    type: string\n    pattern: " + quote(c.pattern) + "\n  w:\n    type: string\n    default: dflt\n"
	tmpl := g.pick("t.jinja", "t.py")
	body := "resources:\n- name: r\n  type: T\n  properties: {v: {{ properties.v | tojson }}, w: {{ properties.w | tojson }}}\n"
	if tmpl == "t.py" {
		body = "def GenerateConfig(context):\n  return {'resources': [{'name': 'r', 'type': 'T', 'properties': {'v': context.properties['v'], 'w': context.properties['w']}}]}\n"
	}
	return diffCase{Kind: "schema", Config: "imports: [" + tmpl + "]\nresources:\n- name: a\n  type: " + tmpl + "\n  properties: {v: " + valueYAML + "}\n", Files: map[string]string{tmpl: body, tmpl + ".schema": schema}}
}

// ---- mutation ----

// mutantCase is a corpus case with one of its templates mutated: a line
// dropped or duplicated, a literal or operator changed, an escape
// inserted into a string.
func (g *diffGen) mutantCase() diffCase {
	c := cloneCase(g.corpus[g.rng.IntN(len(g.corpus))])
	c.Kind = "mutant"
	var names []string
	for k := range c.Files {
		if strings.HasSuffix(k, ".py") || strings.HasSuffix(k, ".jinja") {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return c
	}
	slices.Sort(names)
	name := names[g.rng.IntN(len(names))]
	text := c.Files[name]
	for range 1 + g.rng.IntN(2) {
		text = g.mutate(text, strings.HasSuffix(name, ".jinja"))
	}
	c.Files[name] = text
	return c
}

func (g *diffGen) mutate(text string, jinja bool) string {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) == 0 {
		return text
	}
	i := g.rng.IntN(len(lines))
	switch g.rng.IntN(8) {
	case 0:
		g.use("mutate drop line")
		return strings.Join(slices.Delete(slices.Clone(lines), i, i+1), "")
	case 1:
		g.use("mutate duplicate line")
		return strings.Join(slices.Insert(slices.Clone(lines), i, lines[i]), "")
	case 2:
		g.use("mutate operator")
		ops := [][2]string{{" + ", " * "}, {" == ", " != "}, {" < ", " >= "}, {" and ", " or "}, {" // ", " / "}, {" % ", " // "}, {"True", "False"}, {"sorted(", "list("}}
		o := ops[g.rng.IntN(len(ops))]
		if g.chance(0.5) {
			o[0], o[1] = o[1], o[0]
		}
		return strings.Replace(text, o[0], o[1], 1)
	case 3:
		g.use("mutate escape in string")
		for j := 0; j < 20; j++ {
			k := g.rng.IntN(len(text))
			q := strings.IndexAny(text[k:], `'"`)
			if q < 0 {
				continue
			}
			at := k + q + 1
			if at < len(text) && text[at] != '\n' {
				return text[:at] + g.pick(`\+`, `\/`, `\d`, `\n`, `\\`, `\.`, `\x41`) + text[at:]
			}
		}
		return text
	case 4:
		g.use("mutate number")
		for j := 0; j < 20; j++ {
			k := g.rng.IntN(len(text))
			if text[k] >= '0' && text[k] <= '9' {
				return text[:k] + g.pick("0", "1", "9", "-1", "2.5") + text[k+1:]
			}
		}
		return text
	case 5:
		g.use("mutate swap lines")
		j := g.rng.IntN(len(lines))
		ls := slices.Clone(lines)
		ls[i], ls[j] = ls[j], ls[i]
		return strings.Join(ls, "")
	case 6:
		if jinja {
			g.use("mutate jinja filter")
			return strings.Replace(text, "}}", " | "+g.pick("upper", "string", "default('d')", "trim", "list | join(',')", "tojson")+" }}", 1)
		}
		g.use("mutate python method")
		return strings.Replace(text, ")\n", ")"+g.pick("", "", ".copy()")+"\n", 1)
	default:
		g.use("mutate identifier")
		ids := []string{"properties", "env", "name", "resources", "type", "context"}
		a := ids[g.rng.IntN(len(ids))]
		return strings.Replace(text, a, a+g.pick("s", "_x", ""), 1)
	}
}
