package gcp

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
)

// Hand-written rules: what the generated pairing of REST and KCC fields
// cannot express. Each rule takes the properties left after the name,
// project, location and labels, maps the fields it knows into oc.spec and
// deletes them; the generic walk maps the rest.

// rules are the per-kind rules.
var rules = map[string]func(oc *objConv, props map[string]any) error{
	"ComputeInstance":                  instanceRule,
	"ComputeInstanceTemplate":          instanceTemplateRule,
	"ComputeHealthCheck":               healthCheckRule,
	"ComputeFirewall":                  firewallRule,
	"ComputeAutoscaler":                autoscalerRule,
	"ComputeBackendService":            backendServiceRule,
	"ComputeSubnetwork":                subnetworkRule,
	"ComputeNetwork":                   networkRule,
	"IAMPolicyMember":                  iamMemberBinding,
	"SQLInstance":                      sqlInstanceRule,
	"StorageBucket":                    bucketRule,
	"ContainerCluster":                 clusterRule,
	"ContainerNodePool":                nodePoolRule,
	"DNSRecordSet":                     recordSetRule,
	"KMSKeyRing":                       parentOnly("projects/{project}/locations/{location}"),
	"KMSCryptoKey":                     parentRef("keyRingRef", "KMSKeyRing"),
	"IAMCustomRole":                    customRoleRule,
	"IAMServiceAccount":                serviceAccountRule,
	"IAMServiceAccountKey":             serviceAccountKeyRule,
	"AccessContextManagerAccessPolicy": accessPolicyRule,
	"CloudFunctionsFunction":           functionRule,
	"CloudFunctions2Function":          parentOnly("projects/{project}/locations/{location}"),
	"AppEngineStandardAppVersion":      appEngineVersionRule,
	"Project":                          projectRule,
	"Folder":                           folderRule,
	"Service":                          enableServiceRule,
	"BigQueryDataset":                  datasetRule,
	"BigQueryTable":                    tableRule,
	"LoggingLogSink":                   logSinkRule,
	"LoggingLogMetric":                 parentOnly("projects/{project}"),
	"SpannerInstance":                  spannerInstanceRule,
	"SpannerDatabase":                  parentRef("instanceRef", "SpannerInstance"),
	"BigtableInstance":                 bigtableRule,
	"RedisInstance":                    parentOnly("projects/{project}/locations/{location}"),
	"SecretManagerSecret":              secretRule,
	"DataprocCluster":                  dataprocRule,
	"CloudBuildTrigger":                buildTriggerRule,
	"CloudSchedulerJob":                parentOnly("projects/{project}/locations/{location}"),
	"FilestoreInstance":                parentOnly("projects/{project}/locations/{location}"),
	"BigtableTable":                    bigtableTableRule,
	"MonitoringMetricDescriptor":       monitoringRule,
	"MonitoringAlertPolicy":            monitoringRule,
	"MonitoringNotificationChannel":    monitoringRule,
	"MonitoringGroup":                  monitoringRule,
	"TPUNode":                          parentOnly("projects/{project}/locations/{zone}"),
	"MonitoringUptimeCheckConfig":      monitoringRule,
}

// partRules are rules for objects made of a part of another resource's
// body (parts in kinds.yaml).
var partRules = map[string]func(oc *objConv, props map[string]any) error{
	"ComputeRouterPeer": routerPeerRule,
	"BigtableGCPolicy":  gcPolicyRule,
	"DNSRecordSet":      recordSetName,
}

// handFields are the top-level properties the rules take, beside the
// generated pairs (for errors listing what a kind takes).
var handFields = map[string][]string{
	"ComputeInstance":         {"disks"},
	"ComputeInstanceTemplate": {"properties.disks", "properties.labels"},
	"ComputeHealthCheck":      {"type"},
	"ComputeSubnetwork":       {"enableFlowLogs"},
	"IAMPolicyMember":         {"resource", "role", "member", "condition"},
	"StorageBucket":           {"predefinedAcl", "predefinedDefaultObjectAcl", "projection"},
	"ContainerCluster":        {"cluster", "parent"},
	"ContainerNodePool":       {"nodePool", "clusterId", "parent"},
	"DNSRecordSet":            {"name", "records"},
	"KMSKeyRing":              {"parent"},
	"KMSCryptoKey":            {"parent"},
	"IAMCustomRole":           {"parent"},
	"IAMServiceAccountKey":    {"name"},
	"CloudFunctionsFunction":  {"parent", "location"},
	"Service":                 {"consumerId", "serviceName"},
	"BigQueryTable":           {"schema", "datasetId"},
	"LoggingLogSink":          {"destination", "parent", "folder", "organization"},
	"SpannerDatabase":         {"parent"},
	"BigtableInstance":        {"clusters", "parent"},
	"SecretManagerSecret":     {"parent"},
	"IAMServiceAccount":       {"displayName", "description", "projectId"},
}

// shortFields hold a name DM bodies may write as a URL or partial path
// (zones/us-central1-a/machineTypes/n1-standard-1) where KCC takes the
// name alone.
var shortFields = map[string]map[string]bool{
	"ComputeInstance": {"machineType": true, "guestAccelerators[].acceleratorType": true},
	"ComputeInstanceTemplate": {"properties.machineType": true, "properties.guestAccelerators[].acceleratorType": true,
		"diskinit:diskType": true},
}

