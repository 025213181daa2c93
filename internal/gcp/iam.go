package gcp

import (
	"fmt"
	"strings"
)

// IAM: DM's accessControl.gcpIamPolicy on a resource, and its virtual type
// virtual.projects.iamMemberBinding, become IAMPolicyMember objects, one
// per role and member. Never an IAMPolicy: that kind is authoritative and
// would remove every binding of the resource that DM did not write
// (Google-managed service agents, grants made in the console), where DM
// merged its bindings into the policy it found.

const iamAPIVersion = "iam.cnrm.cloud.google.com/v1beta1"

// accessControl makes the IAMPolicyMember objects of a resource's
// accessControl.gcpIamPolicy.
func (c *converter) accessControl(it *item) error {
	ac := it.res.AccessControl
	if len(ac) == 0 {
		return nil
	}
	for _, k := range sortedKeys(ac) {
		if k != "gcpIamPolicy" {
			return invalid("accessControl.%s: only gcpIamPolicy is understood", k)
		}
	}
	policy, ok := ac["gcpIamPolicy"].(map[string]any)
	if !ok {
		if ac["gcpIamPolicy"] == nil {
			return nil
		}
		return invalid("accessControl.gcpIamPolicy is %s, not an IAM policy", describe(ac["gcpIamPolicy"]))
	}
	if !it.kind.IAM {
		return invalid("accessControl.gcpIamPolicy: Config Connector cannot bind IAM members to a %s (IAMPolicyMember does not take that kind); grant the roles on the project instead (gcp-types/cloudresourcemanager-v1:virtual.projects.iamMemberBinding)", it.kind.Kind)
	}
	for _, k := range sortedKeys(policy) {
		switch k {
		case "bindings", "etag", "version":
		case "auditConfigs":
			return invalid("accessControl.gcpIamPolicy.auditConfigs: not mapped; write an IAMAuditConfig object for the project instead")
		default:
			return invalid("accessControl.gcpIamPolicy.%s is not a field of an IAM policy (bindings, etag, version)", k)
		}
	}
	bindings, ok := policy["bindings"].([]any)
	if !ok && policy["bindings"] != nil {
		return invalid("accessControl.gcpIamPolicy.bindings is %s, not a list", describe(policy["bindings"]))
	}
	ref := map[string]any{"apiVersion": it.kind.APIVersion, "kind": it.kind.Kind, "name": it.objName}
	for i, b := range bindings {
		where := fmt.Sprintf("accessControl.gcpIamPolicy.bindings[%d]", i)
		bm, ok := b.(map[string]any)
		if !ok {
			return invalid("%s is %s, not a binding", where, describe(b))
		}
		role, _ := bm["role"].(string)
		if role == "" {
			return invalid("%s has no role", where)
		}
		members, ok := bm["members"].([]any)
		if !ok {
			return invalid("%s.members is %s, not a list", where, describe(bm["members"]))
		}
		for k := range bm {
			if k != "role" && k != "members" && k != "condition" {
				return invalid("%s.%s is not a field of a binding (role, members, condition)", where, k)
			}
		}
		for j, m := range members {
			member, ok := m.(string)
			if !ok || member == "" {
				return invalid("%s.members[%d] is %s, not a member", where, j, describe(m))
			}
			name := it.objName + "-" + shortHash(role, member, fmt.Sprint(bm["condition"]))
			if len(name) > 253 {
				name = sanitize(name)
			}
			x, err := c.policyMember(it, name, ref, role, member, bm["condition"], where)
			if err != nil {
				return err
			}
			it.extra = append(it.extra, x)
		}
	}
	return nil
}

// policyMember builds one IAMPolicyMember.
func (c *converter) policyMember(it *item, name string, ref map[string]any, role, member string, cond any, where string) (extraObject, error) {
	var deps []int
	oc := &objConv{c: c, it: it, kind: lookupKind("IAMPolicyMember"), spec: map[string]any{}, deps: &deps}
	oc.spec["resourceRef"] = ref
	r, err := oc.fillString(role, "/spec/role")
	if err != nil {
		return extraObject{}, err
	}
	oc.spec["role"] = r
	if err := oc.member(member); err != nil {
		return extraObject{}, err
	}
	if cond != nil {
		cm, ok := cond.(map[string]any)
		if !ok {
			return extraObject{}, invalid("%s.condition is %s, not a condition", where, describe(cond))
		}
		out := map[string]any{}
		for _, k := range sortedKeys(cm) {
			switch k {
			case "title", "description", "expression":
				s, ok := cm[k].(string)
				if !ok {
					return extraObject{}, invalid("%s.condition.%s is %s, not a string", where, k, describe(cm[k]))
				}
				out[k] = s
			default:
				return extraObject{}, invalid("%s.condition.%s is not a field of a condition (title, description, expression)", where, k)
			}
		}
		oc.spec["condition"] = out
	}
	obj := map[string]any{
		"apiVersion": iamAPIVersion, "kind": "IAMPolicyMember",
		"metadata": map[string]any{"name": name, "annotations": c.annotations(it)},
		"spec":     oc.spec,
	}
	return extraObject{obj: obj, deferred: oc.deferred, deps: deps}, nil
}

