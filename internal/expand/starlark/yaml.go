package starlark

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"

	"github.com/dmhq/dm/internal/expand/pyyaml"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/python"
)

// pyYAMLDump writes a value as PyYAML's yaml.dump / yaml.safe_dump does
// (PyYAML 5.1 and later: sort_keys=True, default_flow_style=False, width
// 80, indent 2, allow_unicode=False), so templates that embed the text
// (a ConfigMap's data, say) produce the same bytes DM produced. The
// emitter is a port of the parts of PyYAML's emitter.py that plain data
// reaches: block and flow collections, and the plain, single-quoted and
// double-quoted scalar styles with PyYAML's line folding.
type pyYAMLEmitter struct {
	sb strings.Builder

	indent     int // -1: none yet
	indents    []int
	column     int
	whitespace bool
	indention  bool
	openEnded  bool
	flowLevel  int

	rootContext, sequenceContext, mappingContext, simpleKeyContext bool

	bestIndent int
	bestWidth  int
	sortKeys   bool
	// flowStyle: "block" (False), "leaf" (None: collections of scalars in
	// flow style) or "flow" (True).
	flowStyle    string
	allowUnicode bool
	explicit     bool // explicit_start
	limit        int
}

func newPyYAMLEmitter(limit int) *pyYAMLEmitter {
	return &pyYAMLEmitter{indent: -1, whitespace: true, indention: true, bestIndent: 2, bestWidth: 80, sortKeys: true, flowStyle: "block", limit: limit}
}

// dump emits one document.
func (e *pyYAMLEmitter) dump(v any) (string, error) {
	if e.explicit {
		e.writeIndicator("---", true, false, false)
	}
	if err := e.node(v, true, false, false, false, 0); err != nil {
		return "", err
	}
	e.writeIndent() // document end
	if e.openEnded {
		e.writeIndicator("...", true, false, false)
		e.writeIndent()
	}
	return e.sb.String(), nil
}

func (e *pyYAMLEmitter) write(s string) {
	e.sb.WriteString(s)
	e.column += utf8.RuneCountInString(s)
}

func (e *pyYAMLEmitter) writeIndicator(ind string, needWhitespace, whitespace, indention bool) {
	if !e.whitespace && needWhitespace {
		ind = " " + ind
	}
	e.whitespace = whitespace
	e.indention = e.indention && indention
	e.openEnded = false
	e.write(ind)
}

func (e *pyYAMLEmitter) writeIndent() {
	indent := max(e.indent, 0)
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.writeLineBreak()
	}
	if e.column < indent {
		e.whitespace = true
		e.write(strings.Repeat(" ", indent-e.column))
	}
}

func (e *pyYAMLEmitter) writeLineBreak() {
	e.whitespace = true
	e.indention = true
	e.sb.WriteByte('\n')
	e.column = 0
}

func (e *pyYAMLEmitter) increaseIndent(flow, indentless bool) {
	e.indents = append(e.indents, e.indent)
	switch {
	case e.indent < 0:
		if flow {
			e.indent = e.bestIndent
		} else {
			e.indent = 0
		}
	case !indentless:
		e.indent += e.bestIndent
	}
}

func (e *pyYAMLEmitter) popIndent() {
	e.indent = e.indents[len(e.indents)-1]
	e.indents = e.indents[:len(e.indents)-1]
}

type pyYAMLItem struct {
	key string // the key's text as a scalar
	k   any
	v   any
}

// items returns a mapping's items in the order PyYAML writes them.
func (e *pyYAMLEmitter) items(v any) []pyYAMLItem {
	var out []pyYAMLItem
	switch m := v.(type) {
	case python.Dict:
		for _, it := range m {
			out = append(out, pyYAMLItem{k: it.K, v: it.V})
		}
	case map[string]any:
		for _, k := range engine.SortedKeys(m) {
			out = append(out, pyYAMLItem{k: k, v: m[k]})
		}
	}
	if e.sortKeys {
		sort.SliceStable(out, func(i, j int) bool { return python.Less(out[i].k, out[j].k) })
	}
	return out
}

