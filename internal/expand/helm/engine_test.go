package helm

import (
	"context"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/expand/engine"
)

// readTree reads dir's files keyed by slash path under prefix.
func readTree(t *testing.T, dir, prefix string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(dir + "/" + p)
		files[path.Join(prefix, p)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestEngineRender(t *testing.T) {
	tests := []struct {
		name, dir, prefix string
		props             map[string]any
		want              []string // Type/Name of the primitives in order
	}{
		{
			name: "hooks around the objects", dir: "testdata/charts/hooks",
			// Pre-install tiers, the objects, post-install; the test hook
			// left out.
			want: []string{"ConfigMap/h-pre-config", "ServiceAccount/h-pre-sa", "Job/h-migrate", "ConfigMap/h-app", "ConfigMap/h-post"},
		},
		{
			name: "every event's hooks, each once", dir: "testdata/charts/events",
			// Pre-install and pre-upgrade hooks (the Job of both once), the
			// objects, then post-install/upgrade, rollback and delete hooks:
			// deploy picks by annotation those its action runs.
			want: []string{"Job/h-migrate", "ConfigMap/h-upgrade-only", "ConfigMap/h-app", "ConfigMap/h-post", "ConfigMap/h-rollback", "ConfigMap/h-cleanup"},
		},
		{
			name: "chart in a subdirectory of the files", dir: "testdata/charts/hooks", prefix: "sub/chart",
			want: []string{"ConfigMap/h-pre-config", "ServiceAccount/h-pre-sa", "Job/h-migrate", "ConfigMap/h-app", "ConfigMap/h-post"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := readTree(t, tt.dir, tt.prefix)
			e := &Engine{}
			inv := engine.Invocation{
				File: path.Join(tt.prefix, "Chart.yaml"), Files: files, FilesKey: tt.name,
				Properties: tt.props, Env: map[string]any{"name": "h", "namespace": "ns1"},
			}
			for range 2 { // the second render comes from the loaded-chart cache
				out, err := e.Render(context.Background(), inv)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range out.Resources {
					got = append(got, r.Type+"/"+r.Name)
				}
				if strings.Join(got, " ") != strings.Join(tt.want, " ") {
					t.Errorf("got %v\nwant %v", got, tt.want)
				}
			}
		})
	}
}

func TestEngineErrors(t *testing.T) {
	files := readTree(t, "testdata/charts/hooks", "")
	_, err := (&Engine{}).Render(context.Background(), engine.Invocation{File: "Chart.yaml", Files: files, Env: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "release name") {
		t.Errorf("no release name: %v, want an error naming the release name", err)
	}
	delete(files, "Chart.yaml")
	_, err = (&Engine{}).Render(context.Background(), engine.Invocation{File: "Chart.yaml", Files: files, Env: map[string]any{"name": "h"}})
	if err == nil || !strings.Contains(err.Error(), "Chart.yaml") {
		t.Errorf("no Chart.yaml: %v, want an error naming it", err)
	}
}
