package expand

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
)

// DirReport is what LintDir finds in a registry directory.
type DirReport struct {
	// Findings are the listing's and Lint's, sorted by path.
	Findings            []index.Finding
	Errors, Warnings    int
	Templates, Versions int
}

// LintDir indexes the directory dir the way every source is indexed, as
// registry prefix (what full references in its examples name; short ones
// resolve against it), and lints it: the listing's findings and Lint's, with
// engines, the attached languages' engines.
func LintDir(ctx context.Context, dir, prefix string, expandExamples bool, engines ...engine.Engine) (*DirReport, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("linting: %w: %w", err, derrors.InvalidArgument)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("linting: %s is not a directory: %w", dir, derrors.InvalidArgument)
	}
	reg := &index.Registry{Name: prefix, Source: fetch.NewLocal(os.DirFS(dir))}
	if err := reg.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("linting %s: %w", dir, err)
	}
	snap := reg.Snapshot()
	r := &DirReport{Templates: snap.Templates, Versions: snap.Versions}
	r.Findings = append(append([]index.Finding{}, snap.Findings...), Lint(ctx, reg, expandExamples, engines...)...)
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].Path < r.Findings[j].Path })
	for _, f := range r.Findings {
		if f.Severity == index.Error {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	return r, nil
}
