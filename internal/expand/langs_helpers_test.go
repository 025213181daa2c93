package expand

import (
	"context"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/index"
)

// renderOne runs one template file through its engine with properties
// props and returns what the engine produced (text for Jinja, the
// GenerateConfig value for Starlark).
func renderOne(t testing.TB, file, src string, props map[string]any, extra map[string]string) (any, error) {
	t.Helper()
	x := New(Options{Timeout: 5 * time.Second})
	files := map[string][]byte{file: []byte(src)}
	for k, v := range extra {
		files[k] = []byte(v)
	}
	lang, ok := index.LanguageOf(file)
	if !ok {
		t.Fatalf("%s: no language", file)
	}
	if props == nil {
		props = map[string]any{}
	}
	inv := &invocation{
		file:  file,
		src:   []byte(src),
		lang:  lang,
		props: props,
		env:   map[string]any{"deployment": "dep", "name": "n", "type": file},
		sc:    &scope{b: newImportsBundle(files), types: map[string]string{}},
		label: file,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch lang {
	case index.Jinja:
		out, err := x.renderJinja(ctx, inv)
		if b, ok := out.([]byte); ok {
			return string(b), err
		}
		return out, err
	case index.Python:
		return x.renderStarlark(ctx, inv)
	}
	return nil, nil
}
