package helm

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/expand/engine"
)

// tableLookup answers lookups from a table of objects by query, and
// records the queries.
type tableLookup struct {
	objects map[engine.LookupQuery]map[string]any
	fail    error
	asked   []engine.LookupQuery
}

func (l *tableLookup) Lookup(_ context.Context, q engine.LookupQuery) (map[string]any, error) {
	l.asked = append(l.asked, q)
	if l.fail != nil {
		return nil, l.fail
	}
	return l.objects[q], nil
}

// lookupChart reads a ConfigMap, lists Secrets, and reports the cluster's
// capabilities.
var lookupChart = map[string][]byte{
	"Chart.yaml": []byte("apiVersion: v2\nname: look\nversion: 1.0.0\n"),
	"templates/cm.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  found: {{ dig "data" "greeting" "none" (lookup "v1" "ConfigMap" .Release.Namespace "source") | quote }}
  missing: {{ lookup "v1" "ConfigMap" .Release.Namespace "absent" | len | quote }}
  secrets: {{ dig "items" list (lookup "v1" "Secret" "other" "") | len | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  crd: {{ .Capabilities.APIVersions.Has "shop.example.com/v1" | quote }}
  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
`),
}

// TestEngineCluster: with an invocation's Cluster, lookup reads through
// its Lookup (a missing object is an empty map, as in Helm) and
// .Capabilities are the cluster's whole set; without one the render is
// offline.
func TestEngineCluster(t *testing.T) {
	l := &tableLookup{objects: map[engine.LookupQuery]map[string]any{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "source"}: {"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"greeting": "hola"}},
		{APIVersion: "v1", Kind: "Secret", Namespace: "other"}: {"apiVersion": "v1", "kind": "SecretList", "items": []any{
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "a"}},
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "b"}},
		}},
	}}
	tests := []struct {
		name    string
		cluster *engine.Cluster
		want    map[string]any
	}{
		{"deploying", &engine.Cluster{KubeVersion: "v1.32.4", APIVersions: []string{"v1", "shop.example.com/v1"}, Lookup: l},
			map[string]any{"found": "hola", "missing": "0", "secrets": "2", "kube": "v1.32.4", "crd": "true", "apps": "false"}},
		{"capabilities without lookup", &engine.Cluster{KubeVersion: "v1.32.4", APIVersions: []string{"apps/v1"}},
			map[string]any{"found": "none", "missing": "0", "secrets": "0", "kube": "v1.32.4", "crd": "false", "apps": "true"}},
		{"offline", nil,
			map[string]any{"found": "none", "missing": "0", "secrets": "0", "kube": DefaultKubeVersion, "crd": "false", "apps": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := (&Engine{}).Render(t.Context(), engine.Invocation{
				File: "Chart.yaml", Files: lookupChart, Env: map[string]any{"name": "r", "namespace": "ns"}, Cluster: tt.cluster,
			})
			if err != nil {
				t.Fatal(err)
			}
			data := out.Resources[0].Properties["data"].(map[string]any)
			for k, v := range tt.want {
				if data[k] != v {
					t.Errorf("%s = %v, want %v", k, data[k], v)
				}
			}
		})
	}
}

// TestEngineLookupFails: a lookup the cluster refuses fails the render
// with the refusal, at the template.
func TestEngineLookupFails(t *testing.T) {
	l := &tableLookup{fail: errors.New(`lookup v1 ConfigMap ns/source: configmaps "source" is forbidden`)}
	_, err := (&Engine{}).Render(t.Context(), engine.Invocation{
		File: "Chart.yaml", Files: lookupChart, Env: map[string]any{"name": "r", "namespace": "ns"},
		Cluster: &engine.Cluster{Lookup: l},
	})
	if err == nil || !strings.Contains(err.Error(), `configmaps "source" is forbidden`) || !strings.Contains(err.Error(), "templates/cm.yaml") {
		t.Fatalf("err = %v, want the refusal at templates/cm.yaml", err)
	}
}

// TestLookupClientReadOnly: the client Helm gets reads and nothing else.
func TestLookupClientReadOnly(t *testing.T) {
	c, namespaced, err := LookupProvider(t.Context(), &tableLookup{}).GetClientFor("v1", "ConfigMap")
	if err != nil || !namespaced {
		t.Fatalf("GetClientFor = %v, %v", namespaced, err)
	}
	if err := c.Namespace("ns").Delete(t.Context(), "x", metav1.DeleteOptions{}); !errors.Is(err, errReadOnly) {
		t.Errorf("Delete = %v, want %v", err, errReadOnly)
	}
	if _, err := c.Watch(t.Context(), metav1.ListOptions{}); !errors.Is(err, errReadOnly) {
		t.Errorf("Watch = %v, want %v", err, errReadOnly)
	}
	if _, _, err := LookupProvider(t.Context(), &tableLookup{}).GetClientFor("a/b/c", "X"); err == nil {
		t.Error("GetClientFor of a bad apiVersion: no error")
	}
}