func isCollection(v any) bool {
	switch v.(type) {
	case []any, python.Tuple, python.Dict, map[string]any:
		return true
	}
	return false
}

func seqOf(v any) ([]any, bool) {
	switch s := v.(type) {
	case []any:
		return s, true
	case python.Tuple:
		return s, true
	}
	return nil, false
}

// flow reports whether a collection is written in flow style.
func (e *pyYAMLEmitter) flow(v any, empty bool) bool {
	if e.flowLevel > 0 || empty || e.flowStyle == "flow" {
		return true
	}
	if e.flowStyle != "leaf" {
		return false
	}
	if s, ok := seqOf(v); ok {
		for _, x := range s {
			if isCollection(x) {
				return false
			}
		}
		return true
	}
	for _, it := range e.items(v) {
		if isCollection(it.v) {
			return false
		}
	}
	return true
}

func (e *pyYAMLEmitter) node(v any, root, sequence, mapping, simpleKey bool, depth int) error {
	if depth > 1000 {
		return fmt.Errorf("yaml.dump: value nested too deep")
	}
	if e.sb.Len() > e.limit {
		return python.SizeErr("yaml.dump", e.sb.Len(), e.limit)
	}
	e.rootContext, e.sequenceContext, e.mappingContext, e.simpleKeyContext = root, sequence, mapping, simpleKey
	if s, ok := seqOf(v); ok {
		if e.flow(v, len(s) == 0) {
			e.writeIndicator("[", true, true, false)
			e.flowLevel++
			e.increaseIndent(true, false)
			for i, x := range s {
				if i > 0 {
					e.writeIndicator(",", false, false, false)
				}
				if e.column > e.bestWidth {
					e.writeIndent()
				}
				if err := e.node(x, false, true, false, false, depth+1); err != nil {
					return err
				}
			}
			e.popIndent()
			e.flowLevel--
			e.writeIndicator("]", false, false, false)
			return nil
		}
		e.increaseIndent(false, e.mappingContext && !e.indention)
		for _, x := range s {
			e.writeIndent()
			e.writeIndicator("-", true, false, true)
			if err := e.node(x, false, true, false, false, depth+1); err != nil {
				return err
			}
		}
		e.popIndent()
		return nil
	}
	if isCollection(v) {
		items := e.items(v)
		if e.flow(v, len(items) == 0) {
			e.writeIndicator("{", true, true, false)
			e.flowLevel++
			e.increaseIndent(true, false)
			for i, it := range items {
				if i > 0 {
					e.writeIndicator(",", false, false, false)
				}
				if e.column > e.bestWidth {
					e.writeIndent()
				}
				if err := e.pair(it, depth); err != nil {
					return err
				}
			}
			e.popIndent()
			e.flowLevel--
			e.writeIndicator("}", false, false, false)
			return nil
		}
		e.increaseIndent(false, false)
		for _, it := range items {
			e.writeIndent()
			if err := e.pair(it, depth); err != nil {
				return err
			}
		}
		e.popIndent()
		return nil
	}
	text, isStr, err := pyYAMLScalar(v)
	if err != nil {
		return err
	}
	e.increaseIndent(true, false)
	e.scalar(text, isStr)
	e.popIndent()
	return nil
}

// pair writes a mapping's key, the colon and the value. A key that is not
// simple (128 characters or more, empty, several lines, a collection) is
// written after "? ", as PyYAML does: YAML limits implicit keys to 1024
// characters, so a long one would not read back.
func (e *pyYAMLEmitter) pair(it pyYAMLItem, depth int) error {
	if e.simpleKey(it.k) {
		if err := e.node(it.k, false, false, true, true, depth+1); err != nil {
			return err
		}
		e.writeIndicator(":", false, false, false)
		return e.node(it.v, false, false, true, false, depth+1)
	}
	block := e.flowLevel == 0
	e.writeIndicator("?", true, false, block)
	if err := e.node(it.k, false, false, true, false, depth+1); err != nil {
		return err
	}
	if block || e.column > e.bestWidth {
		e.writeIndent()
	}
	e.writeIndicator(":", true, false, block)
	return e.node(it.v, false, false, true, false, depth+1)
}