// defaultServiceAccount: an instance's serviceAccounts[].email "default"
// is Compute Engine's default service account, which KCC uses when
// serviceAccountRef is unset.
func dropDefaultEmail(props map[string]any, path ...string) {
	var cur any = props
	for _, k := range path {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	list, _ := cur.([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["email"] == "default" {
			delete(m, "email")
		}
	}
}

// nameRules read the Google Cloud name from a name property, where its
// last path segment is not the name.
var nameRules = map[string]func(s string) (string, error){}

// defaultNames give the Google Cloud name of kinds whose name is not the
// DM resource's name when no name property is set.
var defaultNames = map[string]func(it *item) (string, error){}

// walkVariant maps REST object m by the pairs of variant label (an
// instance's boot disk), idx filling the KCC path's lists.
func (oc *objConv) walkVariant(m map[string]any, label string, idx []int) error {
	p := oc.kind.pair(label + ":")
	if p == nil {
		return fmt.Errorf("internal error: %s has no variant %s", oc.kind.Kind, label)
	}
	path, err := concretize(p.KCC, idx)
	if err != nil {
		return err
	}
	if _, err := oc.ensure(path); err != nil {
		return err
	}
	return oc.walkObject(m, label+":", idx)
}

// setValue converts v for the KCC field at pattern (filling its lists
// with idx) and sets it; rp names the REST field for errors.
func (oc *objConv) setValue(v any, pattern string, idx []int, rp string) error {
	f := oc.kind.field(pattern)
	if f == nil {
		return fmt.Errorf("internal error: %s has no field %s", oc.kind.Kind, pattern)
	}
	path, err := concretize(pattern, idx)
	if err != nil {
		return err
	}
	val, err := oc.value(v, f, path, rp)
	if err != nil || val == nil {
		return err
	}
	return oc.set(path, val)
}

// take removes and returns props[key].
func take(props map[string]any, key string) (any, bool) {
	v, ok := props[key]
	delete(props, key)
	return v, ok && v != nil
}

// instanceRule maps an instance's disks: the boot disk (boot: true, else
// the first) into bootDisk, scratch disks into scratchDisk, others into
// attachedDisk.
func instanceRule(oc *objConv, props map[string]any) error {
	dropDefaultEmail(props, "serviceAccounts")
	v, ok := take(props, "disks")
	if !ok {
		return nil
	}
	disks, ok := v.([]any)
	if !ok {
		return invalid("properties.disks is %s, not a list", describe(v))
	}
	bootIndex := -1
	for i, d := range disks {
		if m, ok := d.(map[string]any); ok && m["boot"] == true {
			bootIndex = i
			break
		}
	}
	if bootIndex < 0 && len(disks) > 0 {
		bootIndex = 0 // Compute Engine boots from the first disk
	}
	attached, scratch := 0, 0
	for i, d := range disks {
		m, ok := d.(map[string]any)
		if !ok {
			return invalid("properties.disks[%d] is %s, not a disk", i, describe(d))
		}
		where := fmt.Sprintf("properties.disks[%d]", i)
		typ, _ := take(m, "type")
		if typ == "SCRATCH" {
			sd := map[string]any{}
			if iface, ok := take(m, "interface"); ok {
				sd["interface"] = iface
			}
			if ip, ok := take(m, "initializeParams"); ok {
				ipm, _ := ip.(map[string]any)
				if size, ok := take(ipm, "diskSizeGb"); ok {
					sd["size"] = size
				}
				take(ipm, "diskType")
				if len(ipm) > 0 {
					return invalid("%s.initializeParams.%s: a scratch disk takes only diskSizeGb and diskType", where, sortedKeys(ipm)[0])
				}
			}
			take(m, "autoDelete")
			take(m, "deviceName")
			if len(m) > 0 {
				return invalid("%s.%s has no Config Connector field in a scratch disk (interface, initializeParams.diskSizeGb)", where, sortedKeys(m)[0])
			}
			for _, k := range []string{"interface", "size"} {
				if sd[k] != nil {
					if err := oc.setValue(sd[k], "scratchDisk[]."+k, []int{scratch}, where+"."+k); err != nil {
						return err
					}
				}
			}
			if _, err := oc.ensure([]seg{{key: "scratchDisk"}, {idx: scratch}}); err != nil {
				return err
			}
			scratch++
			continue
		}
		if typ != nil && typ != "PERSISTENT" {
			return invalid("%s.type is %s: want PERSISTENT or SCRATCH", where, describe(typ))
		}
		if iface, ok := take(m, "interface"); ok && iface != "SCSI" {
			return invalid("%s.interface is %s: Config Connector's ComputeInstance attaches persistent disks as SCSI only", where, describe(iface))
		}
		if size, ok := take(m, "diskSizeGb"); ok {
			ip, _ := m["initializeParams"].(map[string]any)
			if ip == nil {
				ip = map[string]any{}
				m["initializeParams"] = ip
			}
			if _, has := ip["diskSizeGb"]; !has {
				ip["diskSizeGb"] = size
			}
		}
		if key, ok := take(m, "diskEncryptionKey"); ok {
			if err := oc.diskKey(key, map[bool]string{true: "bootDisk", false: "attachedDisk[]"}[i == bootIndex], attached, where); err != nil {
				return err
			}
		}
		if i == bootIndex {
			take(m, "boot")
			ip, hasIP := take(m, "initializeParams")
			if err := oc.walkVariant(m, "boot", nil); err != nil {
				return err
			}
			if hasIP {
				ipm, ok := ip.(map[string]any)
				if !ok {
					return invalid("%s.initializeParams is %s, not an object", where, describe(ip))
				}
				if name, ok := ipm["diskName"]; ok && name != oc.it.gcpName {
					// Config Connector names the boot disk it creates
					// after the instance: a disk of another name is a
					// ComputeDisk of its own, which adopts the disk DM
					// made, attached as the boot disk.
					objName, err := oc.diskObject(ipm, where)
					if err != nil {
						return err
					}
					if err := oc.set([]seg{{key: "bootDisk"}, {key: "sourceDiskRef"}}, map[string]any{"name": objName}); err != nil {
						return err
					}
					continue
				}
				delete(ipm, "diskName")
				if dt, ok := take(ipm, "diskType"); ok {
					if err := oc.setValue(shortValue(dt), "bootDisk.initializeParams.type", nil, where+".initializeParams.diskType"); err != nil {
						return err
					}
				}
				if err := oc.walkVariant(ipm, "bootinit", nil); err != nil {
					return err
				}
			}
			continue
		}
		take(m, "boot")
		take(m, "autoDelete") // attached disks are objects of their own in KCC
		if ip, ok := take(m, "initializeParams"); ok {
			if err := oc.instanceDisk(ip, where, attached); err != nil {
				return err
			}
		}
		if err := oc.walkVariant(m, "attached", []int{attached}); err != nil {
			return err
		}
		attached++
	}
	return nil
}

// diskKey maps a disk's diskEncryptionKey: rawKey and kmsKeyName.
func (oc *objConv) diskKey(v any, disk string, i int, where string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return invalid("%s.diskEncryptionKey is %s, not an object", where, describe(v))
	}
	idx := []int{i}
	for _, k := range sortedKeys(m) {
		var err error
		switch k {
		case "rawKey":
			err = oc.setValue(m[k], disk+".diskEncryptionKeyRaw", idx, where+".diskEncryptionKey.rawKey")
		case "kmsKeyName":
			err = oc.setValue(m[k], disk+".kmsKeyRef", idx, where+".diskEncryptionKey.kmsKeyName")
		case "sha256":
			err = oc.setValue(m[k], disk+".diskEncryptionKeySha256", idx, where+".diskEncryptionKey.sha256")
		default:
			err = invalid("%s.diskEncryptionKey.%s has no Config Connector field (rawKey, kmsKeyName)", where, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// shortValue is a name written as a URL or path, as its last segment.
func shortValue(v any) any {
	if s, ok := v.(string); ok && !hasRef(s) {
		return lastSegment(s)
	}
	return v
}

// instanceTemplateRule maps an instance template's disks (each
// initializeParams into the same KCC disk) and its instances' labels.
func instanceTemplateRule(oc *objConv, props map[string]any) error {
	p, ok := props["properties"].(map[string]any)
	if !ok {
		return nil
	}
	dropDefaultEmail(p, "serviceAccounts")
	if err := oc.takeLabels(p, "labels", "properties.properties.labels"); err != nil {
		return err
	}
	v, ok := take(p, "disks")
	if !ok {
		return nil
	}
	disks, ok := v.([]any)
	if !ok {
		return invalid("properties.properties.disks is %s, not a list", describe(v))
	}
	for i, d := range disks {
		m, ok := d.(map[string]any)
		if !ok {
			return invalid("properties.properties.disks[%d] is %s, not a disk", i, describe(d))
		}
		where := fmt.Sprintf("properties.properties.disks[%d]", i)
		idx := []int{i}
		if key, ok := take(m, "diskEncryptionKey"); ok {
			km, _ := key.(map[string]any)
			for _, k := range sortedKeys(km) {
				if k != "kmsKeyName" {
					return invalid("%s.diskEncryptionKey.%s has no Config Connector field (kmsKeyName)", where, k)
				}
				if err := oc.setValue(km[k], "disk[].diskEncryptionKey.kmsKeyRef", idx, where+".diskEncryptionKey.kmsKeyName"); err != nil {
					return err
				}
			}
		}
		ip, hasIP := take(m, "initializeParams")
		if err := oc.walkVariant(m, "disk", idx); err != nil {
			return err
		}
		if hasIP {
			ipm, ok := ip.(map[string]any)
			if !ok {
				return invalid("%s.initializeParams is %s, not an object", where, describe(ip))
			}
			if dt, ok := take(ipm, "diskType"); ok {
				if err := oc.setValue(shortValue(dt), "disk[].diskType", idx, where+".initializeParams.diskType"); err != nil {
					return err
				}
			}
			if err := oc.walkVariant(ipm, "diskinit", idx); err != nil {
				return err
			}
		}
	}
	return nil
}

// healthCheckRule checks type against the protocol block it names: KCC has
// no type field, the block says it (an empty block where the body gave
// the type alone).
func healthCheckRule(oc *objConv, props map[string]any) error {
	t, ok := take(props, "type")
	if !ok {
		return nil
	}
	s, _ := t.(string)
	block := map[string]string{"HTTP": "httpHealthCheck", "HTTPS": "httpsHealthCheck", "HTTP2": "http2HealthCheck",
		"TCP": "tcpHealthCheck", "SSL": "sslHealthCheck", "GRPC": "grpcHealthCheck"}[s]
	if block == "" {
		return invalid("properties.type is %s: want HTTP, HTTPS, HTTP2, TCP, SSL or GRPC", describe(t))
	}
	if _, ok := props[block]; !ok {
		props[block] = map[string]any{}
	}
	return nil
}

// subnetworkRule maps flow logs: KCC turns them on with logConfig.
func subnetworkRule(oc *objConv, props map[string]any) error {
	on, _ := take(props, "enableFlowLogs")
	lc, _ := props["logConfig"].(map[string]any)
	if e, ok := take(lc, "enable"); ok {
		on = e
	}
	switch on {
	case true:
		if lc == nil {
			props["logConfig"] = map[string]any{}
		}
	case false:
		delete(props, "logConfig")
	}
	return nil
}

// takeLabels moves m[key], labels a REST body keeps inside itself (an
// instance template's properties.labels, a Cloud SQL instance's
// settings.userLabels), to the object's metadata.labels; where names it
// in errors.
func (oc *objConv) takeLabels(m map[string]any, key, where string) error {
	l, ok := take(m, key)
	if !ok {
		return nil
	}
	labels, err := labelMap(l, where)
	if err != nil {
		return err
	}
	oc.extraLabels = labels
	return nil
}

func sqlInstanceRule(oc *objConv, props map[string]any) error {
	st, _ := props["settings"].(map[string]any)
	return oc.takeLabels(st, "userLabels", "properties.settings.userLabels")
}

// bucketRule: a predefined ACL other than projectPrivate (a new bucket's
// own) has no KCC field; StorageBucketAccessControl objects do it.
func bucketRule(oc *objConv, props map[string]any) error {
	for _, k := range []string{"predefinedAcl", "predefinedDefaultObjectAcl"} {
		if v, ok := take(props, k); ok && v != "projectPrivate" {
			return invalid("properties.%s is %s: Config Connector's StorageBucket has no predefined ACLs; grant access with accessControl.gcpIamPolicy (or storage.v1.bucketAccessControl resources)", k, describe(v))
		}
	}
	take(props, "projection") // what the insert call returns, not the bucket
	// A lifecycle condition's isLive is KCC's withState.
	if lc, ok := props["lifecycle"].(map[string]any); ok {
		rules, _ := lc["rule"].([]any)
		for i, r := range rules {
			rm, _ := r.(map[string]any)
			cond, _ := rm["condition"].(map[string]any)
			if live, ok := take(cond, "isLive"); ok {
				state := map[bool]string{true: "LIVE", false: "ARCHIVED"}[live == true]
				if err := oc.setValue(state, "lifecycleRule[].condition.withState", []int{i}, "lifecycle.rule[].condition.isLive"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// firewallRule: logConfig.enable is KCC's enableLogging.
func firewallRule(oc *objConv, props map[string]any) error {
	if _, ok := props["network"]; !ok {
		// Compute Engine puts a rule that names no network on the
		// project's default network; KCC requires the reference.
		props["network"] = "projects/" + oc.it.project + "/global/networks/default"
	}
	lc, _ := props["logConfig"].(map[string]any)
	if e, ok := take(lc, "enable"); ok {
		if len(lc) == 0 {
			delete(props, "logConfig")
		}
		return oc.setValue(e, "enableLogging", nil, "logConfig.enable")
	}
	return nil
}

// autoscalerRule: Compute Engine scales down to one instance when the
// policy names no minimum; KCC requires the minimum.
func autoscalerRule(oc *objConv, props map[string]any) error {
	if p, ok := props["autoscalingPolicy"].(map[string]any); ok {
		if _, has := p["minNumReplicas"]; !has {
			p["minNumReplicas"] = int64(1)
		}
	}
	return nil
}

// backendServiceRule: KCC turns IAP on with the iap block; enabled false
// leaves it out.
func backendServiceRule(oc *objConv, props map[string]any) error {
	iap, _ := props["iap"].(map[string]any)
	if e, ok := take(iap, "enabled"); ok && e != true {
		delete(props, "iap")
	}
	return nil
}

// projectParam checks a project given again as a parameter (projectId,
// a parent projects/P) against the resource's.
func (oc *objConv) projectParam(key string, v any) error {
	s, ok := v.(string)
	if !ok {
		return invalid("properties.%s is %s, not a project", key, describe(v))
	}
	if p := strings.TrimPrefix(s, "projects/"); p != oc.it.project {
		return invalid("properties.%s names project %s but properties.project is %s", key, p, oc.it.project)
	}
	return nil
}

var (
	parentRE        = lazyRegexp(`^projects/([^/]+)(?:/(?:locations|zones)/([^/]+))?$`)
	clusterParentRE = lazyRegexp(`^projects/([^/]+)/(?:locations|zones)/([^/]+)/clusters/([^/]+)$`)
)

// parentOnly takes a parent that names the project (and location) alone.
func parentOnly(form string) func(oc *objConv, props map[string]any) error {
	return func(oc *objConv, props map[string]any) error {
		v, ok := take(props, "parent")
		if !ok {
			return nil
		}
		s, _ := v.(string)
		m := parentRE().FindStringSubmatch(s)
		if m == nil {
			return invalid("properties.parent is %s: want %s", describe(v), form)
		}
		return oc.projectParam("parent", m[1])
	}
}

// parentRef maps a parent that names another resource (a key ring, an
// instance) into the reference field key.
func parentRef(key, kind string) func(oc *objConv, props map[string]any) error {
	return func(oc *objConv, props map[string]any) error {
		v, ok := take(props, "parent")
		if !ok {
			return nil
		}
		return oc.setValue(v, key, nil, "parent")
	}
}

func clusterRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "projectId"); ok {
		if err := oc.projectParam("projectId", v); err != nil {
			return err
		}
	}
	if v, ok := take(props, "parent"); ok {
		s, _ := v.(string)
		if m := parentRE().FindStringSubmatch(s); m == nil {
			return invalid("properties.parent is %s: want projects/PROJECT/locations/LOCATION", describe(v))
		} else if err := oc.projectParam("parent", m[1]); err != nil {
			return err
		}
	}
	cl, _ := props["cluster"].(map[string]any)
	// container/v1beta1's privateCluster and masterIpv4CidrBlock, which
	// privateClusterConfig replaced (the Cloud Foundation Toolkit's gke.py
	// writes them).
	for old, now := range map[string]string{"privateCluster": "enablePrivateNodes", "masterIpv4CidrBlock": "masterIpv4CidrBlock"} {
		v, ok := take(cl, old)
		if !ok {
			continue
		}
		pc, _ := cl["privateClusterConfig"].(map[string]any)
		if pc == nil {
			pc = map[string]any{}
			cl["privateClusterConfig"] = pc
		}
		if cur, set := pc[now]; set && fmt.Sprint(cur) != fmt.Sprint(v) {
			return invalid("properties.cluster.%s is %s and properties.cluster.privateClusterConfig.%s %s: the first is the deprecated spelling of the second", old, describe(v), now, describe(cur))
		}
		pc[now] = v
	}
	if ip, ok := cl["ipAllocationPolicy"].(map[string]any); ok {
		if c, ok := take(ip, "createSubnetwork"); ok && c != false {
			return invalid("properties.cluster.ipAllocationPolicy.createSubnetwork is %s: Config Connector's ContainerCluster cannot have GKE create the cluster's subnetwork; declare it as a compute.v1.subnetwork with the pods' and services' ranges in secondaryIpRanges, and set the cluster's subnetwork, clusterSecondaryRangeName and servicesSecondaryRangeName", describe(c))
		}
		if alias, ok := take(ip, "useIpAliases"); ok {
			mode := "ROUTES"
			if alias == true {
				mode = "VPC_NATIVE"
			} else if len(ip) == 0 {
				delete(cl, "ipAllocationPolicy")
			}
			if err := oc.setValue(mode, "networkingMode", nil, "cluster.ipAllocationPolicy.useIpAliases"); err != nil {
				return err
			}
		}
	}
	if err := oc.takeLabels(cl, "resourceLabels", "properties.cluster.resourceLabels"); err != nil {
		return err
	}
	return nil
}

func nodePoolRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "projectId"); ok {
		if err := oc.projectParam("projectId", v); err != nil {
			return err
		}
	}
	cluster, hasCluster := take(props, "clusterId")
	if v, ok := take(props, "parent"); ok {
		s, _ := v.(string)
		m := clusterParentRE().FindStringSubmatch(s)
		if m == nil {
			return invalid("properties.parent is %s: want projects/PROJECT/locations/LOCATION/clusters/CLUSTER", describe(v))
		}
		if err := oc.projectParam("parent", m[1]); err != nil {
			return err
		}
		if oc.spec["location"] == nil {
			oc.spec["location"] = m[2]
		}
		if !hasCluster {
			cluster, hasCluster = m[3], true
		}
	}
	if np, ok := props["nodePool"].(map[string]any); ok {
		if as, ok := np["autoscaling"].(map[string]any); ok {
			if e, ok := take(as, "enabled"); ok && e != true {
				delete(np, "autoscaling")
			}
		}
	}
	if !hasCluster {
		return invalid("no cluster: set properties.clusterId (or parent)")
	}
	return oc.setValue(cluster, "clusterRef", nil, "clusterId")
}

// recordSetRule: a record set's name is its DNS name, KCC's spec.name; the
// object takes the DM resource's name.
//
// Deployment Manager's gcp-types/dns-v1:resourceRecordSets also took a
// list of record sets under records, each {type, ttl, rrdatas} and
// optionally its own name (the DNS name by default): the resource's
// object is the first, and each other one a DNSRecordSet of its own
// named after the resource, its type and DNS name, in the same zone.
func recordSetRule(oc *objConv, props map[string]any) error {
	v, ok := take(props, "name")
	if !ok {
		return invalid("properties.name (the DNS name, www.example.com.) is required")
	}
	recs, ok := take(props, "records")
	if !ok {
		return oc.setValue(v, "name", nil, "name")
	}
	list, _ := recs.([]any)
	if len(list) == 0 {
		return invalid("properties.records is %s, not a list of record sets", describe(recs))
	}
	for _, f := range []string{"type", "ttl", "rrdatas", "signatureRrdatas", "routingPolicy"} {
		if _, set := props[f]; set {
			return invalid("properties.%s is set beside properties.records: give each record set in records", f)
		}
	}
	for i, e := range list {
		rec, ok := deepCopy(e).(map[string]any)
		if !ok {
			return invalid("properties.records[%d] is %s, not a record set", i, describe(e))
		}
		name := v
		if n, given := take(rec, "name"); given {
			name = n
		}
		if i == 0 {
			maps.Copy(props, rec)
			if err := oc.setValue(name, "name", nil, "name"); err != nil {
				return fmt.Errorf("properties.records[0]: %w", err)
			}
			continue
		}
		rec["name"] = name
		if z, ok := props["managedZone"]; ok {
			rec["managedZone"] = deepCopy(z)
		}
		dnsName, _ := name.(string)
		typ, _ := rec["type"].(string)
		objName := oc.it.objName + "-" + strings.ToLower(typ) + "-" + strings.TrimSuffix(dnsName, ".")
		if !validObjectName(objName) {
			objName = sanitize(objName)
		}
		x, err := oc.c.partObject(oc, oc.kind, rec, "", objName, nil, nil)
		if err != nil {
			return fmt.Errorf("properties.records[%d] (a %s): %w", i, oc.kind.Kind, err)
		}
		oc.it.extra = append(oc.it.extra, x)
	}
	return nil
}

// recordSetName is the rule of a record set made of one of the records
// of another (recordSetRule): its name is its DNS name.
func recordSetName(oc *objConv, props map[string]any) error {
	v, _ := take(props, "name")
	return oc.setValue(v, "name", nil, "name")
}

func customRoleRule(oc *objConv, props map[string]any) error {
	// IAM keeps a role without a title (the console shows its ID); KCC
	// requires one: the role's ID.
	if role, _ := props["role"].(map[string]any); role == nil || role["title"] == nil || role["title"] == "" {
		if role == nil {
			role = map[string]any{}
			props["role"] = role
		}
		role["title"] = oc.it.gcpName
	}
	v, ok := take(props, "parent")
	if !ok {
		oc.it.parent = "projects/" + oc.it.project
		return nil
	}
	s, _ := v.(string)
	oc.it.parent = s
	switch {
	case strings.HasPrefix(s, "projects/"):
		return oc.projectParam("parent", s)
	case strings.HasPrefix(s, "organizations/"):
		// An organization's role: KCC reads the organization from its
		// annotation, and the project annotation would make it a
		// project's role.
		oc.ann = map[string]any{ProjectAnnotation: nil, "cnrm.cloud.google.com/organization-id": strings.TrimPrefix(s, "organizations/")}
		return nil
	}
	return invalid("properties.parent is %s: want projects/PROJECT or organizations/ORGANIZATION", describe(v))
}

// serviceAccountRule: iam.v1.serviceAccount takes displayName and
// description beside accountId, the REST call inside serviceAccount.
func serviceAccountRule(oc *objConv, props map[string]any) error {
	for _, k := range []string{"displayName", "description"} {
		if v, ok := take(props, k); ok {
			if err := oc.setValue(v, k, nil, k); err != nil {
				return err
			}
		}
	}
	if v, ok := take(props, "projectId"); ok {
		// iam.v1.serviceAccount's projectId, the project it is made in
		// (the resource's project already, when a literal).
		if err := oc.projectParam("projectId", v); err != nil {
			return err
		}
	}
	if v, ok := take(props, "name"); ok {
		return oc.projectParam("name", v)
	}
	return nil
}

// serviceAccountKeyRule: the key's parent, projects/P/serviceAccounts/EMAIL
// (or $(ref.SA.name)), is its service account.
func serviceAccountKeyRule(oc *objConv, props map[string]any) error {
	v, ok := take(props, "name")
	if !ok {
		if v, ok = take(props, "parent"); !ok {
			return invalid("properties.name (the service account, projects/PROJECT/serviceAccounts/EMAIL) is required")
		}
	}
	if s, isStr := v.(string); isStr && !hasRef(s) {
		// projects/P/serviceAccounts/ACCOUNT@P.iam.gserviceaccount.com:
		// the account's name is the email's local part.
		email := lastSegment(s)
		if local, _, found := strings.Cut(email, "@"); found {
			if sa := oc.c.match(local, "IAMServiceAccount"); sa != nil {
				v = "$(ref." + sa.res.Name + ".name)"
			} else {
				v = email
			}
		}
	}
	return oc.setValue(v, "serviceAccountRef", nil, "name")
}

// accessPolicyRule: an access policy's parent is its organization, which
// KCC reads from an annotation.
func accessPolicyRule(oc *objConv, props map[string]any) error {
	v, ok := take(props, "parent")
	if !ok {
		return invalid("properties.parent (organizations/ORGANIZATION) is required")
	}
	s, _ := v.(string)
	org, ok := strings.CutPrefix(s, "organizations/")
	if !ok || hasRef(s) {
		return invalid("properties.parent is %s: want organizations/ORGANIZATION", describe(v))
	}
	oc.ann = map[string]any{"cnrm.cloud.google.com/organization-id": org}
	return nil
}

// functionRule: a v1 function's location comes as parent or location; its
// failurePolicy ({retry: {}}) is KCC's boolean.
func functionRule(oc *objConv, props map[string]any) error {
	if err := parentOnly("projects/{project}/locations/{location}")(oc, props); err != nil {
		return err
	}
	if et, ok := props["eventTrigger"].(map[string]any); ok {
		if fp, ok := take(et, "failurePolicy"); ok {
			m, _ := fp.(map[string]any)
			return oc.setValue(m["retry"] != nil, "eventTrigger.failurePolicy", nil, "eventTrigger.failurePolicy")
		}
	}
	return nil
}

// appEngineVersionRule: the service is a reference; deployment.files, a
// map by file name, is KCC's list.
func appEngineVersionRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "appsId"); ok {
		if err := oc.projectParam("appsId", v); err != nil {
			return err
		}
	}
	if v, ok := take(props, "env"); ok && v != "standard" {
		return invalid("properties.env is %s: only standard App Engine versions are mapped (AppEngineStandardAppVersion)", describe(v))
	}
	svc, ok := take(props, "servicesId")
	if !ok {
		svc = "default"
	}
	if err := oc.setPath("serviceRef", map[string]any{"external": svc}); err != nil {
		return err
	}
	if d, ok := props["deployment"].(map[string]any); ok {
		if files, ok := take(d, "files"); ok {
			fm, ok := files.(map[string]any)
			if !ok {
				return invalid("properties.deployment.files is %s, not a map of files", describe(files))
			}
			var list []any
			for _, name := range sortedKeys(fm) {
				f, _ := fm[name].(map[string]any)
				e := map[string]any{"name": name}
				for k, v := range f {
					e[k] = v
				}
				list = append(list, e)
			}
			// KCC's list of files by name, set here: the REST map is
			// no pair of it.
			if err := oc.setPath("deployment.files", list); err != nil {
				return err
			}
		}
	}
	return nil
}

// projectRule: a project's parent ({type, id}) is a folder or an
// organization; a project carries no project annotation.
func projectRule(oc *objConv, props map[string]any) error {
	oc.ann = map[string]any{ProjectAnnotation: nil}
	v, ok := take(props, "parent")
	if !ok {
		return nil
	}
	m, _ := v.(map[string]any)
	id, _ := m["id"].(string)
	switch m["type"] {
	case "folder":
		return oc.setValue(id, "folderRef", nil, "parent.id")
	case "organization":
		return oc.setValue(id, "organizationRef", nil, "parent.id")
	}
	return invalid("properties.parent is %s: want {type: folder or organization, id}", describe(v))
}

func folderRule(oc *objConv, props map[string]any) error {
	oc.ann = map[string]any{ProjectAnnotation: nil}
	v, ok := take(props, "parent")
	if !ok {
		return invalid("properties.parent (folders/ID or organizations/ID) is required")
	}
	s, _ := v.(string)
	if id, ok := strings.CutPrefix(s, "folders/"); ok {
		return oc.setValue(id, "folderRef", nil, "parent")
	}
	if id, ok := strings.CutPrefix(s, "organizations/"); ok {
		return oc.setValue(id, "organizationRef", nil, "parent")
	}
	return oc.setValue(v, "folderRef", nil, "parent")
}

// enableServiceRule maps DM's virtual type enableService: {consumerId:
// project:P, serviceName}.
func enableServiceRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "consumerId"); ok {
		s, _ := v.(string)
		p, ok := strings.CutPrefix(s, "project:")
		if !ok {
			return invalid("properties.consumerId is %s: want project:PROJECT", describe(v))
		}
		if err := oc.setPath("projectRef", map[string]any{"external": p}); err != nil {
			return err
		}
		oc.ann = map[string]any{ProjectAnnotation: p}
	}
	take(props, "name")
	return nil
}

func datasetRule(oc *objConv, props map[string]any) error {
	for _, k := range []string{"projectId"} {
		if v, ok := take(props, k); ok {
			if err := oc.projectParam(k, v); err != nil {
				return err
			}
		}
	}
	if ref, ok := props["datasetReference"].(map[string]any); ok {
		if v, ok := take(ref, "projectId"); ok {
			if err := oc.projectParam("datasetReference.projectId", v); err != nil {
				return err
			}
		}
	}
	return nil
}

// tableRule: the dataset comes as datasetId or tableReference.datasetId;
// schema, an object of fields, is KCC's JSON string of the fields.
func tableRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "projectId"); ok {
		if err := oc.projectParam("projectId", v); err != nil {
			return err
		}
	}
	if ref, ok := props["tableReference"].(map[string]any); ok {
		if v, ok := take(ref, "projectId"); ok {
			if err := oc.projectParam("tableReference.projectId", v); err != nil {
				return err
			}
		}
		if v, ok := take(ref, "datasetId"); ok {
			if _, has := props["datasetId"]; !has {
				props["datasetId"] = v
			}
		}
	}
	if v, ok := take(props, "schema"); ok {
		m, ok := v.(map[string]any)
		if !ok {
			return invalid("properties.schema is %s, not a schema ({fields: [...]})", describe(v))
		}
		b, err := json.Marshal(m["fields"])
		if err != nil {
			return invalid("properties.schema.fields: %v", err)
		}
		if err := oc.setPath("schema", string(b)); err != nil {
			return err
		}
	}
	return nil
}

