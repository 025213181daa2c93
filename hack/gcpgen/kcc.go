package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Config Connector's CRDs and service mappings, read into the field list
// of each kind's spec and status.

type crd struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Scope    string `json:"scope"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
			Schema  struct {
				OpenAPIV3Schema *schema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

type schema struct {
	Type                 string             `json:"type"`
	Description          string             `json:"description"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	AdditionalProperties any                `json:"additionalProperties"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields"`
	Required             []string           `json:"required"`
	Enum                 []any              `json:"enum"`
	Format               string             `json:"format"`
}

// kccKind is one kind as the CRD describes it.
type kccKind struct {
	Kind, Group, Version, Plural, File string
	Spec                               []kccField
	Status                             []string
	IAM                                bool // its service mapping has an iamConfig
}

type kccField struct {
	Path        string
	Type        string // string integer number boolean object array map any ref union
	Targets     []string
	TargetField string
	TFName      string // the Terraform field a reference stands for (nat_ip)
	Required    bool
}

// crdFileName is how KCC names the file of plural.group.
func crdFileName(plural, group string) string {
	return "apiextensions.k8s.io_v1_customresourcedefinition_" + plural + "." + group + ".yaml"
}

func readCRD(file string) (*crd, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var c crd
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &c, nil
}

// indexCRDs maps each kind to its CRD file in dir.
func indexCRDs(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	kindRE := regexp.MustCompile(`(?m)^    kind: (\w+)$`)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if m := kindRE.FindSubmatch(b); m != nil {
			out[string(m[1])] = f
		}
	}
	return out, nil
}

// serviceMapping is the part of a KCC ServiceMapping the generator reads.
type serviceMapping struct {
	Spec struct {
		Resources []struct {
			Kind      string `json:"kind"`
			IAMConfig *struct {
				PolicyName string `json:"policyName"`
			} `json:"iamConfig"`
			ResourceReferences []smRef `json:"resourceReferences"`
		} `json:"resources"`
	} `json:"spec"`
}

type smRef struct {
	Key         string `json:"key"`
	TFField     string `json:"tfField"`
	TargetField string `json:"targetField"`
	GVK         *struct {
		Kind string `json:"kind"`
	} `json:"gvk"`
	Types []struct {
		Key            string `json:"key"`
		JSONSchemaType string `json:"jsonSchemaType"`
		TargetField    string `json:"targetField"`
		GVK            *struct {
			Kind string `json:"kind"`
		} `json:"gvk"`
	} `json:"types"`
}

// mappingInfo is what the service mappings say about one kind.
type mappingInfo struct {
	refs []smRef
	iam  bool
}

func readServiceMappings(dir string) (map[string]*mappingInfo, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]*mappingInfo{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var sm serviceMapping
		if err := yaml.Unmarshal(b, &sm); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, r := range sm.Spec.Resources {
			mi := out[r.Kind]
			if mi == nil {
				mi = &mappingInfo{}
				out[r.Kind] = mi
			}
			mi.refs = append(mi.refs, r.ResourceReferences...)
			mi.iam = mi.iam || r.IAMConfig != nil
		}
	}
	return out, nil
}

var refKeys = map[string]bool{"external": true, "name": true, "namespace": true, "kind": true, "apiVersion": true}

func isRef(s *schema) bool {
	if s == nil || s.Type != "object" || len(s.Properties) == 0 {
		return false
	}
	for k := range s.Properties {
		if !refKeys[k] {
			return false
		}
	}
	return s.Properties["name"] != nil || s.Properties["external"] != nil
}

// targetRE finds the kind a reference's description names.
var targetRE = regexp.MustCompile("(?:`|\\b(?:an?|of a|managed))\\s*`?([A-Z][A-Za-z0-9]+)`? resource")

