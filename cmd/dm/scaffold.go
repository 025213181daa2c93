package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

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
	var example string
	err := scaffold.Write(dir, name, lang, func(path string) {
		fmt.Fprintln(w, path)
		if filepath.Base(path) == "example.yaml" {
			example = path
		}
	})
	if err != nil || example == "" {
		return err
	}
	// What to run next, from where the user stands: the registry is the
	// directory written under.
	fmt.Fprintf(w, "\nNext, expand the example and lint the registry:\n  dm --registry-dir %s=%s expand %s\n  dm lint --expand %s\n", examplePrefix, dir, example, dir)
	return nil
}
