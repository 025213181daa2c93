// Package helmlint runs Helm's lint rules (helm.sh/helm/v3/pkg/lint) on
// charts, and is the helm language of an engine table that lints as well
// as renders (Engine: registryd, dm-helm). It is apart from package helm
// so that a program that only renders charts does not link Helm's linter
// and the packages behind its rules (client-go's whole scheme for the
// deprecation rule, govalidator), whose initialisation a chart's
// expansion by dm would otherwise pay at every start.
package helmlint

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm"
)

// Engine is helm.Engine with Helm's lint rules (engine.Linter).
type Engine struct {
	helm.Engine
}

var _ engine.Linter = (*Engine)(nil)

// Lint runs Helm's lint rules (Lint) on the chart whose Chart.yaml is
// file, with its default values, the engine's namespace and kube version.
// Helm's INFO messages (such as "icon is recommended") are left out: dm's
// findings are errors and warnings.
func (e *Engine) Lint(ctx context.Context, files map[string][]byte, file string) ([]engine.Finding, error) {
	dir := path.Dir(file)
	fs, err := Lint(ctx, helm.FilesUnder(files, dir), nil, e.Options.Namespace, e.Options.KubeVersion)
	if err != nil {
		return nil, err
	}
	var out []engine.Finding
	for _, f := range fs {
		sev := map[string]string{"ERROR": "error", "WARNING": "warning"}[f.Severity]
		if sev == "" {
			continue
		}
		name := f.File
		if dir != "." && name != "" {
			name = path.Join(dir, name)
		}
		out = append(out, engine.Finding{Severity: sev, File: name, Line: f.Line, Message: f.Message})
	}
	return out, nil
}

// Finding is one message of Helm's linter.
type Finding struct {
	// Severity is INFO, WARNING or ERROR.
	Severity string
	// File is the chart-relative path the rule names, such as Chart.yaml
	// or templates/deployment.yaml; a directory (templates/) for rules
	// about the whole of it.
	File string
	// Line is 1-based; 0 when Helm's message names none.
	Line int
	// Message is Helm's text.
	Message string
}

func (f Finding) String() string {
	if f.Line > 0 {
		return fmt.Sprintf("[%s] %s:%d: %s", f.Severity, f.File, f.Line, f.Message)
	}
	return fmt.Sprintf("[%s] %s: %s", f.Severity, f.File, f.Message)
}

// lintLineRE finds a line in Helm's other lint messages: a file's
// "name:LINE" or a YAML error's "line N".
var lintLineRE = regexp.MustCompile(`(?:\.(?:yaml|yml|tpl|txt|json):(\d+))|(?:line (\d+))`)

// Lint runs Helm's lint rules (Chart.yaml, values, values.schema.json,
// templates rendered and parsed, dependencies) on the chart's files with
// values over its defaults, as helm lint does. Helm's linter reads a
// directory, so the files are written to a temporary one, removed after.
func Lint(ctx context.Context, files map[string][]byte, values map[string]any, namespace, kubeVersion string) ([]Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if namespace == "" {
		namespace = "default"
	}
	if kubeVersion == "" {
		kubeVersion = helm.DefaultKubeVersion
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, helm.Invalid(fmt.Errorf("kube version %q: %w", kubeVersion, err))
	}
	total := 0
	for _, b := range files {
		total += len(b)
	}
	if total > helm.DefaultMaxChartBytes {
		return nil, &helm.LimitError{Field: "MaxChartBytes", Msg: fmt.Sprintf("the chart's files exceed %d bytes", helm.DefaultMaxChartBytes)}
	}
	tmp, err := os.MkdirTemp("", "dm-helm-lint-")
	if err != nil {
		return nil, fmt.Errorf("lint: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The directory carries the chart's name, as a chart checked out has.
	name := "chart"
	var md struct{ Name string }
	if yaml.Unmarshal(files["Chart.yaml"], &md) == nil && chartutil.ValidateReleaseName(md.Name) == nil {
		name = md.Name
	}
	dir := path.Join(tmp, name)
	if err := writeFiles(dir, files); err != nil {
		return nil, err
	}

	var linter support.Linter
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = helm.Invalid(fmt.Errorf("Helm's linter failed on the chart: %v", p))
			}
		}()
		linter = lint.AllWithKubeVersion(dir, values, namespace, kv)
	}()
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, m := range linter.Messages {
		f := Finding{Severity: severity(m.Severity), File: m.Path, Message: m.Err.Error()}
		f.Message = strings.ReplaceAll(f.Message, dir+"/", "")
		f.Message = strings.ReplaceAll(f.Message, dir, ".")
		if file, line, ok := helm.TemplateLine(f.Message); ok {
			// A template's error: the file and line it names, less the
			// chart's name in front.
			if _, rest, ok := strings.Cut(file, "/"); ok {
				f.File = rest
			}
			f.Line = line
		} else if sm := lintLineRE.FindStringSubmatch(f.Message); sm != nil {
			n := sm[1]
			if n == "" {
				n = sm[2]
			}
			f.Line, _ = strconv.Atoi(n)
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}

func severity(s int) string {
	switch s {
	case support.InfoSev:
		return "INFO"
	case support.WarningSev:
		return "WARNING"
	case support.ErrorSev:
		return "ERROR"
	}
	return "UNKNOWN"
}

// writeFiles writes files under dir through an os.Root, so that no name
// (.., absolute, through a symlink) reaches outside it.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	defer root.Close()
	for n, b := range files {
		if !fs.ValidPath(n) || n == "." {
			return helm.Invalid(fmt.Errorf("chart file name %q is not a relative path inside the chart", n))
		}
		if d := path.Dir(n); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return fmt.Errorf("lint: %w", err)
			}
		}
		if err := root.WriteFile(n, b, 0o600); err != nil {
			return fmt.Errorf("lint: writing %s: %w", n, err)
		}
	}
	return nil
}
