package catalog

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// maxDiffLines bounds the lines of one file that are diffed; larger
// files are reported as changed without a diff.
const maxDiffLines = 5000

// maxDiffCells bounds the table of one diff (the lines that differ in the
// one file times those in the other, 4 bytes each): two 5,000-line files
// that differ throughout would need 100 MB for one anonymous request.
const maxDiffCells = 4 << 20

// diffPage is the data of a diff page.
type diffPage struct {
	From, To *versionPage
	Files    []fileDiff
	Versions []versionRow
}

// fileDiff is the unified diff of one file.
type fileDiff struct {
	Path   string
	Status string // added, removed, changed, unchanged
	Lines  []diffLine
	Note   string
}

type diffLine struct {
	Kind string // "+", "-", " ", "@"
	Text string
}

// Class is the line's CSS class.
func (l diffLine) Class() string {
	switch l.Kind {
	case "+":
		return "add"
	case "-":
		return "del"
	case "@":
		return "hunk"
	}
	return "ctx"
}

// handleDiff serves GET /t/{ref}/diff?from=VERSION: each file of VERSION
// against the version ref resolves to, as a unified diff.
func (c *Catalog) handleDiff(w http.ResponseWriter, r *http.Request, ref string) {
	to, _, err := c.version(r.Context(), ref)
	if err != nil {
		c.renderError(w, r, err, templateName(ref))
		return
	}
	from := strings.TrimSpace(r.URL.Query().Get("from"))
	if from == "" {
		c.renderError(w, r, fmt.Errorf("diff of %s: give the version to compare with as ?from=VERSION: %w", to.TV.Resolved, derrors.InvalidArgument), "")
		return
	}
	fromRef := from
	if !strings.Contains(from, "/") {
		fromRef = to.Base + ":" + strings.TrimPrefix(from, ":")
		// vX.Y.Z resolves to the highest patch from Z up: pin the digest
		// of the version named, so that an older patch is what is diffed.
		for _, v := range to.Versions {
			if v.Version == from || v.Name == from {
				fromRef = v.Pinned()
			}
		}
	}
	fv, _, err := c.version(r.Context(), fromRef)
	if err != nil {
		c.renderError(w, r, err, "")
		return
	}
	p := diffPage{From: fv, To: to, Versions: to.Versions}
	paths := map[string][2]string{}
	for _, f := range fv.TV.Files {
		e := paths[f.Path]
		e[0] = f.SHA
		paths[f.Path] = e
	}
	for _, f := range to.TV.Files {
		e := paths[f.Path]
		e[1] = f.SHA
		paths[f.Path] = e
	}
	for _, name := range sortedKeys(paths) {
		shas := paths[name]
		fd := fileDiff{Path: name}
		switch {
		case shas[0] == shas[1]:
			fd.Status = "unchanged"
			p.Files = append(p.Files, fd)
			continue
		case shas[0] == "":
			fd.Status = "added"
		case shas[1] == "":
			fd.Status = "removed"
		default:
			fd.Status = "changed"
		}
		a, err := c.read(r.Context(), fv.Pinned(), name, shas[0] != "")
		if err != nil {
			c.renderError(w, r, err, "")
			return
		}
		b, err := c.read(r.Context(), to.Pinned(), name, shas[1] != "")
		if err != nil {
			c.renderError(w, r, err, "")
			return
		}
		fd.Lines, fd.Note = unified(a, b, 3)
		p.Files = append(p.Files, fd)
	}
	c.render(w, r, http.StatusOK, "diff", "Diff "+fv.TV.Version+" → "+to.TV.Version+" · "+to.Base, p)
}

