package helmimport

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"maps"
	"strings"
	"testing"

	hchart "helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dmhq/dm/internal/derrors"
)

func TestObjects(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string // kind/name
		err      string
	}{
		{"empty", "", nil, ""},
		{"helm's layout", "---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n", []string{"ConfigMap/a", "Service/b"}, ""},
		{"comment-only documents skipped", "---\n# Source: c/templates/empty.yaml\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", []string{"ConfigMap/a"}, ""},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: a\n", nil, "document 1 is not a Kubernetes object"},
		{"not YAML", "apiVersion: v1\nkind: [\n", nil, "document 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Objects(tc.manifest)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("err = %v, want one containing %q (InvalidArgument)", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				u := unstructured.Unstructured{Object: o}
				got = append(got, u.GetKind()+"/"+u.GetName())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("objects %v, want %v", got, tc.want)
			}
		})
	}
}

// Integers stay int64, as in objects read from the cluster, so that the
// recorded objects compare equal to applied ones.
func TestObjectsIntegers(t *testing.T) {
	objs, err := Objects("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  replicas: 3\n")
	if err != nil {
		t.Fatal(err)
	}
	if r := objs[0]["spec"].(map[string]any)["replicas"]; r != int64(3) {
		t.Errorf("replicas = %#v, want int64(3)", r)
	}
}

func secretWith(release string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"release": base64.StdEncoding.EncodeToString([]byte(release))}}}
}

func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

func TestDecode(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name   string
		secret *unstructured.Unstructured
		want   string // release name, or the error
		ok     bool
	}{
		{"gzip", secretWith(b64([]byte(gz(`{"name":"web","version":2}`)))), "web", true},
		{"plain JSON, as Helm before gzip", secretWith(b64([]byte(`{"name":"web"}`))), "web", true},
		{"no data", &unstructured.Unstructured{Object: map[string]any{}}, "no data.release", false},
		{"not base64", secretWith("%%%"), "release is not base64", false},
		{"truncated gzip", secretWith(b64([]byte(gz(`{"name":"web"}`)[:12]))), "decompressing release", false},
		{"not JSON", secretWith(b64([]byte(gz(`nope`)))), "release is not Helm's JSON", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := decode(tc.secret)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil || rel.Name != tc.want {
				t.Fatalf("decode = %v, %v; want release %s", rel, err, tc.want)
			}
		})
	}
}

// TestChartFiles: the chart of a Helm record becomes files dm can render
// again, unless it has subcharts (which the record does not keep) or a
// file that is not text.
func TestChartFiles(t *testing.T) {
	md := &hchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"}
	tests := []struct {
		name  string
		chart *hchart.Chart
		want  map[string]string
		why   string
	}{
		{
			name: "templates, files, values and schema",
			chart: &hchart.Chart{
				Metadata: md, Values: map[string]any{"replicas": float64(2)}, Schema: []byte(`{"type":"object"}`),
				Templates: []*hchart.File{{Name: "templates/cm.yaml", Data: []byte("kind: ConfigMap\n")}},
				Files:     []*hchart.File{{Name: "README.md", Data: []byte("# web\n")}},
			},
			want: map[string]string{
				"Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n", "values.yaml": "replicas: 2\n",
				"values.schema.json": `{"type":"object"}`, "templates/cm.yaml": "kind: ConfigMap\n", "README.md": "# web\n",
			},
		},
		{
			name:  "subcharts",
			chart: &hchart.Chart{Metadata: &hchart.Metadata{Name: "app", Version: "1", Dependencies: []*hchart.Dependency{{Name: "redis"}, {Name: "db"}}}},
			why:   "chart app has dependencies (redis, db), and Helm's record keeps no subcharts",
		},
		{
			name:  "binary file",
			chart: &hchart.Chart{Metadata: md, Files: []*hchart.File{{Name: "files/logo.png", Data: []byte{0x89, 'P', 'N', 'G', 0xff}}}},
			why:   "chart web: files/logo.png is not UTF-8 text",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := chartFiles(tt.chart)
			if why != tt.why {
				t.Fatalf("why %q, want %q", why, tt.why)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("files %q\nwant %q", got, tt.want)
			}
		})
	}
}
