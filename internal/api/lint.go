package api

import (
	"context"

	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// lintCacheEntries bounds the cache of language lint findings: one entry
// per version described (a chart's lint writes and reads a temporary
// directory, too slow to repeat per request).
const lintCacheEntries = 1024

// languageFindings returns the findings of the lint rules of the
// version's own language (Helm's, for a chart) when this program attached
// its engine, cached by registry and content digest (Version.CacheKey);
// nothing otherwise.
func (s *Service) languageFindings(ctx context.Context, res *resolve.Resolution) []index.Finding {
	v := res.Version
	if !s.expander.RunsLintRules(string(v.Language)) || v.Problem != "" {
		return nil
	}
	if fs, ok := s.lints.Get(contentKeyOf(v)); ok {
		return fs
	}
	files := make(map[string][]byte, len(v.Files))
	for _, e := range v.Files {
		b, err := res.ReadFile(ctx, e.Path)
		if err != nil {
			// Not cached: a passing fault is retried by the next request.
			return []index.Finding{{Path: v.Path, Severity: index.Warning, Message: "lint rules not run: reading " + e.Path + ": " + err.Error()}}
		}
		files[e.Path] = b
	}
	fs := s.expander.LintRules(ctx, v, files)
	s.lints.Add(contentKeyOf(v), fs)
	return fs
}
