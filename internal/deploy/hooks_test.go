package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/helmimport"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/expand/helm/helmtest"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// webChart is a chart with a hook of every event dm runs.
var webChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
	"values.yaml": "greeting: hello\njobPolicy: before-hook-creation\njobImage: busybox\n",
	"templates/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-app
data:
  greeting: {{ .Values.greeting | quote }}
`,
	"templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "5"
    helm.sh/hook-delete-policy: {{ .Values.jobPolicy }}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: {{ .Values.jobImage }}, command: ["true"]}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-pre
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "-1"
    helm.sh/hook-delete-policy: hook-succeeded
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-upgrade
  annotations:
    helm.sh/hook: pre-upgrade
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-post
  annotations:
    helm.sh/hook: post-install,post-upgrade
data:
  greeting: {{ .Values.greeting | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-rollback
  annotations:
    helm.sh/hook: pre-rollback
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-deleted
  annotations:
    helm.sh/hook: post-delete
{{- if .Values.preDeleteJob }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-predelete
  annotations:
    helm.sh/hook: pre-delete
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: backup, image: busybox, command: ["true"]}]
{{- end }}
{{- with .Values.badHook }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-bad
  annotations:
    helm.sh/hook: {{ . }}
bogus: a field ConfigMaps do not have
{{- end }}
`,
}

// helmFixture is a fixture whose expander renders charts with helm.Engine
// attached in-process, against a registry holding webChart as web:v1.
func helmFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	mfs := fstest.MapFS{}
	for p, c := range webChart {
		mfs["web/v1/"+p] = &fstest.MapFile{Data: []byte(c)}
	}
	reg := &index.Registry{Name: "github.com/acme/charts", Source: fetch.NewLocal(mfs)}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := resolve.New(resolve.Registry{Host: "github.com", Owner: "acme", Repo: "charts"}, reg)
	x := expand.New(expand.Options{Resolver: r, Engines: []engine.Engine{&helm.Engine{}}})
	f.c.Expander = deploy.ExpandFunc(func(ctx context.Context, src deploy.Source) (*expand.Result, error) {
		req := expand.Request{Ref: src.Input.Ref, Properties: src.Properties, Name: src.Name, Deployment: src.Deployment, Namespace: src.Namespace, ConfigName: src.Input.ConfigName}
		if src.Input.Config != "" {
			req.Config = []byte(src.Input.Config)
		}
		if src.Input.Imports != nil {
			req.Imports = map[string][]byte{}
			for k, v := range src.Input.Imports {
				req.Imports[k] = []byte(v)
			}
		}
		return x.Expand(ctx, req)
	})
	return f
}

var (
	jobsGVR       = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// runJobs plays the Job controller's part (the test cluster runs no
// kube-controller-manager and no kubelet): every Job of the fixture's
// namespace without a finished condition gets one, Complete or, when fail
// (nil: none fails) returns a message, Failed with it. seen, if not nil,
// is called first with the Job's name, to observe the cluster while the
// Job "runs". It stops with the test.
func (f *fixture) runJobs(fail func(name string) string, seen func(name string)) {
	dyn, t := f.kc.Dynamic(), f.t
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			l, err := dyn.Resource(jobsGVR).Namespace(f.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for i := range l.Items {
				j := &l.Items[i]
				if conds, _, _ := unstructured.NestedSlice(j.Object, "status", "conditions"); len(conds) > 0 {
					continue
				}
				if seen != nil {
					seen(j.GetName())
				}
				now := time.Now().UTC().Format(time.RFC3339)
				cond := map[string]any{"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
				st := map[string]any{"startTime": now, "completionTime": now, "succeeded": int64(1)}
				msg := ""
				if fail != nil {
					msg = fail(j.GetName())
				}
				if msg != "" {
					cond = map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": msg, "lastProbeTime": now, "lastTransitionTime": now}
					st = map[string]any{"startTime": now, "failed": int64(1)}
				}
				st["conditions"] = []any{cond}
				j.Object["status"] = st
				if _, err := dyn.Resource(jobsGVR).Namespace(f.ns).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("job controller: %v", err)
				}
			}
		}
	}()
}

