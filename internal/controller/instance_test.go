package controller

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
)

func TestUnready(t *testing.T) {
	st := func(kind, name, status string) kube.Status {
		return kube.Status{Ref: kube.ObjectRef{Kind: kind, Name: name}, Status: status}
	}
	for _, tt := range []struct {
		in   []kube.Status
		want string
	}{
		{nil, ""},
		{[]kube.Status{st("ConfigMap", "a", kube.Current)}, ""},
		{[]kube.Status{st("ConfigMap", "a", kube.Current), st("Deployment", "web", "InProgress")}, "unready: Deployment web"},
		{[]kube.Status{st("Deployment", "web", "InProgress"), st("Service", "s", "Unknown"), st("Pod", "p", "NotFound")},
			"unready: Deployment web, and 2 more"},
		// What failed comes first, with why.
		{[]kube.Status{st("Deployment", "web", "InProgress"), st("Service", "s", "Unknown"), st("Job", "j", "Failed"), st("Pod", "p", "NotFound")},
			"unready: Job j (Failed), and 3 more"},
		{[]kube.Status{{Ref: kube.ObjectRef{Kind: "ComputeInstance", Name: "vm"}, Status: "Failed", Message: "UpdateFailed: googleapi: Error 403: forbidden"}},
			"unready: ComputeInstance vm (Failed: UpdateFailed: googleapi: Error 403: forbidden)"},
	} {
		if got := unready(tt.in); got != tt.want {
			t.Errorf("unready(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStalledOrRetried(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no"))
	for _, tt := range []struct {
		err    error
		stall  bool
		reason string
	}{
		{errNoAccount, true, "NoServiceAccount"},
		{fmt.Errorf("apply: %w", forbidden), true, "Forbidden"},
		{fmt.Errorf("schema: %w", derrors.InvalidArgument), true, "Invalid"},
		{fmt.Errorf("worker: %w", derrors.LimitExceeded), true, "LimitExceeded"},
		{fmt.Errorf("registry: %w", derrors.Unavailable), false, "Failed"},
		{errors.New("connection refused"), false, "Failed"},
	} {
		if got := stalled(tt.err); got != tt.stall {
			t.Errorf("stalled(%v) = %v, want %v", tt.err, got, tt.stall)
		}
		if got := reason(tt.err); got != tt.reason {
			t.Errorf("reason(%v) = %q, want %q", tt.err, got, tt.reason)
		}
	}
}