// loadKind reads the CRD of kind from file with what the service mapping
// says about its references.
func loadKind(file string, mi *mappingInfo) (*kccKind, error) {
	c, err := readCRD(file)
	if err != nil {
		return nil, err
	}
	// The most stable version served (v1beta1 before v1alpha1, as users
	// write them), else the one stored.
	vi := -1
	rank := func(name string) int {
		switch {
		case strings.Contains(name, "alpha"):
			return 1
		case strings.Contains(name, "beta"):
			return 2
		}
		return 3
	}
	for i, v := range c.Spec.Versions {
		if v.Served && (vi < 0 || rank(v.Name) > rank(c.Spec.Versions[vi].Name)) {
			vi = i
		}
	}
	for i, v := range c.Spec.Versions {
		if vi < 0 && v.Storage {
			vi = i
		}
	}
	if vi < 0 {
		return nil, fmt.Errorf("%s: no storage version", file)
	}
	v := c.Spec.Versions[vi]
	root := v.Schema.OpenAPIV3Schema
	if root == nil {
		return nil, fmt.Errorf("%s: no schema", file)
	}
	k := &kccKind{Kind: c.Spec.Names.Kind, Group: c.Spec.Group, Version: v.Name, Plural: c.Spec.Names.Plural, File: filepath.Base(file)}
	var refs []smRef
	if mi != nil {
		refs = mi.refs
		k.IAM = mi.iam
	}
	if spec := root.Properties["spec"]; spec != nil {
		// Some kinds have none (ComputeSharedVPCHostProject: the project
		// annotation is all there is).
		flattenSpec(spec, "", true, &k.Spec)
	}
	sort.Slice(k.Spec, func(i, j int) bool { return k.Spec[i].Path < k.Spec[j].Path })
	annotateRefs(k.Spec, refs)
	if st := root.Properties["status"]; st != nil {
		flattenStatus(st, "status", &k.Status)
		sort.Strings(k.Status)
	}
	return k, nil
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func flattenSpec(s *schema, path string, required bool, out *[]kccField) {
	f := kccField{Path: path, Required: required}
	switch {
	case isRef(s) && s.Properties["kind"] != nil:
		f.Type = "ref"
		f.Targets = []string{"*"} // any kind, named in the reference
	case isRef(s):
		f.Type = "ref"
		for _, d := range []string{s.Description, descOf(s, "external"), descOf(s, "name")} {
			if m := targetRE.FindStringSubmatch(d); m != nil {
				f.Targets = []string{m[1]}
				break
			}
		}
	case s.Type == "object" && len(s.Properties) == 2 && s.Properties["value"] != nil && s.Properties["valueFrom"] != nil:
		f.Type = "secret" // {value} or {valueFrom: {secretKeyRef}}
	case s.Type == "array":
		f.Type = "array"
	case s.Type == "object" && len(s.Properties) > 0:
		f.Type = "object"
	case s.Type == "object" && s.PreserveUnknown:
		f.Type = "any"
	case s.Type == "object":
		f.Type = "map"
	case s.Type == "":
		f.Type = "any"
	default:
		f.Type = s.Type
	}
	if path != "" {
		*out = append(*out, f)
	}
	switch f.Type {
	case "array":
		if s.Items != nil {
			flattenSpec(s.Items, path+"[]", true, out)
		}
	case "map":
		// A map of scalars: its values' type, as PATH{} (labels{}), which
		// the conversion converts values to.
		if ap, ok := s.AdditionalProperties.(map[string]any); ok {
			switch t, _ := ap["type"].(string); t {
			case "string", "integer", "number", "boolean":
				*out = append(*out, kccField{Path: path + "{}", Type: t})
			}
		}
	case "object":
		req := map[string]bool{}
		for _, r := range s.Required {
			req[r] = true
		}
		for _, name := range sortedKeys(s.Properties) {
			flattenSpec(s.Properties[name], join(path, name), req[name], out)
		}
	}
}

func descOf(s *schema, prop string) string {
	if p := s.Properties[prop]; p != nil {
		return p.Description
	}
	return ""
}

func flattenStatus(s *schema, path string, out *[]string) {
	switch {
	case s.Type == "array" && s.Items != nil:
		if s.Items.Type == "object" && len(s.Items.Properties) > 0 {
			flattenStatus(s.Items, path+"[]", out)
			return
		}
		*out = append(*out, path)
	case s.Type == "object" && len(s.Properties) > 0:
		for name, p := range s.Properties {
			if path == "status" && (name == "conditions" || name == "observedGeneration") {
				continue
			}
			flattenStatus(p, path+"."+name, out)
		}
	default:
		*out = append(*out, path)
	}
}

// norm is a field name without case and underscores: nat_ip and natIP
// are both natip.
func norm(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", ""))
}

// stripIdx drops [] from a path.
func stripIdx(p string) string { return strings.ReplaceAll(p, "[]", "") }

// annotateRefs adds the service mapping's targets to the reference
// fields: a reference's tfField (network_interface.access_config.nat_ip)
// names its parent path and the Terraform field, its key the KCC field.
func annotateRefs(fields []kccField, refs []smRef) {
	byPath := map[string]int{}
	for i, f := range fields {
		byPath[norm(stripIdx(f.Path))] = i
	}
	find := func(tfField, key string) (int, bool) {
		parent, _, _ := cutLast(tfField, ".")
		p := key
		if parent != "" {
			p = parent + "." + key
		}
		i, ok := byPath[norm(p)]
		return i, ok
	}
	for _, r := range refs {
		if r.TFField == "" {
			continue
		}
		_, tfName, _ := cutLast(r.TFField, ".")
		if len(r.Types) > 0 {
			// A union: tfField is the KCC object holding one reference per
			// kind it accepts (and maybe a plain value).
			i, ok := byPath[norm(r.TFField)]
			if !ok {
				// The union may be named by its Terraform field
				// (health_checks) while KCC's is healthChecks[].
				continue
			}
			if fields[i].Type == "array" && i+1 < len(fields) && fields[i+1].Path == fields[i].Path+"[]" {
				i++
			}
			fields[i].Type = "union"
			fields[i].TFName = tfName
			for _, t := range r.Types {
				if t.GVK == nil {
					continue
				}
				if j, ok := byPath[norm(stripIdx(fields[i].Path)+"."+t.Key)]; ok {
					fields[j].Targets = []string{t.GVK.Kind}
					fields[j].TargetField = camel(t.TargetField)
				}
			}
			continue
		}
		if r.Key == "" || r.GVK == nil {
			continue
		}
		i, ok := find(r.TFField, r.Key)
		if !ok {
			continue
		}
		// A list of references is the array; its items are the refs.
		if fields[i].Type == "array" && i+1 < len(fields) && fields[i+1].Path == fields[i].Path+"[]" {
			i++
		}
		if fields[i].Type != "ref" || (len(fields[i].Targets) == 1 && fields[i].Targets[0] == "*") {
			continue
		}
		fields[i].Targets = []string{r.GVK.Kind}
		fields[i].TargetField = camel(r.TargetField)
		fields[i].TFName = tfName
	}
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return "", s, false
}

// camel turns self_link into selfLink.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
