package gcp

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
)

// resources reads a YAML list of DM resources.
func resources(t *testing.T, src string) []Resource {
	t.Helper()
	var res []Resource
	if err := yaml.Unmarshal([]byte(src), &res); err != nil {
		t.Fatal(err)
	}
	for i := range res {
		res[i].Path = []string{"tmpl", res[i].Name}
	}
	return res
}

// convert converts src with project p and returns the objects by name.
func convert(t *testing.T, src string, opts Options) (*Result, map[string]map[string]any) {
	t.Helper()
	if opts.Project == "" {
		opts.Project = "p"
	}
	r, err := Convert(resources(t, src), opts)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, o := range r.Objects {
		byName[o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string)] = o
	}
	return r, byName
}

// at reads a dotted path (a.b.0.c) of an object; an annotation's key,
// which has dots, is the last step after "metadata.annotations.".
func at(v any, path string) any {
	steps := strings.Split(path, ".")
	if rest, ok := strings.CutPrefix(path, "metadata.annotations."); ok {
		steps = []string{"metadata", "annotations", rest}
	}
	for _, k := range steps {
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			i := 0
			for _, r := range k {
				i = i*10 + int(r-'0')
			}
			if i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func TestTypes(t *testing.T) {
	kindOf := map[string]string{}
	for _, ti := range Types() {
		kindOf[ti.Type] = ti.Kind
		if ti.APIVersion == "" || !strings.Contains(ti.APIVersion, ".cnrm.cloud.google.com/") {
			t.Errorf("%s: apiVersion %q", ti.Type, ti.APIVersion)
		}
	}
	for typ, kind := range map[string]string{
		"compute.v1.instance":                                                 "ComputeInstance",
		"compute.beta.instance":                                               "ComputeInstance",
		"compute.alpha.instance":                                              "ComputeInstance",
		"gcp-types/compute-v1:instances":                                      "ComputeInstance",
		"gcp-types/compute-alpha:healthChecks":                                "ComputeHealthCheck",
		"compute.v1.regionInstanceGroupManager":                               "ComputeInstanceGroupManager",
		"compute.v1.globalForwardingRule":                                     "ComputeForwardingRule",
		"compute.v1.globalAddress":                                            "ComputeAddress",
		"gcp-types/compute-v1:regionBackendServices":                          "ComputeBackendService",
		"sqladmin.v1beta4.instance":                                           "SQLInstance",
		"gcp-types/sqladmin-v1beta4:instances":                                "SQLInstance",
		"gcp-types/storage-v1:buckets":                                        "StorageBucket",
		"gcp-types/storage-v1:notifications":                                  "StorageNotification",
		"gcp-types/pubsub-v1:projects.topics":                                 "PubSubTopic",
		"gcp-types/container-v1:projects.zones.clusters":                      "ContainerCluster",
		"gcp-types/accesscontextmanager-v1beta:accessPolicies.accessLevels":   "AccessContextManagerAccessLevel",
		"gcp-types/cloudresourcemanager-v1:virtual.projects.iamMemberBinding": "IAMPolicyMember",
		"gcp-types/iam-v1:projects.roles":                                     "IAMCustomRole",
		"gcp-types/iam-v1:projects.serviceAccounts":                           "IAMServiceAccount",
		"gcp-types/cloudkms-v1:projects.locations.keyRings.cryptoKeys":        "KMSCryptoKey",
		"gcp-types/cloudfunctions-v2beta:projects.locations.functions":        "CloudFunctions2Function",
		"gcp-types/appengine-v1:apps.services.versions":                       "AppEngineStandardAppVersion",
		"gcp-types/dns-v1:resourceRecordSets":                                 "DNSRecordSet",
		"compute.v1.vpnTunnel":                                                "ComputeVPNTunnel",
		"compute.v1.targetVpnGateway":                                         "ComputeTargetVPNGateway",
	} {
		if kindOf[typ] != kind {
			t.Errorf("%s: kind %q, want %s", typ, kindOf[typ], kind)
		}
	}
	if !slices.IsSortedFunc(Types(), func(a, b TypeInfo) int { return strings.Compare(a.Type, b.Type) }) {
		t.Error("Types() is not sorted")
	}
	for _, k := range Kinds() {
		if lookupKind(k[1]) == nil {
			t.Errorf("Kinds() lists %s, which has no table", k[1])
		}
	}
}

// TestCollectionSpelling: a short type naming the API's collection
// (compute.v1.instanceGroupManagers, as deploymentmanager-samples'
// container_igm writes) is read as gcp-types/API-VERSION:COLLECTION, with
// its scope; other unknown spellings stay unknown.
func TestCollectionSpelling(t *testing.T) {
	for _, c := range []struct {
		typ, kind, scope string
	}{
		{"compute.v1.instanceGroupManagers", "ComputeInstanceGroupManager", "zone"},
		{"compute.beta.regionInstanceGroupManagers", "ComputeInstanceGroupManager", "region"},
		{"sqladmin.v1beta4.instances", "SQLInstance", ""},
		{"compute.v1.instanceGroupManager", "ComputeInstanceGroupManager", "zone"},
		{"compute.v1.instanceGroupManagerz", "", ""},
		{"compute.v9.instances", "", ""},
	} {
		d, ok := lookupType(c.typ)
		if ok != (c.kind != "") || d.Kind != c.kind || d.Scope != c.scope {
			t.Errorf("lookupType(%s) = %+v, %v; want kind %q scope %q", c.typ, d, ok, c.kind, c.scope)
		}
	}
}

func TestIsGCPType(t *testing.T) {
	for typ, want := range map[string]bool{
		"compute.v1.instance":                   true,
		"compute.v2.instance":                   true, // a spelling, unmapped
		"sqladmin.v1beta4.instance":             true,
		"gcp-types/compute-v1:instances":        true,
		"gcp-types/foo-v3:bars.bazzes":          true,
		"deploymentmanager.v2beta.typeProvider": true,
		"runtimeconfig.v1beta1.waiter":          true,
		"my-project/my-provider:/apis/apps/v1/namespaces/{namespace}/deployments":       true,
		"my-project/<cluster-type>:/api/v1/namespaces/{namespace}/services":             true,
		"YOUR_PROJECT_NAME/header-iam-v1-YOUR_DEPLOYMENT_NAME:projects.serviceAccounts": true,
		"deploymentmanager.local.typeProvider":                                          true,
		"Service":                                                                       false,
		"v1/Service":                                                                    false,
		"apps/v1/Deployment":                                                            false,
		"redis:v1":                                                                      false,
		"github.com/acme/templates/redis:v1":                                            false,
		"helm":                                                                          false,
		"x.jinja":                                                                       false,
	} {
		if got := IsGCPType(typ); got != want {
			t.Errorf("IsGCPType(%q) = %v, want %v", typ, got, want)
		}
	}
}

func TestFields(t *testing.T) {
	_, objs := convert(t, `
- name: fw
  type: compute.v1.firewall
  properties:
    network: global/networks/default
    sourceRanges: [0.0.0.0/0]
    allowed:
    - {IPProtocol: tcp, ports: [80, "443"]}
    priority: "900"
- name: vm
  type: compute.v1.instance
  properties:
    zone: zones/us-central1-a
    machineType: zones/us-central1-a/machineTypes/n1-standard-1
    disks: [{boot: true, initializeParams: {sourceImage: projects/debian-cloud/global/images/family/debian-11, diskSizeGb: "10"}}]
    networkInterfaces: [{network: global/networks/default, accessConfigs: [{name: External NAT, type: ONE_TO_ONE_NAT}]}]
    metadata: {items: [{key: a, value: 1}, {key: b, value: x}]}
    tags: {items: [web]}
    serviceAccounts: [{email: default, scopes: [s1]}]
    labels: {env: prod, count: 3}
`, Options{})
	for _, c := range []struct {
		obj, path string
		want      any
	}{
		{"ComputeFirewall/fw", "spec.allow.0.protocol", "tcp"},
		{"ComputeFirewall/fw", "spec.allow.0.ports", []any{"80", "443"}},
		{"ComputeFirewall/fw", "spec.priority", int64(900)},
		{"ComputeFirewall/fw", "spec.networkRef.external", "global/networks/default"},
		{"ComputeFirewall/fw", "metadata.annotations." + ProjectAnnotation, "p"},
		{"ComputeInstance/vm", "spec.zone", "us-central1-a"},
		{"ComputeInstance/vm", "spec.machineType", "n1-standard-1"},
		{"ComputeInstance/vm", "spec.bootDisk.initializeParams.size", int64(10)},
		{"ComputeInstance/vm", "spec.bootDisk.initializeParams.sourceImageRef.external", "projects/debian-cloud/global/images/family/debian-11"},
		{"ComputeInstance/vm", "spec.metadata", []any{map[string]any{"key": "a", "value": "1"}, map[string]any{"key": "b", "value": "x"}}},
		{"ComputeInstance/vm", "spec.tags", []any{"web"}},
		{"ComputeInstance/vm", "spec.serviceAccount", map[string]any{"scopes": []any{"s1"}}},
		{"ComputeInstance/vm", "spec.networkInterface.0.accessConfig", []any{map[string]any{}}},
		{"ComputeInstance/vm", "metadata.labels", map[string]any{"env": "prod", "count": "3"}},
		{"ComputeInstance/vm", "spec.labels", nil},
	} {
		if got := at(objs[c.obj], c.path); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s = %#v, want %#v", c.obj, c.path, got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	_, objs := convert(t, `
- name: my-bucket
  type: storage.v1.bucket
  properties: {name: My_Bucket.2026}
- name: plain
  type: storage.v1.bucket
  properties: {}
- name: vm-a
  type: compute.v1.instance
  properties: {name: web, zone: us-central1-a, machineType: f1-micro}
- name: vm-b
  type: compute.v1.instance
  properties: {name: web, zone: us-central1-b, machineType: f1-micro}
- name: net
  type: compute.v1.network
  properties: {name: web}
`, Options{})
	var names []string
	for k := range objs {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"ComputeInstance/web-8233e5dd", "ComputeInstance/web-bbc00625", "ComputeNetwork/web", "StorageBucket/my-bucket.2026-07f18d0f", "StorageBucket/plain"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("objects %v, want %v", names, want)
	}
	for name, id := range map[string]any{
		"StorageBucket/my-bucket.2026-07f18d0f": "My_Bucket.2026",
		"StorageBucket/plain":                   nil,
		"ComputeInstance/web-8233e5dd":          "web",
		"ComputeInstance/web-bbc00625":          "web",
		"ComputeNetwork/web":                    nil,
	} {
		if got := at(objs[name], "spec.resourceID"); got != id {
			t.Errorf("%s: resourceID %#v, want %#v", name, got, id)
		}
	}
}

func TestProjectAndLocation(t *testing.T) {
	_, objs := convert(t, `
- name: a
  type: compute.v1.address
  properties: {region: regions/europe-west1, project: other}
- name: ga
  type: compute.v1.globalAddress
  properties: {}
- name: igm
  type: compute.v1.regionInstanceGroupManager
  properties: {region: us-east1, targetSize: 1}
- name: zigm
  type: compute.v1.instanceGroupManager
  properties: {zone: us-east1-b, targetSize: 1}
- name: ring
  type: gcp-types/cloudkms-v1:projects.locations.keyRings
  properties: {parent: projects/p/locations/global, keyRingId: r}
- name: proj
  type: cloudresourcemanager.v1.project
  properties: {projectId: child, name: Child, parent: {type: organization, id: "1"}}
`, Options{Project: "p"})
	for _, c := range []struct {
		obj, path string
		want      any
	}{
		{"ComputeAddress/a", "spec.location", "europe-west1"},
		{"ComputeAddress/a", "metadata.annotations." + ProjectAnnotation, "other"},
		{"ComputeAddress/ga", "spec.location", "global"},
		{"ComputeAddress/ga", "metadata.annotations." + ProjectAnnotation, "p"},
		{"ComputeInstanceGroupManager/igm", "spec.location", "us-east1"},
		{"ComputeInstanceGroupManager/igm", "spec.projectRef.external", "p"},
		{"ComputeInstanceGroupManager/zigm", "spec.location", "us-east1-b"},
		{"KMSKeyRing/r", "spec.location", "global"},
		{"Project/child", "spec.organizationRef.external", "1"},
		{"Project/child", "spec.name", "Child"},
		{"Project/child", "metadata.annotations", nil},
	} {
		if got := at(objs[c.obj], c.path); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s = %#v, want %#v", c.obj, c.path, got, c.want)
		}
	}
	_, err := Convert(resources(t, `[{name: net, type: compute.v1.network}]`), Options{})
	if err == nil || !strings.Contains(err.Error(), "no project") || !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("no project: %v", err)
	}
	// Said once for every resource it leaves without a project, beside
	// the other errors.
	_, err = Convert(resources(t, `[{name: net, type: compute.v1.network}, {name: ip, type: compute.v1.address, properties: {region: r}}, {name: x, type: compute.v1.nosuch}]`), Options{})
	if err == nil || strings.Count(err.Error(), "no project") != 1 || !strings.Contains(err.Error(), "no project: the properties of resources net, ip name none; give --project PROJECT_ID") || !strings.Contains(err.Error(), "resource x") {
		t.Errorf("no project of two resources: %v", err)
	}
}

func TestDeletionPolicy(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   any
	}{{"", nil}, {"delete", nil}, {"abandon", "abandon"}} {
		_, objs := convert(t, `[{name: net, type: compute.v1.network, accessControl: {}}]`, Options{DeletionPolicy: c.policy})
		if got := at(objs["ComputeNetwork/net"], "metadata.annotations."+DeletionPolicyAnnotation); got != c.want {
			t.Errorf("policy %q: annotation %#v, want %#v", c.policy, got, c.want)
		}
	}
	if _, err := Convert(nil, Options{DeletionPolicy: "orphan"}); err == nil || !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("deletion policy orphan: %v", err)
	}
}

func TestIAM(t *testing.T) {
	r, objs := convert(t, `
- name: topic
  type: pubsub.v1.topic
  properties: {topic: events}
  accessControl:
    gcpIamPolicy:
      bindings:
      - role: roles/pubsub.publisher
        members: [user:a@example.com, serviceAccount:$(ref.sa.email)]
      - role: roles/pubsub.viewer
        members: [group:g@example.com]
        condition: {title: t, expression: request.time < timestamp("2030-01-01T00:00:00Z")}
- name: sa
  type: iam.v1.serviceAccount
  properties: {accountId: app}
- name: bind
  type: gcp-types/cloudresourcemanager-v1:virtual.projects.iamMemberBinding
  properties: {resource: p, role: roles/viewer, member: "user:b@example.com"}
`, Options{DeletionPolicy: "abandon"})
	var members []map[string]any
	for _, o := range r.Objects {
		if o["kind"] == "IAMPolicyMember" {
			members = append(members, o)
			if o["metadata"].(map[string]any)["annotations"].(map[string]any)[DeletionPolicyAnnotation] != "abandon" {
				t.Errorf("%v: no deletion policy", o["metadata"])
			}
		}
	}
	if len(members) != 4 {
		t.Fatalf("%d IAMPolicyMembers, want 4: %v", len(members), members)
	}
	ref := map[string]any{"apiVersion": "pubsub.cnrm.cloud.google.com/v1beta1", "kind": "PubSubTopic", "name": "events"}
	var got []string
	for _, m := range members[:3] {
		if !reflect.DeepEqual(at(m, "spec.resourceRef"), ref) {
			t.Errorf("resourceRef %v, want %v", at(m, "spec.resourceRef"), ref)
		}
		got = append(got, fmt16(at(m, "spec.role"))+" "+fmt16(at(m, "spec.member"))+fmt16(at(m, "spec.memberFrom.serviceAccountRef.name"))+" "+fmt16(at(m, "spec.condition.title")))
	}
	slices.Sort(got)
	want := []string{"roles/pubsub.publisher app ", "roles/pubsub.publisher user:a@example.com ", "roles/pubsub.viewer group:g@example.com t"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members %q, want %q", got, want)
	}
	bind := objs["IAMPolicyMember/bind"]
	if !reflect.DeepEqual(at(bind, "spec.resourceRef"), map[string]any{"kind": "Project", "external": "projects/p"}) || at(bind, "spec.member") != "user:b@example.com" {
		t.Errorf("iamMemberBinding: %v", bind["spec"])
	}
	// The members come after the topic, and the service account's after
	// the account.
	pos := map[string]int{}
	for i, o := range r.Objects {
		pos[o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string)] = i
	}
	for _, m := range members[:3] {
		n := pos["IAMPolicyMember/"+m["metadata"].(map[string]any)["name"].(string)]
		if n < pos["PubSubTopic/events"] {
			t.Errorf("IAM member at %d, before its topic (%d)", n, pos["PubSubTopic/events"])
		}
		if at(m, "spec.memberFrom") != nil && n < pos["IAMServiceAccount/app"] {
			t.Errorf("IAM member of the account at %d, before the account (%d)", n, pos["IAMServiceAccount/app"])
		}
	}
}

func fmt16(v any) string {
	s, _ := v.(string)
	return s
}

func TestReferences(t *testing.T) {
	r, objs := convert(t, `
- name: vm
  type: compute.v1.instance
  properties:
    zone: us-central1-a
    machineType: f1-micro
    networkInterfaces:
    - network: $(ref.net.selfLink)
      subnetwork: https://www.googleapis.com/compute/v1/projects/p/regions/us-central1/subnetworks/sub
      accessConfigs: [{natIP: $(ref.ip.address)}]
    metadata:
      items:
      - {key: peer, value: "http://$(ref.db.networkInterfaces[0].networkIP):$(ref.net.name)/$(ref.svc.spec.clusterIP)"}
      - {key: ip, value: $(ref.ip.address)}
- name: net
  type: compute.v1.network
  properties: {}
- name: sub
  type: compute.v1.subnetwork
  properties: {network: net, region: us-central1, ipCidrRange: 10.0.0.0/16}
- name: ip
  type: compute.v1.address
  properties: {region: us-central1}
- name: db
  type: compute.v1.instance
  properties: {zone: us-central1-a, machineType: f1-micro, networkInterfaces: [{network: projects/x/global/networks/shared}]}
`, Options{})
	vm := objs["ComputeInstance/vm"]
	for _, c := range []struct {
		path string
		want any
	}{
		{"spec.networkInterface.0.networkRef", map[string]any{"name": "net"}},
		{"spec.networkInterface.0.subnetworkRef", map[string]any{"name": "sub"}},
		{"spec.networkInterface.0.accessConfig.0.natIpRef", map[string]any{"name": "ip"}},
		{"spec.metadata.0.value", "http://$(ref.db.networkInterfaces[0].networkIP):net/$(ref.svc.spec.clusterIP)"},
		{"spec.metadata.1.value", "$(ref.ip.address)"},
	} {
		if got := at(vm, c.path); !reflect.DeepEqual(got, c.want) {
			t.Errorf("vm %s = %#v, want %#v", c.path, got, c.want)
		}
	}
	if got := at(objs["ComputeSubnetwork/sub"], "spec.networkRef"); !reflect.DeepEqual(got, map[string]any{"name": "net"}) {
		t.Errorf("subnetwork network by name: %v", got)
	}
	if got := at(objs["ComputeInstance/db"], "spec.networkInterface.0.networkRef"); !reflect.DeepEqual(got, map[string]any{"external": "projects/x/global/networks/shared"}) {
		t.Errorf("network outside the deployment: %v", got)
	}
	if got := at(objs["ComputeInstance/db"], "metadata.annotations."+StateIntoSpecAnnotation); got != "merge" {
		t.Errorf("db, whose live spec is read: state-into-spec %v", got)
	}
	vmIndex := slices.IndexFunc(r.Objects, func(o map[string]any) bool { return o["metadata"].(map[string]any)["name"] == "vm" })
	want := []Deferred{
		{Object: vmIndex, Field: "/spec/metadata/0/value", Template: "http://$(ref.db.networkInterfaces[0].networkIP):net/$(ref.svc.spec.clusterIP)",
			Read: Read{Ref: "$(ref.db.networkInterfaces[0].networkIP)", Resource: "db", APIVersion: "compute.cnrm.cloud.google.com/v1beta1", Kind: "ComputeInstance", Name: "db", Path: "spec.networkInterface[0].networkIp"}},
		{Object: vmIndex, Field: "/spec/metadata/0/value", Template: "http://$(ref.db.networkInterfaces[0].networkIP):net/$(ref.svc.spec.clusterIP)",
			Read: Read{Ref: "$(ref.svc.spec.clusterIP)", Resource: "svc", Path: "spec.clusterIP"}},
		{Object: vmIndex, Field: "/spec/metadata/1/value", Template: "$(ref.ip.address)",
			Read: Read{Ref: "$(ref.ip.address)", Resource: "ip", APIVersion: "compute.cnrm.cloud.google.com/v1beta1", Kind: "ComputeAddress", Name: "ip", Path: "status.observedState.address"}},
	}
	if !reflect.DeepEqual(r.Deferred, want) {
		t.Errorf("deferred:\n%+v\nwant\n%+v", r.Deferred, want)
	}
	// Referenced objects come first.
	for _, before := range []string{"net", "ip", "db", "sub"} {
		if slices.IndexFunc(r.Objects, func(o map[string]any) bool { return o["metadata"].(map[string]any)["name"] == before }) > vmIndex {
			t.Errorf("%s comes after vm, which references it", before)
		}
	}
	v, ok, _, err := r.Lookup("$(ref.net.name)")
	if err != nil || !ok || v != "net" {
		t.Errorf("Lookup name: %v %v %v", v, ok, err)
	}
	_, ok, rd, err := r.Lookup("$(ref.ip.selfLink)")
	if err != nil || ok || rd.Path != "status.selfLink" || rd.Kind != "ComputeAddress" {
		t.Errorf("Lookup selfLink: %v %+v %v", ok, rd, err)
	}
	if _, _, _, err := r.Lookup("$(ref.nope.selfLink)"); !errors.Is(err, derrors.NotFound) {
		t.Errorf("Lookup of no resource: %v", err)
	}
}

func TestDependsOnOrder(t *testing.T) {
	r, _ := convert(t, `
- {name: b, type: compute.v1.network, metadata: {dependsOn: [c]}}
- {name: a, type: compute.v1.network}
- {name: c, type: compute.v1.network, metadata: {dependsOn: [a, some-kubernetes-object]}}
`, Options{})
	var order []string
	for _, s := range r.Sources {
		order = append(order, s)
	}
	if want := []string{"a", "c", "b"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"unmapped type", `[{name: vm, type: compute.v1.instanse}]`,
			[]string{"resource vm (tmpl > vm), type compute.v1.instanse", "not a supported Google Cloud type", "did you mean compute.v1.instance"}},
		{"unmapped version", `[{name: vm, type: compute.v2.instance}]`,
			[]string{"did you mean compute.v1.instance, compute.beta.instance, compute.alpha.instance"}},
		{"type provider", `[{name: tp, type: deploymentmanager.v2beta.typeProvider}]`,
			[]string{"no Config Connector equivalent", "type provider"}},
		{"shut-down API", `[{name: a, type: autoscaler.v1beta2.autoscaler}]`,
			[]string{"type autoscaler.v1beta2.autoscaler has no Config Connector equivalent", "write compute.v1.autoscaler"}},
		{"runtimeconfig", `[{name: w, type: runtimeconfig.v1beta1.waiter}]`,
			[]string{"no Config Connector equivalent", "Ready condition"}},
		{"service registry", `[{name: e, type: serviceregistry.v1alpha.endpoint, properties: {addresses: [{address: 10.0.0.2}]}}]`,
			[]string{"type serviceregistry.v1alpha.endpoint has no Config Connector equivalent", "Cloud DNS private zone"}},
		{"provider's type", `[{name: d, type: "my-project/k8s:/apis/apps/v1/namespaces/{namespace}/deployments"}]`,
			[]string{"type provider's type", "apps/v1/Deployment"}},
		{"action", `[{name: s, type: "gcp-types/cloudresourcemanager-v1:cloudresourcemanager.projects.setIamPolicy"}]`,
			[]string{"action"}},
		{"action of an API whose methods are named shorter", `[{name: s, type: "gcp-types/sqladmin-v1beta4:sql.users.delete"}]`,
			[]string{"is a Deployment Manager action (a method call)"}},
		{"collection of an unmapped API", `[{name: s, type: "gcp-types/notebooks-v1:projects.locations.instances"}]`,
			[]string{"type gcp-types/notebooks-v1:projects.locations.instances is not a supported Google Cloud type"}},
		// Pub/Sub refused properties its messages lack; Compute Engine
		// ignored them (TestLeftOut).
		// A typo gets the field meant; a name near none the list.
		{"unknown property", `[{name: t, type: gcp-types/pubsub-v1:projects.topics, properties: {topic: t, labelz: {a: b}}}]`,
			[]string{"properties.labelz has no Config Connector field in PubSubTopic; did you mean properties.labels?", "not a field of pubsub/v1 Topic, which refused properties it lacks"}},
		{"unknown property near none", `[{name: t, type: gcp-types/pubsub-v1:projects.topics, properties: {topic: t, zzzzzz: {a: b}}}]`,
			[]string{"properties.zzzzzz has no Config Connector field in PubSubTopic", "PubSubTopic takes: kmsKeyName, labels, messageRetentionDuration", "not a field of pubsub/v1 Topic, which refused properties it lacks"}},
		{"unknown nested property", `[{name: s, type: gcp-types/pubsub-v1:projects.subscriptions, properties: {topic: t, pushConfig: {pushEndpont: "https://x"}}}]`,
			[]string{"properties.pushConfig.pushEndpont has no Config Connector field", "did you mean properties.pushConfig.pushEndpoint?", "not a field of pubsub/v1 Subscription"}},
		{"unknown nested property near none", `[{name: s, type: gcp-types/pubsub-v1:projects.subscriptions, properties: {topic: t, pushConfig: {zzzzzzzz: "https://x"}}}]`,
			[]string{"properties.pushConfig.zzzzzzzz has no Config Connector field", "properties.pushConfig takes: ", "pushEndpoint", "not a field of pubsub/v1 Subscription"}},
		{"REST field with no KCC field", `[{name: fw, type: compute.v1.firewall, properties: {network: default, params: {resourceManagerTags: {}}}}]`,
			[]string{"properties.params has no Config Connector field in ComputeFirewall", "ComputeFirewall takes: allowed, denied, description"}},
		{"REST field refused with a reason", `[{name: s, type: gcp-types/storage-v1:buckets, properties: {enableObjectRetention: true}}]`,
			[]string{"properties.enableObjectRetention has no Config Connector field in StorageBucket", "a request parameter of the method that creates it"}},
		{"wrong value type", `[{name: fw, type: compute.v1.firewall, properties: {network: default, priority: high}}]`,
			[]string{`properties.priority is "high"; Config Connector's ComputeFirewall.spec.priority is a integer`}},
		{"status lacks field", `[{name: a, type: compute.v1.network}, {name: b, type: compute.v1.firewall, properties: {network: default, description: "$(ref.a.gatewayIPv4x)"}}]`,
			[]string{"$(ref.a.gatewayIPv4x): the live ComputeNetwork carries no gatewayIPv4x", "it carries: name"}},
		{"IAM on a kind without", `[{name: net, type: compute.v1.network, accessControl: {gcpIamPolicy: {bindings: [{role: r, members: [m]}]}}}]`,
			[]string{"cannot bind IAM members to a ComputeNetwork"}},
		{"deprecated spelling contradicting its successor", `[{name: k, type: container.v1beta1.cluster, properties: {zone: z, cluster: {name: k, privateCluster: true, privateClusterConfig: {enablePrivateNodes: false}}}}]`,
			[]string{"properties.cluster.privateCluster is true and properties.cluster.privateClusterConfig.enablePrivateNodes false"}},
		{"an ignored field's other value", `[{name: b, type: gcp-types/bigtableadmin-v2:projects.instances.tables, properties: {parent: projects/p/instances/i, tableId: t, table: {granularity: MICROS}}}]`,
			[]string{"properties.table.granularity is \"MICROS\"", "takes only MILLIS"}},
		{"a wrapped body beside its fields", `[{name: f, type: gcp-types/cloudfunctions-v2beta:projects.locations.functions, properties: {parent: projects/p/locations/us-central1, functionId: f, description: a, function: {description: b}}}]`,
			[]string{"properties.function.description and properties.description are both set"}},
		{"duplicate", `[{name: net, type: compute.v1.network}, {name: net, type: compute.v1.network}]`,
			[]string{"another resource is named net too"}},
		{"cycle", `[{name: a, type: compute.v1.network, metadata: {dependsOn: [b]}}, {name: b, type: compute.v1.network, metadata: {dependsOn: [a]}}]`,
			[]string{"cycle: a -> b -> a"}},
		{"reference cycle", `[{name: a, type: compute.v1.network, properties: {description: $(ref.b.selfLink)}}, {name: b, type: compute.v1.network, properties: {description: $(ref.a.selfLink)}}]`,
			[]string{"cycle: a -> b -> a"}},
		{"instance-created data disk without a name", `[{name: vm, type: compute.v1.instance, properties: {zone: z, machineType: m, disks: [{boot: true}, {initializeParams: {diskSizeGb: 10}}]}}]`,
			[]string{"properties.disks[1].initializeParams has no diskName", "compute.v1.disk resource"}},
		{"required field", `[{name: sub, type: compute.v1.subnetwork, properties: {region: r, ipCidrRange: 10.0.0.0/8}}]`,
			[]string{"ComputeSubnetwork requires spec.networkRef (from properties.network)"}},
		{"ignored field's value", `[{name: vm, type: compute.v1.instance, properties: {zone: z, machineType: m, networkInterfaces: [{accessConfigs: [{type: DIRECT_IPV6}]}]}}]`,
			[]string{"takes only ONE_TO_ONE_NAT"}},
		{"a managed zone's kind other than its REST type marker", `[{name: z, type: gcp-types/dns-v1:managedZones, properties: {dnsName: z.local., kind: "dns#resourceRecordSet"}}]`,
			[]string{"properties.kind is \"dns#resourceRecordSet\": Config Connector's DNSManagedZone has no such field and takes only dns#managedZone"}},
		{"a sink's organization other than its parent's", `[{name: s, type: gcp-types/logging-v2:organizations.sinks, properties: {organization: "1", parent: organizations/2, destination: storage.googleapis.com/b}}]`,
			[]string{"properties.organization is \"1\" but properties.parent is \"organizations/2\""}},
		{"a billing account's sink", `[{name: s, type: gcp-types/logging-v2:billingAccounts.sinks, properties: {parent: billingAccounts/1, destination: storage.googleapis.com/b}}]`,
			[]string{"type gcp-types/logging-v2:billingAccounts.sinks has no Config Connector equivalent: Config Connector's LoggingLogSink exports the logs of a project, a folder or an organization"}},
		{"a bucket's binding without its bucket", `[{name: b, type: gcp-types/storage-v1:virtual.buckets.iamMemberBinding, properties: {resource: x, role: roles/viewer, member: "user:a@example.com"}}]`,
			[]string{"virtual.buckets.iamMemberBinding needs properties bucket (the bucket), role and member"}},
		{"a record set's records beside its own type", `[{name: r, type: gcp-types/dns-v1:resourceRecordSets, properties: {name: a.b., managedZone: z, type: A, records: [{type: A, rrdatas: [1.2.3.4]}]}}]`,
			[]string{"properties.type is set beside properties.records: give each record set in records"}},

		{"forwarding rule to a bare name", `[{name: fr, type: compute.v1.globalForwardingRule, properties: {target: my-proxy, portRange: "80"}}]`,
			[]string{`properties.target is "my-proxy": a target named without its kind; write its selfLink`, "takes all-apis or vpc-sc only as googleAPIsBundle"}},
		{"forwarding rule to a target pool", `[{name: tp, type: compute.v1.targetPool, properties: {region: r}}, {name: fr, type: compute.v1.forwardingRule, properties: {region: r, target: $(ref.tp.selfLink)}}]`,
			[]string{"a ComputeTargetPool; Config Connector's ComputeForwardingRule.spec.target takes a"}},
		{"cluster's subnetwork made by GKE", `[{name: c, type: "gcp-types/container-v1:projects.locations.clusters", properties: {parent: projects/p/locations/europe-west4, cluster: {name: c, ipAllocationPolicy: {useIpAliases: true, createSubnetwork: true, subnetworkName: s}}}}]`,
			[]string{"properties.cluster.ipAllocationPolicy.createSubnetwork is true: Config Connector's ContainerCluster cannot have GKE create the cluster's subnetwork"}},
		{"dashboard enabled", `[{name: c, type: "gcp-types/container-v1:projects.locations.clusters", properties: {parent: projects/p/locations/europe-west4, cluster: {name: c, addonsConfig: {kubernetesDashboard: {disabled: false}}}}}]`,
			[]string{`properties.cluster.addonsConfig.kubernetesDashboard is {"disabled":false}: Config Connector's ContainerCluster has no such field and takes only {"disabled":true}`}},
		{"legacy network", `[{name: n, type: compute.v1.network, properties: {IPv4Range: 10.240.0.0/16}}]`,
			[]string{`properties.IPv4Range is "10.240.0.0/16": a legacy network, which Google Cloud no longer creates`}},
		{"two at once", `[{name: a, type: nope.v1.thing}, {name: b, type: compute.v1.network, properties: {params: {}}}]`,
			[]string{"2 of 2 resources cannot be converted", "resource a", "resource b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Convert(resources(t, c.src), Options{Project: "p"})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Errorf("error does not wrap InvalidArgument: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestParts: a router's NATs, interfaces and BGP peers, a cluster's node
// pools and a bucket's ACL are objects of their own, named after the
// resource, referring to it, in its location; a part may reference a
// resource that references the parent (a tunnel on the router that its
// interface links) without a cycle.
func TestParts(t *testing.T) {
	r, objs := convert(t, `
- name: router
  type: compute.v1.router
  properties:
    network: default
    region: us-central1
    interfaces: [{name: if-1, linkedVpnTunnel: $(ref.tunnel.selfLink), ipRange: 169.254.0.1/30}]
    bgpPeers: [{name: peer, interfaceName: if-1, peerAsn: 65001, peerIpAddress: 169.254.0.2}]
    nats: [{name: nat, natIpAllocateOption: AUTO_ONLY, sourceSubnetworkIpRangesToNat: ALL_SUBNETWORKS_ALL_IP_RANGES}]
- name: tunnel
  type: compute.v1.vpnTunnel
  properties: {region: us-central1, router: $(ref.router.selfLink), sharedSecret: x, peerIp: 192.0.2.1}
- name: gke
  type: gcp-types/container-v1:projects.locations.clusters
  properties:
    parent: projects/p/locations/europe-west1
    cluster: {name: c, nodePools: [{name: pool_1, initialNodeCount: 1, config: {machineType: e2-small}}]}
`, Options{})
	for _, c := range []struct {
		obj, path string
		want      any
	}{
		{"ComputeRouterInterface/router-if-1", "spec.routerRef", map[string]any{"name": "router"}},
		{"ComputeRouterInterface/router-if-1", "spec.vpnTunnelRef", map[string]any{"name": "tunnel"}},
		{"ComputeRouterInterface/router-if-1", "spec.region", "us-central1"},
		{"ComputeRouterInterface/router-if-1", "spec.resourceID", "if-1"},
		{"ComputeRouterPeer/router-peer", "spec.routerInterfaceRef", map[string]any{"name": "router-if-1"}},
		{"ComputeRouterNAT/router-nat", "spec.natIpAllocateOption", "AUTO_ONLY"},
		{"ContainerNodePool/c-pool-1-ff63a0ea", "spec.clusterRef", map[string]any{"name": "c"}},
		{"ContainerNodePool/c-pool-1-ff63a0ea", "spec.location", "europe-west1"},
		{"ContainerNodePool/c-pool-1-ff63a0ea", "spec.resourceID", "pool_1"},
		{"ContainerNodePool/c-pool-1-ff63a0ea", "spec.nodeConfig.machineType", "e2-small"},
		{"ContainerCluster/c", "spec.nodePools", nil},
	} {
		if got := at(objs[c.obj], c.path); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s = %#v, want %#v", c.obj, c.path, got, c.want)
		}
	}
	var order []string
	for _, o := range r.Objects {
		order = append(order, o["kind"].(string))
	}
	want := []string{"ComputeRouter", "ComputeVPNTunnel", "ComputeRouterInterface", "ComputeRouterPeer", "ComputeRouterNAT", "ContainerCluster", "ContainerNodePool"}
	if !reflect.DeepEqual(order, want) && !reflect.DeepEqual(order, []string{"ComputeRouter", "ComputeRouterNAT", "ComputeVPNTunnel", "ComputeRouterInterface", "ComputeRouterPeer", "ContainerCluster", "ContainerNodePool"}) {
		t.Errorf("order %v", order)
	}
}

// TestBigtableGCPolicy: each column family's gcRule is a BigtableGCPolicy
// whose gcRules is the rule as Config Connector's JSON; a family without
// one is only the table's.
func TestBigtableGCPolicy(t *testing.T) {
	const table = `[{name: i, type: bigtableadmin.v2.instance, properties: {parent: projects/p, instanceId: i, clusters: {c: {location: projects/p/locations/us-central1-b}}}},
 {name: t, type: bigtableadmin.v2.instance.table, properties: {parent: $(ref.i.name), tableId: t, table: {granularity: MILLIS, columnFamilies: {plain: {}, f_1: {gcRule: RULE}}}}}]`
	for _, c := range []struct {
		name, rule, want, err string
	}{
		{"versions", `{maxNumVersions: 2}`, `{"rules":[{"max_version":2}]}`, ""},
		{"versions as a string", `{maxNumVersions: "3"}`, `{"rules":[{"max_version":3}]}`, ""},
		{"age", `{maxAge: 86400s}`, `{"rules":[{"max_age":"86400s"}]}`, ""},
		{"union", `{union: {rules: [{maxAge: 10h}, {maxNumVersions: 2}]}}`, `{"mode":"union","rules":[{"max_age":"10h"},{"max_version":2}]}`, ""},
		{"nested", `{union: {rules: [{maxAge: 15h}, {intersection: {rules: [{maxAge: 2h}, {maxNumVersions: 2}]}}]}}`,
			`{"mode":"union","rules":[{"max_age":"15h"},{"mode":"intersection","rules":[{"max_age":"2h"},{"max_version":2}]}]}`, ""},
		{"union of one", `{union: {rules: [{maxNumVersions: 1}]}}`, `{"rules":[{"max_version":1}]}`, ""},
		{"nested union of one", `{intersection: {rules: [{maxAge: 1s}, {union: {rules: [{maxNumVersions: 1}]}}]}}`,
			`{"mode":"intersection","rules":[{"max_age":"1s"},{"max_version":1}]}`, ""},
		{"empty", `{}`, "", ""},
		{"two at once", `{maxAge: 1s, maxNumVersions: 1}`, "", "properties.table.columnFamilies.f_1 (a BigtableGCPolicy): properties.gcRule sets maxAge and maxNumVersions"},
		{"bad duration", `{maxAge: 1 day}`, "", `properties.gcRule.maxAge is "1 day", not a duration`},
		{"bad count", `{maxNumVersions: two}`, "", `properties.gcRule.maxNumVersions is "two", not a whole number`},
		{"empty union", `{union: {rules: []}}`, "", "properties.gcRule.union has no rules"},
		{"empty rule in a union", `{union: {rules: [{}, {maxAge: 1s}]}}`, "", "properties.gcRule.union.rules[0] is empty"},
		{"unknown", `{maxSize: 1}`, "", "properties.gcRule.maxSize has no Config Connector field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Convert(resources(t, strings.Replace(table, "RULE", c.rule, 1)), Options{Project: "p"})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, derrors.InvalidArgument) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var policies []map[string]any
			for _, o := range r.Objects {
				if o["kind"] == "BigtableGCPolicy" {
					policies = append(policies, o)
				}
			}
			if c.want == "" {
				if len(policies) > 0 {
					t.Fatalf("a rule that collects nothing made %v", policies)
				}
				return
			}
			if len(policies) != 1 {
				t.Fatalf("%d policies, want 1 (f_1's)", len(policies))
			}
			p := policies[0]
			for path, want := range map[string]any{
				"spec.columnFamily":   "f_1",
				"spec.gcRules":        c.want,
				"spec.tableRef":       map[string]any{"name": "t"},
				"spec.instanceRef":    map[string]any{"name": "i"},
				"spec.maxVersion":     nil,
				"spec.deletionPolicy": nil,
			} {
				if got := at(p, path); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", path, got, want)
				}
			}
			if name, _ := at(p, "metadata.name").(string); !regexp.MustCompile(`^t-f-1-[0-9a-f]{8}$`).MatchString(name) {
				t.Errorf("metadata.name %q: want the table's and the family's, sanitized", name)
			}
			if got := at(r.Objects[len(r.Objects)-1], "kind"); got != "BigtableGCPolicy" {
				t.Errorf("the policy comes after its table: %v last", got)
			}
			if got := at(r.Objects[1], "spec.columnFamily"); !reflect.DeepEqual(got, []any{map[string]any{"family": "f_1"}, map[string]any{"family": "plain"}}) {
				t.Errorf("table's column families %#v", got)
			}
		})
	}
}

func TestScopes(t *testing.T) {
	for _, c := range []struct {
		src, want string
	}{
		{`[{name: a, type: compute.v1.address}]`, "ComputeAddress requires spec.location (from properties.region)"},
		{`[{name: d, type: compute.v1.disk}]`, "ComputeDisk requires spec.location (from properties.zone)"},
	} {
		_, err := Convert(resources(t, c.src), Options{Project: "p"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
	// Compute Engine's global methods take no region, and ignored the
	// body's, which is output only.
	r, byName := convert(t, `[{name: a, type: compute.v1.globalAddress, properties: {region: us-east1}}]`, Options{})
	if got := at(byName["ComputeAddress/a"], "spec.location"); got != "global" || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "properties.region is set, but type compute.v1.globalAddress is global") {
		t.Errorf("a global address with a region: location %v, warnings %q", got, r.Warnings)
	}
}

// TestValueForms: the engine may hand typed maps, lists and numbers.
func TestValueForms(t *testing.T) {
	res := []Resource{{Name: "fw", Type: "compute.v1.firewall", Properties: map[string]any{
		"network":      "default",
		"sourceRanges": []string{"10.0.0.0/8"},
		"priority":     int32(100),
		"allowed":      []map[string]any{{"IPProtocol": "tcp", "ports": []string{"22"}}},
		"labels":       map[string]string{"a": "b"},
	}, Metadata: map[string]any{"dependsOn": []string{"x"}}}}
	r, err := Convert(res, Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Objects[0]
	if at(o, "spec.priority") != int64(100) || !reflect.DeepEqual(at(o, "spec.sourceRanges"), []any{"10.0.0.0/8"}) ||
		at(o, "spec.allow.0.ports.0") != "22" || at(o, "metadata.labels.a") != "b" {
		t.Errorf("object %v", o)
	}
	if _, ok := res[0].Properties["sourceRanges"].([]string); !ok {
		t.Error("Convert modified its input")
	}
}

func TestLabels(t *testing.T) {
	_, err := Convert(resources(t, `[{name: b, type: storage.v1.bucket, properties: {labels: {team-: x}}}]`), Options{Project: "p"})
	if err == nil || !strings.Contains(err.Error(), `label "team-" cannot be a Kubernetes label`) {
		t.Errorf("label key: %v", err)
	}
	_, err = Convert(resources(t, `[{name: b, type: storage.v1.bucket, properties: {labels: {team: "é"}}}]`), Options{Project: "p"})
	if err == nil || !strings.Contains(err.Error(), "cannot be a Kubernetes label value") {
		t.Errorf("label value: %v", err)
	}
	// The project of an IAM binding is the one it binds.
	r, err := Convert(resources(t, `[{name: bind, type: "gcp-types/cloudresourcemanager-v1:virtual.projects.iamMemberBinding", properties: {resource: other, role: roles/viewer, member: "user:a@example.com"}}]`), Options{})
	if err != nil || at(r.Objects[0], "metadata.annotations."+ProjectAnnotation) != "other" {
		t.Errorf("binding without --project: %v %v", err, r)
	}
}

// TestDMSampleForms: forms DM's public samples write that the Compute API
// took as it is: a boot disk named otherwise than its instance (a
// ComputeDisk of its own, attached), an interface's name (output only,
// ignored), a firewall rule on the default network by omission, a
// backend's name (ignored), an autoscaler without a minimum (one), a
// custom role without a title (its ID), a cluster's subnetwork "" (none)
// and its disabled Kubernetes Dashboard (ignored), a legacy HTTP health
// check's proxyHeader NONE (ignored: not a field of it; community/3-tier
// writes it), a backend's group and a URL map's service given as a
// selfLink (the kind its collection names), and forms of the Cloud
// Foundation Toolkit's templates.
func TestDMSampleForms(t *testing.T) {
	r, objs := convert(t, `
- name: vm
  type: compute.v1.instance
  properties:
    zone: us-central1-a
    machineType: f1-micro
    disks: [{boot: true, autoDelete: true, deviceName: boot, initializeParams: {diskName: vm-disk, sourceImage: projects/cos-cloud/global/images/family/cos-stable, diskSizeGb: 20}}]
    networkInterfaces: [{name: vm-eth0, network: global/networks/default}]
- name: fw
  type: compute.v1.firewall
  properties: {allowed: [{IPProtocol: TCP, ports: [8080]}], sourceRanges: [0.0.0.0/0]}
- name: bes
  type: compute.v1.backendService
  properties: {backends: [{name: primary, group: $(ref.ig.selfLink)}]}
- name: ig
  type: compute.v1.instanceGroup
  properties: {zone: us-central1-a}
- name: as
  type: compute.v1.autoscaler
  properties: {zone: us-central1-a, target: $(ref.igm.selfLink), autoscalingPolicy: {maxNumReplicas: 5}}
- name: igm
  type: compute.v1.instanceGroupManager
  properties: {zone: us-central1-a, baseInstanceName: web, instanceTemplate: global/instanceTemplates/it, targetSize: 1}
- name: hc
  type: compute.v1.httpHealthCheck
  properties: {host: '', port: 8080, proxyHeader: NONE, requestPath: /cities}
- name: cft-ip
  type: compute.v1.address
  properties: {region: us-east1, addressType: EXTERNAL, resourceType: addresses}
- name: cft-dataproc
  type: dataproc.v1.cluster
  properties: {clusterName: dp, region: us-east1, config: {secondaryWorkerConfig: {numInstances: 2, isPreemptible: true}}}
- name: cft-gke
  type: gcp-types/container-v1beta1:projects.locations.clusters
  properties: {parent: projects/p/locations/us-east1, cluster: {name: k8s, network: default, privateCluster: true, masterIpv4CidrBlock: 172.16.0.0/28}}
- name: cft-sa
  type: iam.v1.serviceAccount
  properties: {accountId: deployer, displayName: Deployer, projectId: other-proj}
- name: cft-sink
  type: logging.v2.sink
  properties: {name: audit, sink: audit, destination: storage.googleapis.com/logs, uniqueWriterIdentity: true}
- name: gke
  type: gcp-types/container-v1:projects.locations.clusters
  properties: {parent: projects/p/locations/europe-west4, cluster: {name: gke, network: default, subnetwork: "", addonsConfig: {kubernetesDashboard: {disabled: true}, httpLoadBalancing: {disabled: false}}}}
- name: role
  type: gcp-types/iam-v1:projects.roles
  properties: {parent: projects/p, roleId: reader, role: {includedPermissions: [bigquery.datasets.get]}}
- name: cft-bes
  type: gcp-types/compute-v1:backendServices
  properties: {backends: [{group: zones/us-east1-b/instanceGroups/web, balancingMode: RATE, maxRate: 10000}]}
- name: cft-map
  type: gcp-types/compute-v1:urlMaps
  properties: {defaultService: global/backendBuckets/static}
- name: psc
  type: compute.v1.globalForwardingRule
  properties: {target: all-apis, network: global/networks/default, IPAddress: 10.3.0.5, loadBalancingScheme: ""}
- name: cft-ic
  type: compute.v1.interconnects
  properties: {name: ic, customerName: Example, interconnectType: DEDICATED, location: global/interconnectLocations/iad-zone1-1, requestedLinkCount: 1}
- name: cft-zone
  type: gcp-types/dns-v1:managedZones
  properties: {name: cft-zone, dnsName: z.local., description: d, project_id: p, zoneName: cft-zone, kind: "dns#managedZone", visibility: private,
    privateVisibilityConfig: {kind: "dns#managedZonePrivateVisibilityConfig", networks: [{kind: "dns#managedZonePrivateVisibilityConfigNetwork", networkUrl: "https://www.googleapis.com/compute/v1/projects/p/global/networks/n"}]}}
- name: cft-bucket-bind
  type: gcp-types/storage-v1:virtual.buckets.iamMemberBinding
  properties: {bucket: $(ref.cft-bucket.name), role: roles/storage.objectViewer, member: "user:a@example.com"}
- name: cft-bucket
  type: gcp-types/storage-v1:buckets
  properties: {name: cft-bucket-1, location: us-east1}
- name: fn
  type: gcp-types/cloudfunctions-v2beta:projects.locations.functions
  properties: {parent: projects/p/locations/us-east1, functionId: fn-1, function: {buildConfig: {runtime: python312, entryPoint: h, source: {storageSource: {bucket: b, object: f.zip}}}}}
- name: fn-bind
  type: gcp-types/cloudfunctions-v2beta:virtual.projects.locations.functions.iamMemberBinding
  properties: {resource: $(ref.fn.name), role: roles/cloudfunctions.viewer, member: "serviceAccount:123@cloudservices.gserviceaccount.com"}
- name: fn-bind-external
  type: gcp-types/cloudfunctions-v2:virtual.projects.locations.functions.iamMemberBinding
  properties: {resource: projects/p/locations/us-east1/functions/other, role: roles/cloudfunctions.invoker, member: allUsers}
- name: cft-folder-bind
  type: gcp-types/cloudresourcemanager-v2:virtual.folders.iamMemberBinding
  properties: {resource: "123", role: roles/viewer, member: "group:g@example.com"}
- name: org-sink
  type: gcp-types/logging-v2:organizations.sinks
  properties: {name: org-sink, sink: org-sink, organization: "123", parent: organizations/123, uniqueWriterIdentity: true, destination: pubsub.googleapis.com/projects/p/topics/t}
- name: rrs
  type: gcp-types/dns-v1:resourceRecordSets
  properties: {name: www.example.com., managedZone: $(ref.cft-zone.name), records: [{type: A, ttl: 50, rrdatas: [10.0.0.1]},
    {name: mail.example.com., type: MX, ttl: 300, rrdatas: ["5 smtp.example.com."], kind: "dns#resourceRecordSet"}]}
`, Options{})
	for _, c := range []struct {
		obj, path string
		want      any
	}{
		{"ComputeInstance/vm", "spec.bootDisk.sourceDiskRef", map[string]any{"name": "vm-disk"}},
		{"ComputeInstance/vm", "spec.bootDisk.autoDelete", true},
		{"ComputeInstance/vm", "spec.bootDisk.initializeParams", nil},
		{"ComputeInstance/vm", "spec.networkInterface.0", map[string]any{"networkRef": map[string]any{"external": "global/networks/default"}}},
		{"ComputeDisk/vm-disk", "spec.imageRef", map[string]any{"external": "projects/cos-cloud/global/images/family/cos-stable"}},
		{"ComputeDisk/vm-disk", "spec.size", int64(20)},
		{"ComputeDisk/vm-disk", "spec.location", "us-central1-a"},
		{"ComputeFirewall/fw", "spec.networkRef", map[string]any{"external": "projects/p/global/networks/default"}},
		{"ComputeBackendService/bes", "spec.backend.0.group.instanceGroupRef", map[string]any{"name": "ig"}},
		{"ComputeAutoscaler/as", "spec.autoscalingPolicy.minReplicas", int64(1)},
		{"ComputeHTTPHealthCheck/hc", "spec.port", int64(8080)},
		{"ComputeHTTPHealthCheck/hc", "spec.proxyHeader", nil},
		{"LoggingLogSink/audit", "spec.uniqueWriterIdentity", true},                                           // sink names it too
		{"IAMServiceAccount/deployer", "metadata.annotations.cnrm.cloud.google.com/project-id", "other-proj"}, // projectId
		{"ComputeAddress/cft-ip", "spec.addressType", "EXTERNAL"},                                             // resourceType was ignored by Compute Engine
		{"DataprocCluster/dp", "spec.config.secondaryWorkerConfig.numInstances", int64(2)},                    // isPreemptible is output only
		{"IAMCustomRole/reader", "spec.title", "reader"},
		{"ContainerCluster/gke", "spec.subnetworkRef", nil},
		{"IAMPolicyMember/cft-bucket-bind", "spec.resourceRef", map[string]any{"apiVersion": "storage.cnrm.cloud.google.com/v1beta1", "kind": "StorageBucket", "name": "cft-bucket-1"}},
		{"IAMPolicyMember/cft-folder-bind", "spec.resourceRef", map[string]any{"kind": "Folder", "external": "folders/123"}},
		{"IAMPolicyMember/fn-bind", "spec.resourceRef", map[string]any{"apiVersion": "cloudfunctions2.cnrm.cloud.google.com/v1alpha1", "kind": "CloudFunctions2Function", "name": "fn-1"}},
		{"IAMPolicyMember/fn-bind", "spec.role", "roles/cloudfunctions.viewer"},
		{"IAMPolicyMember/fn-bind-external", "spec.resourceRef", map[string]any{"kind": "CloudFunctions2Function", "external": "projects/p/locations/us-east1/functions/other"}},
		{"IAMPolicyMember/cft-folder-bind", "metadata.annotations.cnrm.cloud.google.com/project-id", "p"},
		{"LoggingLogSink/org-sink", "spec.organizationRef", map[string]any{"external": "123"}}, // organization is parent's ID
		{"DNSRecordSet/rrs", "spec.name", "www.example.com."},                                  // DM's records: the first is the resource's
		{"DNSRecordSet/rrs", "spec.rrdatas", []any{"10.0.0.1"}},
		{"DNSRecordSet/rrs-mx-mail.example.com", "spec.name", "mail.example.com."},
		{"DNSRecordSet/rrs-mx-mail.example.com", "spec.type", "MX"},
		{"DNSRecordSet/rrs-mx-mail.example.com", "spec.managedZoneRef", map[string]any{"name": "cft-zone"}},
		{"DNSManagedZone/cft-zone", "spec.dnsName", "z.local."}, // project_id, zoneName and kind were ignored by Cloud DNS
		{"DNSManagedZone/cft-zone", "spec.privateVisibilityConfig.networks.0.networkRef", map[string]any{"external": "https://www.googleapis.com/compute/v1/projects/p/global/networks/n"}},
		{"ContainerCluster/gke", "spec.addonsConfig", map[string]any{"httpLoadBalancing": map[string]any{"disabled": false}}},
		// A selfLink's collection names the kind: that of the method
		// creating it, not of KCC's reference page (v1.instances,
		// v1.backendBucket).
		{"ComputeBackendService/cft-bes", "spec.backend.0.group", map[string]any{"instanceGroupRef": map[string]any{"external": "zones/us-east1-b/instanceGroups/web"}}},
		{"ComputeURLMap/cft-map", "spec.defaultService", map[string]any{"backendBucketRef": map[string]any{"external": "global/backendBuckets/static"}}},
		// interconnect.py's collection spelling; location is the
		// interconnect's, a field of its body.
		{"ComputeForwardingRule/psc", "spec.target", map[string]any{"googleAPIsBundle": "all-apis"}}, // Private Service Connect
		{"ComputeInterconnect/ic", "spec.location", "global/interconnectLocations/iad-zone1-1"},
		{"ComputeInterconnect/ic", "spec.requestedLinkCount", int64(1)},
	} {
		if got := at(objs[c.obj], c.path); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s %s = %#v, want %#v", c.obj, c.path, got, c.want)
		}
	}
	if r.Objects[0]["kind"] != "ComputeDisk" {
		t.Errorf("the boot disk comes after the instance that attaches it: %v first", r.Objects[0]["kind"])
	}
}

// TestLeftOut: a property the API that Deployment Manager called ignored
// (an output only field, a field the REST body lacks where the API ignored
// those, a field kinds.yaml ignores) is left out with a warning naming it;
// a field Config Connector requires that the API defaulted takes the
// API's default, with a warning.
func TestLeftOut(t *testing.T) {
	for _, c := range []struct {
		name, src    string
		path         string // OBJECT/KIND-NAME path, "" for none
		want         any
		wantWarnings []string
	}{
		{"misspelt field, Cloud Storage", `[{name: b, type: gcp-types/storage-v1:buckets, properties: {website: {mainPageSuffix: index.html, notFoundpage: 404.html}}}]`,
			"StorageBucket/b spec.website", map[string]any{"mainPageSuffix": "index.html"},
			[]string{"resource b (tmpl > b), type gcp-types/storage-v1:buckets: properties.website.notFoundpage is not a field of storage/v1 Bucket, which ignored it"}},
		{"misspelt field, Compute Engine", `[{name: vm, type: compute.v1.instance, properties: {zone: z, machineType: m, canIpForwrd: true}}]`,
			"ComputeInstance/vm spec.canIpForward", nil,
			[]string{"properties.canIpForwrd is not a field of compute/beta Instance, which ignored it", "dm leaves it out; did you mean properties.canIpForward?"}},
		{"another method's parameter, Compute Engine", `[{name: vm, type: compute.v1.instance, properties: {zone: z, machineType: m, mostDisruptiveAllowedAction: RESTART}}]`,
			"ComputeInstance/vm spec.machineType", "m",
			[]string{"properties.mostDisruptiveAllowedAction is not a field of compute/beta Instance"}},
		{"a disk's machineType", `[{name: d, type: compute.v1.disk, properties: {zone: z, sizeGb: 10, machineType: n1-standard-1}}]`,
			"ComputeDisk/d spec.size", int64(10),
			[]string{"properties.machineType is not a field of compute/beta Disk"}},
		{"a router's top-level asn", `[{name: r, type: compute.v1.router, properties: {region: us-central1, network: default, asn: 65001, bgp: {asn: 65001}}}]`,
			"ComputeRouter/r spec.bgp.asn", int64(65001),
			[]string{"properties.asn is not a field of compute/beta Router"}},
		{"output only", `[{name: g, type: compute.v1.globalForwardingRule, properties: {region: us-central1, target: $(ref.p.selfLink), portRange: "80"}}, {name: p, type: compute.v1.targetHttpProxy, properties: {urlMap: global/urlMaps/m}}]`,
			"ComputeForwardingRule/g spec.location", "global",
			[]string{"properties.region is set, but type compute.v1.globalForwardingRule is global: its method takes no region"}},
		{"a bucket ACL's domain", `[{name: a, type: gcp-types/storage-v1:bucketAccessControls, properties: {bucket: b, entity: allUsers, role: READER, domain: example.com}}]`,
			"StorageBucketAccessControl/a spec.entity", "allUsers",
			[]string{"properties.domain is left out: not writable"}},
		{"a deprecated field", `[{name: s, type: gcp-types/logging-v2:projects.sinks, properties: {sink: s, destination: storage.googleapis.com/b, outputVersionFormat: V2}}]`,
			"LoggingLogSink/s spec.destination.storageBucketRef.external", "b",
			[]string{"properties.outputVersionFormat is left out: deprecated"}},
		{"a type marker and a concurrency token", `[{name: db, type: sqladmin.v1beta4.database, properties: {instance: i, kind: "sql#database", etag: x}}]`,
			"SQLDatabase/db spec.instanceRef.external", "i",
			[]string{"properties.etag is left out: a concurrency token", "properties.kind is left out: the REST type marker"}},
		{"a legacy health check's proxyHeader", `[{name: hc, type: compute.v1.httpHealthCheck, properties: {port: 80, proxyHeader: PROXY_V1}}]`,
			"ComputeHTTPHealthCheck/hc spec.port", int64(80),
			[]string{"properties.proxyHeader is not a field of compute/beta HttpHealthCheck"}},
		{"service account without scopes", `[{name: vm, type: compute.v1.instance, properties: {zone: z, machineType: m, serviceAccounts: [{email: sa@p.iam.gserviceaccount.com}]}}]`,
			"ComputeInstance/vm spec.serviceAccount", map[string]any{"serviceAccountRef": map[string]any{"external": "sa@p.iam.gserviceaccount.com"}, "scopes": []any{}},
			[]string{"properties.serviceAccounts[].scopes is not set: spec.serviceAccount.scopes takes [], as the API defaulted it"}},
		{"service account with scopes", `[{name: vm, type: compute.v1.instance, properties: {zone: z, machineType: m, serviceAccounts: [{email: default, scopes: [x]}]}}]`,
			"ComputeInstance/vm spec.serviceAccount", map[string]any{"scopes": []any{"x"}}, nil},
		{"instance template's service account", `[{name: it, type: compute.v1.instanceTemplate, properties: {properties: {machineType: m, disks: [{boot: true, initializeParams: {sourceImage: i}}], serviceAccounts: [{email: default}]}}}]`,
			"ComputeInstanceTemplate/it spec.serviceAccount.scopes", []any{},
			[]string{"properties.properties.serviceAccounts[].scopes is not set"}},
		{"project without a name", `[{name: p1, type: gcp-types/cloudresourcemanager-v1:projects, properties: {projectId: my-project-1, parent: {type: organization, id: "123"}}}]`,
			"Project/my-project-1 spec.name", "my-project-1",
			[]string{"properties.name is not set: spec.name takes \"my-project-1\""}},
		{"SQL client certificate without a common name", `[{name: cert, type: gcp-types/sqladmin-v1beta4:sslCerts, properties: {instance: db}}]`,
			"SQLSSLCert/cert spec.commonName", "cert",
			[]string{"properties.commonName is not set: spec.commonName takes \"cert\""}},
		{"GKE node auto-provisioning", `[{name: c, type: container.v1.cluster, properties: {zone: us-central1-a, cluster: {initialNodeCount: 1, autoscaling: {enableNodeAutoprovisioning: true, resourceLimits: [{resourceType: cpu, maximum: 10}]}}}}]`,
			"ContainerCluster/c spec.clusterAutoscaling.enabled", true, nil},
		{"a function's ID under its collection's singular", `[{name: f, type: gcp-types/cloudfunctions-v2beta:projects.locations.functions, properties: {parent: projects/p/locations/us-central1, function: my-fn, buildConfig: {runtime: go122, entryPoint: F}}}]`,
			"CloudFunctions2Function/my-fn spec.buildConfig.runtime", "go122", nil},
		{"a function's body wrapped in function", `[{name: f, type: gcp-types/cloudfunctions-v2beta:projects.locations.functions, properties: {parent: projects/p/locations/us-central1, functionId: my-fn, function: {description: d, buildConfig: {runtime: go122}}}}]`,
			"CloudFunctions2Function/my-fn spec.description", "d", nil},
		{"a log metric's ID under metric", `[{name: m, type: gcp-types/logging-v2:projects.metrics, properties: {metric: errors, filter: severity>=ERROR}}]`,
			"LoggingLogMetric/errors spec.filter", "severity>=ERROR", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, byName := convert(t, c.src, Options{})
			if c.path != "" {
				obj, path, _ := strings.Cut(c.path, " ")
				if byName[obj] == nil {
					t.Fatalf("no object %s among %v", obj, slices.Sorted(maps.Keys(byName)))
				}
				if got := at(byName[obj], path); !reflect.DeepEqual(got, c.want) {
					t.Errorf("%s = %#v, want %#v", c.path, got, c.want)
				}
			}
			for _, w := range c.wantWarnings {
				found := false
				for _, have := range r.Warnings {
					found = found || strings.Contains(have, w)
				}
				if !found {
					t.Errorf("no warning contains %q; warnings:\n%s", w, strings.Join(r.Warnings, "\n"))
				}
			}
			if c.wantWarnings == nil && len(r.Warnings) > 0 {
				t.Errorf("warnings: %q", r.Warnings)
			}
		})
	}
}

// TestSpecReads: $(ref.X.P) of a field the body left to the API (a
// forwarding rule's IPAddress, a network's MTU) reads the spec field Config
// Connector writes the value Google Cloud chose into, on an object annotated
// state-into-spec: merge.
func TestSpecReads(t *testing.T) {
	r, objs := convert(t, `
- name: vm
  type: compute.v1.instance
  properties:
    zone: us-central1-a
    machineType: f1-micro
    networkInterfaces: [{network: $(ref.net.selfLink)}]
    metadata:
      items:
      - {key: lb, value: "$(ref.fr.IPAddress)"}
      - {key: mtu, value: "$(ref.net.mtu)"}
- name: net
  type: compute.v1.network
  properties: {autoCreateSubnetworks: true}
- name: fr
  type: compute.v1.forwardingRule
  properties: {region: us-central1, backendService: projects/p/regions/us-central1/backendServices/b, loadBalancingScheme: INTERNAL, network: $(ref.net.selfLink)}
`, Options{})
	var got []string
	for _, d := range r.Deferred {
		got = append(got, d.Ref+" <- "+d.Kind+" "+d.Path)
	}
	slices.Sort(got)
	want := []string{"$(ref.fr.IPAddress) <- ComputeForwardingRule spec.ipAddress.ip", "$(ref.net.mtu) <- ComputeNetwork spec.mtu"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deferred %q, want %q", got, want)
	}
	for _, o := range []string{"ComputeForwardingRule/fr", "ComputeNetwork/net"} {
		if a := at(objs[o], "metadata.annotations."+StateIntoSpecAnnotation); a != "merge" {
			t.Errorf("%s: state-into-spec %v, want merge", o, a)
		}
	}
}
