// Package instance is what a TemplateInstance, or an instance of a kind a
// TemplateDefinition defines, asks to be deployed: its properties (merged
// with its propertiesFrom Secrets and ConfigMaps), the account it applies
// as, and the deploy source. dm-controller applies by it and dm impact
// previews by it, so that both read an instance the same way; it links
// neither controller-runtime nor anything dm's other commands do not.
package instance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/value"
)

// FieldManager is the server-side apply field manager of the objects
// dm-controller applies.
const FieldManager = "dm-controller"

// AnnotationServiceAccount, on an instance of a defined kind, names the
// ServiceAccount (in its namespace) the controller applies it as: the
// instance's spec is all properties, so the account cannot be a spec
// field. Without it, --default-service-account.
const AnnotationServiceAccount = "dm.io/service-account-name"

// StatusFields are the status fields the controller writes on an instance
// of a defined kind; the status template's outputs go beside them, and an
// output of the same name is dropped.
var StatusFields = []string{"observedGeneration", "conditions", "resolved", "digest", "revision", "inventory", "outputs"}

// ErrNoAccount is an instance with no ServiceAccount to apply as.
var ErrNoAccount = errors.New("spec.serviceAccountName is not set and dm-controller runs without --default-service-account: the controller applies only as an instance's ServiceAccount, so that nobody gains rights through it")

// User is the Kubernetes user the instance applies as: its
// ServiceAccount, else defaultAccount (dm-controller's
// --default-service-account) in its namespace.
func User(ti *v1alpha1.TemplateInstance, defaultAccount string) (string, error) {
	sa := ti.Spec.ServiceAccountName
	if sa == "" {
		sa = defaultAccount
	}
	if sa == "" {
		return "", ErrNoAccount
	}
	return "system:serviceaccount:" + ti.Namespace + ":" + sa, nil
}

// Getter reads one object; a deploy.Cluster (as the instance's account)
// is one.
type Getter interface {
	Get(ctx context.Context, ref kube.ObjectRef) (*unstructured.Unstructured, error)
}

// Properties merges spec.properties and then each propertiesFrom source,
// read through cl (as the instance's ServiceAccount); secret are the paths
// of the values that came from Secrets, which status templates do not
// see.
func Properties(ctx context.Context, ti *v1alpha1.TemplateInstance, cl Getter) (map[string]any, [][]string, error) {
	var secret [][]string
	props := map[string]any{}
	if p := ti.Spec.Properties; p != nil && len(p.Raw) > 0 {
		v, err := expand.DecodeValue(p.Raw)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.properties: %w: %w", err, derrors.InvalidArgument)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, nil, fmt.Errorf("spec.properties: want a mapping of property names to values: %w", derrors.InvalidArgument)
		}
		props = value.Merge(props, m)
	}
	for i, s := range ti.Spec.PropertiesFrom {
		where := fmt.Sprintf("spec.propertiesFrom[%d]", i)
		kind, ref := "", (*v1alpha1.KeyReference)(nil)
		switch {
		case s.SecretRef != nil && s.ConfigMapRef == nil:
			kind, ref = "Secret", s.SecretRef
		case s.ConfigMapRef != nil && s.SecretRef == nil:
			kind, ref = "ConfigMap", s.ConfigMapRef
		default:
			return nil, nil, fmt.Errorf("%s: give one of secretRef and configMapRef: %w", where, derrors.InvalidArgument)
		}
		obj, err := cl.Get(ctx, kube.ObjectRef{Version: "v1", Kind: kind, Namespace: ti.Namespace, Name: ref.Name})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: reading %s %s/%s: %w", where, kind, ti.Namespace, ref.Name, err)
		}
		text, ok, _ := unstructured.NestedString(obj.Object, "data", ref.Key)
		if !ok {
			return nil, nil, fmt.Errorf("%s: %s %s/%s has no key %s: %w", where, kind, ti.Namespace, ref.Name, ref.Key, derrors.NotFound)
		}
		data := []byte(text)
		if kind == "Secret" {
			if data, err = base64.StdEncoding.DecodeString(text); err != nil {
				return nil, nil, fmt.Errorf("%s: Secret %s/%s key %s: %w", where, ti.Namespace, ref.Name, ref.Key, err)
			}
		}
		// The error names the key, never its content: it may be secret.
		v, err := expand.DecodeValue(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s %s/%s key %s is not YAML: %w", where, kind, ti.Namespace, ref.Name, ref.Key, derrors.InvalidArgument)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, nil, fmt.Errorf("%s: %s %s/%s key %s: want a mapping of property names to values: %w", where, kind, ti.Namespace, ref.Name, ref.Key, derrors.InvalidArgument)
		}
		if kind == "Secret" {
			secret = LeafPaths(m, nil, secret)
		}
		props = value.Merge(props, m)
	}
	return props, secret, nil
}