func (c *Catalog) read(ctx context.Context, ref, file string, exists bool) (string, error) {
	if !exists {
		return "", nil
	}
	f, err := c.svc.File(ctx, ref, "", file)
	if err != nil {
		return "", err
	}
	return string(f.Content), nil
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// noEOL marks, for comparison only, a last line without a line break, so
// that "0" and "0\n" differ (text holds no NUL: binary files are not
// diffed).
const noEOL = "\x00no newline"

// diffLines is splitLines with the last line marked by noEOL when s does
// not end in a line break.
func diffLines(s string) []string {
	l := splitLines(s)
	if len(l) > 0 && !strings.HasSuffix(s, "\n") {
		l[len(l)-1] += noEOL
	}
	return l
}

// unified returns the unified diff of a and b with ctx lines of context
// around each change.
func unified(a, b string, ctx int) ([]diffLine, string) {
	if strings.IndexByte(a, 0) >= 0 || strings.IndexByte(b, 0) >= 0 {
		return nil, "binary file"
	}
	x, y := diffLines(a), diffLines(b)
	if len(x) > maxDiffLines || len(y) > maxDiffLines {
		return nil, fmt.Sprintf("over %d lines: not diffed", maxDiffLines)
	}
	ops, ok := lcsDiff(x, y)
	if !ok {
		return nil, "changed in too many places: not diffed"
	}
	// Keep changes and ctx lines around them; mark gaps with hunks.
	keep := make([]bool, len(ops))
	for i, op := range ops {
		if op.Kind != " " {
			for j := max(0, i-ctx); j <= min(len(ops)-1, i+ctx); j++ {
				keep[j] = true
			}
		}
	}
	// Hunks as diff -u writes them: each run of kept lines gets a header
	// with the start and length of its lines in each file (the length left
	// out when it is 1; a start one before the gap when the length is 0),
	// and no function name.
	var out []diffLine
	ai, bi := 1, 1 // the line numbers of ops[i] in a and in b
	for i := 0; i < len(ops); {
		if !keep[i] {
			ai, bi = advance(ops[i].Kind, ai, bi)
			i++
			continue
		}
		j := i
		for j < len(ops) && keep[j] {
			j++
		}
		var na, nb int
		for _, op := range ops[i:j] {
			if op.Kind != "+" {
				na++
			}
			if op.Kind != "-" {
				nb++
			}
		}
		out = append(out, diffLine{Kind: "@", Text: fmt.Sprintf("@@ -%s +%s @@", hunkRange(ai, na), hunkRange(bi, nb))})
		for _, op := range ops[i:j] {
			if text, ok := strings.CutSuffix(op.Text, noEOL); ok {
				// As diff(1) marks a last line that has no line break.
				out = append(out, diffLine{op.Kind, text}, diffLine{"@", `\ No newline at end of file`})
			} else {
				out = append(out, op)
			}
			ai, bi = advance(op.Kind, ai, bi)
		}
		i = j
	}
	return out, ""
}

// advance returns the line numbers in a and b after a line of kind.
func advance(kind string, ai, bi int) (int, int) {
	switch kind {
	case " ":
		return ai + 1, bi + 1
	case "-":
		return ai + 1, bi
	case "+":
		return ai, bi + 1
	}
	return ai, bi
}

// hunkRange is one side of a hunk header: start,length, or start alone
// for one line; an empty side names the line before it (0 for none), as
// diff -u does.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// lcsDiff is the line diff of x and y by longest common subsequence, with
// the common prefix and suffix taken off first: registry files are small
// and versions differ in a few places. It declines (false) where what is
// left needs a table over maxDiffCells.
func lcsDiff(x, y []string) ([]diffLine, bool) {
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	var out []diffLine
	for _, l := range x[:pre] {
		out = append(out, diffLine{" ", l})
	}
	a, b := x[pre:len(x)-suf], y[pre:len(y)-suf]
	n, m := len(a), len(b)
	if (n+1)*(m+1) > maxDiffCells {
		return nil, false
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, diffLine{" ", a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", a[i]})
			i++
		default:
			out = append(out, diffLine{"+", b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffLine{"-", a[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffLine{"+", b[j]})
	}
	for _, l := range x[len(x)-suf:] {
		out = append(out, diffLine{" ", l})
	}
	return out, true
}