// exists reports whether object name of gvr exists in the fixture's
// namespace. It may be called from runJobs' goroutine, so it does not
// stop the test.
func (f *fixture) exists(gvr schema.GroupVersionResource, name string) bool {
	f.t.Helper()
	_, err := f.kc.Dynamic().Resource(gvr).Namespace(f.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Errorf("reading %s %s: %v", gvr.Resource, name, err)
	}
	return err == nil
}

// wantConfigMaps checks which of the ConfigMaps named in want exist, when
// (a step of the test) names the moment in the error.
func (f *fixture) wantConfigMaps(when string, want map[string]bool) {
	f.t.Helper()
	for cm, w := range want {
		if got := f.exists(configMapsGVR, cm); got != w {
			f.t.Errorf("%s: %s exists %v, want %v", when, cm, got, w)
		}
	}
}

// greeting returns data.greeting of ConfigMap name, the value webChart
// renders into its ConfigMaps.
func (f *fixture) greeting(name string) string {
	f.t.Helper()
	cm, err := f.kc.Dynamic().Resource(configMapsGVR).Namespace(f.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	g, _, _ := unstructured.NestedString(cm.Object, "data", "greeting")
	return g
}

// hookApply waits a minute at most for a hook.
var hookApply = deploy.ApplyOptions{Timeout: time.Minute}

// TestChartHooks: a chart deployed by registry reference runs its hooks as
// tiers around its objects: pre-install by weight before the objects (the
// Job waited for until complete), post-install after; pre-upgrade and
// post-upgrade on update; the target's pre-rollback on rollback;
// post-delete on delete. Delete policies hold, hooks are recorded and never
// pruned.
func TestChartHooks(t *testing.T) {
	f := helmFixture(t)
	dyn := f.kc.Dynamic()
	ctx := context.Background()
	var mu sync.Mutex
	var runs []string // per Job run: what existed while it ran
	f.runJobs(nil, func(name string) {
		var s []string
		for _, cm := range []string{"web-pre", "web-upgrade", "web-app", "web-post"} {
			if f.exists(configMapsGVR, cm) {
				s = append(s, cm)
			}
		}
		mu.Lock()
		runs = append(runs, name+": "+strings.Join(s, " "))
		mu.Unlock()
	})

	res := f.deploy("web", deploy.Source{Input: release.Input{Ref: "web:v1"}}, hookApply)
	if got := hookNames(res.Hooks); got != "pre-install -1 ConfigMap/web-pre, pre-install 5 Job/web-migrate, post-install 0 ConfigMap/web-post" {
		t.Errorf("install hooks run: %s", got)
	}
	// The Job ran after the weight -1 tier and before the objects.
	mu.Lock()
	if len(runs) != 1 || runs[0] != "web-migrate: web-pre" {
		t.Errorf("install: job runs %q, want one seeing only web-pre", runs)
	}
	mu.Unlock()
	f.wantConfigMaps("after install", map[string]bool{"web-pre": false, "web-app": true, "web-post": true, "web-upgrade": false, "web-rollback": false})
	job1, err := dyn.Resource(jobsGVR).Namespace(f.ns).Get(ctx, "web-migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Job (before-hook-creation) stays after it ran: %v", err)
	}
	if job1.GetLabels()[deploy.LabelDeployment] != "web" {
		t.Errorf("hook labels: %v", job1.GetLabels())
	}
	hist := f.history("web")
	if len(hist[0].Resources) != 1 || hist[0].Resources[0].Name != "web-app" || len(hist[0].Hooks) != 6 {
		t.Errorf("revision 1: resources %v, %d hooks recorded; want web-app only and 6 hooks", hist[0].Resources, len(hist[0].Hooks))
	}
	if !strings.Contains(f.log.String(), "pre-install hooks, weight -1: ConfigMap "+f.ns+"/web-pre") {
		t.Errorf("log:\n%s", f.log)
	}

	// Update: upgrade hooks; the Job deleted before it is created again.
	up, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "web", Source: deploy.Source{Properties: map[string]any{"greeting": "hi"}}, ApplyOptions: hookApply})
	if err != nil {
		t.Fatal(err)
	}
	if got := hookNames(up.Hooks); got != "pre-upgrade 0 ConfigMap/web-upgrade, pre-upgrade 5 Job/web-migrate, post-upgrade 0 ConfigMap/web-post" {
		t.Errorf("upgrade hooks run: %s", got)
	}
	job2, err := dyn.Resource(jobsGVR).Namespace(f.ns).Get(ctx, "web-migrate", metav1.GetOptions{})
	if err != nil || job2.GetUID() == job1.GetUID() {
		t.Errorf("upgrade: the Job was not created again (%v)", err)
	}
	mu.Lock()
	if len(runs) != 2 || runs[1] != "web-migrate: web-upgrade web-app web-post" {
		t.Errorf("upgrade: job runs %q", runs)
	}
	mu.Unlock()
	if f.exists(configMapsGVR, "web-pre") {
		t.Error("upgrade ran a pre-install-only hook")
	}
	if g := f.greeting("web-post"); g != "hi" {
		t.Errorf("post-upgrade hook: greeting %q, want the new value", g)
	}

	// Rollback runs the target's pre-rollback hook.
	if _, err := f.c.Rollback(ctx, "web", 1, hookApply); err != nil {
		t.Fatal(err)
	}
	if !f.exists(configMapsGVR, "web-rollback") {
		t.Error("rollback: the pre-rollback hook did not run")
	}
	if hist := f.history("web"); len(hist) != 3 || len(hist[2].Hooks) != 6 {
		t.Errorf("rollback: %d revisions, hooks %d", len(hist), len(hist[len(hist)-1].Hooks))
	}

	// Delete: the objects go, the post-delete hook runs; hooks stay, as
	// with helm uninstall.
	if _, err := f.c.Delete(ctx, "web", deploy.DeleteOptions{Wait: true, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f.wantConfigMaps("after delete", map[string]bool{"web-app": false, "web-deleted": true, "web-post": true})
}

// TestChartHookFails: a failed hook Job fails the deploy with an error
// naming the hook and the Job's condition; nothing after it is applied,
// and hook-failed deletes the Job.
func TestChartHookFails(t *testing.T) {
	f := helmFixture(t)
	f.runJobs(func(string) string { return "Job has reached the specified backoff limit" }, nil)
	_, err := f.c.Deploy(context.Background(), deploy.DeployOptions{
		Name: "web", Source: deploy.Source{Input: release.Input{Ref: "web:v1"}, Properties: map[string]any{"jobPolicy": "hook-failed"}},
		ApplyOptions: hookApply,
	})
	want := "pre-install hook Job.batch " + f.ns + "/web-migrate (weight 5, layout path web/web-migrate) failed: Job failed: BackoffLimitExceeded: Job has reached the specified backoff limit"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("deploy: %v\nwant an error with %q", err, want)
	}
	f.wantConfigMaps("after a failed pre-install hook", map[string]bool{"web-app": false, "web-post": false})
	if f.exists(jobsGVR, "web-migrate") {
		t.Error("hook-failed: the failed Job was not deleted")
	}
	if hist := f.history("web"); len(hist) != 1 || hist[0].Status != release.StatusFailed || !strings.Contains(hist[0].Description, "web-migrate") {
		t.Errorf("history: %s", statuses(hist))
	}
}

