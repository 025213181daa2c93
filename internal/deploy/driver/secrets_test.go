package driver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// cluster returns a dynamic client of the shared apiserver as the admin
// (or the limited) user, and a fresh namespace.
func cluster(t *testing.T) (admin, limited dynamic.Interface, ns string) {
	t.Helper()
	env := kubetest.Shared(t)
	mk := func(token string) dynamic.Interface {
		c, err := dynamic.NewForConfig(restConfig(env, token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return mk(env.AdminToken), mk(env.LimitedToken), env.Namespace(t)
}

// restConfig returns a client configuration for env as the user of token.
func restConfig(env *kubetest.Env, token string) *rest.Config {
	return &rest.Config{
		Host:            env.Server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.CAData},
		QPS:             -1, // no client-side rate limit: the tests race on purpose
	}
}

// secretNames lists the names of the Secrets in ns matching selector.
func secretNames(t *testing.T, c dynamic.Interface, ns, selector string) []string {
	t.Helper()
	list, err := c.Resource(secretsGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range list.Items {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

// big returns a record of about size bytes of incompressible objects, its
// payload tagged with tag.
func big(ns, name string, revision, size int, tag string) *release.Record {
	r := sample(ns, name, revision)
	r.Description = tag
	per := min(size, 256<<10)
	for i := 0; i*per < size; i++ {
		raw := make([]byte, per*3/4)
		rand.Read(raw)
		r.Objects = append(r.Objects, map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("blob-%d", i), "namespace": ns},
			"data":     map[string]any{"tag": tag, "blob": base64.StdEncoding.EncodeToString(raw)},
		})
	}
	return r
}

// consistent reports whether every object of r carries the record's tag:
// a record assembled from two writes would not.
func consistent(r *release.Record) bool {
	for _, o := range r.Objects[1:] {
		if o["data"].(map[string]any)["tag"] != r.Description {
			return false
		}
	}
	return len(r.Objects) > 1
}

func TestSecretsContract(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	testDriver(t, NewSecrets(c), ns)

	obj, err := c.Resource(secretsGVR).Namespace(ns).Get(context.Background(), "dm.v1.web.v3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, _ := unstructured.NestedString(obj.Object, "type"); typ != SecretType {
		t.Errorf("type = %q, want %q", typ, SecretType)
	}
	want := map[string]string{
		LabelManagedBy: "dm", LabelDeployment: "web", LabelRevision: "3",
		LabelStatus: "deployed", LabelPart: "head", LabelFormat: "1",
	}
	for k, v := range want {
		if got := obj.GetLabels()[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
}

func TestSecretsConcurrentCreate(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	d := smallChunks(c)
	// Half the creators write chunked records: the losers must delete
	// their chunks and leave the winner's.
	testConcurrentCreate(t, d, ns, 8, func(i int) *release.Record {
		if i%2 == 0 {
			return big(ns, "web", 1, 64<<10, fmt.Sprint("creator ", i))
		}
		r := sample(ns, "web", 1)
		r.Description = fmt.Sprint("creator ", i)
		return r
	})
	got, err := d.Get(context.Background(), ns, "web", 1)
	if err != nil {
		t.Fatal(err)
	}
	// Only the winner's chunks are left, if it wrote any.
	writes := map[string]bool{}
	for _, n := range secretNames(t, c, ns, selector("web", "chunk")) {
		writes[n[:strings.LastIndexByte(n, '.')]] = true
	}
	want := 0
	if len(got.Objects) > 1 {
		want = 1
	}
	if len(writes) != want {
		t.Errorf("chunk Secrets of %d writes after the race, want %d", len(writes), want)
	}
}

// A 3 MiB record round-trips through chunks of the default size; a status
// update leaves them alone.
func TestSecretsConcurrentUpdate(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	testConcurrentUpdate(t, NewSecrets(c), ns, 8)
}

func TestSecretsLargeRecord(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	d := NewSecrets(c)
	ctx := context.Background()

	r := big(ns, "huge", 1, 3<<20, "A")
	r.Status = release.StatusPending
	if err := d.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	chunks := secretNames(t, c, ns, selector("huge", "chunk"))
	if len(chunks) < 3 {
		t.Fatalf("a 3 MiB record is in chunks %v, want at least 3", chunks)
	}
	got, err := d.Get(ctx, ns, "huge", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !consistent(got) || len(got.Objects) != len(r.Objects) ||
		got.Objects[5]["data"].(map[string]any)["blob"] != r.Objects[5]["data"].(map[string]any)["blob"] {
		t.Fatal("the 3 MiB record did not round-trip")
	}

	// A status update, and a lease's renewal, rewrite the head only.
	got.Lease = &release.Lease{Holder: release.Holder{ID: "x"}, Duration: time.Second}
	if err := d.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got.Lease.Renewals++
	if err := d.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got.Status, got.Lease = release.StatusDeployed, nil
	if err := d.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if after := secretNames(t, c, ns, selector("huge", "chunk")); !slices.Equal(after, chunks) {
		t.Errorf("a status update rewrote the chunks: %v -> %v", chunks, after)
	}
	if hist, err := d.History(ctx, ns, "huge"); err != nil || len(hist) != 1 || !consistent(hist[0]) || hist[0].Status != release.StatusDeployed {
		t.Fatalf("History = %v, %v", hist, err)
	}
	if err := d.Delete(ctx, ns, "huge", 1); err != nil {
		t.Fatal(err)
	}
	if left := secretNames(t, c, ns, LabelManagedBy+"=dm"); len(left) != 0 {
		t.Errorf("Secrets left after deleting the revision: %v", left)
	}
}

// TestSecretsStaleUpdate: an update with a stale record (the head was
// written since it was read) fails with ErrConflict and leaves no chunks
// of its own behind; the chunks of the head stay.
func TestSecretsStaleUpdate(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	d := smallChunks(c)
	ctx := context.Background()
	const size = 64 << 10
	r := big(ns, "db", 1, size, "A")
	if err := d.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	stale := r.StorageVersion
	next := big(ns, "db", 1, size, "B")
	next.StorageVersion = stale
	if err := d.Update(ctx, next); err != nil {
		t.Fatal(err)
	}
	chunks := secretNames(t, c, ns, selector("db", "chunk"))
	late := big(ns, "db", 1, size, "C")
	late.StorageVersion = stale
	if err := d.Update(ctx, late); !errors.Is(err, ErrConflict) {
		t.Fatalf("update with a stale record: %v, want ErrConflict", err)
	}
	if after := secretNames(t, c, ns, selector("db", "chunk")); !slices.Equal(after, chunks) {
		t.Errorf("chunks after a refused update %v, want the head's %v", after, chunks)
	}
	if got, err := d.Get(ctx, ns, "db", 1); err != nil || got.Description != "B" || !consistent(got) {
		t.Fatalf("after the refused update: %v, %v", got, err)
	}
}

// smallChunks returns a Secrets driver with 16 KiB chunks, so that tests
// of chunking need not move megabytes (slow under -race).
func smallChunks(c dynamic.Interface) *Secrets {
	d := NewSecrets(c)
	d.ChunkSize = 16 << 10
	return d
}

// Readers racing writers see a whole record, old or new, never a mix.
func TestSecretsRacingReaders(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	d := smallChunks(c)
	ctx := context.Background()
	const size = 96 << 10

	cur := big(ns, "web", 1, size, "A")
	if err := d.Create(ctx, cur); err != nil {
		t.Fatal(err)
	}
	chunks := secretNames(t, c, ns, selector("web", "chunk"))
	if len(chunks) < 3 {
		t.Fatalf("chunks %v, want at least 3", chunks)
	}

	// Readers while a writer replaces the body.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r, err := d.Get(ctx, ns, "web", 1)
				if err != nil {
					t.Errorf("Get while the body is replaced: %v", err)
					return
				}
				if !consistent(r) {
					t.Error("a reader saw half a record")
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := range 6 {
		next := big(ns, "web", 1, size, fmt.Sprint("write ", i))
		next.StorageVersion = cur.StorageVersion
		if err := d.Update(ctx, next); err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d reads during 6 body replacements", reads.Load())
	final, err := d.Get(ctx, ns, "web", 1)
	if err != nil || final.Description != "write 5" || !consistent(final) {
		t.Fatalf("after the writes: %v, %v", final, err)
	}
	if n := len(secretNames(t, c, ns, selector("web", "chunk"))); n != len(chunks) {
		t.Errorf("%d chunk Secrets after replacing the body, want %d (old chunks deleted)", n, len(chunks))
	}

	// A body that shrinks moves back into the head.
	small := sample(ns, "web", 1)
	small.StorageVersion = final.StorageVersion
	if err := d.Update(ctx, small); err != nil {
		t.Fatal(err)
	}
	if n := secretNames(t, c, ns, selector("web", "chunk")); len(n) != 0 {
		t.Errorf("chunk Secrets of an inline body: %v", n)
	}

	// A reader racing the creator of a chunked revision finds nothing or
	// the whole record.
	found := make(chan error, 1)
	go func() {
		for {
			r, err := d.Get(ctx, ns, "web", 2)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err == nil && !consistent(r) {
				err = errors.New("a reader saw half a record")
			}
			found <- err
			return
		}
	}()
	if err := d.Create(ctx, big(ns, "web", 2, size, "B")); err != nil {
		t.Fatal(err)
	}
	if err := <-found; err != nil {
		t.Fatal(err)
	}
	if hist, err := d.History(ctx, ns, "web"); err != nil || len(hist) != 2 || !consistent(hist[1]) {
		t.Fatalf("History = %v, %v", hist, err)
	}
}

func TestSecretsLongName(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	d := smallChunks(c)
	ctx := context.Background()
	name := strings.Repeat("long-name.", 24) + "x" // 241 characters
	if err := d.Create(ctx, big(ns, name, 1, 64<<10, "L")); err != nil {
		t.Fatal(err)
	}
	if err := d.Create(ctx, sample(ns, name[:99], 1)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(ctx, ns, name, 1); err != nil || got.Name != name || !consistent(got) {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if hist, err := d.History(ctx, ns, name); err != nil || len(hist) != 1 {
		t.Fatalf("History = %v, %v", hist, err)
	}
	if list, err := d.List(ctx, ns); err != nil || len(list) != 2 || list[0].Name != name[:99] || list[1].Name != name {
		t.Errorf("List = %v, %v", summary(list), err)
	}
	if err := d.Delete(ctx, ns, name, 1); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsForbidden(t *testing.T) {
	t.Parallel()
	_, limited, ns := cluster(t)
	d := NewSecrets(limited)
	ctx := context.Background()
	for _, tc := range []struct {
		op   string
		err  error
		verb string
	}{
		{"Create", d.Create(ctx, sample(ns, "web", 1)), "create"},
		{"Get", func() error { _, err := d.Get(ctx, ns, "web", 1); return err }(), "get"},
		{"History", func() error { _, err := d.History(ctx, ns, "web"); return err }(), "list"},
		{"List", func() error { _, err := d.List(ctx, ""); return err }(), "list"},
	} {
		want := fmt.Sprintf(`cannot %s resource "secrets"`, tc.verb)
		if tc.err == nil || !strings.Contains(tc.err.Error(), want) || !apierrors.IsForbidden(tc.err) || !errors.Is(tc.err, derrors.Unauthorized) {
			t.Errorf("%s as the limited user: %v, want a forbidden error containing %q", tc.op, tc.err, want)
		}
	}
}

func TestSecretsCorrupt(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	d := smallChunks(c)
	ctx := context.Background()
	secrets := c.Resource(secretsGVR).Namespace(ns)

	// Each case writes revision i+1 of "bad" correctly, then breaks it.
	for i, tc := range []struct {
		name  string
		size  int // of the record: 0 inline, else chunked
		spoil func(head *unstructured.Unstructured, chunks []string)
		want  string
	}{
		{"not gzip", 0, func(h *unstructured.Unstructured, _ []string) {
			setData(h, keyBody, []byte("plain text"))
			setData(h, keyDigest, []byte(digestOf([]byte("plain text"))))
		}, "not gzip-compressed"},
		{"digest", 0, func(h *unstructured.Unstructured, _ []string) {
			setData(h, keyDigest, []byte("sha256:00"))
		}, "body digest"},
		{"future format", 0, func(h *unstructured.Unstructured, _ []string) {
			l := h.GetLabels()
			l[LabelFormat] = "2"
			h.SetLabels(l)
		}, `has format "2", this dm reads format 1`},
		{"status", 0, func(h *unstructured.Unstructured, _ []string) {
			setData(h, keyStatus, []byte("stuck"))
		}, `unknown status "stuck"`},
		{"missing chunk", 64 << 10, func(_ *unstructured.Unstructured, chunks []string) {
			if err := secrets.Delete(ctx, chunks[1], metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "chunk Secret " + HeadName("bad", 5) + "."},
		{"foreign chunk", 64 << 10, func(h *unstructured.Unstructured, chunks []string) {
			setData(h, keyChunks, []byte(chunks[0]+"\nsome-other-secret"))
		}, `chunk "some-other-secret" is not one of its chunk Secrets`},
		{"lease", 0, func(h *unstructured.Unstructured, _ []string) {
			setData(h, keyLease, []byte("{not json"))
		}, "lease: invalid character"},
		{"both body and chunks", 0, func(h *unstructured.Unstructured, _ []string) {
			setData(h, keyChunks, []byte(HeadName("bad", 7)+".00000000.0"))
		}, "both a body and chunks"},
	} {
		rev := i + 1
		r := sample(ns, "bad", rev)
		if tc.size > 0 {
			r = big(ns, "bad", rev, tc.size, "x")
		}
		if err := d.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		head, err := secrets.Get(ctx, HeadName("bad", rev), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var chunks []string
		for _, n := range secretNames(t, c, ns, selector("bad", "chunk")) {
			if strings.HasPrefix(n, HeadName("bad", rev)+".") {
				chunks = append(chunks, n)
			}
		}
		tc.spoil(head, chunks)
		if _, err := secrets.Update(ctx, head, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = d.Get(ctx, ns, "bad", rev)
		secret := fmt.Sprintf("Secret %s/%s", ns, HeadName("bad", rev))
		if err == nil || !strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Get = %v, want an error naming %s and containing %q", tc.name, err, secret, tc.want)
		}
		// Only a record that is broken, not one of a newer dm, is worth
		// deleting.
		if hint := strings.Contains(fmt.Sprint(err), "kubectl delete secret -n "+ns); hint == errors.Is(err, ErrFormat) {
			t.Errorf("%s: Get = %v: the hint to delete the Secret should come with corrupt records only", tc.name, err)
		}
		if _, err := d.History(ctx, ns, "bad"); err == nil || !strings.Contains(err.Error(), secret) {
			t.Errorf("%s: History = %v, want an error", tc.name, err)
		}
		// Deleting the broken revision repairs the history.
		if err := d.Delete(ctx, ns, "bad", rev); err != nil {
			t.Fatal(err)
		}
	}
	if left := secretNames(t, c, ns, LabelManagedBy+"=dm"); len(left) != 0 {
		t.Errorf("Secrets left after deleting every revision: %v", left)
	}
}

func setData(obj *unstructured.Unstructured, key string, value []byte) {
	unstructured.SetNestedField(obj.Object, base64.StdEncoding.EncodeToString(value), "data", key)
}

func digestOf(b []byte) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(b))
}

func TestSecretsOrphanChunks(t *testing.T) {
	t.Parallel()
	c, _, ns := cluster(t)
	d := smallChunks(c)
	ctx := context.Background()
	// An interrupted writer leaves chunks and no head; a later one
	// creates the revision; Delete and Prune remove both's chunks.
	r := big(ns, "web", 1, 64<<10, "orphan")
	b, err := encodeBody(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.writeChunks(ctx, r, b); err != nil {
		t.Fatal(err)
	}
	for rev := 1; rev <= 3; rev++ {
		r := big(ns, "web", rev, 64<<10, "real")
		if err := d.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prune(ctx, d, ns, "web", 2); err != nil {
		t.Fatal(err)
	}
	hist, err := d.History(ctx, ns, "web")
	if err != nil || fmt.Sprint(revisions(hist)) != "[2 3]" {
		t.Fatalf("History after Prune = %v, %v", revisions(hist), err)
	}
	for _, n := range secretNames(t, c, ns, selector("web", "chunk")) {
		if strings.HasPrefix(n, HeadName("web", 1)+".") {
			t.Errorf("chunk Secret %s of the pruned revision 1 is left", n)
		}
	}
}

// loseResponses is a transport that sends requests matching lose to the
// apiserver but reports a lost connection instead of its answer.
type loseResponses struct {
	next http.RoundTripper
	lose func(*http.Request) bool
}

func (l loseResponses) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err == nil && l.lose(req) {
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (injected)")
	}
	return resp, err
}

// A writer whose connection drops after the server wrote the head must
// leave a whole record: it cannot know the head exists, so it keeps its
// chunks.
func TestSecretsLostResponse(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	cfg := restConfig(env, env.AdminToken)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return loseResponses{rt, func(req *http.Request) bool {
			// Writes of heads: PATCHes, and POSTs of a Secret that is
			// not a chunk.
			if req.Method == http.MethodPatch {
				return true
			}
			if req.Method != http.MethodPost || req.GetBody == nil {
				return false
			}
			body, err := req.GetBody()
			if err != nil {
				return false
			}
			defer body.Close()
			b, _ := io.ReadAll(body)
			return !bytes.Contains(b, []byte(ChunkSecretType))
		}}
	}
	flaky, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := smallChunks(flaky)
	r := big(ns, "web", 1, 64<<10, "A")
	if err := d.Create(ctx, r); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Create with a lost response = %v, want the injected error", err)
	}
	got, err := d.Get(ctx, ns, "web", 1)
	if err != nil || !consistent(got) {
		t.Fatalf("Get after a lost response = %v, %v; want the whole record", got, err)
	}
	// The same for an update that replaces the body.
	next := big(ns, "web", 1, 64<<10, "B")
	next.StorageVersion = got.StorageVersion
	if err := d.Update(ctx, next); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Update with a lost response = %v, want the injected error", err)
	}
	got, err = d.Get(ctx, ns, "web", 1)
	if err != nil || !consistent(got) || got.Description != "B" {
		t.Fatalf("Get after a lost update response = %v, %v; want the whole new record", got, err)
	}
}

// BenchmarkSecretsRevision measures what dm deploy spends on history for a
// revision of 100 ConfigMaps: create it pending, then mark it deployed.
func BenchmarkSecretsRevision(b *testing.B) {
	env := kubetest.Shared(b)
	ns := env.Namespace(b)
	c, err := dynamic.NewForConfig(restConfig(env, env.AdminToken))
	if err != nil {
		b.Fatal(err)
	}
	d := NewSecrets(c)
	ctx := context.Background()
	rev := 0
	for b.Loop() {
		rev++
		r := typical(100)
		r.Namespace, r.Revision, r.Status = ns, rev, release.StatusPending
		if err := d.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Status = release.StatusDeployed
		if err := d.Update(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
