package expand

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"unicode"

	"github.com/dmhq/dm/internal/derrors"
)

// coreKinds are the kinds of the core API group (apiVersion v1) that a
// configuration may name by kind alone, as DM's did (type: Service).
var coreKinds = map[string]bool{
	"Binding": true, "ConfigMap": true, "Endpoints": true, "Event": true, "LimitRange": true,
	"Namespace": true, "Node": true, "PersistentVolume": true, "PersistentVolumeClaim": true,
	"Pod": true, "PodTemplate": true, "ReplicationController": true, "ResourceQuota": true,
	"Secret": true, "Service": true, "ServiceAccount": true,
}

// Object returns the Kubernetes object the primitive r stands for: its
// properties, with apiVersion and kind taken from the type when the
// properties lack them, and metadata.name defaulting to the resource name.
// Types name a kind as DM's did: Kind (for the core group's kinds),
// VERSION/Kind (v1/Service) or GROUP/VERSION/Kind (apps/v1/Deployment).
// A primitive whose type names no Kubernetes kind (compute.v1.instance,
// gcp-types/compute-v1:instances) and whose properties have none is an
// error wrapping derrors.InvalidArgument: the cluster cannot apply it.
// Errors do not name r; manifest.Of names each with its layout path.
// The result shares nested values with r.Properties.
func (r Resource) Object() (map[string]any, error) {
	obj := maps.Clone(r.Properties)
	if obj == nil {
		obj = map[string]any{}
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		tv, tk, ok := kindOfType(r.Type)
		switch {
		case !ok:
			return nil, derrors.Errorf(derrors.InvalidArgument, "type %q is not a Kubernetes kind (want Kind, VERSION/Kind or GROUP/VERSION/Kind) and the properties set no apiVersion and kind", r.Type)
		case kind != "" && kind != tk:
			return nil, fmt.Errorf("the properties say kind %s but the type says %s: %w", kind, tk, derrors.InvalidArgument)
		}
		if apiVersion == "" {
			apiVersion = tv
		}
		obj["apiVersion"], obj["kind"] = apiVersion, tk
	}
	md, _ := obj["metadata"].(map[string]any)
	if name, _ := md["name"].(string); name == "" && md["generateName"] == nil {
		md = maps.Clone(md)
		if md == nil {
			md = map[string]any{}
		}
		md["name"] = r.Name
		obj["metadata"] = md
	}
	return obj, nil
}

// kindOfType reads a primitive's type as Kind, VERSION/Kind or
// GROUP/VERSION/Kind.
func kindOfType(t string) (apiVersion, kind string, ok bool) {
	parts := strings.Split(t, "/")
	kind = parts[len(parts)-1]
	if kind == "" || !unicode.IsUpper(rune(kind[0])) || strings.ContainsAny(kind, ".:") {
		return "", "", false
	}
	switch len(parts) {
	case 1:
		return "v1", kind, coreKinds[kind]
	case 2:
		return parts[0], kind, parts[0] != ""
	case 3:
		return parts[0] + "/" + parts[1], kind, parts[0] != "" && parts[1] != ""
	}
	return "", "", false
}

// dnsLabelKinds are kinds whose names must be RFC 1123 labels (at most 63
// characters, no dots), not subdomains.
var dnsLabelKinds = map[string]bool{"Namespace": true, "Service": true}

var (
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// checkNames reports the Kubernetes objects among res's primitives whose
// metadata.name the API server would reject, each with its layout path,
// so the mistake is named where it was made and not by the server at
// deploy time. Names still holding a value reference are left alone.
func checkNames(res *Result) error {
	paths := res.Layout.Paths()
	var errs []error
	for _, r := range res.Config.Resources {
		o, err := r.Object()
		if err != nil {
			continue // not a Kubernetes object
		}
		md, _ := o["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if name == "" || strings.Contains(name, "$(") {
			continue
		}
		kind, _ := o["kind"].(string)
		why := ""
		switch {
		case dnsLabelKinds[kind] && (len(name) > 63 || !dnsLabelRE.MatchString(name)):
			why = "at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit (RFC 1123 label)"
		case len(name) > 253 || !dnsSubdomainRE.MatchString(name):
			why = "at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (RFC 1123 subdomain)"
		}
		if why != "" {
			p := paths[r.Name]
			if p == nil {
				p = []string{r.Name}
			}
			errs = append(errs, &Error{Path: p, Err: invalid("%s name %q is not a valid Kubernetes name: want %s", kind, name, why)})
		}
	}
	return errors.Join(errs...)
}