// simpleKey is PyYAML's Emitter.check_simple_key for a key k.
func (e *pyYAMLEmitter) simpleKey(k any) bool {
	if s, ok := seqOf(k); ok {
		return len(s) == 0
	}
	if isCollection(k) {
		return len(e.items(k)) == 0
	}
	text, _, err := pyYAMLScalar(k)
	if err != nil {
		return true // node reports it
	}
	a := e.analyze(text)
	return utf8.RuneCountInString(text) < 128 && !a.empty && !a.multiline
}

// pyYAMLScalar is the text of a scalar as PyYAML's SafeRepresenter
// writes it, and whether it is a string (whose style the emitter picks).
func pyYAMLScalar(v any) (string, bool, error) {
	switch v := v.(type) {
	case nil:
		return "null", false, nil
	case bool:
		return strconv.FormatBool(v), false, nil
	case int64:
		return strconv.FormatInt(v, 10), false, nil
	case int:
		return strconv.Itoa(v), false, nil
	case *big.Int:
		return v.String(), false, nil
	case float64:
		switch {
		case math.IsNaN(v):
			return ".nan", false, nil
		case math.IsInf(v, 1):
			return ".inf", false, nil
		case math.IsInf(v, -1):
			return "-.inf", false, nil
		}
		s := strings.ToLower(python.Float(v))
		if !strings.Contains(s, ".") && strings.Contains(s, "e") {
			s = strings.Replace(s, "e", ".0e", 1)
		}
		return s, false, nil
	case string:
		return v, true, nil
	}
	return "", false, fmt.Errorf("yaml.dump: cannot represent a %s", python.TypeName(v))
}

// pyYAMLReadsAsString reports whether PyYAML reads the plain scalar s as
// a string: a string that would read back as something else is quoted.
func pyYAMLReadsAsString(s string) bool { return !pyyaml.Implicit(s) }

// scalarAnalysis is PyYAML's ScalarAnalysis.
type scalarAnalysis struct {
	empty, multiline                                  bool
	allowFlowPlain, allowBlockPlain, allowSingleQuote bool
}

func isBreak(r rune) bool { return r == '\n' || r == '\x85' || r == '\u2028' || r == '\u2029' }

func isSpaceOrBreak(r rune) bool { return r == 0 || r == ' ' || r == '\t' || r == '\r' || isBreak(r) }

func (e *pyYAMLEmitter) analyze(s string) scalarAnalysis {
	if s == "" {
		return scalarAnalysis{empty: true, allowSingleQuote: true}
	}
	rs := []rune(s)
	var blockInd, flowInd, lineBreaks, special bool
	var leadSpace, leadBreak, trailSpace, trailBreak, breakSpace, spaceBreak bool
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		blockInd, flowInd = true, true
	}
	preceded := true
	followed := len(rs) == 1 || isSpaceOrBreak(rs[1])
	prevSpace, prevBreak := false, false
	for i, ch := range rs {
		if i == 0 {
			if strings.ContainsRune("#,[]{}&*!|>'\"%@`", ch) {
				flowInd, blockInd = true, true
			}
			if ch == '?' || ch == ':' {
				flowInd = true
				if followed {
					blockInd = true
				}
			}
			if ch == '-' && followed {
				flowInd, blockInd = true, true
			}
		} else {
			if strings.ContainsRune(",?[]{}", ch) {
				flowInd = true
			}
			if ch == ':' {
				flowInd = true
				if followed {
					blockInd = true
				}
			}
			if ch == '#' && preceded {
				flowInd, blockInd = true, true
			}
		}
		if isBreak(ch) {
			lineBreaks = true
		}
		if !(ch == '\n' || ch >= 0x20 && ch <= 0x7e) {
			printable := (ch == 0x85 || ch >= 0xa0 && ch <= 0xd7ff || ch >= 0xe000 && ch <= 0xfffd || ch >= 0x10000 && ch < 0x10ffff) && ch != 0xfeff
			if !printable || !e.allowUnicode {
				special = true
			}
		}
		switch {
		case ch == ' ':
			if i == 0 {
				leadSpace = true
			}
			if i == len(rs)-1 {
				trailSpace = true
			}
			if prevBreak {
				breakSpace = true
			}
			prevSpace, prevBreak = true, false
		case isBreak(ch):
			if i == 0 {
				leadBreak = true
			}
			if i == len(rs)-1 {
				trailBreak = true
			}
			if prevSpace {
				spaceBreak = true
			}
			prevSpace, prevBreak = false, true
		default:
			prevSpace, prevBreak = false, false
		}
		preceded = isSpaceOrBreak(ch)
		followed = i+2 >= len(rs) || isSpaceOrBreak(rs[i+2])
	}
	a := scalarAnalysis{multiline: lineBreaks, allowFlowPlain: true, allowBlockPlain: true, allowSingleQuote: true}
	if leadSpace || leadBreak || trailSpace || trailBreak {
		a.allowFlowPlain, a.allowBlockPlain = false, false
	}
	if breakSpace {
		a.allowFlowPlain, a.allowBlockPlain, a.allowSingleQuote = false, false, false
	}
	if spaceBreak || special {
		a.allowFlowPlain, a.allowBlockPlain, a.allowSingleQuote = false, false, false
	}
	if lineBreaks {
		a.allowFlowPlain, a.allowBlockPlain = false, false
	}
	if flowInd {
		a.allowFlowPlain = false
	}
	if blockInd {
		a.allowBlockPlain = false
	}
	return a
}