// TestPreDeleteHookFails: a failed pre-delete hook stops dm delete before
// anything is deleted or the history changes.
func TestPreDeleteHookFails(t *testing.T) {
	f := helmFixture(t)
	f.runJobs(func(name string) string {
		if name == "web-predelete" {
			return "backup failed"
		}
		return ""
	}, nil)
	f.deploy("web", deploy.Source{Input: release.Input{Ref: "web:v1"}, Properties: map[string]any{"preDeleteJob": true}}, hookApply)
	_, err := f.c.Delete(context.Background(), "web", deploy.DeleteOptions{Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "nothing was deleted") || !strings.Contains(err.Error(), "pre-delete hook Job.batch "+f.ns+"/web-predelete") || !strings.Contains(err.Error(), "backup failed") {
		t.Fatalf("delete: %v", err)
	}
	f.wantConfigMaps("after a failed pre-delete hook", map[string]bool{"web-app": true, "web-deleted": false})
	if hist := f.history("web"); statuses(hist) != "1:deployed" {
		t.Errorf("history after a refused delete: %s", statuses(hist))
	}
}

// TestHookOwnership: a hook whose object exists and belongs to no dm
// deployment is refused before anything is applied, as any object.
func TestHookOwnership(t *testing.T) {
	f := helmFixture(t)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web-pre", "namespace": f.ns}}}
	if _, err := f.kc.Dynamic().Resource(configMapsGVR).Namespace(f.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := f.c.Deploy(context.Background(), deploy.DeployOptions{Name: "web", Source: deploy.Source{Input: release.Input{Ref: "web:v1"}}})
	if !errors.Is(err, derrors.Conflict) || !strings.Contains(err.Error(), "web-pre") {
		t.Fatalf("deploy over a foreign hook object: %v", err)
	}
	if f.exists(jobsGVR, "web-migrate") {
		t.Error("a hook was applied")
	}
	if _, err := f.c.Revisions(context.Background(), "web"); !errors.Is(err, derrors.NotFound) {
		t.Errorf("a revision was recorded: %v", err)
	}
}

// hookNames lists hooks as "EVENT WEIGHT Kind/name", comma-separated.
func hookNames(hs []deploy.Hook) string {
	var s []string
	for _, h := range hs {
		s = append(s, fmt.Sprintf("%s %d %s/%s", h.Event, h.Weight, kube.RefOf(h.Object).Kind, h.Object.GetName()))
	}
	return strings.Join(s, ", ")
}

// TestChartHooksClientDryRun: a client dry run lists the hooks the action
// would run, with their event, weight and layout path, in the order it
// would run them; it applies and records nothing.
func TestChartHooksClientDryRun(t *testing.T) {
	f := helmFixture(t)
	res, err := f.c.Deploy(context.Background(), deploy.DeployOptions{Name: "web", Source: deploy.Source{Input: release.Input{Ref: "web:v1"}}, ApplyOptions: deploy.ApplyOptions{DryRun: "client"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := hookNames(res.Hooks); got != "pre-install -1 ConfigMap/web-pre, pre-install 5 Job/web-migrate, post-install 0 ConfigMap/web-post" {
		t.Errorf("hooks: %s", got)
	}
	if len(res.Hooks) > 1 && res.Hooks[1].Path != "web/web-migrate" {
		t.Errorf("hook path %q, want web/web-migrate", res.Hooks[1].Path)
	}
	if got := f.labelled("web", "configmaps", "jobs.batch"); len(got) != 0 || res.Record != nil {
		t.Errorf("client dry run applied %v, record %v", got, res.Record)
	}
}

// TestChartHooksServerDryRun: a server dry run sends the action's hooks to
// the server in dry runs too, without waiting for them (no Job controller
// runs here), and a hook the server refuses fails it naming the hook. A
// hook the real run deletes first (before-hook-creation) is checked as
// created anew, so a Job whose template changed is not refused as
// immutable.
func TestChartHooksServerDryRun(t *testing.T) {
	f := helmFixture(t)
	ctx := context.Background()
	dry := deploy.ApplyOptions{DryRun: "server"}
	res, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "web", Source: deploy.Source{Input: release.Input{Ref: "web:v1"}}, ApplyOptions: dry})
	if err != nil {
		t.Fatal(err)
	}
	if got := hookNames(res.Hooks); got != "pre-install -1 ConfigMap/web-pre, pre-install 5 Job/web-migrate, post-install 0 ConfigMap/web-post" {
		t.Errorf("hooks: %s", got)
	}
	if got := f.labelled("web", "configmaps", "jobs.batch"); len(got) != 0 {
		t.Errorf("server dry run created %v", got)
	}
	if _, err := f.c.Revisions(ctx, "web"); !errors.Is(err, derrors.NotFound) {
		t.Errorf("server dry run recorded a revision: %v", err)
	}

	for _, event := range []string{"pre-install", "post-install"} {
		t.Run("refused "+event, func(t *testing.T) {
			_, err := f.c.Deploy(ctx, deploy.DeployOptions{Name: "web", Source: deploy.Source{Input: release.Input{Ref: "web:v1"}, Properties: map[string]any{"badHook": event}}, ApplyOptions: dry})
			want := event + " hook ConfigMap " + f.ns + "/web-bad (weight 0, layout path web/web-bad)"
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "bogus") {
				t.Fatalf("dry run with a hook the server refuses: %v\nwant an error with %q and the field", err, want)
			}
			if got := f.labelled("web", "configmaps", "jobs.batch"); len(got) != 0 {
				t.Errorf("server dry run created %v", got)
			}
		})
	}

	// Deployed, the Job stays (before-hook-creation); an update's dry run
	// with another image checks it as the real run makes it: created
	// after the old one is deleted.
	f.runJobs(nil, nil)
	f.deploy("web", deploy.Source{Input: release.Input{Ref: "web:v1"}}, hookApply)
	job1, err := f.kc.Dynamic().Resource(jobsGVR).Namespace(f.ns).Get(ctx, "web-migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	up, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "web", Source: deploy.Source{Properties: map[string]any{"jobImage": "alpine"}}, ApplyOptions: dry})
	if err != nil {
		t.Fatalf("update dry run with a changed hook Job: %v", err)
	}
	if got := hookNames(up.Hooks); got != "pre-upgrade 0 ConfigMap/web-upgrade, pre-upgrade 5 Job/web-migrate, post-upgrade 0 ConfigMap/web-post" {
		t.Errorf("upgrade hooks: %s", got)
	}
	job2, err := f.kc.Dynamic().Resource(jobsGVR).Namespace(f.ns).Get(ctx, "web-migrate", metav1.GetOptions{})
	if err != nil || job2.GetUID() != job1.GetUID() || job2.GetResourceVersion() != job1.GetResourceVersion() {
		t.Errorf("the update's dry run changed the hook Job (%v)", err)
	}
	if f.exists(configMapsGVR, "web-upgrade") {
		t.Error("the update's dry run created the pre-upgrade hook")
	}
	// A rollback's dry run checks the target revision's rollback hooks.
	back, err := f.c.Rollback(ctx, "web", 1, dry)
	if err != nil {
		t.Fatalf("rollback dry run: %v", err)
	}
	if got := hookNames(back.Hooks); got != "pre-rollback 0 ConfigMap/web-rollback" {
		t.Errorf("rollback hooks: %s", got)
	}
	if f.exists(configMapsGVR, "web-rollback") || statuses(f.history("web")) != "1:deployed" {
		t.Errorf("the rollback's dry run ran its hook or recorded a revision: %s", statuses(f.history("web")))
	}
	// A hook that stays (hook-failed: not deleted first) is checked as an
	// apply over the live object, as the real run applies it: the Job's
	// template cannot change.
	_, err = f.c.Update(ctx, deploy.UpdateOptions{Name: "web", Source: deploy.Source{Properties: map[string]any{"jobImage": "alpine", "jobPolicy": "hook-failed"}}, ApplyOptions: dry})
	if err == nil || !strings.Contains(err.Error(), "pre-upgrade hook Job.batch "+f.ns+"/web-migrate (weight 5, layout path web/web-migrate)") || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("update dry run applying over a Job with another template: %v", err)
	}
}

// TestImportedChartUpdate: a release installed by helm and adopted with
// dm import helm records its chart's files and values; dm update with new
// values only renders that chart again (helm.Engine attached to the
// expander) and deploys it as revision 2: new values applied, what the
// chart no longer makes pruned, upgrade hooks run.
func TestImportedChartUpdate(t *testing.T) {
	f := helmFixture(t)
	ctx := context.Background()
	dyn := f.kc.Dynamic()
	dir := t.TempDir()
	files := maps.Clone(webChart)
	files["templates/extra.yaml"] = "{{ if .Values.extra }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\n{{ end }}\n"
	for name, body := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	helmtest.Install(t, f.env.Kubeconfig, "install", "web", dir, "-n", f.ns, "--no-hooks", "--set", "extra=true", "--set", "greeting=bonjour")

	rel, err := helmimport.Read(ctx, dyn, f.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if rel.NoChartFiles != "" || rel.ChartFiles["templates/extra.yaml"] != files["templates/extra.yaml"] || !strings.Contains(rel.ChartFiles["Chart.yaml"], "name: web") {
		t.Fatalf("chart files from Helm's record: %q %v", rel.NoChartFiles, rel.ChartFiles)
	}
	if _, err := f.c.Import(ctx, deploy.ImportOptions{
		Name: "web", Objects: rel.Objects, Properties: rel.Values, Type: "helm:web@1.0.0", TakeOver: []string{helmimport.FieldManager},
		Input: release.Input{Chart: &release.Chart{Name: rel.Chart, Version: rel.ChartVersion, Files: rel.ChartFiles}},
	}); err != nil {
		t.Fatal(err)
	}
	f.runJobs(nil, nil)

	// New values only: the recorded chart is the input.
	res, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "web", Source: deploy.Source{Properties: map[string]any{"greeting": "hi"}}, ApplyOptions: hookApply})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Revision != 2 || len(res.Pruned) != 1 || res.Pruned[0].Name != "web-extra" {
		t.Errorf("update: revision %d, pruned %v; want revision 2 pruning web-extra (extra is no longer set)", res.Record.Revision, res.Pruned)
	}
	if got := hookNames(res.Hooks); got != "pre-upgrade 0 ConfigMap/web-upgrade, pre-upgrade 5 Job/web-migrate, post-upgrade 0 ConfigMap/web-post" {
		t.Errorf("upgrade hooks run: %s", got)
	}
	cm, err := dyn.Resource(configMapsGVR).Namespace(f.ns).Get(ctx, "web-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, _, _ := unstructured.NestedString(cm.Object, "data", "greeting"); g != "hi" || cm.GetLabels()[deploy.LabelDeployment] != "web" {
		t.Errorf("web-app after update: greeting %q, labels %v", g, cm.GetLabels())
	}
	hist := f.history("web")
	if statuses(hist) != "1:superseded 2:deployed" || hist[1].Input.Chart == nil || len(hist[1].Input.Chart.Files) == 0 {
		t.Errorf("history %s; revision 2 input %+v", statuses(hist), hist[1].Input)
	}

	// --reuse-properties merges over the recorded values; a third update
	// renders from revision 2's record.
	if _, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "web", ReuseProperties: true, Source: deploy.Source{Properties: map[string]any{"extra": true}}, ApplyOptions: hookApply}); err != nil {
		t.Fatal(err)
	}
	if !f.exists(configMapsGVR, "web-extra") {
		t.Error("revision 3: web-extra not applied")
	}
	if g := f.greeting("web-app"); g != "hi" {
		t.Errorf("revision 3: greeting %q, want revision 2's hi kept", g)
	}
}

// TestImportedChartWithoutFiles: an imported release whose chart was not
// recorded is refused by dm update without an input, saying why.
func TestImportedChartWithoutFiles(t *testing.T) {
	f := helmFixture(t)
	ctx := context.Background()
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "old"}}
	if _, err := f.c.Import(ctx, deploy.ImportOptions{
		Name: "old", Objects: []map[string]any{obj}, Type: "helm:old@1.0.0",
		Input: release.Input{Chart: &release.Chart{Name: "old", Version: "1.0.0", From: "helm release old revision 1"}},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := f.c.Update(ctx, deploy.UpdateOptions{Name: "old", Source: deploy.Source{Properties: map[string]any{"a": 1}}})
	if !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), "without the chart's files") {
		t.Errorf("update: %v", err)
	}
}