// logSinkRule: the destination is a service path
// (storage.googleapis.com/BUCKET, bigquery.googleapis.com/projects/P/datasets/D,
// pubsub.googleapis.com/projects/P/topics/T), KCC's reference to a bucket,
// dataset or topic.
func logSinkRule(oc *objConv, props map[string]any) error {
	// The Cloud Foundation Toolkit's logsink.py also names a folder's or an
	// organization's sink's parent by its ID in folder or organization:
	// the same parent, said twice.
	for key, prefix := range map[string]string{"folder": "folders/", "organization": "organizations/"} {
		v, ok := take(props, key)
		if !ok {
			continue
		}
		if parent, _ := props["parent"].(string); parent != prefix+fmt.Sprint(v) {
			return invalid("properties.%s is %s but properties.parent is %s: a sink's %s is its parent's ID", key, describe(v), describe(props["parent"]), key)
		}
	}
	if v, ok := take(props, "parent"); ok {
		s, _ := v.(string)
		switch {
		case strings.HasPrefix(s, "projects/"):
			if err := oc.projectParam("parent", s); err != nil {
				return err
			}
		case strings.HasPrefix(s, "folders/"):
			oc.ann = map[string]any{ProjectAnnotation: nil}
			if err := oc.setValue(strings.TrimPrefix(s, "folders/"), "folderRef", nil, "parent"); err != nil {
				return err
			}
		case strings.HasPrefix(s, "organizations/"):
			oc.ann = map[string]any{ProjectAnnotation: nil}
			if err := oc.setValue(strings.TrimPrefix(s, "organizations/"), "organizationRef", nil, "parent"); err != nil {
				return err
			}
		default:
			return invalid("properties.parent is %s: want projects/P, folders/F or organizations/O", describe(v))
		}
	} else if err := oc.setPath("projectRef", map[string]any{"external": oc.it.project}); err != nil {
		return err
	}
	v, ok := take(props, "destination")
	if !ok {
		return nil
	}
	s, _ := v.(string)
	members := map[string]string{"storage.googleapis.com/": "storageBucketRef", "bigquery.googleapis.com/": "bigQueryDatasetRef",
		"pubsub.googleapis.com/": "pubSubTopicRef", "logging.googleapis.com/": "loggingLogBucketRef"}
	for prefix, key := range members {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			f := oc.kind.field("destination." + key)
			r, err := oc.ref(rest, f, []seg{{key: "destination"}, {key: key}}, "destination")
			if err != nil {
				return err
			}
			return oc.setPath("destination", map[string]any{key: r})
		}
	}
	return invalid("properties.destination is %s: want storage.googleapis.com/BUCKET, bigquery.googleapis.com/projects/P/datasets/D, pubsub.googleapis.com/projects/P/topics/T or logging.googleapis.com/projects/P/locations/L/buckets/B", describe(v))
}