// member sets spec.member, or spec.memberFrom.serviceAccountRef when it is
// serviceAccount:$(ref.SA.email) of a service account in the deployment.
func (oc *objConv) member(member string) error {
	if rest, ok := strings.CutPrefix(member, "serviceAccount:"); ok {
		if name, path, ok := wholeRef(rest); ok && path == "email" {
			if sa := oc.c.byName[name]; sa != nil && sa.kind != nil && sa.kind.Kind == "IAMServiceAccount" {
				oc.addDep(sa.index)
				oc.spec["memberFrom"] = map[string]any{"serviceAccountRef": map[string]any{"name": sa.objName}}
				return nil
			}
		}
	}
	m, err := oc.fillString(member, "/spec/member")
	if err != nil {
		return err
	}
	oc.spec["member"] = m
	return nil
}

// iamMemberBinding maps DM's virtual iamMemberBinding types: one member of
// one role on a project (virtual.projects, properties.resource the
// project), a folder (virtual.folders, folders/ID), an organization
// (virtual.organizations, organizations/ID), a bucket (virtual.buckets,
// properties.bucket its name or a reference to it) or a Cloud Functions
// (2nd gen) function (virtual.projects.locations.functions,
// properties.resource its name or a reference to it).
func iamMemberBinding(oc *objConv, props map[string]any) error {
	virtual := oc.it.res.Type[strings.LastIndex(oc.it.res.Type, ":")+1:]
	kind, key, what := "Project", "resource", "the project"
	switch virtual {
	case "virtual.folders.iamMemberBinding":
		kind, what = "Folder", "the folder, folders/ID"
	case "virtual.organizations.iamMemberBinding":
		kind, what = "Organization", "the organization, organizations/ID"
	case "virtual.buckets.iamMemberBinding":
		kind, key, what = "StorageBucket", "bucket", "the bucket"
	case "virtual.projects.locations.functions.iamMemberBinding":
		kind, what = "CloudFunctions2Function", "the function, projects/P/locations/L/functions/F or $(ref.NAME.name)"
	}
	target, _ := props[key].(string)
	role, _ := props["role"].(string)
	member, _ := props["member"].(string)
	if target == "" || role == "" || member == "" {
		return invalid("%s needs properties %s (%s), role and member", virtual, key, what)
	}
	switch kind {
	case "Project":
		if hasRef(target) {
			return invalid("properties.resource is %s: the project must be known before deploying", target)
		}
		oc.spec["resourceRef"] = map[string]any{"kind": "Project", "external": "projects/" + strings.TrimPrefix(target, "projects/")}
	case "Folder", "Organization":
		if hasRef(target) {
			return invalid("properties.resource is %s: the %s must be known before deploying", target, strings.ToLower(kind))
		}
		prefix := strings.ToLower(kind) + "s/"
		oc.spec["resourceRef"] = map[string]any{"kind": kind, "external": prefix + strings.TrimPrefix(target, prefix)}
	case "StorageBucket", "CloudFunctions2Function":
		ref, err := oc.ref(target, &field{Path: "resourceRef", Target: kind}, []seg{{key: "spec"}, {key: "resourceRef"}}, key)
		if err != nil {
			return err
		}
		rm, _ := ref.(map[string]any)
		if rm == nil {
			return invalid("properties.%s is empty: name %s", key, what)
		}
		rm["kind"] = kind
		if rm["name"] != nil {
			rm["apiVersion"] = lookupKind(kind).APIVersion
		}
		oc.spec["resourceRef"] = rm
	}
	r, err := oc.fillString(role, "/spec/role")
	if err != nil {
		return err
	}
	oc.spec["role"] = r
	if err := oc.member(member); err != nil {
		return err
	}
	if cond, ok := props["condition"].(map[string]any); ok {
		oc.spec["condition"] = cond
	}
	for _, k := range []string{key, "role", "member", "condition"} {
		delete(props, k)
	}
	return nil
}
