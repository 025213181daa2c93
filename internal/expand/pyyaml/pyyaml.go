// Package pyyaml reads YAML as PyYAML's safe_load does, the reader every
// Deployment Manager template, configuration and schema was written
// against: YAML 1.1's implicit resolution as PyYAML implements it (y and n
// are strings; yes, no, on and off in three spellings are booleans; 017 is
// octal, 0o17 and 1e3 are strings, 12:30:00 is the sexagesimal 45000;
// .inf and .nan are floats), merge keys, and only the standard tags.
// go.yaml.in/yaml/v3 parses; every scalar is resolved here. Values are the
// engine's plain values (package value): map[string]any, []any, string,
// bool, int64, float64 and nil; timestamps stay strings as written.
//
// Aliases are bounded twice: by count (MaxAliases, a cheap byte scan
// first) and by what they add once expanded (MaxAliasBytes), since one
// large scalar aliased a few hundred times amplifies without a bomb's
// nesting.
package pyyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// PyYAML's implicit resolvers (yaml/resolver.py), the YAML 1.1 rules every
// Deployment Manager template was written against: y/n are strings,
// yes/no/on/off are booleans, 0o17 and 1e3 are strings, 017 is octal,
// 12:30:00 is sexagesimal.
var (
	pyFloatRE = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	pyIntRE   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	// timestampRE is PyYAML's timestamp resolver.
	timestampRE = regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
)

// pyWords are the plain scalars PyYAML resolves to booleans and null.
var pyWords = map[string]any{
	"yes": true, "Yes": true, "YES": true, "no": false, "No": false, "NO": false,
	"true": true, "True": true, "TRUE": true, "false": false, "False": false, "FALSE": false,
	"on": true, "On": true, "ON": true, "off": false, "Off": false, "OFF": false,
	"~": nil, "null": nil, "Null": nil, "NULL": nil, "": nil,
}

// Implicit reports whether PyYAML's SafeLoader resolves the plain scalar s
// to something other than a string (a boolean, null, a number, a
// timestamp, a merge key or the value key), so that a dumper must quote it.
func Implicit(s string) bool {
	if _, ok := pyWords[s]; ok || s == "<<" || s == "=" {
		return true
	}
	return pyIntRE.MatchString(s) || pyFloatRE.MatchString(s) || timestampRE.MatchString(s)
}

// ResolvePlain resolves a plain (unquoted, untagged) YAML scalar as PyYAML's
// safe_load does: nil, bool, int64 (float64 beyond int64), float64 (±Inf
// and NaN included) or string. Timestamps stay strings as written (PyYAML
// makes dates of them, which DM wrote back unchanged). The engine's fast
// decoder and emitter use it too, so all agree.
func ResolvePlain(s string) any {
	if s == "" {
		return nil
	}
	c := s[0]
	switch {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '~':
		if v, ok := pyWords[s]; ok {
			return v
		}
		return s
	case c >= '1' && c <= '9':
		if n, ok := decimal(s); ok {
			return n
		}
	case c != '-' && c != '+' && c != '.' && c != '0':
		return s
	}
	if pyIntRE.MatchString(s) {
		if v, ok := pyInt(s); ok {
			return v
		}
		return s
	}
	if pyFloatRE.MatchString(s) {
		if v, ok := pyFloat(s); ok {
			return v
		}
	}
	return s
}

