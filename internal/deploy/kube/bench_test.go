package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// BenchmarkApply100ConfigMaps re-applies 100 unchanged ConfigMaps of 10
// keys, each op from a new Client with a warm discovery cache on disk: the
// cluster part of an unchanged `dm deploy` (make bench-deploy times whole
// processes against kubectl).
func BenchmarkApply100ConfigMaps(b *testing.B) {
	env := kubetest.Shared(b)
	ns := env.Namespace(b)
	cache := b.TempDir()
	var doc strings.Builder
	for i := range 100 {
		fmt.Fprintf(&doc, "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cm-%d}\n  data:\n", i)
		for k := range 10 {
			fmt.Fprintf(&doc, "    key-%d: value %d of configmap %d\n", k, k, i)
		}
	}
	var list []map[string]any
	if err := yaml.Unmarshal([]byte(doc.String()), &list); err != nil {
		b.Fatal(err)
	}
	objs := make([]*unstructured.Unstructured, len(list))
	for i, m := range list {
		objs[i] = &unstructured.Unstructured{Object: m}
	}
	ctx := context.Background()
	apply := func() {
		c, err := kube.New(ctx, kube.Config{Kubeconfig: env.Kubeconfig, Namespace: ns, DiscoveryCache: cache})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Prepare(ctx, objs); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Apply(ctx, objs, kube.ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	apply() // create them, warm the cache
	b.ResetTimer()
	for range b.N {
		apply()
	}
}
