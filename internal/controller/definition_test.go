package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
)

// writeTemplate writes template name at version, with a schema, into the
// registry directory, the files renamed in so that the watcher never sees
// half a version.
func writeTemplate(t *testing.T, dir, name, version, tmpl, schema string) {
	t.Helper()
	tmp, err := os.MkdirTemp(dir, "."+name)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(tmp, name+".jinja"), []byte(tmpl), 0o644))
	must(t, os.WriteFile(filepath.Join(tmp, name+".jinja.schema"), []byte(schema), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
	must(t, os.Rename(tmp, filepath.Join(dir, name, "v"+version)))
}

// definition creates a TemplateDefinition and waits until it is Ready.
func (h *harness) definition(t *testing.T, def *v1alpha1.TemplateDefinition) *v1alpha1.TemplateDefinition {
	t.Helper()
	must(t, h.c.Create(context.Background(), def))
	t.Cleanup(func() { _ = h.c.Delete(context.Background(), def) })
	return h.definitionCondition(t, def.Name, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
}

// definitionCondition waits until the definition's condition typ has
// status st (and a message containing msg) for its current generation.
func (h *harness) definitionCondition(t *testing.T, name, typ string, st metav1.ConditionStatus, msg string) *v1alpha1.TemplateDefinition {
	t.Helper()
	var def *v1alpha1.TemplateDefinition
	eventually(t, fmt.Sprintf("TemplateDefinition %s %s=%s %q", name, typ, st, msg), func() error {
		def = &v1alpha1.TemplateDefinition{}
		if err := h.c.Get(context.Background(), client.ObjectKey{Name: name}, def); err != nil {
			return err
		}
		c := meta.FindStatusCondition(def.Status.Conditions, typ)
		if c == nil || def.Status.ObservedGeneration != def.Generation {
			return fmt.Errorf("conditions %+v at observed generation %d of %d", def.Status.Conditions, def.Status.ObservedGeneration, def.Generation)
		}
		if c.Status != st || !strings.Contains(c.Message, msg) {
			return fmt.Errorf("%s is %s: %s", typ, c.Status, c.Message)
		}
		return nil
	})
	return def
}

// crd reads a CRD.
func (h *harness) crd(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, h.c.Get(context.Background(), client.ObjectKey{Name: name}, crd))
	return crd
}

// object makes an instance of kind gvk.
func object(gvk schema.GroupVersionKind, ns, name, account string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(map[string]string{controller.AnnotationServiceAccount: account})
	return u
}

// readyObject waits until an instance of gvk is Ready for its generation.
func (h *harness) readyObject(t *testing.T, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	eventually(t, fmt.Sprintf("%s %s/%s Ready", gvk.Kind, ns, name), func() error {
		u = &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return err
		}
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			c, _ := c.(map[string]any)
			if c["type"] == "Ready" && c["status"] == "True" && gen == u.GetGeneration() {
				return nil
			}
		}
		return fmt.Errorf("status %v", u.Object["status"])
	})
	return u
}

