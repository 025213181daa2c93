package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dmhq/dm/internal/expand/scaffold"
)

// cmdShow prints a version's template file, or its file at path, as
// `helm show` prints a chart's files.
func cmdShow(ctx context.Context, g *globals, w io.Writer, ref, file string) error {
	b, err := g.backend()
	if err != nil {
		return err
	}
	if file == "" {
		res, err := b.Resolve(ctx, ref, g.registry)
		if err != nil {
			return err
		}
		ref, file = res.Pinned(), res.TemplateFile
	}
	content, err := b.ReadFile(ctx, ref, g.registry, file)
	if err != nil {
		return err
	}
	_, err = w.Write(content)
	return err
}

// cmdInit scaffolds [COLLECTION/]TEMPLATE/v0.1.0/ under dir (see
// scaffold.Write), printing each file it writes.
func cmdInit(w io.Writer, dir, name, lang string) error {
	if _, err := scaffold.Language(lang); err != nil {
		return &usageError{fmt.Errorf("--lang %w", err)}
	}
	if err := scaffold.CheckName(name); err != nil {
		return &usageError{err}
	}
	return scaffold.Write(dir, name, lang, func(path string) { fmt.Fprintln(w, path) })
}