func spannerInstanceRule(oc *objConv, props map[string]any) error {
	if err := parentOnly("projects/{project}")(oc, props); err != nil {
		return err
	}
	in, _ := props["instance"].(map[string]any)
	if err := oc.takeLabels(in, "labels", "properties.instance.labels"); err != nil {
		return err
	}
	if c, ok := take(in, "config"); ok {
		return oc.setValue(shortValue(c), "config", nil, "instance.config")
	}
	return nil
}

// networkRule: a legacy network (IPv4Range, one range for the whole
// network) is refused naming what to declare instead: Google Cloud no
// longer creates them, and KCC's ComputeNetwork has no field for one.
func networkRule(_ *objConv, props map[string]any) error {
	if v, ok := props["IPv4Range"]; ok && v != nil {
		return invalid("properties.IPv4Range is %s: a legacy network, which Google Cloud no longer creates and Config Connector's ComputeNetwork cannot hold; declare a VPC network (autoCreateSubnetworks: false) and a compute.v1.subnetwork with that ipCidrRange", describe(v))
	}
	return nil
}

// bigtableRule: clusters, a map by cluster ID, is KCC's list.
func bigtableRule(oc *objConv, props map[string]any) error {
	if err := parentOnly("projects/{project}")(oc, props); err != nil {
		return err
	}
	in, _ := props["instance"].(map[string]any)
	if err := oc.takeLabels(in, "labels", "properties.instance.labels"); err != nil {
		return err
	}
	v, ok := take(props, "clusters")
	if !ok {
		return nil
	}
	cm, ok := v.(map[string]any)
	if !ok {
		return invalid("properties.clusters is %s, not a map of clusters", describe(v))
	}
	for i, id := range sortedKeys(cm) {
		c, _ := cm[id].(map[string]any)
		where := "properties.clusters." + id
		idx := []int{i}
		if err := oc.setValue(id, "cluster[].clusterId", idx, where); err != nil {
			return err
		}
		for _, k := range sortedKeys(c) {
			var err error
			switch k {
			case "location":
				err = oc.setValue(shortValue(c[k]), "cluster[].zone", idx, where+".location")
			case "serveNodes":
				err = oc.setValue(c[k], "cluster[].numNodes", idx, where+".serveNodes")
			case "defaultStorageType":
				err = oc.setValue(c[k], "cluster[].storageType", idx, where+".defaultStorageType")
			default:
				err = invalid("%s.%s has no Config Connector field (location, serveNodes, defaultStorageType)", where, k)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// secretRule: automatic replication ({}) is KCC's boolean.
func secretRule(oc *objConv, props map[string]any) error {
	if err := parentOnly("projects/{project}")(oc, props); err != nil {
		return err
	}
	if r, ok := props["replication"].(map[string]any); ok {
		if a, ok := take(r, "automatic"); ok {
			if m, _ := a.(map[string]any); len(m) > 0 {
				r["auto"] = m
			} else {
				return oc.setValue(true, "replication.automatic", nil, "replication.automatic")
			}
		}
	}
	return nil
}

// routerPeerRule: a BGP peer names its router interface by name; the
// interface, a part of the same router, is an object of its own.
func routerPeerRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "enable"); ok {
		if err := oc.setValue(v, "enable", nil, "enable"); err != nil {
			return err
		}
	}
	v, ok := take(props, "interfaceName")
	if !ok {
		return nil
	}
	name, _ := v.(string)
	ifaces, _ := oc.siblings["interfaces"].([]any)
	for _, e := range ifaces {
		if m, _ := e.(map[string]any); m["name"] == name && name != "" {
			objName := oc.parent.it.objName + "-" + name
			if !validObjectName(objName) {
				objName = sanitize(objName)
			}
			return oc.setPath("routerInterfaceRef", map[string]any{"name": objName})
		}
	}
	return oc.setValue(v, "routerInterfaceRef", nil, "interfaceName")
}

// instanceDisk makes the ComputeDisk of a non-boot disk an instance creates
// (initializeParams), which KCC's ComputeInstance only attaches: named
// initializeParams.diskName, so that it adopts the disk DM made, and
// attached as disk i.
func (oc *objConv) instanceDisk(v any, where string, i int) error {
	ip, ok := v.(map[string]any)
	if !ok {
		return invalid("%s.initializeParams is %s, not an object", where, describe(v))
	}
	objName, err := oc.diskObject(ip, where)
	if err != nil {
		return err
	}
	return oc.set([]seg{{key: "attachedDisk"}, {idx: i}, {key: "sourceDiskRef"}}, map[string]any{"name": objName})
}

// diskObject makes the ComputeDisk of a disk an instance creates with
// initializeParams ip, named initializeParams.diskName so that it adopts
// the disk DM made, ordered before the instance; it returns the object's
// name.
func (oc *objConv) diskObject(ip map[string]any, where string) (string, error) {
	name, _ := ip["diskName"].(string)
	if name == "" || hasRef(name) {
		return "", invalid("%s.initializeParams has no diskName: Config Connector's ComputeInstance creates only its boot disk, and the disk Compute Engine named for this one cannot be adopted; name it (initializeParams.diskName), or declare it as a compute.v1.disk resource and attach it with source: $(ref.DISK.selfLink)", where)
	}
	body := map[string]any{}
	var labels map[string]any
	for _, k := range sortedKeys(ip) {
		val := ip[k]
		switch k {
		case "diskName":
		case "diskSizeGb":
			body["sizeGb"] = val
		case "diskType":
			body["type"] = shortValue(val)
		case "labels":
			l, err := labelMap(val, where+".initializeParams.labels")
			if err != nil {
				return "", err
			}
			labels = l
		case "sourceImage", "sourceSnapshot", "description", "provisionedIops", "provisionedThroughput", "resourcePolicies":
			body[k] = val
		default:
			return "", invalid("%s.initializeParams.%s has no Config Connector field in the ComputeDisk made for it (diskName, diskSizeGb, diskType, sourceImage, sourceSnapshot, labels, description, provisionedIops, provisionedThroughput, resourcePolicies)", where, k)
		}
	}
	objName := name
	if !validObjectName(objName) {
		objName = sanitize(name)
	}
	x, err := oc.c.partObject(oc, lookupKind("ComputeDisk"), body, name, objName, labels, nil)
	if err != nil {
		return "", fmt.Errorf("%s.initializeParams: %w", where, err)
	}
	x.before = true
	oc.it.extra = append(oc.it.extra, x)
	return objName, nil
}

// dataprocRule: the project comes again as projectId.
func dataprocRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "projectId"); ok {
		return oc.projectParam("projectId", v)
	}
	return nil
}

