// Package kcctest gives tests Config Connector on a test apiserver
// (internal/deploy/kubetest), as far as a cluster without Google Cloud can
// have it: the vendored CustomResourceDefinitions of the kinds
// internal/gcp maps to (third_party/kcc), so that the apiserver validates
// Config Connector objects as a real cluster does, and Controller, a
// stand-in for Config Connector's controller that marks the objects of a
// namespace Ready and writes their status (status.selfLink,
// status.observedState, ...) as KCC does once Google Cloud has made the
// resource, or makes them fail as KCC reports a refused call.
package kcctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/third_party/kcc"
)

// CRD is one vendored CustomResourceDefinition.
type CRD struct {
	Name, Group, Kind, Plural string
	Versions                  []string
	YAML                      []byte
}

// CRDs reads the vendored CustomResourceDefinitions, by kind.
func CRDs() (map[string]CRD, error) {
	files, err := fs.Glob(kcc.CRDs, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[string]CRD{}
	for _, f := range files {
		b, err := kcc.CRDs.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd struct {
			Metadata struct{ Name string }
			Spec     struct {
				Group    string
				Names    struct{ Kind, Plural string }
				Versions []struct{ Name string }
			}
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		c := CRD{Name: crd.Metadata.Name, Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Plural: crd.Spec.Names.Plural, YAML: b}
		for _, v := range crd.Spec.Versions {
			c.Versions = append(c.Versions, v.Name)
		}
		out[c.Kind] = c
	}
	return out, nil
}

// InstallCRDs applies the vendored CRDs of kinds (every one when none is
// named) to env and waits until each is established. It returns the CRDs
// installed, by kind.
func InstallCRDs(t testing.TB, env *kubetest.Env, kinds ...string) map[string]CRD {
	t.Helper()
	all, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) == 0 {
		for k := range all {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
	}
	out := map[string]CRD{}
	for _, k := range kinds {
		c, ok := all[k]
		if !ok {
			t.Fatalf("kcctest: no vendored CRD of kind %s", k)
		}
		out[k] = c
		if err := apply(env, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+c.Name+"?fieldManager=kcctest&force=true", c.YAML); err != nil {
			t.Fatalf("kcctest: installing the CRD of %s: %v", k, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, k := range kinds {
		for {
			code, body, err := env.Do(context.Background(), env.AdminToken, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+out[k].Name, nil)
			if err == nil && code == http.StatusOK && bytes.Contains(body, []byte(`"type":"Established","status":"True"`)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kcctest: the CRD of %s is not established after 2 minutes", k)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return out
}

// apply sends body (YAML or JSON) to path as a server-side apply.
func apply(env *kubetest.Env, path string, body []byte) error {
	return send(env, http.MethodPatch, path, "application/apply-patch+yaml", body)
}

// ApplyStrict sends body (YAML or JSON) to path as the admin's server-side
// apply with strict field validation, as dm deploy applies: an unknown
// field is refused. The error is the apiserver's message.
func ApplyStrict(env *kubetest.Env, path string, body []byte) error {
	return send(env, http.MethodPatch, path+"?fieldManager=dm-test&force=true&fieldValidation=Strict", "application/apply-patch+yaml", body)
}

// send sends body to path as the admin; an answer of 300 or more is an
// error with the apiserver's message.
func send(env *kubetest.Env, method, path, contentType string, body []byte) error {
	req, err := http.NewRequest(method, env.Server+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := env.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var st struct{ Message string }
		if json.Unmarshal(data, &st) == nil && st.Message != "" {
			return fmt.Errorf("%d: %s", resp.StatusCode, st.Message)
		}
		return fmt.Errorf("%d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	return nil
}

// Controller stands in for Config Connector's controller in a namespace:
// every object of its kinds whose status does not speak of its current
// generation is made Ready (condition Ready True, reason UpToDate, its
// observedGeneration, status.selfLink and what Status returns), or fails
// as KCC reports a refused call when Fail says so.
type Controller struct {
	Env       *kubetest.Env
	Namespace string
	// Kinds are the kinds it reconciles (their CRDs must be installed).
	Kinds []string
	// Status returns the status fields beside conditions,
	// observedGeneration and selfLink a ready object gets (status.
	// observedState for a kind whose live values KCC writes there); nil
	// gives none.
	Status func(obj map[string]any) map[string]any
	// Spec returns the fields Config Connector writes into the spec of an
	// object annotated cnrm.cloud.google.com/state-into-spec: merge (the
	// values Google Cloud chose); nil writes none.
	Spec func(obj map[string]any) map[string]any
	// Fail returns the message of the error Google Cloud answers for obj
	// ("googleapi: Error 403: ..."), or "" when it succeeds.
	Fail func(obj map[string]any) string
	// Delay is how long after it first sees an object it makes it ready
	// (default none); Interval how often it looks (default 200ms).
	Delay, Interval time.Duration
	// Deleted, when set, makes the controller hold Finalizer on every
	// object, as KCC does, and, once an object is being deleted, call
	// Deleted with its kind, name and the value of its
	// cnrm.cloud.google.com/deletion-policy annotation then (what KCC
	// reads to decide whether to delete the Google Cloud resource) before
	// releasing it.
	Deleted func(kind, name, policy string)

	mu   sync.Mutex
	seen map[string]time.Time
}

// Finalizer is the finalizer the stand-in holds on objects when
// Controller.Deleted is set: Config Connector's.
const Finalizer = "cnrm.cloud.google.com/finalizer"

// Start runs the controller until the test ends.
func (c *Controller) Start(t testing.TB) {
	t.Helper()
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if c.Interval == 0 {
		c.Interval = 200 * time.Millisecond
	}
	c.seen = map[string]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, k := range c.Kinds {
				crd, ok := crds[k]
				if !ok {
					continue
				}
				c.reconcileKind(ctx, t, crd)
			}
			select {
			case <-ctx.Done():
			case <-time.After(c.Interval):
			}
		}
	}()
}

// reconcileKind reconciles the objects of one kind.
func (c *Controller) reconcileKind(ctx context.Context, t testing.TB, crd CRD) {
	for _, version := range crd.Versions {
		base := "/apis/" + crd.Group + "/" + version + "/namespaces/" + c.Namespace + "/" + crd.Plural
		code, body, err := c.Env.Do(ctx, c.Env.AdminToken, http.MethodGet, base, nil)
		if err != nil || code != http.StatusOK {
			continue
		}
		var list struct{ Items []map[string]any }
		if err := json.Unmarshal(body, &list); err != nil {
			continue
		}
		for _, obj := range list.Items {
			if err := c.reconcile(base, crd, obj); err != nil && ctx.Err() == nil {
				t.Logf("kcctest: %s: %v", crd.Kind, err)
			}
		}
		return // the objects of every version are the same objects
	}
}

// reconcile makes obj ready (or failed) once.
func (c *Controller) reconcile(base string, crd CRD, obj map[string]any) error {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	path := base + "/" + name
	if c.Deleted != nil {
		var fins []any
		held := false
		for _, f := range asList(md["finalizers"]) {
			if f == Finalizer {
				held = true
			} else {
				fins = append(fins, f)
			}
		}
		switch {
		case md["deletionTimestamp"] != nil && held:
			ann, _ := md["annotations"].(map[string]any)
			policy, _ := ann["cnrm.cloud.google.com/deletion-policy"].(string)
			c.Deleted(crd.Kind, name, policy)
			return c.setFinalizers(path, md, fins)
		case md["deletionTimestamp"] == nil && !held:
			return c.setFinalizers(path, md, append(fins, Finalizer))
		}
	}
	if md["deletionTimestamp"] != nil {
		return nil
	}
	gen, _ := md["generation"].(float64)
	st, _ := obj["status"].(map[string]any)
	if og, _ := st["observedGeneration"].(float64); og == gen && st["conditions"] != nil {
		return nil
	}
	key := crd.Kind + "/" + name
	c.mu.Lock()
	first, ok := c.seen[key]
	if !ok {
		first = time.Now()
		c.seen[key] = first
	}
	c.mu.Unlock()
	if time.Since(first) < c.Delay {
		return nil
	}
	ann, _ := md["annotations"].(map[string]any)
	if c.Spec != nil && ann["cnrm.cloud.google.com/state-into-spec"] == "merge" {
		if spec := c.Spec(obj); len(spec) > 0 {
			b, _ := json.Marshal(map[string]any{"spec": spec})
			if err := send(c.Env, http.MethodPatch, path+"?fieldManager=cnrm-controller-manager", "application/merge-patch+json", b); err != nil {
				return err
			}
			return nil // the next look sees the new generation
		}
	}
	status := map[string]any{}
	if c.Status != nil {
		for k, v := range c.Status(obj) {
			status[k] = v
		}
	}
	cond := map[string]any{"type": "Ready", "status": "True", "reason": "UpToDate", "message": "The resource is up to date",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if c.Fail != nil {
		if msg := c.Fail(obj); msg != "" {
			cond["status"], cond["reason"] = "False", "UpdateFailed"
			cond["message"] = "Update call failed: error applying desired state: " + msg
		}
	}
	if cond["status"] == "True" {
		project, _ := ann["cnrm.cloud.google.com/project-id"].(string)
		if _, ok := status["selfLink"]; !ok {
			status["selfLink"] = SelfLink(crd, project, name)
		}
	}
	status["conditions"] = []any{cond}
	status["observedGeneration"] = gen
	b, _ := json.Marshal(map[string]any{"status": status})
	return send(c.Env, http.MethodPatch, path+"/status?fieldManager=cnrm-controller-manager", "application/merge-patch+json", b)
}

// setFinalizers writes an object's finalizers, at the resourceVersion it
// was read at (a conflict waits for the next look).
func (c *Controller) setFinalizers(path string, md map[string]any, fins []any) error {
	if fins == nil {
		fins = []any{}
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fins, "resourceVersion": md["resourceVersion"]}})
	return send(c.Env, http.MethodPatch, path+"?fieldManager=cnrm-controller-manager", "application/merge-patch+json", b)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// SelfLink is the status.selfLink the stand-in writes for an object of
// crd named name in project.
func SelfLink(crd CRD, project, name string) string {
	service := strings.TrimSuffix(crd.Group, ".cnrm.cloud.google.com")
	return "https://www.googleapis.com/" + service + "/v1/projects/" + project + "/" + crd.Plural + "/" + name
}
