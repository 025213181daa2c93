package kube

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// statusOf computes the kstatus status of a live object.
func statusOf(ref ObjectRef, obj *unstructured.Unstructured) Status {
	if obj == nil {
		return Status{Ref: ref, Status: status.NotFoundStatus.String(), Message: "not found"}
	}
	res, err := status.Compute(obj)
	if err != nil {
		return Status{Ref: ref, Status: status.UnknownStatus.String(), Message: err.Error()}
	}
	return Status{Ref: ref, Status: res.Status.String(), Message: res.Message}
}