func buildTriggerRule(oc *objConv, props map[string]any) error {
	if v, ok := take(props, "projectId"); ok {
		if err := oc.projectParam("projectId", v); err != nil {
			return err
		}
	}
	if err := parentOnly("projects/{project}/locations/{location}")(oc, props); err != nil {
		return err
	}
	if oc.spec["location"] == nil {
		return oc.setPath("location", "global") // projects.triggers are global
	}
	return nil
}

// bigtableTableRule: the parent is the instance; column families, a map
// by name, are KCC's list; the garbage-collection rule of each is a
// BigtableGCPolicy (the table's part table.columnFamilies), which the map
// is left in props for.
func bigtableTableRule(oc *objConv, props map[string]any) error {
	if err := parentRef("instanceRef", "BigtableInstance")(oc, props); err != nil {
		return err
	}
	if v, ok := take(props, "initialSplits"); ok {
		l, _ := v.([]any)
		var keys []any
		for _, e := range l {
			m, _ := e.(map[string]any)
			keys = append(keys, m["key"])
		}
		if err := oc.setValue(keys, "splitKeys", nil, "initialSplits"); err != nil {
			return err
		}
	}
	t, _ := props["table"].(map[string]any)
	v, ok := t["columnFamilies"]
	if !ok || v == nil {
		return nil
	}
	fams, ok := v.(map[string]any)
	if !ok {
		return invalid("properties.table.columnFamilies is %s, not a map of column families", describe(v))
	}
	for i, name := range sortedKeys(fams) {
		if err := oc.setValue(name, "columnFamily[].family", []int{i}, "table.columnFamilies"); err != nil {
			return err
		}
	}
	return nil
}

