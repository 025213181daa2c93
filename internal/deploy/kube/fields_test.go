package kube

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestChangedFields(t *testing.T) {
	obj := func(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }
	base := func() map[string]any {
		return map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "resourceVersion": "7", "uid": "u", "generation": int64(3),
				"annotations": map[string]any{"dm.io/template": "t:v1.2.3", "deployment.kubernetes.io/revision": "2"}},
			"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "web", "image": "nginx:1"}}}}},
			"status": map[string]any{"replicas": int64(2)},
		}
	}
	for _, tc := range []struct {
		name   string
		live   *unstructured.Unstructured
		change func(m map[string]any)
		ignore []string
		want   []string
	}{
		{name: "same", live: obj(base()), change: func(map[string]any) {}},
		{name: "server fields and status only", live: obj(base()), change: func(m map[string]any) {
			md := m["metadata"].(map[string]any)
			md["resourceVersion"], md["generation"], md["uid"] = "8", int64(4), "v"
			m["status"] = map[string]any{"replicas": int64(0)}
		}},
		{name: "replicas", live: obj(base()), change: func(m map[string]any) {
			m["spec"].(map[string]any)["replicas"] = float64(3)
		}, want: []string{"spec.replicas"}},
		{name: "same number, another type", live: obj(base()), change: func(m map[string]any) {
			m["spec"].(map[string]any)["replicas"] = float64(2)
		}},
		{name: "image and a new container", live: obj(base()), change: func(m map[string]any) {
			c := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			c["containers"] = []any{map[string]any{"name": "web", "image": "nginx:2"}, map[string]any{"name": "side"}}
		}, want: []string{"spec.template.spec.containers[0].image", "spec.template.spec.containers[1]"}},
		{name: "new mapping named at its own path", live: obj(base()), change: func(m map[string]any) {
			m["spec"].(map[string]any)["strategy"] = map[string]any{"type": "Recreate"}
		}, want: []string{"spec.strategy"}},
		{name: "annotation with a slash, ignored prefix", live: obj(base()), ignore: []string{"dm.io/"}, change: func(m map[string]any) {
			a := m["metadata"].(map[string]any)["annotations"].(map[string]any)
			a["dm.io/template"] = "t:v1.2.4"
			a["example.com/owner"] = "team"
		}, want: []string{`metadata.annotations["example.com/owner"]`}},
		{name: "dm's annotation not ignored", live: obj(base()), change: func(m map[string]any) {
			m["metadata"].(map[string]any)["annotations"].(map[string]any)["dm.io/template"] = "t:v1.2.4"
		}, want: []string{`metadata.annotations["dm.io/template"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base()
			tc.change(next)
			got := ChangedFields(tc.live, obj(next), tc.ignore)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFieldWithin(t *testing.T) {
	for _, tc := range []struct {
		path, field string
		want        bool
	}{
		{"spec.selector", "spec.selector", true},
		{"spec.selector.matchLabels.app", "spec.selector", true},
		{"spec.selectorX", "spec.selector", false},
		{"spec.template.spec.containers[0].image", "spec.template.spec.containers", true},
		{"spec", "spec.selector", true},
		{"spec.replicas", "spec.selector", false},
		{`metadata.annotations["a/b"]`, "metadata.annotations", true},
	} {
		if got := FieldWithin(tc.path, tc.field); got != tc.want {
			t.Errorf("FieldWithin(%q, %q) = %v, want %v", tc.path, tc.field, got, tc.want)
		}
	}
}
