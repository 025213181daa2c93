package expand

import (
	"context"

	"github.com/dmhq/dm/internal/expand/engine"
)

// CheckSyntax parses the template file named file, one of files (a version
// directory's files or a configuration's imports, by path), as expansion
// would, without running it: a Jinja, Starlark or Go template syntax error
// is reported with the file and line. Other files are not templates and
// pass.
func (x *Expander) CheckSyntax(files map[string][]byte, file string) error {
	lang, ok := x.langs.ForFile(file)
	if !ok || !x.langs.IsCode(file) {
		return nil
	}
	c, ok := x.engines[lang.Name].(engine.Checker)
	if !ok {
		return nil
	}
	return c.Check(context.Background(), files, file)
}