// A TemplateDefinition makes a kind whose CRD has the template's schema;
// its instances deploy the template with their spec as properties, and
// get the inline status template's outputs as top-level status fields; a
// spec the schema refuses is refused by the apiserver, naming the field;
// the definition's deletion waits for the last instance, saying how many
// remain, and then takes the CRD with it.
func TestTemplateDefinition(t *testing.T) {
	h := setup(t)
	writeTemplate(t, h.dir, "webapp", "1.0.0", cmTemplate("1.0.0"),
		"info: {title: Web app}\nrequired: [greeting]\nproperties:\n"+
			"  greeting: {type: string, description: What the app says}\n"+
			"  replicas: {type: integer, default: 2, minimum: 1}\n"+
			"  tag: {anyOf: [{type: string, maxLength: 3}, {type: integer}]}\n")
	ctx := context.Background()
	h.definition(t, &v1alpha1.TemplateDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp"},
		Spec: v1alpha1.TemplateDefinitionSpec{
			Group: "apps.example.com", Names: v1alpha1.DefinitionNames{Kind: "WebApp", ShortNames: []string{"wa"}},
			Template:               "webapp:v1",
			StatusTemplate:         "greeting: {{ resources.cm.data.greeting }}\nreplicas: {{ instance.spec.replicas }}\nkind: {{ instance.kind }}\n",
			StatusTemplateLanguage: "jinja",
		},
	})
	def := &v1alpha1.TemplateDefinition{}
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "webapp"}, def))
	if def.Status.Resolved != registryPrefix+"/webapp:v1.0.0" || def.Status.Digest == "" || def.Status.CRD != "webapps.apps.example.com" {
		t.Errorf("definition status %+v; want the resolved version, its digest and the CRD", def.Status)
	}
	crd := h.crd(t, "webapps.apps.example.com")
	v := crd.Spec.Versions[0]
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if v.Name != "v1alpha1" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped || len(crd.Spec.Names.ShortNames) != 1 || crd.Spec.Names.Plural != "webapps" {
		t.Errorf("CRD %s: version %s, scope %s, names %+v", crd.Name, v.Name, crd.Spec.Scope, crd.Spec.Names)
	}
	if spec.Properties["greeting"].Description != "What the app says" || string(spec.Properties["replicas"].Default.Raw) != "2" || len(spec.Required) != 1 {
		t.Errorf("spec schema %+v; want the template's", spec)
	}
	cols := []string{}
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Resolved,Ready,Age,Message" || v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("printer columns %v, subresources %+v", cols, v.Subresources)
	}

	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	gvk := schema.GroupVersionKind{Group: "apps.example.com", Version: "v1alpha1", Kind: "WebApp"}
	must(t, h.c.Create(ctx, object(gvk, ns, "shop", "deployer", map[string]any{"greeting": "hi"})))
	u := h.readyObject(t, gvk, ns, "shop")
	h.configMap(t, ns, "shop", "greeting", "hi")
	st, _ := u.Object["status"].(map[string]any)
	// replicas: the CRD's default, as the status template saw it.
	if st["greeting"] != "hi" || st["replicas"] != int64(2) || st["kind"] != "WebApp" || st["resolved"] != registryPrefix+"/webapp:v1.0.0" {
		t.Errorf("status %v; want the status template's outputs beside the conditions", st)
	}
	if _, ok := st["outputs"]; ok {
		t.Errorf("status has outputs: %v; want them top-level", st)
	}
	if hist := h.history(t, ns, "shop"); len(hist) != 1 || hist[0].Controller != "WebApp "+ns+"/shop" {
		t.Errorf("history %v; want one revision marked as the WebApp's", hist)
	}

	// A spec the template's schema refuses: the apiserver names the field.
	err := h.c.Create(ctx, object(gvk, ns, "bad", "deployer", map[string]any{"replicas": 0}))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.greeting: Required value") || !strings.Contains(err.Error(), "spec.replicas") {
		t.Errorf("creating an instance without greeting and 0 replicas: %v; want Invalid naming spec.greeting and spec.replicas", err)
	}

	// What OpenAPI cannot say (anyOf) the template's schema still
	// checks: Stalled, with the property's path.
	must(t, h.c.Create(ctx, object(gvk, ns, "long", "deployer", map[string]any{"greeting": "hi", "tag": "toolong"})))
	eventually(t, "WebApp long Stalled", func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "long"}, u))
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			c, _ := c.(map[string]any)
			if c["type"] == "Stalled" && c["status"] == "True" && c["reason"] == "Invalid" && strings.Contains(fmt.Sprint(c["message"]), "properties.tag") {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})

	// Drift is restored.
	cm := &corev1.ConfigMap{}
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, cm))
	cm.Data["greeting"] = "edited"
	must(t, h.c.Update(ctx, cm))
	h.configMap(t, ns, "shop", "greeting", "hi")

	// Deleting the definition waits for the instances.
	must(t, h.c.Delete(ctx, def))
	h.definitionCondition(t, "webapp", v1alpha1.ConditionReady, metav1.ConditionFalse, "2 instances of WebApp remain")
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "webapps.apps.example.com"}, &apiextensionsv1.CustomResourceDefinition{}))
	must(t, h.c.Delete(ctx, object(gvk, ns, "long", "", nil)))
	h.definitionCondition(t, "webapp", v1alpha1.ConditionReady, metav1.ConditionFalse, "1 instance of WebApp remains")

	must(t, h.c.Delete(ctx, object(gvk, ns, "shop", "", nil)))
	h.configMap(t, ns, "shop", "greeting", "") // pruned
	eventually(t, "definition and CRD gone", func() error {
		for _, o := range []client.Object{&v1alpha1.TemplateDefinition{ObjectMeta: metav1.ObjectMeta{Name: "webapp"}}, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "webapps.apps.example.com"}}} {
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s still there (%v)", o.GetName(), err)
			}
		}
		return nil
	})
}