func (e *pyYAMLEmitter) scalar(text string, isStr bool) {
	a := e.analyze(text)
	style := byte('"')
	implicit := !isStr || pyYAMLReadsAsString(text)
	switch {
	case implicit && !(e.simpleKeyContext && (a.empty || a.multiline)) &&
		(e.flowLevel > 0 && a.allowFlowPlain || e.flowLevel == 0 && a.allowBlockPlain):
		style = 0
	case a.allowSingleQuote && !(e.simpleKeyContext && a.multiline):
		style = '\''
	}
	split := !e.simpleKeyContext
	switch style {
	case 0:
		e.writePlain(text, split)
	case '\'':
		e.writeSingleQuoted(text, split)
	default:
		e.writeDoubleQuoted(text, split)
	}
}

func (e *pyYAMLEmitter) writeBreaks(rs []rune) {
	if rs[0] == '\n' {
		e.writeLineBreak()
	}
	for _, br := range rs {
		if br == '\n' {
			e.writeLineBreak()
		} else {
			e.sb.WriteRune(br)
			e.whitespace, e.indention, e.column = true, true, 0
		}
	}
	e.writeIndent()
}

func (e *pyYAMLEmitter) writePlain(text string, split bool) {
	if e.rootContext {
		e.openEnded = true
	}
	if text == "" {
		return
	}
	if !e.whitespace {
		e.write(" ")
	}
	e.whitespace, e.indention = false, false
	rs := []rune(text)
	spaces, breaks := false, false
	start := 0
	for end := 0; end <= len(rs); end++ {
		ch := rune(-1)
		if end < len(rs) {
			ch = rs[end]
		}
		switch {
		case spaces:
			if ch != ' ' {
				if start+1 == end && e.column > e.bestWidth && split {
					e.writeIndent()
					e.whitespace, e.indention = false, false
				} else {
					e.write(string(rs[start:end]))
				}
				start = end
			}
		case breaks:
			if !isBreak(ch) {
				e.writeBreaks(rs[start:end])
				e.whitespace, e.indention = false, false
				start = end
			}
		default:
			if ch == -1 || ch == ' ' || isBreak(ch) {
				e.write(string(rs[start:end]))
				start = end
			}
		}
		if ch != -1 {
			spaces, breaks = ch == ' ', isBreak(ch)
		}
	}
}

