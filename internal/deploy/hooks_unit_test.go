package deploy

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func hookObject(kind, name string, ann map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name}
	if ann != nil {
		md["annotations"] = ann
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md}}
}

func TestHookOf(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]any
		ok   bool
		want string // events|weight|policies
	}{
		{"ordinary object", nil, false, ""},
		{"other annotations", map[string]any{"a": "b"}, false, ""},
		{"defaults", map[string]any{AnnotationHook: "pre-install"}, true, "pre-install|0|before-hook-creation"},
		{"spaces and lists", map[string]any{AnnotationHook: " pre-install , pre-upgrade,", AnnotationHookWeight: " -5 ", AnnotationHookDeletePolicy: "hook-succeeded, hook-failed"},
			true, "pre-install,pre-upgrade|-5|hook-succeeded,hook-failed"},
		// Helm reads a weight that is no integer as 0.
		{"bad weight", map[string]any{AnnotationHook: "post-install", AnnotationHookWeight: "high"}, true, "post-install|0|before-hook-creation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok := hookOf(hookObject("ConfigMap", "c", tt.ann))
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			got := strings.Join(h.events, ",") + "|" + strconv.Itoa(h.weight) + "|" + strings.Join(h.policies, ",")
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestTiers: an event's hooks by weight, then name, one tier per weight;
// hooks of other events left out.
func TestTiers(t *testing.T) {
	p := &plan{}
	for _, h := range []struct{ kind, name, events, weight string }{
		{"Job", "b-job", "pre-install,pre-upgrade", "5"},
		{"ConfigMap", "z-cm", "pre-install", "-1"},
		{"ServiceAccount", "a-sa", "pre-install", "-1"},
		{"ConfigMap", "a-cm", "post-install", "0"},
		{"Job", "a-job", "pre-upgrade", "5"},
	} {
		u := hookObject(h.kind, h.name, map[string]any{AnnotationHook: h.events, AnnotationHookWeight: h.weight})
		hk, _ := hookOf(u)
		p.hooks = append(p.hooks, &object{obj: u, hook: &hk})
	}
	show := func(event string) string {
		var tiers []string
		for _, tier := range p.tiers(event) {
			var names []string
			for _, o := range tier {
				names = append(names, o.obj.GetName())
			}
			tiers = append(tiers, "["+strings.Join(names, " ")+"]")
		}
		return strings.Join(tiers, "")
	}
	for event, want := range map[string]string{
		"pre-install":  "[a-sa z-cm][b-job]",
		"pre-upgrade":  "[a-job b-job]",
		"post-install": "[a-cm]",
		"pre-delete":   "",
	} {
		if got := show(event); got != want {
			t.Errorf("%s: %s, want %s", event, got, want)
		}
	}
	if n := len(p.actionHooks(actionUpgrade)); n != 2 {
		t.Errorf("upgrade hooks: %d, want 2", n)
	}
}

func TestHookDone(t *testing.T) {
	job := func(conds ...map[string]any) *unstructured.Unstructured {
		u := hookObject("Job", "j", nil)
		var l []any
		for _, c := range conds {
			l = append(l, c)
		}
		u.Object["status"] = map[string]any{"conditions": l}
		return u
	}
	pod := func(status map[string]any) *unstructured.Unstructured {
		u := hookObject("Pod", "p", nil)
		u.Object["status"] = status
		return u
	}
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		done   bool
		failed string
	}{
		{"job running", job(), false, ""},
		{"job suspended", job(map[string]any{"type": "Suspended", "status": "True"}), false, ""},
		{"job complete", job(map[string]any{"type": "Complete", "status": "True"}), true, ""},
		{"job complete false", job(map[string]any{"type": "Complete", "status": "False"}), false, ""},
		{"job failed", job(map[string]any{"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"}),
			true, "Job failed: DeadlineExceeded: Job was active longer than specified deadline"},
		{"job failed without words", job(map[string]any{"type": "Failed", "status": "True"}), true, "Job failed: no reason given"},
		{"pod running", pod(map[string]any{"phase": "Running"}), false, ""},
		{"pod succeeded", pod(map[string]any{"phase": "Succeeded"}), true, ""},
		{"pod failed", pod(map[string]any{"phase": "Failed", "message": "exit code 3"}), true, "Pod failed: exit code 3"},
		{"other kinds are done once applied", hookObject("ConfigMap", "c", nil), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, failed := hookDone(tt.obj)
			if done != tt.done || failed != tt.failed {
				t.Errorf("got %v %q, want %v %q", done, failed, tt.done, tt.failed)
			}
		})
	}
}
