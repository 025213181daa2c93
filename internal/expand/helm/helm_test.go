package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/dmhq/dm/internal/derrors"
)

func loadDir(t testing.TB, dir string) *chart.Chart {
	t.Helper()
	c, err := LoadFS(os.DirFS(dir), 0)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	return c
}

// names lists kind/name of the objects.
func names(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Kind+"/"+o.Name)
	}
	return out
}

func TestRender(t *testing.T) {
	tests := []struct {
		chart   string
		values  map[string]any
		opts    Options
		objects []string
		sources []string
		notes   string
		data    map[string]string // data of the first object
	}{
		{
			chart:   "basic",
			opts:    Options{ReleaseName: "rel", Namespace: "ns1"},
			objects: []string{"ConfigMap/rel-basic-config", "Service/rel-basic", "Deployment/rel-basic"},
			sources: []string{"basic/templates/configmap.yaml", "basic/templates/service.yaml", "basic/templates/deployment.yaml"},
			notes:   "rel is installed in ns1.\n",
			data:    map[string]string{"release": "rel", "revision": "1", "install": "true"},
		},
		{
			chart:   "basic",
			opts:    Options{ReleaseName: "up", IsUpgrade: true},
			objects: []string{"ConfigMap/up-basic-config", "Service/up-basic", "Deployment/up-basic"},
			notes:   "up is installed in default.\n",
			data:    map[string]string{"install": "false"},
		},
		{
			chart:   "subcharts",
			opts:    Options{ReleaseName: "r"},
			objects: []string{"ConfigMap/r-child", "ConfigMap/r-second", "ConfigMap/r-parent"},
			data:    map[string]string{"env": "prod", "childGreeting": "hello from the parent"},
		},
		{
			chart:   "subcharts",
			values:  map[string]any{"child": map[string]any{"enabled": false}, "extra": map[string]any{"enabled": true}},
			opts:    Options{ReleaseName: "r"},
			objects: []string{"ConfigMap/must-not-render", "ConfigMap/r-second", "ConfigMap/r-parent"},
		},
		{
			chart:   "library",
			opts:    Options{ReleaseName: "lib"},
			objects: []string{"ConfigMap/lib-lib"},
			data:    map[string]string{"a": "1", "b": "2"},
		},
		{
			chart:   "tpl",
			opts:    Options{ReleaseName: "t"},
			objects: []string{"ConfigMap/t-tpl"},
			data:    map[string]string{"host": "t.example.com"},
		},
		{
			chart:   "lookup",
			opts:    Options{ReleaseName: "l"},
			objects: []string{"Secret/l-pw"},
		},
		{
			chart:   "capabilities",
			opts:    Options{ReleaseName: "c"},
			objects: []string{"ConfigMap/c-caps"},
			data:    map[string]string{"kube": DefaultKubeVersion, "minor": "31", "apps": "true", "monitoring": "false", "semver": "true"},
		},
		{
			chart:   "capabilities",
			opts:    Options{ReleaseName: "c", KubeVersion: "1.22.3", APIVersions: []string{"monitoring.coreos.com/v1", "policy/v1/PodDisruptionBudget"}},
			objects: []string{"PodDisruptionBudget/c", "ConfigMap/c-caps"},
		},
		{
			chart:   "capabilities",
			opts:    Options{ReleaseName: "c", ClusterAPIVersions: true, APIVersions: []string{"v1", "v1/ConfigMap"}},
			objects: []string{"ConfigMap/c-caps"},
			data:    map[string]string{"apps": "false", "monitoring": "false"},
		},
		{
			chart:   "crds",
			opts:    Options{ReleaseName: "w"},
			objects: []string{"CustomResourceDefinition/widgets.example.com", "Widget/w"},
			sources: []string{"crds/crds/widgets.yaml", "crds/templates/widget.yaml"},
		},
		{
			chart:   "crds",
			opts:    Options{ReleaseName: "w", SkipCRDs: true},
			objects: []string{"Widget/w"},
		},
		{
			chart:   "files",
			opts:    Options{ReleaseName: "f"},
			objects: []string{"Secret/f-files", "ConfigMap/f-files", "ConfigMap/f-lines"},
		},
		{
			chart:   "multidoc",
			opts:    Options{ReleaseName: "m"},
			objects: []string{"ConfigMap/m-a", "ConfigMap/m-b", "ConfigMap/m-c"},
		},
		{
			chart:   "hooks",
			opts:    Options{ReleaseName: "h"},
			objects: []string{"ConfigMap/h-app"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.opts.ReleaseName, func(t *testing.T) {
			c := loadDir(t, "testdata/charts/"+tt.chart)
			res, err := Render(context.Background(), c, tt.values, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(res.Objects), " "); got != strings.Join(tt.objects, " ") {
				t.Errorf("objects\n got %s\nwant %s", got, strings.Join(tt.objects, " "))
			}
			for i, s := range tt.sources {
				if res.Objects[i].Source != s {
					t.Errorf("object %d: source %q, want %q", i, res.Objects[i].Source, s)
				}
			}
			if tt.notes != "" && res.Notes != tt.notes {
				t.Errorf("notes %q, want %q", res.Notes, tt.notes)
			}
			if len(tt.data) > 0 {
				o := res.Objects[len(res.Objects)-1]
				if tt.chart == "basic" {
					o = res.Objects[0]
				}
				m, err := o.Decode()
				if err != nil {
					t.Fatal(err)
				}
				data, _ := m["data"].(map[string]any)
				for k, v := range tt.data {
					if data[k] != v {
						t.Errorf("data[%s] = %v, want %q", k, data[k], v)
					}
				}
			}
		})
	}
}

// The chart is not changed by a render: a disabled subchart comes back
// in the next render that enables it.
func TestRenderKeepsChart(t *testing.T) {
	c := loadDir(t, "testdata/charts/subcharts")
	for i, want := range []int{3, 2, 3} {
		v := map[string]any{}
		if i == 1 {
			v["child"] = map[string]any{"enabled": false}
		}
		res, err := Render(context.Background(), c, v, Options{ReleaseName: "r"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) != want {
			t.Errorf("render %d: %d objects (%v), want %d", i, len(res.Objects), names(res.Objects), want)
		}
	}
}

func TestHooks(t *testing.T) {
	c := loadDir(t, "testdata/charts/hooks")
	res, err := Render(context.Background(), c, nil, Options{ReleaseName: "h"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for ev, tiers := range res.Hooks {
		var parts []string
		for _, tier := range tiers {
			parts = append(parts, "["+strings.Join(func() []string {
				var n []string
				for _, h := range tier.Hooks {
					n = append(n, names([]Object{h.Object})[0])
				}
				return n
			}(), " ")+"]")
			for _, h := range tier.Hooks {
				if h.Weight != tier.Weight {
					t.Errorf("%s: hook weight %d in tier %d", ev, h.Weight, tier.Weight)
				}
			}
		}
		got[ev] = strings.Join(parts, "")
	}
	want := map[string]string{
		// Weight first, then name, as Helm's execHook.
		"pre-install":  "[ConfigMap/h-pre-config ServiceAccount/h-pre-sa][Job/h-migrate]",
		"pre-upgrade":  "[Job/h-migrate]",
		"post-install": "[ConfigMap/h-post]",
	}
	if len(got) != len(want) {
		t.Errorf("events %v, want %v (the test hook left out)", got, want)
	}
	for ev, w := range want {
		if got[ev] != w {
			t.Errorf("%s: %s, want %s", ev, got[ev], w)
		}
	}
	job := res.Hooks["pre-install"][1].Hooks[0]
	if strings.Join(job.DeletePolicies, ",") != "before-hook-creation,hook-succeeded" || job.Source != "hooks/templates/hooks.yaml" {
		t.Errorf("job hook: %+v", job)
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name   string
		chart  string
		values map[string]any
		opts   Options
		kind   error
		want   []string
		file   string
		line   int
	}{
		{name: "required", chart: "required", kind: derrors.InvalidArgument,
			want: []string{"database.host is required"}, file: "required/templates/cm.yaml", line: 6},
		{name: "fail", chart: "fail", values: map[string]any{"mode": "wild"}, kind: derrors.InvalidArgument,
			want: []string{`mode must be safe or fast, not "wild"`}, file: "fail/templates/cm.yaml", line: 2},
		{name: "schema", chart: "schema", values: map[string]any{"replicas": 0, "name": "Bad1", "ports": []any{"x"}}, kind: derrors.InvalidArgument,
			want: []string{"values.schema.json", "replicas: Must be greater than or equal to 1", "name: Does not match pattern", "ports.0: Invalid type"}},
		{name: "kubeVersion", chart: "capabilities", opts: Options{KubeVersion: "v1.19.0"}, kind: derrors.InvalidArgument,
			want: []string{"Chart.yaml", "requires kubeVersion >=1.20.0-0", "Kubernetes v1.19.0"}},
		{name: "bad kube version", chart: "basic", opts: Options{KubeVersion: "one"}, kind: derrors.InvalidArgument,
			want: []string{`kube version "one"`}},
		{name: "release name", chart: "basic", opts: Options{ReleaseName: "Not_Valid"}, kind: derrors.InvalidArgument,
			want: []string{`release name "Not_Valid"`}},
		{name: "output", chart: "basic", opts: Options{MaxOutputBytes: 100}, kind: derrors.LimitExceeded,
			want: []string{"MaxOutputBytes", "more than 100 bytes"}},
		{name: "timeout", chart: "slow", opts: Options{Timeout: 1}, kind: derrors.LimitExceeded,
			want: []string{"Timeout", "rendering chart slow took longer than 1ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *chart.Chart
			if tt.chart == "slow" {
				c = slowChart(t)
			} else {
				c = loadDir(t, "testdata/charts/"+tt.chart)
			}
			if tt.opts.ReleaseName == "" {
				tt.opts.ReleaseName = "r"
			}
			_, err := Render(context.Background(), c, tt.values, tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v is not %v", err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tt.file != "" {
				var e *Error
				if !errors.As(err, &e) || e.File != tt.file || e.Line != tt.line {
					t.Errorf("error %q located at %+v, want %s:%d", err, e, tt.file, tt.line)
				}
			}
		})
	}
}

// slowChart loops ten million times without output.
func slowChart(t *testing.T) *chart.Chart {
	c, err := LoadFiles(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: slow\nversion: 0.1.0\n"),
		"templates/cm.yaml": []byte(`{{- range until 3000 }}{{- range until 3000 }}{{- end }}{{- end }}`),
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoad(t *testing.T) {
	// .helmignore leaves a file out of .Files.
	c := loadDir(t, "testdata/charts/files")
	res, err := Render(context.Background(), c, nil, Options{ReleaseName: "f"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if strings.Contains(o.Manifest, "ignored") {
			t.Errorf(".helmignore'd file rendered: %s", o.Manifest)
		}
	}

	// A packed chart loads as its directory does.
	tgz := pack(t, "testdata/charts/basic", "basic")
	a, err := LoadArchive(bytes.NewReader(tgz), 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "basic" || len(a.Templates) != 5 {
		t.Errorf("archive: %s with %d templates", a.Name(), len(a.Templates))
	}

	for _, tt := range []struct {
		name string
		load func() error
		kind error
		want string
	}{
		{"files over limit", func() error { _, err := LoadFS(os.DirFS("testdata/charts/basic"), 100); return err }, derrors.LimitExceeded, "MaxChartBytes"},
		{"archive over limit", func() error { _, err := LoadArchive(bytes.NewReader(tgz), 100); return err }, derrors.LimitExceeded, "MaxChartBytes"},
		{"not an archive", func() error { _, err := LoadArchive(strings.NewReader("plain text"), 0); return err }, derrors.InvalidArgument, "loading the chart"},
		{"no Chart.yaml", func() error {
			_, err := LoadFS(fstest.MapFS{"values.yaml": {Data: []byte("a: 1\n")}}, 0)
			return err
		}, derrors.InvalidArgument, "Chart.yaml"},
		{"bad Chart.yaml", func() error {
			_, err := LoadFS(fstest.MapFS{"Chart.yaml": {Data: []byte("name: [\n")}}, 0)
			return err
		}, derrors.InvalidArgument, "Chart.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.load()
			if err == nil || !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %v naming %q", err, tt.kind, tt.want)
			}
		})
	}
}

// pack makes a .tgz of dir as helm package does: every file under NAME/.
func pack(t testing.TB, dir, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path.Join(dir, p))
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// One loaded chart renders in several goroutines at once (registryd's
// catalog and expansions share a loaded chart): run with -race.
func TestRenderConcurrent(t *testing.T) {
	c := loadDir(t, "testdata/charts/subcharts")
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			v := map[string]any{"child": map[string]any{"enabled": i%2 == 0}}
			res, err := Render(context.Background(), c, v, Options{ReleaseName: "r"})
			if err == nil && len(res.Objects) != 3-i%2 {
				err = errors.New("wrong number of objects: " + strings.Join(names(res.Objects), " "))
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