// decimal reads [1-9][0-9]* quickly, the common case.
func decimal(s string) (int64, bool) {
	if len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

// pyInt is PyYAML's construct_yaml_int.
func pyInt(s string) (any, bool) {
	s = strings.ReplaceAll(s, "_", "")
	sign := int64(1)
	if s != "" && (s[0] == '-' || s[0] == '+') {
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
	}
	var n int64
	var err error
	switch {
	case s == "0":
		return int64(0), true
	case strings.HasPrefix(s, "0b"):
		n, err = strconv.ParseInt(s[2:], 2, 64)
	case strings.HasPrefix(s, "0x"):
		n, err = strconv.ParseInt(s[2:], 16, 64)
	case s != "" && s[0] == '0':
		n, err = strconv.ParseInt(s[1:], 8, 64)
	case strings.Contains(s, ":"):
		for _, part := range strings.Split(s, ":") {
			d, perr := strconv.ParseInt(part, 10, 64)
			if perr != nil || n > math.MaxInt64/60 {
				return nil, false
			}
			n = n*60 + d
		}
	default:
		n, err = strconv.ParseInt(s, 10, 64)
		if err != nil {
			if f, ferr := strconv.ParseFloat(s, 64); ferr == nil {
				return float64(sign) * f, true // beyond int64, as normalize does
			}
		}
	}
	if err != nil {
		return nil, false
	}
	return sign * n, true
}

// pyFloat is PyYAML's construct_yaml_float.
func pyFloat(s string) (any, bool) {
	s = strings.ToLower(strings.ReplaceAll(s, "_", ""))
	sign := 1.0
	if s != "" && (s[0] == '-' || s[0] == '+') {
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
	}
	switch {
	case s == ".inf":
		return sign * math.Inf(1), true
	case s == ".nan":
		return math.NaN(), true
	case strings.Contains(s, ":"):
		f := 0.0
		for _, part := range strings.Split(s, ":") {
			d, err := strconv.ParseFloat(part, 64)
			if err != nil {
				return nil, false
			}
			f = f*60 + d
		}
		return sign * f, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, false
	}
	return sign * f, true
}

// DefaultMaxAliasBytes is the default of Options.MaxAliasBytes.
const DefaultMaxAliasBytes = 4 << 20

// Options bound a decode and observe its mappings.
type Options struct {
	// MaxAliases bounds the aliases of a document (0: no count limit).
	MaxAliases int
	// MaxAliasBytes bounds what aliases add once expanded (0: the
	// default).
	MaxAliasBytes int
	// Record, if set, is called with every decoded mapping and its keys in
	// document order (merged keys first, as PyYAML orders them).
	Record func(m map[string]any, keys []string)
	// Duplicate, if set, is called for every mapping key written again in
	// the same mapping, with the repetition's line. The last value is
	// kept, in the first one's place, as PyYAML does.
	Duplicate func(line int, key string)
}

// LimitError reports a document over one of the Options' limits; Field
// names the option.
type LimitError struct {
	Field  string // "MaxAliases" or "MaxAliasBytes"
	Limit  int
	Detail string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: exceeds the limit of %d (%s)", e.Detail, e.Limit, e.Field)
}

// yamlDecoder turns a yaml.v3 node tree into plain values.
type yamlDecoder struct {
	opts Options
	// aliasBytes is what aliases have added so far; sizes caches the
	// expanded size of anchored nodes.
	aliasBytes int
	sizes      map[*yaml3.Node]int
	cyclic     bool // an anchor contains an alias of itself
	// keys holds decoded mappings' key order, for merges.
	keys map[*yaml3.Node][]string
}

// Decode decodes one YAML document (several are an error, as with
// safe_load; none is nil) and returns it with its node tree, whose lines
// callers use in messages.
func Decode(data []byte, opts Options) (any, *yaml3.Node, error) {
	if opts.MaxAliases > 0 {
		if n := CountAliases(data); n > opts.MaxAliases {
			return nil, nil, &LimitError{Field: "MaxAliases", Limit: opts.MaxAliases, Detail: fmt.Sprintf("document uses %d aliases", n)}
		}
	}
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var doc yaml3.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &doc, nil // an empty document is null
		}
		return nil, nil, err
	}
	var extra yaml3.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("line %d: expected a single document, found another", extra.Line)
	}
	d := &yamlDecoder{opts: opts}
	v, err := d.value(&doc)
	if err != nil {
		return nil, nil, err
	}
	return v, &doc, nil
}

// CountAliases counts "*name" tokens that can be YAML aliases: a '*' at the
// start of a value (after ' ', '[', ',', '{', '-', ':' or a line start)
// followed by a name character. It overcounts inside quoted strings, which is
// harmless: the limit is far above what real documents use.
func CountAliases(data []byte) int {
	if bytes.IndexByte(data, '&') < 0 {
		return 0 // no anchors, no aliases to expand
	}
	n := 0
	for i := 0; i < len(data)-1; i++ {
		if data[i] != '*' {
			continue
		}
		if i > 0 {
			switch data[i-1] {
			case ' ', '\t', '\n', '[', ',', '{', '-', ':':
			default:
				continue
			}
		}
		c := data[i+1]
		if c != ' ' && c != '\n' && c != '\t' && c != '*' {
			n++
		}
	}
	return n
}