// A new patch of the template with a changed schema updates the kind's
// CRD, without a change to the definition, and rolls out to the kind's
// instances; an inline Go template status template reads it.
func TestTemplateDefinitionSchemaChange(t *testing.T) {
	h := setup(t)
	ctx := context.Background()
	writeTemplate(t, h.dir, "counter", "1.0.0", cmTemplate("1.0.0"), "properties:\n  greeting: {type: string}\n")
	h.definition(t, &v1alpha1.TemplateDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "counter"},
		Spec: v1alpha1.TemplateDefinitionSpec{
			Group: "apps.example.com", Names: v1alpha1.DefinitionNames{Kind: "Counter"}, Version: "v1", Template: "counter:v1",
			StatusTemplate: "version: {{ .resources.cm.data.version }}\n", StatusTemplateLanguage: "gotmpl",
		},
	})
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	gvk := schema.GroupVersionKind{Group: "apps.example.com", Version: "v1", Kind: "Counter"}
	must(t, h.c.Create(ctx, object(gvk, ns, "one", "deployer", map[string]any{"greeting": "hi"})))
	if u := h.readyObject(t, gvk, ns, "one"); u.Object["status"].(map[string]any)["version"] != "1.0.0" {
		t.Errorf("status %v; want version 1.0.0 from the status template", u.Object["status"])
	}
	t.Cleanup(func() { _ = h.c.Delete(ctx, object(gvk, ns, "one", "", nil)) })
	spec := h.crd(t, "counters.apps.example.com").Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if _, ok := spec.Properties["replicas"]; ok {
		t.Fatalf("spec schema %+v has replicas before the new patch", spec)
	}
	writeTemplate(t, h.dir, "counter", "1.0.1", cmTemplate("1.0.1"),
		"properties:\n  greeting: {type: string}\n  replicas: {type: integer, enum: [1, 3]}\n")
	eventually(t, "CRD updated with the new schema", func() error {
		spec := h.crd(t, "counters.apps.example.com").Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		if len(spec.Properties["replicas"].Enum) != 2 {
			return fmt.Errorf("spec schema %+v", spec)
		}
		return nil
	})
	h.definitionCondition(t, "counter", v1alpha1.ConditionReady, metav1.ConditionTrue, "counter:v1.0.1")
	h.configMap(t, ns, "one", "version", "1.0.1")
	eventually(t, "status.version 1.0.1", func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "one"}, u))
		if v, _, _ := unstructured.NestedString(u.Object, "status", "version"); v != "1.0.1" {
			return fmt.Errorf("status %v", u.Object["status"])
		}
		return nil
	})
}

// A definition of a kind whose CRD it did not make (here dm's own
// TemplateInstance) is Stalled and touches nothing; its deletion neither
// waits for that kind's objects nor deletes the CRD.
func TestTemplateDefinitionConflict(t *testing.T) {
	h := setup(t)
	ctx := context.Background()
	ns := h.env.Namespace(t)
	h.account(t, ns, "deployer", true)
	h.instance(t, ns, "bystander", v1alpha1.TemplateInstanceSpec{Template: "cm:v1", ServiceAccountName: "deployer"})
	def := &v1alpha1.TemplateDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clash"},
		Spec: v1alpha1.TemplateDefinitionSpec{
			Group: "dm.io", Version: "v1alpha1", Template: "cm:v1",
			Names: v1alpha1.DefinitionNames{Kind: "TemplateInstance", Plural: "templateinstances"},
		},
	}
	must(t, h.c.Create(ctx, def))
	got := h.definitionCondition(t, "clash", v1alpha1.ConditionStalled, metav1.ConditionTrue, "templateinstances.dm.io exists and was not made by this definition")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled); c.Reason != "Conflict" || got.Status.CRD != "" {
		t.Errorf("Stalled %s, status.crd %q; want Conflict and no CRD", c.Reason, got.Status.CRD)
	}
	if crd := h.crd(t, "templateinstances.dm.io"); crd.Labels[controller.LabelDefinition] != "" {
		t.Errorf("dm's own CRD labeled %v", crd.Labels)
	}
	h.condition(t, ns, "bystander", v1alpha1.ConditionReady, metav1.ConditionTrue)
	must(t, h.c.Delete(ctx, def))
	eventually(t, "definition gone", func() error {
		if err := h.c.Get(ctx, client.ObjectKey{Name: "clash"}, &v1alpha1.TemplateDefinition{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	h.crd(t, "templateinstances.dm.io")
	h.condition(t, ns, "bystander", v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// TestTemplateDefinitionGroupNotAllowed: a definition of a group the
// controller was not given (--definition-groups) is Stalled with
// GroupNotAllowed, and no CRD is written: a TemplateDefinition cannot
// take over another product's kinds.
func TestTemplateDefinitionGroupNotAllowed(t *testing.T) {
	h := setup(t)
	ctx := context.Background()
	def := &v1alpha1.TemplateDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: v1alpha1.TemplateDefinitionSpec{
			Group: "monitoring.coreos.com", Version: "v1", Template: "cm:v1",
			Names: v1alpha1.DefinitionNames{Kind: "ServiceMonitor"},
		},
	}
	must(t, h.c.Create(ctx, def))
	got := h.definitionCondition(t, def.Name, v1alpha1.ConditionStalled, metav1.ConditionTrue, "spec.group monitoring.coreos.com is not among the groups this controller defines kinds of (apps.example.com, dm.io)")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled); c.Reason != "GroupNotAllowed" || got.Status.CRD != "" {
		t.Errorf("Stalled %s, status.crd %q; want GroupNotAllowed and no CRD", c.Reason, got.Status.CRD)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := h.c.Get(ctx, client.ObjectKey{Name: "servicemonitors.monitoring.coreos.com"}, crd); !apierrors.IsNotFound(err) {
		t.Errorf("CRD of a group not allowed: %v", err)
	}
	must(t, h.c.Delete(ctx, def))
}
