package gcp

import "strings"

// location moves the body's zone, region (and the location of a type
// spelled global, or of a parent projects/P/locations/L) into the kind's
// location fields: zone, region or location.
func (oc *objConv) location(props map[string]any) error {
	k := oc.kind
	take := func(key string) (string, error) {
		v, ok := props[key]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", invalid("properties.%s is %s, not a name", key, describe(v))
		}
		if hasRef(s) {
			return "", invalid("properties.%s is %s: a location must be known before deploying", key, s)
		}
		return lastSegment(s), nil
	}
	zone, err := take("zone")
	if err != nil {
		return err
	}
	region, err := take("region")
	if err != nil {
		return err
	}
	// "location" is a field of some bodies (a bucket's), a parameter of
	// others (cloudfunctions v1beta2).
	loc := ""
	if k.pair("location") == nil {
		if loc, err = take("location"); err != nil {
			return err
		}
		delete(props, "location")
	}
	delete(props, "zone")
	delete(props, "region")
	if loc == "" && oc.it.parent != "" {
		if m := locationRE().FindStringSubmatch(oc.it.parent); m != nil {
			loc = m[1]
		}
	}
	put := func(field, v string) error {
		if v == "" || oc.spec[field] != nil {
			return nil
		}
		return oc.setPath(field, v)
	}
	if oc.it.scope == "global" && k.has("location") && (zone != "" || region != "") {
		key := map[bool]string{true: "zone", false: "region"}[zone != ""]
		if !k.IgnoreUnknown {
			return invalid("properties.%s is set, but type %s is global", key, oc.it.res.Type)
		}
		// The global method takes no zone or region, and the body's is
		// output only: the API ignored it.
		oc.warnf("properties.%s is set, but type %s is global: its method takes no %s and %s ignored it (the body's %s is output only); dm leaves it out", key, oc.it.res.Type, key, oc.kind.Schema, key)
		zone, region = "", ""
	}
	switch {
	case zone != "" && k.has("zone"):
		err = put("zone", zone)
	case zone != "" && k.has("location"):
		err = put("location", zone)
	case zone != "" && k.has("region"):
		// A zonal parameter of a regional kind: its region.
		err = put("region", zoneRegion(zone))
	case zone != "":
		return invalid("properties.zone: Config Connector's %s has no location field", k.Kind)
	}
	if err != nil {
		return err
	}
	switch {
	case region != "" && k.has("region"):
		err = put("region", region)
	case region != "" && k.has("location"):
		err = put("location", region)
	case region != "":
		return invalid("properties.region: Config Connector's %s has no region or location field", k.Kind)
	}
	if err != nil {
		return err
	}
	if oc.it.scope == "global" && k.has("location") {
		err = put("location", "global")
	}
	if err != nil {
		return err
	}
	switch {
	case loc != "" && k.has("location"):
		err = put("location", loc)
	case loc != "" && k.has("region"):
		err = put("region", loc)
	case loc != "" && k.has("zone"):
		err = put("zone", loc)
	}
	return err
}

// zoneRegion is the region of a zone: us-central1-a -> us-central1.
func zoneRegion(zone string) string {
	if i := strings.LastIndexByte(zone, '-'); i > 0 {
		return zone[:i]
	}
	return zone
}

// labels takes the body's labels for the object's metadata.labels, unless
// the kind has a labels field of its own.
func (oc *objConv) labels(props map[string]any) (map[string]any, error) {
	if oc.kind.pair("labels") != nil {
		return nil, nil
	}
	v, ok := props["labels"]
	delete(props, "labels")
	if !ok || v == nil {
		return nil, nil
	}
	return labelMap(v, "properties.labels")
}

// labelMap checks a map of labels, values as strings.
func labelMap(v any, where string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if l, isList := v.([]any); isList {
			// [{key, value}], as some templates write them.
			m = map[string]any{}
			for _, e := range l {
				kv, ok := e.(map[string]any)
				k, kok := kv["key"].(string)
				if !ok || !kok {
					return nil, invalid("%s is a list but not of {key, value}", where)
				}
				m[k] = kv["value"]
			}
		} else {
			return nil, invalid("%s is %s, not a map of labels", where, describe(v))
		}
	}
	out := make(map[string]any, len(m))
	for _, k := range sortedKeys(m) {
		val := m[k]
		if !labelKeyRE().MatchString(k) {
			return nil, invalid("%s: label %q cannot be a Kubernetes label, which Config Connector makes of it (up to 63 letters, digits, -, _ and ., beginning and ending with a letter or digit)", where, k)
		}
		switch x := val.(type) {
		case string:
			if hasRef(x) {
				return nil, invalid("%s.%s is %s: a label must be known before deploying", where, k, x)
			}
			if x != "" && !labelKeyRE().MatchString(x) {
				return nil, invalid("%s.%s is %q, which cannot be a Kubernetes label value, as Config Connector makes of it (up to 63 letters, digits, -, _ and ., beginning and ending with a letter or digit)", where, k, x)
			}
			out[k] = x
		case bool, int, int64, float64:
			out[k] = formatValue(x)
		case nil:
			out[k] = ""
		default:
			return nil, invalid("%s.%s is %s, not a label value", where, k, describe(val))
		}
	}
	return out, nil
}

// labelKeyRE is a Kubernetes label name (and value, when not empty).
var labelKeyRE = lazyRegexp(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