// gcPolicyRule: a column family's gcRule (Bigtable's GcRule: one of
// maxNumVersions, maxAge, union and intersection, nested) is the JSON
// KCC's gcRules holds (Terraform's gc_rules: {"mode": "union", "rules":
// [{"max_age": "10h"}, {"max_version": 2}]}), rather than maxAge,
// maxVersion and mode, which KCC's reference page advises against; the
// column family is the part's name, the instance the table's.
func gcPolicyRule(oc *objConv, props map[string]any) error {
	if err := oc.setValue(oc.partName, "columnFamily", nil, "columnFamilies"); err != nil {
		return err
	}
	if ref, ok := oc.parent.spec["instanceRef"]; ok {
		if err := oc.setPath("instanceRef", deepCopy(ref)); err != nil {
			return err
		}
	}
	v, ok := take(props, "gcRule")
	if !ok {
		return nil
	}
	rule, err := gcRuleJSON(v, "gcRule", true)
	if err != nil {
		return err
	}
	if rule == nil {
		return nil
	}
	b, err := json.Marshal(rule)
	if err != nil {
		return fmt.Errorf("gcRule: %w", err)
	}
	return oc.setPath("gcRules", string(b))
}

// gcRuleJSON is Bigtable's GcRule v (at where) in the form of KCC's
// gcRules: at the top, {"rules": [RULE]} or {"mode": M, "rules": [...]};
// below, {"max_version": N}, {"max_age": D} or {"mode": M, "rules":
// [...]}. A union or intersection of one rule is that rule (gcRules'
// modes take two or more); nil is a rule that collects nothing (an empty
// GcRule, Bigtable's default).
func gcRuleJSON(v any, where string, top bool) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("properties.%s is %s, not a garbage-collection rule", where, describe(v))
	}
	set := sortedKeys(m)
	if len(set) == 0 {
		return nil, nil
	}
	if len(set) > 1 {
		return nil, invalid("properties.%s sets %s: a garbage-collection rule is one of maxNumVersions, maxAge, union and intersection", where, strings.Join(set, " and "))
	}
	var leaf map[string]any
	switch k := set[0]; k {
	case "maxNumVersions":
		n, err := gcVersions(m[k], where+"."+k)
		if err != nil {
			return nil, err
		}
		leaf = map[string]any{"max_version": n}
	case "maxAge":
		d, ok := m[k].(string)
		if !ok || hasRef(d) {
			return nil, invalid("properties.%s.maxAge is %s, not a duration (86400s)", where, describe(m[k]))
		}
		if _, err := time.ParseDuration(d); err != nil {
			return nil, invalid("properties.%s.maxAge is %q, not a duration (86400s)", where, d)
		}
		leaf = map[string]any{"max_age": d}
	case "union", "intersection":
		sub, _ := m[k].(map[string]any)
		list, ok := sub["rules"].([]any)
		if extra := len(sub) - 1; !ok || extra > 0 {
			return nil, invalid("properties.%s.%s is %s: want {rules: [RULE, ...]}", where, k, describe(m[k]))
		}
		var rules []any
		for i, r := range list {
			j, err := gcRuleJSON(r, fmt.Sprintf("%s.%s.rules[%d]", where, k, i), false)
			if err != nil {
				return nil, err
			}
			if j == nil {
				return nil, invalid("properties.%s.%s.rules[%d] is empty: a rule that collects nothing has no form in Config Connector's gcRules inside a %s", where, k, i, k)
			}
			rules = append(rules, j)
		}
		switch len(rules) {
		case 0:
			return nil, invalid("properties.%s.%s has no rules", where, k)
		case 1:
			if top {
				return map[string]any{"rules": rules}, nil
			}
			return rules[0].(map[string]any), nil
		}
		return map[string]any{"mode": k, "rules": rules}, nil
	default:
		return nil, invalid("properties.%s.%s has no Config Connector field: a garbage-collection rule is one of maxNumVersions, maxAge, union and intersection", where, k)
	}
	if top {
		return map[string]any{"rules": []any{leaf}}, nil
	}
	return leaf, nil
}

// gcVersions is a GcRule's maxNumVersions, a whole number (as a number
// or a string, as DM took it).
func gcVersions(v any, where string) (int64, error) {
	if n, ok := wholeNumber(v); ok {
		return n, nil
	}
	return 0, invalid("properties.%s is %s, not a whole number", where, describe(v))
}

// monitoringRule: Monitoring names the project as name (projects/P) or
// parent; userLabels are labels.
func monitoringRule(oc *objConv, props map[string]any) error {
	for _, k := range []string{"name", "parent"} {
		if v, ok := take(props, k); ok {
			if err := oc.projectParam(k, v); err != nil {
				return err
			}
		}
	}
	if l, ok := take(props, "userLabels"); ok {
		labels, err := labelMap(l, "properties.userLabels")
		if err != nil {
			return err
		}
		if oc.kind.has("userLabels") || oc.kind.has("labels") {
			key := "labels"
			if oc.kind.has("userLabels") {
				key = "userLabels"
			}
			if err := oc.setPath(key, labels); err != nil {
				return err
			}
		} else {
			oc.extraLabels = labels
		}
	}
	return nil
}
