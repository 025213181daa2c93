package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// lookupWorkerArg, as a worker's first argument, has TestMain attach
// lookupEngine.
const lookupWorkerArg = "lookup"

// lookupEngine stands in for Helm's engine, as dm-controller's workers
// attach it: named helm, so that the table gives it lookupConfig's chart,
// it renders the ConfigMap "out" that the chart's template would, from
// the lookups and capabilities of its invocation's Cluster. What is tested
// here is the way there (the worker's lookup calls, the parent's answers
// and limits); Helm's own lookup and .Capabilities against a real
// apiserver are internal/controller's TestChartReadsCluster. Without Helm
// the test binary stays small, and the package's fuzz targets fast.
type lookupEngine struct{}

func (lookupEngine) Name() string { return "helm" }

func (lookupEngine) Render(ctx context.Context, inv engine.Invocation) (engine.Output, error) {
	const tmpl = "look/templates/cm.yaml"
	var other string
	_, _ = fmt.Sscanf(string(inv.Files[tmpl]), "other: %s", &other)
	data := map[string]any{"account": "offline", "replicas": "0", "other": "0", "kube": "v1.31.0", "crd": "false"}
	if c := inv.Cluster; c != nil && c.Lookup != nil {
		q := engine.LookupQuery{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "who"}
		// As the template: "who" twice, then the other object.
		for range 2 {
			who, err := c.Lookup.Lookup(ctx, q)
			if err != nil {
				return engine.Output{}, engine.At(tmpl, 6, err)
			}
			if d, ok := who["data"].(map[string]any); ok {
				data["account"], data["replicas"] = d["account"], fmt.Sprint(d["replicas"])
			}
		}
		q.Name = other
		o, err := c.Lookup.Lookup(ctx, q)
		if err != nil {
			return engine.Output{}, engine.At(tmpl, 8, err)
		}
		data["other"] = fmt.Sprint(len(o))
	}
	if c := inv.Cluster; c != nil {
		if c.KubeVersion != "" {
			data["kube"] = c.KubeVersion
		}
		data["crd"] = fmt.Sprint(slices.Contains(c.APIVersions, "shop.example.com/v1"))
	}
	return engine.Output{Resources: []engine.Resource{{Name: "out", Type: "ConfigMap", Properties: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "out"}, "data": data,
	}}}}, nil
}

// accountLookup answers lookups as one account would: the ConfigMap
// "who" holds the account's name; every other object is missing.
type accountLookup struct {
	account string
	size    int // the answer's padding, bytes
	mu      sync.Mutex
	asked   []engine.LookupQuery
}

func (l *accountLookup) Lookup(ctx context.Context, q engine.LookupQuery) (map[string]any, error) {
	l.mu.Lock()
	l.asked = append(l.asked, q)
	l.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("the lookup has no deadline")
	}
	switch {
	case q.Name == "forbidden":
		return nil, fmt.Errorf(`lookup %s: configmaps "forbidden" is forbidden: User %q cannot get resource "configmaps"`, q, l.account)
	case q.Name != "who":
		return nil, nil
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{
		"account": l.account, "replicas": 3, "pad": strings.Repeat("x", l.size),
	}}, nil
}

// lookupConfig is a configuration whose one resource is a chart (its
// files imported) that looks up ConfigMap "who" twice and then name:
// lookupEngine renders it.
func lookupConfig(name string) *api.ExpandRequest {
	return &api.ExpandRequest{
		Config:    "resources:\n- name: r\n  type: look/Chart.yaml\n",
		Namespace: "ns",
		Imports: map[string]string{
			"look/Chart.yaml":        "apiVersion: v2\nname: look\nversion: 1.0.0\n",
			"look/templates/cm.yaml": "other: " + name + "\n",
		},
	}
}

func lookupPool(t *testing.T, o Options) *Pool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.Command = []string{exe, lookupWorkerArg}
	return newPool(t, o)
}

// outData is the data of the expansion's ConfigMap "out".
func outData(t *testing.T, res *api.ExpandResult) map[string]any {
	t.Helper()
	for _, r := range res.Config.Resources {
		if r.Name == "out" {
			d, _ := r.Properties["data"].(map[string]any)
			return d
		}
	}
	t.Fatalf("no ConfigMap out in %+v", res.Config.Resources)
	return nil
}

// TestLookupThroughParent: a chart rendered in a worker reads the cluster
// through the parent, with the Lookup of its own request: two expansions
// at once, each with its account's Lookup, each see their own; the
// capabilities travel with the job; without a Cluster the chart renders
// offline.
func TestLookupThroughParent(t *testing.T) {
	p := lookupPool(t, Options{Workers: 2})
	caps := func(l engine.Lookup) *engine.Cluster {
		return &engine.Cluster{KubeVersion: "v1.33.1", APIVersions: []string{"v1", "shop.example.com/v1"}, Lookup: l}
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			account := fmt.Sprintf("system:serviceaccount:ns%d:deployer", i)
			req := lookupConfig("absent")
			req.Cluster = caps(&accountLookup{account: account})
			res, err := p.Expand(t.Context(), req)
			if err != nil {
				t.Error(err)
				return
			}
			d := outData(t, res)
			want := map[string]any{"account": account, "replicas": "3", "other": "0", "kube": "v1.33.1", "crd": "true"}
			for k, v := range want {
				if d[k] != v {
					t.Errorf("%s: %s = %v, want %v", account, k, d[k], v)
				}
			}
		}()
	}
	wg.Wait()

	res, err := p.Expand(t.Context(), lookupConfig("absent"))
	if err != nil {
		t.Fatal(err)
	}
	if d := outData(t, res); d["account"] != "offline" || d["crd"] != "false" {
		t.Errorf("without a cluster: %v, want offline", d)
	}
}

