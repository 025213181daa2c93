package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/gcp"
)

// Status is an object's kstatus readiness.
type Status struct {
	Ref ObjectRef
	// Status is a kstatus status: Current, InProgress, Failed, Terminating,
	// NotFound or Unknown.
	Status  string
	Message string
	// DeletionPolicy is, for a Config Connector object that exists, what
	// deleting it does to its Google Cloud resource: gcp.PolicyAbandon
	// or gcp.PolicyDelete (its cnrm.cloud.google.com/deletion-policy
	// annotation); "" for any other object.
	DeletionPolicy string
}

// Current is the Status of an object that is ready.
const Current = "Current"

// StatusOf computes the readiness of a live object, as Statuses does.
func StatusOf(obj *unstructured.Unstructured) Status {
	return statusOf(RefOf(obj), obj)
}

// statusOf computes the kstatus status of a live object.
func statusOf(ref ObjectRef, obj *unstructured.Unstructured) Status {
	st := statusOf1(ref, obj)
	if obj != nil && IsConfigConnector(ref.Group) {
		st.DeletionPolicy = gcp.DeletionPolicyOf(obj.GetAnnotations())
	}
	return st
}

func statusOf1(ref ObjectRef, obj *unstructured.Unstructured) Status {
	if obj == nil {
		return Status{Ref: ref, Status: status.NotFoundStatus.String(), Message: "not found"}
	}
	res, err := status.Compute(obj)
	if err != nil {
		return Status{Ref: ref, Status: status.UnknownStatus.String(), Message: err.Error()}
	}
	if IsConfigConnector(ref.Group) && (res.Status == status.CurrentStatus || res.Status == status.InProgressStatus) {
		return configConnectorStatus(ref, obj, res)
	}
	return Status{Ref: ref, Status: res.Status.String(), Message: res.Message}
}

// IsConfigConnector reports whether group is one of Config Connector's
// (compute.cnrm.cloud.google.com).
func IsConfigConnector(group string) bool {
	return strings.HasSuffix(group, ".cnrm.cloud.google.com")
}

// configConnectorFailures are the reasons of a Config Connector object's
// Ready condition that need someone to act (a refused call, an invalid
// reference, a resource another object manages): Failed rather than
// InProgress, although KCC retries them.
var configConnectorFailures = map[string]bool{
	"UpdateFailed": true, "DeleteFailed": true, "DependencyInvalid": true, "ManagementConflict": true,
}

// configConnectorStatus reads a Config Connector object's Ready condition,
// which its controller sets once it has reconciled the object with Google
// Cloud: only Ready True is Current. Without the condition (kstatus would
// call it Current) the object waits for the controller; Ready False says
// KCC's reason and message ("UpdateFailed: Update call failed: ...
// googleapi: Error 403: ...").
func configConnectorStatus(ref ObjectRef, obj *unstructured.Unstructured, res *status.Result) Status {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		if reason != "" {
			msg = strings.TrimSuffix(reason+": "+msg, ": ")
		}
		switch {
		case m["status"] == "True" && res.Status == status.CurrentStatus:
			return Status{Ref: ref, Status: Current, Message: msg}
		case m["status"] == "True":
			return Status{Ref: ref, Status: res.Status.String(), Message: res.Message}
		case configConnectorFailures[reason]:
			return Status{Ref: ref, Status: status.FailedStatus.String(), Message: msg}
		}
		return Status{Ref: ref, Status: status.InProgressStatus.String(), Message: msg}
	}
	return Status{Ref: ref, Status: status.InProgressStatus.String(),
		Message: "Config Connector has not reconciled it yet (no Ready condition; is Config Connector running and watching this namespace?)"}
}

// Statuses returns the live kstatus status of each ref, in order. Refs that
// share a kind and namespace, four or more, are read with one LIST. An
// object that cannot be read has status Unknown with the reason as its
// message; the error is only that of ctx.
func (c *Client) Statuses(ctx context.Context, refs []ObjectRef) ([]Status, error) {
	out := make([]Status, len(refs))
	var single []int
	var lists [][]int
	for _, g := range groupByKind(refs) {
		if len(g) >= 4 {
			lists = append(lists, g)
		} else {
			single = append(single, g...)
		}
	}
	var mu sync.Mutex
	parallel(c.cfg.Concurrency, indexes(len(lists)), func(l int) {
		g := lists[l]
		objs, err := c.listOf(ctx, refs[g[0]])
		if err != nil {
			mu.Lock()
			single = append(single, g...) // read them one by one instead
			mu.Unlock()
			return
		}
		for _, i := range g {
			out[i] = statusOf(refs[i], objs[refs[i].Name])
		}
	})
	parallel(c.cfg.Concurrency, single, func(i int) { out[i] = c.status(ctx, refs[i]) })
	return out, ctx.Err()
}

// listOf lists the objects of ref's kind in its namespace, by name.
func (c *Client) listOf(ctx context.Context, ref ObjectRef) (map[string]*unstructured.Unstructured, error) {
	m, ns, err := c.resource(ctx, ref)
	if err != nil {
		return nil, err
	}
	list, err := c.listObjects(ctx, m, ns, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*unstructured.Unstructured, len(list))
	for _, obj := range list {
		out[obj.GetName()] = obj
	}
	return out, nil
}

func (c *Client) status(ctx context.Context, ref ObjectRef) Status {
	obj, err := c.Get(ctx, ref)
	switch {
	case errors.Is(err, derrors.NotFound):
		return statusOf(ref, nil)
	case err != nil:
		var oe *ObjectError
		if errors.As(err, &oe) {
			err = oe.Err
		}
		return Status{Ref: ref, Status: status.UnknownStatus.String(), Message: err.Error()}
	}
	return statusOf(ref, obj)
}

// Wait polls until every ref is Current, calling progress (when not nil)
// for an object each time its status changes, the first time included. When
// ctx ends first, the error names every object that is not Current with its
// status and message. Objects once Current are not polled again.
func (c *Client) Wait(ctx context.Context, refs []ObjectRef, progress func(Status)) error {
	last := make(map[ObjectRef]Status, len(refs))
	todo := append([]ObjectRef(nil), refs...)
	for delay := 100 * time.Millisecond; ; delay = min(delay*3/2, 2*time.Second) {
		sts, _ := c.Statuses(ctx, todo)
		if ctx.Err() != nil {
			break
		}
		next := todo[:0]
		for i, s := range sts {
			if prev, ok := last[s.Ref]; !ok || prev.Status != s.Status || prev.Message != s.Message {
				last[s.Ref] = s
				if progress != nil {
					progress(s)
				}
			}
			if s.Status != Current {
				next = append(next, todo[i])
			}
		}
		todo = next
		if len(todo) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		if ctx.Err() != nil {
			break
		}
	}
	var lines []string
	for _, ref := range todo {
		s, ok := last[ref]
		if !ok {
			s = Status{Ref: ref, Status: status.UnknownStatus.String(), Message: "never read"}
		}
		line := fmt.Sprintf("  %s: %s", ref, s.Status)
		if s.Message != "" {
			line += ": " + s.Message
		}
		lines = append(lines, line)
	}
	return fmt.Errorf("%d of %d objects not ready (%w):\n%s", len(todo), len(refs), ctx.Err(), strings.Join(lines, "\n"))
}
