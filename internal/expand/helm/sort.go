package helm

import (
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// This file is dm's own releaseutil.SortManifests. Helm's parses every
// rendered document with sigs.k8s.io/yaml to read four fields of its head,
// which cost twice the engine's time. sortManifests reads the head with a
// line scanner instead, and hands a document to Helm's parse whenever the
// scanner meets anything outside the plain block YAML it understands, so
// its result is Helm's in every case it accepts (TestSortManifestsParity).

// splitManifests is releaseutil.SplitManifests as an ordered slice and
// without its regular expression, (?:^|\s*\n)---\s*, whose backtracking
// took most of the sorting time. Its quirks are kept, since they decide
// what Helm sees: a separator takes the whitespace after it, so in
// "a\n---\n---\nb" the second "---" starts the document "---\nb".
func splitManifests(bigFile string) []string {
	s := strings.TrimSpace(bigFile)
	var docs []string
	add := func(d string) {
		if d != "" {
			docs = append(docs, strings.TrimSpace(d))
		}
	}
	skipSpace := func(e int) int {
		for e < len(s) && isRESpace(s[e]) {
			e++
		}
		return e
	}
	beg := 0
	if strings.HasPrefix(s, "---") {
		beg = skipSpace(3)
	}
	for pos := beg; ; {
		i := strings.Index(s[pos:], "\n---")
		if i < 0 {
			break
		}
		// The match starts where the run of whitespace before "\n---"
		// does, not before the previous match's end.
		k := pos + i
		start := k
		for start > pos && isRESpace(s[start-1]) {
			start--
		}
		add(s[beg:start])
		beg = skipSpace(k + 4)
		pos = beg
	}
	add(s[beg:])
	return docs
}

// isRESpace is \s of Go's regular expressions.
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// sortManifests is releaseutil.SortManifests(files, nil, InstallOrder):
// the same hooks and manifests in the same order, and the same error for
// a document that is not valid YAML or not a mapping.
func sortManifests(files map[string]string) ([]*release.Hook, []releaseutil.Manifest, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var hooks []*release.Hook
	var generic []releaseutil.Manifest
	for _, p := range paths {
		content := files[p]
		if strings.HasPrefix(path.Base(p), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		for _, m := range splitManifests(content) {
			head, ok := scanHead(m)
			if !ok || !plainASCII(m) {
				var err error
				if head, err = parseHead(m); err != nil {
					return nil, nil, fmt.Errorf("YAML parse error on %s: %w", p, err)
				}
			}
			hookTypes, isHook := "", false
			if head.Metadata != nil && len(head.Metadata.Annotations) != 0 {
				hookTypes, isHook = head.Metadata.Annotations[release.HookAnnotation]
			}
			if !isHook {
				generic = append(generic, releaseutil.Manifest{Name: p, Content: m, Head: head})
				continue
			}
			h := &release.Hook{
				Name:           head.Metadata.Name,
				Kind:           head.Kind,
				Path:           p,
				Manifest:       m,
				Events:         []release.HookEvent{},
				DeletePolicies: []release.HookDeletePolicy{},
			}
			// An unparsable weight is 0, as in Helm.
			h.Weight, _ = strconv.Atoi(head.Metadata.Annotations[release.HookWeightAnnotation])
			known := true
			for _, t := range strings.Split(hookTypes, ",") {
				e, ok := hookEvent(strings.ToLower(strings.TrimSpace(t)))
				if !ok {
					known = false
					break
				}
				h.Events = append(h.Events, e)
			}
			if !known {
				slog.Info("skipping unknown hook", "file", p, "hook", hookTypes)
				continue
			}
			if dps, ok := head.Metadata.Annotations[release.HookDeleteAnnotation]; ok {
				for _, dp := range strings.Split(dps, ",") {
					h.DeletePolicies = append(h.DeletePolicies, release.HookDeletePolicy(strings.ToLower(strings.TrimSpace(dp))))
				}
			}
			hooks = append(hooks, h)
		}
	}
	sort.SliceStable(generic, func(i, j int) bool { return lessByKind(generic[i].Head.Kind, generic[j].Head.Kind) })
	sort.SliceStable(hooks, func(i, j int) bool { return lessByKind(hooks[i].Kind, hooks[j].Kind) })
	return hooks, generic, nil
}

// plainASCII reports whether doc is printable ASCII, tabs and line ends
// only. The head scanner does not judge characters: a document with any
// other byte (a control character YAML refuses, invalid UTF-8, or text it
// would have to check) goes through Helm's parse, so that it is refused or
// taken exactly as helm template does. One pass over the bytes costs far
// less than the parse.
func plainASCII(doc string) bool {
	for i := 0; i < len(doc); i++ {
		if c := doc[i]; c >= 0x7f || c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// parseHead is Helm's parse of a document's head.
func parseHead(m string) (*releaseutil.SimpleHead, error) {
	var head releaseutil.SimpleHead
	if err := yaml.Unmarshal([]byte(m), &head); err != nil {
		return nil, err
	}
	return &head, nil
}

// hookEvent maps helm.sh/hook's values to events, with Helm 2's
// test-success.
func hookEvent(s string) (release.HookEvent, bool) {
	switch e := release.HookEvent(s); e {
	case release.HookPreInstall, release.HookPostInstall, release.HookPreDelete, release.HookPostDelete,
		release.HookPreUpgrade, release.HookPostUpgrade, release.HookPreRollback, release.HookPostRollback, release.HookTest:
		return e, true
	case "test-success":
		return release.HookTest, true
	}
	return "", false
}

// kindRank is a kind's place in releaseutil.InstallOrder, or -1.
func kindRank(kind string) int {
	for i, k := range releaseutil.InstallOrder {
		if k == kind {
			return i
		}
	}
	return -1
}

// lessByKind is releaseutil's: install order, unknown kinds last and
// among themselves by name.
func lessByKind(a, b string) bool {
	ra, rb := kindRank(a), kindRank(b)
	switch {
	case ra < 0 && rb < 0:
		return a < b
	case ra < 0:
		return false
	case rb < 0:
		return true
	}
	return ra < rb
}

// scanHead reads apiVersion, kind, metadata.name and metadata.annotations
// from a document of plain block YAML, line by line. ok is false when the
// document holds anything it does not fully understand (flow collections
// or quoted scalars over several lines, anchors, tags, tabs, quoted keys,
// values YAML would read as numbers, booleans or null, ...): the caller
// then parses it as Helm does.
func scanHead(doc string) (head *releaseutil.SimpleHead, ok bool) {
	if strings.ContainsAny(doc, "\r\t") {
		return nil, false
	}
	head = &releaseutil.SimpleHead{}
	type md = struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	}
	const (
		top = iota
		inMeta
		inAnn
		inOther
	)
	state := top
	// openTop, openMeta: the last key at that level has no value on its
	// line, so deeper lines (or "- " items at its own level) are its value.
	// scalarOpen: the last key's value is a block scalar: deeper lines are
	// text.
	var (
		openTop, openMeta, scalarTop, scalarMeta bool
		metaIndent, annIndent                    int
		shape                                    blockShape
		metaShape                                blockShape // of metadata's other keys
		seen                                     = map[string]bool{}
		metaSeen                                 = map[string]bool{}
		meta                                     *md
	)
	lines := doc
	for {
		body, ind, rest := nextContent(lines)
		if body == "" {
			break
		}
		lines = rest
		if !lineSafe(body) {
			return nil, false
		}
		if ind == 0 {
			state = top
			if isItem(body) {
				if !openTop || !shape.line(0, body) {
					return nil, false
				}
				state = inOther
				continue
			}
			key, val, ok := keyLine(body)
			if !ok || seen[key] || foldsTo(key, "apiVersion", "kind", "metadata") {
				return nil, false
			}
			seen[key] = true
			openTop, scalarTop = false, false
			switch key {
			case "apiVersion", "kind":
				s, ok := scalar(val)
				if !ok {
					return nil, false
				}
				if key == "kind" {
					head.Kind = s
				} else {
					head.Version = s
				}
			case "metadata":
				if strings.TrimSpace(val) != "" {
					return nil, false
				}
				state, metaIndent = inMeta, 0
			default:
				switch inlineValue(val) {
				case valueNone:
					openTop, state = true, inOther
					shape.reset(true, false)
				case valueBlockScalar:
					scalarTop, state = true, inOther
					shape.reset(false, true)
				case valueInline:
				default:
					return nil, false
				}
			}
			continue
		}
		switch state {
		case top:
			// A deeper line after an inline value: a plain scalar over
			// several lines, or YAML's "mapping values are not allowed".
			return nil, false
		case inOther:
			if (!openTop && !scalarTop) || !shape.line(ind, body) {
				return nil, false
			}
			continue
		case inAnn:
			if ind == annIndent {
				key, val, ok := keyLine(body)
				if !ok {
					return nil, false
				}
				if _, dup := meta.Annotations[key]; dup {
					return nil, false
				}
				s, ok := scalar(val)
				if !ok || s == "" {
					return nil, false
				}
				meta.Annotations[key] = s
				continue
			}
			if ind > annIndent {
				return nil, false
			}
			if ind != metaIndent {
				return nil, false
			}
			state = inMeta
		}
		// state == inMeta
		if metaIndent == 0 {
			metaIndent = ind
		}
		if ind > metaIndent {
			// The value of a key of metadata dm does not read (labels,
			// ...): its lines must still be YAML's.
			if !openMeta && !scalarMeta || !metaShape.line(ind, body) {
				return nil, false
			}
			continue
		}
		if ind < metaIndent {
			return nil, false
		}
		if meta == nil {
			meta = &md{}
			head.Metadata = meta
		}
		if isItem(body) {
			if !openMeta || !metaShape.line(ind, body) {
				return nil, false
			}
			continue
		}
		key, val, ok := keyLine(body)
		if !ok || metaSeen[key] || foldsTo(key, "name", "annotations") {
			return nil, false
		}
		metaSeen[key] = true
		openMeta, scalarMeta = false, false
		switch key {
		case "name":
			s, ok := scalar(val)
			if !ok {
				return nil, false
			}
			meta.Name = s
		case "annotations":
			if strings.TrimSpace(val) != "" {
				return nil, false
			}
			// The first deeper line sets the annotations' indent.
			_, n, _ := nextContent(lines)
			if n <= metaIndent {
				// annotations: with no value is null: no annotations.
				continue
			}
			meta.Annotations = map[string]string{}
			state, annIndent = inAnn, n
		default:
			switch inlineValue(val) {
			case valueNone:
				openMeta = true
				metaShape.reset(true, false)
				metaShape.levels[0].indent = metaIndent
			case valueBlockScalar:
				scalarMeta = true
				metaShape.reset(false, true)
				metaShape.levels[0].indent, metaShape.scalar = metaIndent, metaIndent
			case valueInline:
			default:
				return nil, false
			}
		}
	}
	return head, true
}

// nextContent is the next line of lines that is not blank or a comment:
// its content, its indent and the lines after it; body is "" at the end.
func nextContent(lines string) (body string, indent int, rest string) {
	for lines != "" {
		var line string
		if i := strings.IndexByte(lines, '\n'); i >= 0 {
			line, lines = lines[:i], lines[i+1:]
		} else {
			line, lines = lines, ""
		}
		if body = strings.TrimLeft(line, " "); body != "" && body[0] != '#' {
			return body, len(line) - len(body), lines
		}
	}
	return "", 0, ""
}

// isItem reports whether a line is a block sequence item.
func isItem(body string) bool {
	return body == "-" || strings.HasPrefix(body, "- ")
}

// keyLine splits "key: value" or "key:" with a plain key of letters,
// digits and ._/- starting with a letter.
func keyLine(body string) (key, val string, ok bool) {
	i := strings.IndexByte(body, ':')
	if i <= 0 || !isLetter(body[0]) {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		if c := body[j]; !isLetter(c) && !isDigit(c) && c != '.' && c != '_' && c != '/' && c != '-' {
			return "", "", false
		}
	}
	val = body[i+1:]
	if val != "" && val[0] != ' ' {
		return "", "", false
	}
	return body[:i], val, true
}

// Kinds of a key's value on its own line.
const (
	valueBad         = iota // not understood: parse the document
	valueNone               // nothing: the value is on the next lines, or null
	valueBlockScalar        // | or >: the next, deeper lines are text
	valueInline             // a scalar or flow collection on this line
)

// inlineValue classifies what follows "key:" (already checked by
// lineSafe).
func inlineValue(val string) int {
	v := strings.TrimSpace(val)
	switch {
	case v == "" || v[0] == '#':
		return valueNone
	case v[0] == '|' || v[0] == '>':
		for _, c := range v[1:] {
			if c != '-' && c != '+' && (c < '1' || c > '9') {
				return valueBad
			}
		}
		return valueBlockScalar
	}
	return valueInline
}

// scalar is the string a header value (what follows "key:") reads as, if
// YAML reads it as a string or null (""); ok is false for anything else or
// anything not sure.
func scalar(val string) (string, bool) {
	v := strings.TrimLeft(val, " ")
	if v == "" || v[0] == '#' {
		return "", true
	}
	if q := v[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(v[1:], q)
		if end < 0 {
			return "", false
		}
		s, rest := v[1:1+end], strings.TrimLeft(v[2+end:], " ")
		if (q == '"' && strings.IndexByte(s, '\\') >= 0) || (rest != "" && rest[0] != '#') {
			return "", false
		}
		if q == '\'' && strings.HasPrefix(v[2+end:], "'") {
			return "", false
		}
		return s, true
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimRight(v, " ")
	if !isLetter(v[0]) {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isLetter(c) && !isDigit(c) && !strings.ContainsRune(" ,._/+-", rune(c)) {
			return "", false
		}
	}
	switch strings.ToLower(v) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		// YAML 1.1 booleans and null (in some spellings: all refused).
		return "", false
	}
	return v, true
}

// lineSafe reports whether a line's content (indent removed) holds no
// construct that may span lines or refer elsewhere: its value, after any
// "- " and one "key: ", opens no quoted scalar or flow collection it does
// not close, is no anchor, alias, tag or directive, and is no second
// "key: value" on the line.
func lineSafe(body string) bool {
	v := body
	for isItem(v) {
		v = strings.TrimLeft(v[1:], " ")
	}
	if v == "" {
		return true
	}
	i := strings.Index(v, ": ")
	if i < 0 && strings.HasSuffix(v, ":") {
		i = len(v) - 1
	}
	if i > 0 && !strings.ContainsAny(v[:i], "\"'[]{}#&*!|>%@`?,") {
		v = strings.TrimLeft(v[i+1:], " ")
	}
	if v == "" || v[0] == '#' {
		return true
	}
	switch v[0] {
	case '|', '>':
		return true
	case '"', '\'', '[', '{':
		return closedFlow(v)
	case '&', '*', '!', '%', '@', '`', '?', ',', ']', '}', ':':
		return false
	}
	if isItem(v) {
		// "key: - item" is YAML's "block sequence entries are not allowed".
		return false
	}
	if j := strings.Index(v, " #"); j >= 0 {
		v = v[:j]
	}
	return !strings.Contains(v, ": ") && !strings.HasSuffix(v, ":")
}

// closedFlow reports whether a value starting with a quote or a flow
// collection ends on this line: quotes closed and brackets balanced, with
// only a comment after.
func closedFlow(v string) bool {
	depth := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"':
			j := i + 1
			for ; j < len(v) && v[j] != '"'; j++ {
				if v[j] == '\\' {
					j++
				}
			}
			if j >= len(v) {
				return false
			}
			i = j
		case '\'':
			j := strings.IndexByte(v[i+1:], '\'')
			if j < 0 {
				return false
			}
			i += j + 1
			// '' inside is an escaped quote: the scan goes on from it.
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth < 0 {
				return false
			}
		case '&', '*', '!':
			return false
		case '#':
			if i > 0 && v[i-1] == ' ' {
				return depth == 0
			}
		}
		if depth == 0 {
			rest := strings.TrimLeft(v[i+1:], " ")
			return rest == "" || rest[0] == '#'
		}
	}
	return false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// foldsTo reports whether key is one of names in another case, which
// encoding/json, reading Helm's head, would take for it.
func foldsTo(key string, names ...string) bool {
	for _, n := range names {
		if key != n && strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// blockShape follows the indentation of a top-level block's lines, which
// scanHead does not otherwise read, so that a line at an indent YAML
// refuses (a mis-indented nindent) sends the document to Helm's parse.
type blockShape struct {
	levels []level // the open mappings and sequences, outermost first
	deeper bool    // the last line opened a block: the next may be deeper
	scalar int     // >= 0: in a block scalar of a key at this column
	text   int     // the block scalar's indent, set by its first line
}

// level is one open block collection: its indent and whether it is a
// sequence.
type level struct {
	indent int
	seq    bool
}

// reset starts the block of a top-level key with no value on its line
// (open) or a block scalar.
func (b *blockShape) reset(open, scalar bool) {
	b.levels = append(b.levels[:0], level{})
	b.deeper, b.scalar, b.text = open, -1, 0
	if scalar {
		b.scalar = 0
	}
}

// line takes the block's next line that is not blank or a comment; false
// when its indentation is not YAML's, or not surely.
func (b *blockShape) line(ind int, body string) bool {
	if b.scalar >= 0 {
		if b.text == 0 && ind > b.scalar {
			b.text = ind
		}
		if b.text > 0 && ind >= b.text {
			return true
		}
		b.scalar, b.text = -1, 0
	}
	item := isItem(body)
	top := b.levels[len(b.levels)-1]
	switch {
	case b.deeper && (ind > top.indent || ind == top.indent && item && !top.seq):
		// A new block; a sequence may sit at its key's indent.
		b.levels = append(b.levels, level{indent: ind, seq: item})
	case ind > top.indent:
		return false
	default:
		for len(b.levels) > 1 {
			t, below := b.levels[len(b.levels)-1], b.levels[len(b.levels)-2]
			if t.indent > ind || t.indent == ind && t.seq && !item && below.indent == ind {
				b.levels = b.levels[:len(b.levels)-1]
				continue
			}
			break
		}
		if t := b.levels[len(b.levels)-1]; t.indent != ind || t.seq != item {
			return false
		}
	}
	b.deeper = false
	col, v := ind, body
	inItem := false
	for isItem(v) {
		rest := strings.TrimLeft(v[1:], " ")
		if rest == "" {
			b.deeper = true
			return true
		}
		col += len(v) - len(rest)
		v, inItem = rest, true
		if isItem(v) {
			b.levels = append(b.levels, level{indent: col, seq: true})
		}
	}
	i := strings.Index(v, ": ")
	if i < 0 && strings.HasSuffix(v, ":") {
		i = len(v) - 1
	}
	if i <= 0 || strings.ContainsAny(v[:i], "\"'[]{}#&*!|>%@`?,") {
		// A scalar alone: fine as an item, else a plain scalar over
		// several lines or an error.
		return inItem && v[0] != '|' && v[0] != '>'
	}
	if inItem {
		b.levels = append(b.levels, level{indent: col})
	}
	switch inlineValue(v[i+1:]) {
	case valueNone:
		b.deeper = true
	case valueBlockScalar:
		b.scalar, b.text = col, 0
	}
	return true
}