// TestLookupErrorsAndLimits: the parent's refusal reaches the chart's
// error, and the lookups of one expansion and the size of one answer are
// bounded, the error naming the limit.
func TestLookupErrorsAndLimits(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		lookup *accountLookup
		other  string // the second object looked up
		want   string
	}{
		{"refused", Options{}, &accountLookup{account: "sa"}, "forbidden", `configmaps "forbidden" is forbidden: User "sa"`},
		{"too many", Options{MaxLookups: 2}, &accountLookup{account: "sa"}, "absent", "lookup v1 ConfigMap ns/absent: one expansion's lookups: exceeds the limit of 2 (Options.MaxLookups)"},
		{"too large", Options{MaxLookupBytes: 4096}, &accountLookup{account: "sa", size: 8192}, "absent", "exceeds the limit of 4 KiB (Options.MaxLookupBytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Workers = 1
			p := lookupPool(t, tt.opts)
			req := lookupConfig(tt.other)
			req.Cluster = &engine.Cluster{Lookup: tt.lookup}
			_, err := p.Expand(t.Context(), req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "look/templates/cm.yaml") {
				t.Errorf("err = %v, want it at the chart's template", err)
			}
		})
	}
}

// scriptedParent answers a worker's calls with replies, as raw frames.
func scriptedParent(t *testing.T, w *worker, fromWorker io.Reader, toWorker io.Writer, replies ...string) <-chan call {
	t.Helper()
	calls := make(chan call, len(replies))
	go func() {
		bw := bufio.NewWriter(toWorker)
		for _, r := range replies {
			kind, body, err := readFrame(fromWorker, 1<<20)
			if err != nil || kind != kindCall {
				t.Errorf("reading a call: %q %v", kind, err)
				return
			}
			var c call
			_ = json.Unmarshal(body, &c)
			calls <- c
			if err := writeRaw(bw, kindReply, []byte(r)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return calls
}

// TestForwardedLookupReplies: the worker's side of a lookup call: what the
// parent answers, and the answers it must refuse.
func TestForwardedLookupReplies(t *testing.T) {
	q := engine.LookupQuery{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "x"}
	tests := []struct {
		name, reply string
		want        map[string]any
		wantErr     string
		notFound    bool
	}{
		{name: "object", reply: `{"object":{"kind":"ConfigMap","data":{"n":3,"f":0.5}}}`,
			want: map[string]any{"kind": "ConfigMap", "data": map[string]any{"n": int64(3), "f": 0.5}}},
		{name: "missing", reply: `{"missing":true}`},
		{name: "empty reply", reply: `{}`, wantErr: "lookup v1 ConfigMap ns/x: the parent answered neither an object nor that there is none"},
		{name: "not an object", reply: `{"object":[1,2]}`, wantErr: "lookup v1 ConfigMap ns/x: the parent answered an array, not an object"},
		{name: "null object", reply: `{"object":null}`, wantErr: "the parent answered null, not an object"},
		{name: "not JSON", reply: `{"object":`, wantErr: "decoding registryd's reply"},
		{name: "error", reply: `{"error":{"msg":"configmaps \"x\" is forbidden","kind":"not_found"}}`, wantErr: `configmaps "x" is forbidden`, notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toWorkerR, toWorkerW := io.Pipe()
			fromWorkerR, fromWorkerW := io.Pipe()
			w := newWorker(workerConfig{}, toWorkerR, fromWorkerW, nil, slog.New(slog.DiscardHandler))
			w.job = 1
			calls := scriptedParent(t, w, fromWorkerR, toWorkerW, tt.reply)
			got, err := (&forwardedLookup{w: w, job: 1}).Lookup(t.Context(), q)
			if c := <-calls; c.Op != "lookup" || c.Lookup == nil || *c.Lookup != q {
				t.Errorf("call %+v, want lookup of %v", c, q)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if errors.Is(err, derrors.NotFound) != tt.notFound {
					t.Errorf("err %v: not found %v, want %v", err, !tt.notFound, tt.notFound)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || tt.want != nil && fmt.Sprintf("%T", got["data"].(map[string]any)["n"]) != "int64" {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestForwardedLookupOfEndedJob: a lookup made for a job that has ended
// (a render the job abandoned) is refused in the worker, not answered by
// the parent for the next job.
func TestForwardedLookupOfEndedJob(t *testing.T) {
	w := newWorker(workerConfig{}, strings.NewReader(""), io.Discard, nil, slog.New(slog.DiscardHandler))
	w.job = 3
	_, err := (&forwardedLookup{w: w, job: 1}).Lookup(t.Context(), engine.LookupQuery{APIVersion: "v1", Kind: "ConfigMap"})
	if err == nil || !strings.Contains(err.Error(), "lookup call of a job that has ended") {
		t.Fatalf("err = %v, want the call refused", err)
	}
}

// TestParentLookupOffline: a job without a cluster finds nothing, and its
// lookups are not counted against any account.
func TestParentLookupOffline(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	st := &jobState{}
	rep := p.lookup(t.Context(), st, &engine.LookupQuery{APIVersion: "v1", Kind: "Secret", Namespace: "kube-system", Name: "x"})
	if !rep.Missing || rep.Object != nil || rep.Err != nil {
		t.Errorf("reply %+v, want missing", rep)
	}
	if st.lookups != 0 {
		t.Errorf("%d lookups counted, want 0", st.lookups)
	}
}