func (d *yamlDecoder) value(n *yaml3.Node) (any, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml3.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0])
	case yaml3.AliasNode:
		if err := d.alias(n); err != nil {
			return nil, err
		}
		v, err := d.value(n.Alias)
		if err != nil {
			return nil, err
		}
		return v, nil
	case yaml3.ScalarNode:
		return d.scalar(n)
	case yaml3.SequenceNode:
		if err := d.tagIs(n, "!!seq"); err != nil {
			return nil, err
		}
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := d.value(c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml3.MappingNode:
		if err := d.tagIs(n, "!!map"); err != nil {
			return nil, err
		}
		return d.mapping(n)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

func (d *yamlDecoder) tagIs(n *yaml3.Node, want string) error {
	if n.Style&yaml3.TaggedStyle != 0 && n.Tag != want && n.Tag != "!" {
		return fmt.Errorf("line %d: tag %s is not one safe_load knows here (want %s)", n.Line, n.Tag, want)
	}
	return nil
}

// alias counts what an alias adds against Options.MaxAliasBytes: a 1 MB
// scalar aliased 999 times is 1 GB once expanded, well within MaxAliases.
func (d *yamlDecoder) alias(n *yaml3.Node) error {
	limit := d.opts.MaxAliasBytes
	if limit <= 0 {
		limit = DefaultMaxAliasBytes
	}
	if d.sizes == nil {
		d.sizes = map[*yaml3.Node]int{}
	}
	d.aliasBytes += d.size(n.Alias, limit+1, 0)
	if d.cyclic {
		return fmt.Errorf("line %d: alias *%s refers to a node that contains it (a recursive structure)", n.Line, n.Value)
	}
	if d.aliasBytes > limit {
		return &LimitError{Field: "MaxAliasBytes", Limit: limit, Detail: fmt.Sprintf("line %d: YAML aliases expand to more than %d bytes", n.Line, limit)}
	}
	return nil
}

// size estimates the decoded size of n with aliases expanded, saturating
// at limit: scalar bytes plus 8 per node.
func (d *yamlDecoder) size(n *yaml3.Node, limit, depth int) int {
	if s, ok := d.sizes[n]; ok {
		if s < 0 { // still being measured: n contains an alias of itself
			d.cyclic = true
			return limit
		}
		return s
	}
	if depth > 10000 {
		return limit
	}
	d.sizes[n] = -1
	s := 8 + len(n.Value)
	if n.Kind == yaml3.AliasNode {
		s = d.size(n.Alias, limit, depth+1)
	}
	for _, c := range n.Content {
		s += d.size(c, limit, depth+1)
		if s >= limit {
			s = limit
			break
		}
	}
	d.sizes[n] = s
	return s
}

func (d *yamlDecoder) scalar(n *yaml3.Node) (any, error) {
	if n.Style&yaml3.TaggedStyle != 0 {
		switch n.Tag {
		case "!!str", "!", "!!timestamp":
			return n.Value, nil
		case "!!null":
			return nil, nil
		case "!!bool":
			if v, ok := pyWords[n.Value]; ok && v != nil {
				return v, nil
			}
		case "!!int":
			if pyIntRE.MatchString(n.Value) {
				if v, ok := pyInt(n.Value); ok {
					return v, nil
				}
			}
		case "!!float":
			if pyFloatRE.MatchString(n.Value) {
				if v, ok := pyFloat(n.Value); ok {
					return v, nil
				}
			}
			if pyIntRE.MatchString(n.Value) {
				if v, ok := pyInt(n.Value); ok {
					if i, isInt := v.(int64); isInt {
						return float64(i), nil
					}
					return v, nil
				}
			}
		default:
			return nil, fmt.Errorf("line %d: tag %s is not one safe_load knows", n.Line, n.Tag)
		}
		return nil, fmt.Errorf("line %d: %q is not a valid %s", n.Line, n.Value, n.Tag)
	}
	if n.Style&(yaml3.DoubleQuotedStyle|yaml3.SingleQuotedStyle|yaml3.LiteralStyle|yaml3.FoldedStyle) != 0 {
		return n.Value, nil
	}
	return ResolvePlain(n.Value), nil
}

// mapping decodes a mapping. Merge keys (<<) work as in PyYAML: merged
// pairs come first, explicit keys override them. Keys are strings; other
// scalars are written as Python's json.dumps writes them.
func (d *yamlDecoder) mapping(n *yaml3.Node) (any, error) {
	out := make(map[string]any, len(n.Content)/2)
	keys := make([]string, 0, len(n.Content)/2)
	set := func(k string, v any) {
		if _, ok := out[k]; !ok {
			keys = append(keys, k)
		}
		out[k] = v
	}
	explicit := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml3.ScalarNode && kn.Value == "<<" && kn.Style == 0 {
			if err := d.merge(vn, out, set, explicit); err != nil {
				return nil, err
			}
			continue
		}
		kv, err := d.value(kn)
		if err != nil {
			return nil, err
		}
		k, err := keyString(kv)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", kn.Line, err)
		}
		if explicit[k] && d.opts.Duplicate != nil {
			d.opts.Duplicate(kn.Line, k)
		}
		explicit[k] = true
		v, err := d.value(vn)
		if err != nil {
			return nil, err
		}
		set(k, v)
	}
	if d.keys == nil {
		d.keys = map[*yaml3.Node][]string{}
	}
	d.keys[n] = keys
	if d.opts.Record != nil {
		d.opts.Record(out, keys)
	}
	return out, nil
}