func (e *pyYAMLEmitter) writeSingleQuoted(text string, split bool) {
	e.writeIndicator("'", true, false, false)
	rs := []rune(text)
	spaces, breaks := false, false
	start := 0
	for end := 0; end <= len(rs); end++ {
		ch := rune(-1)
		if end < len(rs) {
			ch = rs[end]
		}
		switch {
		case spaces:
			if ch != ' ' {
				if start+1 == end && e.column > e.bestWidth && split && start != 0 && end != len(rs) {
					e.writeIndent()
				} else {
					e.write(string(rs[start:end]))
				}
				start = end
			}
		case breaks:
			if !isBreak(ch) {
				e.writeBreaks(rs[start:end])
				start = end
			}
		default:
			if ch == -1 || ch == ' ' || isBreak(ch) || ch == '\'' {
				if start < end {
					e.write(string(rs[start:end]))
					start = end
				}
			}
		}
		if ch == '\'' {
			e.write("''")
			start = end + 1
		}
		if ch != -1 {
			spaces, breaks = ch == ' ', isBreak(ch)
		}
	}
	e.writeIndicator("'", false, false, false)
}

var yamlEscapes = map[rune]string{
	0: "0", 7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 27: "e",
	'"': "\"", '\\': "\\", 0x85: "N", 0xa0: "_", 0x2028: "L", 0x2029: "P",
}

func (e *pyYAMLEmitter) writeDoubleQuoted(text string, split bool) {
	e.writeIndicator("\"", true, false, false)
	rs := []rune(text)
	start := 0
	for end := 0; end <= len(rs); end++ {
		ch := rune(-1)
		if end < len(rs) {
			ch = rs[end]
		}
		if ch == -1 || strings.ContainsRune("\"\\\x85\u2028\u2029\ufeff", ch) ||
			!(ch >= 0x20 && ch <= 0x7e || e.allowUnicode && (ch >= 0xa0 && ch <= 0xd7ff || ch >= 0xe000 && ch <= 0xfffd)) {
			if start < end {
				e.write(string(rs[start:end]))
				start = end
			}
			if ch != -1 {
				var data string
				switch esc, ok := yamlEscapes[ch]; {
				case ok:
					data = `\` + esc
				case ch <= 0xff:
					data = fmt.Sprintf(`\x%02X`, ch)
				case ch <= 0xffff:
					data = fmt.Sprintf(`\u%04X`, ch)
				default:
					data = fmt.Sprintf(`\U%08X`, ch)
				}
				e.write(data)
				start = end + 1
			}
		}
		if 0 < end && end < len(rs)-1 && (ch == ' ' || start >= end) && e.column+(end-start) > e.bestWidth && split {
			data := `\`
			if start < end {
				data = string(rs[start:end]) + data
				start = end
			}
			e.write(data)
			e.writeIndent()
			e.whitespace, e.indention = false, false
			if rs[start] == ' ' {
				e.write(`\`)
			}
		}
	}
	e.writeIndicator("\"", false, false, false)
}

// pyYAMLDumps is yaml.dump(v, **kwargs) of a Starlark value.
func pyYAMLDumps(name string, v starlark.Value, kwargs []starlark.Tuple, limit int) (string, error) {
	e := newPyYAMLEmitter(limit)
	for _, kw := range kwargs {
		k, val := string(kw[0].(starlark.String)), kw[1]
		switch k {
		case "default_flow_style":
			switch {
			case val == starlark.None:
				e.flowStyle = "leaf"
			case bool(val.Truth()):
				e.flowStyle = "flow"
			default:
				e.flowStyle = "block"
			}
		case "indent", "width":
			n, err := starlark.AsInt32(val)
			if err != nil {
				return "", fmt.Errorf("%s: %s must be an int", name, k)
			}
			if k == "indent" && n > 1 && n < 10 {
				e.bestIndent = n
			}
			if k == "width" && n > e.bestIndent*2 {
				e.bestWidth = n
			}
		case "sort_keys":
			e.sortKeys = bool(val.Truth())
		case "allow_unicode":
			e.allowUnicode = bool(val.Truth())
		case "explicit_start":
			e.explicit = bool(val.Truth())
		case "Dumper", "encoding", "line_break", "canonical", "explicit_end", "version", "tags":
			// Accepted; dm writes PyYAML's defaults.
		default:
			return "", fmt.Errorf("%s: unexpected keyword argument %s", name, k)
		}
	}
	p, err := starPlain(v, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	out, err := e.dump(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
