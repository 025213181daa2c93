package helmlint

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"
)

func readDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(dir), p)
		files[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestLint(t *testing.T) {
	basic := readDir(t, "../testdata/charts/basic")
	broken := map[string][]byte{
		"Chart.yaml":           []byte("apiVersion: v2\nname: broken\nversion: 0.1.0\n"),
		"values.yaml":          []byte("a: 1\n"),
		"templates/cm.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  a: {{ .Values.a | nosuchfunc }}\n"),
		"templates/other.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"),
	}
	schema := readDir(t, "../testdata/charts/schema")
	tests := []struct {
		name   string
		files  map[string][]byte
		values map[string]any
		want   []string // substrings of the findings, in order of files
		none   string   // no finding of this severity
	}{
		{name: "clean", files: basic, want: []string{"[INFO] Chart.yaml: icon is recommended"}, none: "ERROR"},
		{name: "version", files: map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: v\nversion: not-semver\n")}, want: []string{
			"[ERROR] Chart.yaml: version 'not-semver' is not a valid SemVer",
		}},
		{name: "template", files: broken, want: []string{
			`[ERROR] templates/cm.yaml:6: parse error at (broken/templates/cm.yaml:6): function "nosuchfunc" not defined`,
		}},
		{name: "schema", files: schema, values: map[string]any{"replicas": 0}, want: []string{
			"[ERROR] values.yaml: - replicas: Must be greater than or equal to 1",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := Lint(context.Background(), tt.files, tt.values, "", "")
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, f := range fs {
				all = append(all, f.String())
				if tt.none != "" && f.Severity == tt.none {
					t.Errorf("unexpected %s", f)
				}
			}
			text := strings.Join(all, "\n")
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("findings lack %q:\n%s", w, text)
				}
			}
		})
	}
	// The template error's line is found.
	fs, _ := Lint(context.Background(), broken, nil, "", "")
	found := false
	for _, f := range fs {
		if f.File == "templates/cm.yaml" && f.Line == 6 {
			found = true
		}
	}
	if !found {
		t.Errorf("no finding at templates/cm.yaml line 6: %v", fs)
	}
	if _, err := Lint(context.Background(), map[string][]byte{"../x": nil}, nil, "", ""); err == nil || !strings.Contains(err.Error(), `"../x"`) {
		t.Errorf("a path outside the chart: %v", err)
	}
}
