package expand

import (
	"path"
	"text/template"

	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/dmhq/dm/internal/index"
)

// CheckSyntax parses the template file named file, one of files (a version
// directory's files or a configuration's imports, by path), as expansion
// would, without running it: a Jinja, Starlark or Go template syntax error
// is reported with the file and line. Other files are not templates and
// pass.
func (x *Expander) CheckSyntax(files map[string][]byte, file string) error {
	lang, _ := index.LanguageOf(file)
	b := newImportsBundle(files)
	var err error
	switch lang {
	case index.Jinja:
		// Not cached: renderJinja caches templates after rewriting their
		// operators, which a check does not need.
		l := &bundleLoader{files: b.files, dir: path.Dir(file)}
		if _, err = exec.NewTemplate(file, x.jinja.cfg, l, x.jinja.env); err != nil {
			err = jinjaParseError(file, err)
		}
	case index.Python:
		_, err = x.starlarkProgram(b, file)
	case index.GoTmpl:
		_, err = template.New(file).Funcs(x.gotmplFuncs).Parse(string(files[file]))
		if err != nil {
			err = gotmplError(file, err)
		}
	}
	return err
}