// merge applies a << value: a mapping or a list of mappings, earlier ones
// winning; keys the mapping sets itself win over all.
func (d *yamlDecoder) merge(vn *yaml3.Node, out map[string]any, set func(string, any), explicit map[string]bool) error {
	var srcs []*yaml3.Node
	target := vn
	if vn.Kind == yaml3.AliasNode {
		target = vn.Alias
	}
	switch target.Kind {
	case yaml3.MappingNode:
		srcs = []*yaml3.Node{vn}
	case yaml3.SequenceNode:
		srcs = target.Content
	default:
		return fmt.Errorf("line %d: a merge key (<<) takes a mapping or a list of mappings", vn.Line)
	}
	seen := map[string]bool{}
	for _, s := range srcs {
		v, err := d.value(s)
		if err != nil {
			return err
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("line %d: a merge key (<<) takes a mapping or a list of mappings", s.Line)
		}
		src := s
		for src.Kind == yaml3.AliasNode {
			src = src.Alias
		}
		for _, k := range d.keys[src] {
			if explicit[k] || seen[k] {
				continue
			}
			seen[k] = true
			set(k, m[k])
		}
	}
	return nil
}

// keyString writes a resolved key as a string, as json.dumps writes
// Python's keys (True -> "true", None -> "null").
func keyString(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case nil:
		return "null", nil
	case bool, int64:
		return fmt.Sprint(k), nil
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("mapping key %v is not a scalar", k)
}

// CheckAliases reports, without decoding values, whether data's aliases
// stay within opts' limits (a LimitError if not; nil also for YAML that
// does not parse, which the caller's own decoder reports). Readers that
// keep their own YAML library (OpenShift templates) call it first, so no
// YAML reader in the engine expands an alias bomb.
func CheckAliases(data []byte, opts Options) error {
	if opts.MaxAliases > 0 {
		if n := CountAliases(data); n > opts.MaxAliases {
			return &LimitError{Field: "MaxAliases", Limit: opts.MaxAliases, Detail: fmt.Sprintf("document uses %d aliases", n)}
		}
	}
	if bytes.IndexByte(data, '*') < 0 {
		return nil
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(data, &doc); err != nil {
		return nil
	}
	d := &yamlDecoder{opts: opts}
	var walk func(n *yaml3.Node, depth int) error
	walk = func(n *yaml3.Node, depth int) error {
		if depth > 10000 {
			return nil
		}
		if n.Kind == yaml3.AliasNode {
			return d.alias(n)
		}
		for _, c := range n.Content {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(&doc, 0)
}

// DuplicateKeyWarning is the warning about a mapping key written twice in
// file at line: PyYAML kept the last value, so DM's configurations may
// rely on it, but it is rarely meant.
func DuplicateKeyWarning(file string, line int, key string) string {
	return fmt.Sprintf("%s:%d: mapping key %q is repeated; the last value is kept, as PyYAML does", file, line, key)
}