// LeafPaths appends the paths of v's leaves (values that are not
// non-empty mappings) to out.
func LeafPaths(v map[string]any, prefix []string, out [][]string) [][]string {
	for k, x := range v {
		p := append(prefix[:len(prefix):len(prefix)], k)
		if m, ok := x.(map[string]any); ok && len(m) > 0 {
			out = LeafPaths(m, p, out)
			continue
		}
		out = append(out, p)
	}
	return out
}

// Source is what deploying the instance expands: its template through
// defaultRegistry (short references) and server (a registryd URL, "" for
// in-process), with props (Properties) and its env and Google Cloud
// settings. The spec says it all: no setting carries over from the last
// revision.
func Source(ti *v1alpha1.TemplateInstance, props map[string]any, defaultRegistry, server string) deploy.Source {
	return deploy.Source{
		Input:          release.Input{Ref: ti.Spec.Template, Registry: defaultRegistry, Server: server},
		Properties:     props,
		Env:            ti.Spec.Env,
		Project:        GCPProject(ti),
		DeletionPolicy: GCPDeletionPolicy(ti),
	}
}

// GCPProject is the instance's spec.gcp.project.
func GCPProject(ti *v1alpha1.TemplateInstance) string {
	if ti.Spec.GCP == nil {
		return ""
	}
	return ti.Spec.GCP.Project
}

// GCPDeletionPolicy is the deletion policy of the instance's Config
// Connector objects as deploy takes it: delete (Config Connector's
// default) unless spec.gcp.deletionPolicy is Abandon.
func GCPDeletionPolicy(ti *v1alpha1.TemplateInstance) string {
	if ti.Spec.GCP != nil && ti.Spec.GCP.DeletionPolicy == v1alpha1.GCPAbandon {
		return "abandon"
	}
	return "delete"
}

// DefinedGVK is the kind a definition defines.
func DefinedGVK(def *v1alpha1.TemplateDefinition) schema.GroupVersionKind {
	v := def.Spec.Version
	if v == "" {
		v = "v1alpha1"
	}
	return schema.GroupVersionKind{Group: def.Spec.Group, Version: v, Kind: def.Spec.Names.Kind}
}

// Plural is the resource name of the kind a definition defines.
func Plural(def *v1alpha1.TemplateDefinition) string {
	if def.Spec.Names.Plural != "" {
		return def.Spec.Names.Plural
	}
	return strings.ToLower(def.Spec.Names.Kind) + "s"
}

// CRDName is the name of the CRD of the kind a definition defines.
func CRDName(def *v1alpha1.TemplateDefinition) string {
	return Plural(def) + "." + def.Spec.Group
}

// Served tells whether def is the definition whose CRD serves its kind:
// another definition of the same kind is Stalled (Conflict) and has none.
func Served(def *v1alpha1.TemplateDefinition) bool {
	return def.Status.CRD != "" && def.Status.CRD == CRDName(def)
}

// ControllerName is what the controller records as the controller of the
// instance's deployment: "TemplateInstance NS/NAME", or the defined
// kind's name for its instances.
func ControllerName(kind string, ti *v1alpha1.TemplateInstance) string {
	return kind + " " + ti.Namespace + "/" + ti.Name
}

// AsInstance sees u, an instance of def's kind, as a TemplateInstance.
func AsInstance(u *unstructured.Unstructured, def *v1alpha1.TemplateDefinition) (*v1alpha1.TemplateInstance, error) {
	ti := &v1alpha1.TemplateInstance{}
	where := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"metadata": u.Object["metadata"]}, ti); err != nil {
		return nil, fmt.Errorf("%s: reading its metadata: %w", where, err)
	}
	ti.Spec = v1alpha1.TemplateInstanceSpec{Template: def.Spec.Template, ServiceAccountName: u.GetAnnotations()[AnnotationServiceAccount],
		GCP: def.Spec.GCP.DeepCopy()}
	if spec, ok := u.Object["spec"]; ok && spec != nil {
		b, err := json.Marshal(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: spec: %w", where, err)
		}
		ti.Spec.Properties = &apiextensionsv1.JSON{Raw: b}
	}
	st, _ := u.Object["status"].(map[string]any)
	known, outputs := map[string]any{}, map[string]any{}
	for key, v := range st {
		if slices.Contains(StatusFields, key) {
			known[key] = v
		} else {
			outputs[key] = v
		}
	}
	// A status someone else wrote wrongly is written anew.
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(known, &ti.Status)
	ti.Status.Outputs = nil
	if len(outputs) > 0 {
		b, err := json.Marshal(outputs)
		if err == nil {
			ti.Status.Outputs = &apiextensionsv1.JSON{Raw: b}
		}
	}
	return ti, nil
}
