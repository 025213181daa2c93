package helmimport

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

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
