package kubereg

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dmhq/dm/internal/catalog"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/server"
)

// resultsServer is the part of a Server the result ConfigMaps reach: the
// examples tester.
type resultsServer struct{ ex *catalog.Examples }

func (s resultsServer) SetWebhookRegistries([]server.WebhookRegistry) {}
func (s resultsServer) RequestRefresh(string, string) bool            { return false }
func (s resultsServer) Examples() *catalog.Examples                   { return s.ex }
func (s resultsServer) Forget(*index.Registry)                        {}

// TestTakeResults checks the result informer's transform: a shard's
// results reach the tester, and the cache keeps its metadata only.
func TestTakeResults(t *testing.T) {
	ex := catalog.NewExamples(catalog.ExamplesOptions{})
	w := &Watcher{srv: resultsServer{ex}}
	const registry = "team-a/github.com/acme/t"
	tested := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ok, _ := json.Marshal(storedResult{Title: "Redis", Status: catalog.StatusOK, Tested: tested})
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: resultName(registry, "sha256:aa"), Namespace: "dm-system",
			Annotations:   map[string]string{resultsRegistry: registry},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "registryd"}}},
		Data: map[string]string{
			resultKey("sha256:aa"): string(ok),
			resultKey("sha256:ab"): "not JSON",
		},
	}
	out, err := w.takeResults(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if got.Data != nil || got.ManagedFields != nil {
		t.Errorf("the cache keeps data %v and managedFields %v, want neither", got.Data, got.ManagedFields)
	}
	if got.Annotations[resultsRegistry] != registry {
		t.Errorf("the registry annotation is gone: %v", got.Annotations)
	}
	if !ex.Holds(registry, "sha256:aa") {
		t.Error("the stored result was not imported")
	}
	if ex.Holds(registry, "sha256:ab") {
		t.Error("a result that is not JSON was imported")
	}
	if ex.Holds("team-b/github.com/acme/t", "sha256:aa") {
		t.Error("another namespace's registry of the same prefix holds the result")
	}
	// A shard delivered again (every write of it is) leaves the result
	// held.
	changed, _ := json.Marshal(storedResult{Title: "Changed", Tested: tested})
	again := cm.DeepCopy()
	again.Data = map[string]string{resultKey("sha256:aa"): string(changed)}
	if _, err := w.takeResults(again); err != nil {
		t.Fatal(err)
	}
	if !ex.Holds(registry, "sha256:aa") {
		t.Error("the result is gone after the shard was delivered again")
	}
	// Objects of other types pass through.
	if o, err := w.takeResults(&corev1.Secret{}); err != nil || o == nil {
		t.Errorf("takeResults(Secret) = %v, %v", o, err)
	}
}

// TestShardRuns checks that queued results are written one shard at a
// time, each shard's results together, whatever order they came in.
func TestShardRuns(t *testing.T) {
	a, b := "team-a/github.com/acme/t", "team-b/github.com/acme/t"
	batch := []pendingResult{
		{a, "sha256:1f"}, {b, "sha256:10"}, {a, "sha256:20"}, {a, "sha256:11"},
		{b, "sha256:1a"}, {a, "sha256:ff"}, {a, "sha256:1e"},
	}
	var got [][]string
	seen := map[string]bool{}
	for ps := range shardRuns(batch) {
		name := resultName(ps[0].registry, ps[0].digest)
		if seen[name] {
			t.Errorf("shard %s in two runs", name)
		}
		seen[name] = true
		var run []string
		for _, p := range ps {
			if resultName(p.registry, p.digest) != name {
				t.Errorf("%s %s in the run of shard %s", p.registry, p.digest, name)
			}
			run = append(run, p.digest)
		}
		got = append(got, run)
	}
	n := 0
	for _, run := range got {
		n += len(run)
	}
	if n != 7 || len(got) != 4 {
		t.Errorf("runs %q: want the 7 results in 4 shards (team-a's 1, 2 and f; team-b's 1)", got)
	}
}
