package adopt

import (
	"fmt"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/expand/value"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/manifest"
)

// MaxManifestBytes bounds a manifest file: Deployment Manager's own limit
// on a manifest (manifestSizeLimitBytes) was 50 MB, and a manifest holds
// the configuration and its imports beside the expanded configuration.
const MaxManifestBytes = 64 << 20

// DMManifest is a Deployment Manager deployment's manifest, as `gcloud
// deployment-manager manifests describe --deployment NAME --format yaml`
// (or --format json) printed it: the REST resource
// deploymentmanager.v2.manifests, whose expandedConfig is a YAML string of
// the deployment's resources (name, type, properties) and layout a YAML
// string of its tree.
type DMManifest struct {
	// File names the manifest in messages.
	File string
	// Name is the manifest's name (manifest-1551807632865); Deployment
	// and Project are the deployment's, read from its selfLink ("" when it
	// has none).
	Name, Deployment, Project string
	// Resources are expandedConfig's resources, in order.
	Resources []gcp.Resource
}

// ParseManifest reads a manifest file. Errors name the file and what in it
// is wrong.
func ParseManifest(data []byte, file string) (*DMManifest, error) {
	bad := func(format string, a ...any) error {
		return derrors.Errorf(derrors.InvalidArgument, "%s: %s (want what gcloud deployment-manager manifests describe --deployment NAME --format yaml printed)", file, fmt.Sprintf(format, a...))
	}
	if len(data) > MaxManifestBytes {
		return nil, derrors.Errorf(derrors.LimitExceeded, "%s is %d bytes, over the %d-byte limit of a manifest", file, len(data), MaxManifestBytes)
	}
	var doc any
	if err := yaml3.Unmarshal(data, &doc); err != nil {
		return nil, bad("%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, bad("the file is %s, not a manifest", value.Kind(doc))
	}
	m := &DMManifest{File: file}
	m.Name, _ = top["name"].(string)
	if self, ok := top["selfLink"].(string); ok {
		m.Project, m.Deployment = pathAfter(self, "projects"), pathAfter(self, "deployments")
	}
	ec, ok := top["expandedConfig"].(string)
	if !ok {
		if _, has := top["expandedConfig"]; has {
			return nil, bad("expandedConfig is %s, not the expanded configuration's text", value.Kind(top["expandedConfig"]))
		}
		if _, isDeployment := top["manifest"]; isDeployment {
			return nil, bad("this is a deployment (gcloud deployment-manager deployments describe), not its manifest")
		}
		return nil, bad("it has no expandedConfig")
	}
	var cfg any
	if err := yaml3.Unmarshal([]byte(ec), &cfg); err != nil {
		return nil, bad("expandedConfig: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	cm, ok := cfg.(map[string]any)
	if !ok && cfg != nil {
		return nil, bad("expandedConfig is %s, not a configuration", value.Kind(cfg))
	}
	list, ok := cm["resources"].([]any)
	if !ok && cm["resources"] != nil {
		return nil, bad("expandedConfig: resources is %s, not a list", value.Kind(cm["resources"]))
	}
	seen := map[string]bool{}
	for i, e := range list {
		r, ok := e.(map[string]any)
		if !ok {
			return nil, bad("expandedConfig: resources[%d] is %s, not a resource", i, value.Kind(e))
		}
		name, _ := r["name"].(string)
		typ, _ := r["type"].(string)
		switch {
		case name == "":
			return nil, bad("expandedConfig: resources[%d] has no name", i)
		case typ == "":
			return nil, bad("expandedConfig: resources[%d] (%s) has no type", i, name)
		case seen[name]:
			return nil, bad("expandedConfig: two resources are named %s", name)
		}
		seen[name] = true
		res := gcp.Resource{Name: name, Type: typ}
		for _, f := range []struct {
			key string
			dst *map[string]any
		}{{"properties", &res.Properties}, {"metadata", &res.Metadata}, {"accessControl", &res.AccessControl}} {
			switch v := r[f.key].(type) {
			case nil:
			case map[string]any:
				*f.dst = v
			default:
				return nil, bad("expandedConfig: resources[%d] (%s): %s is %s, not a mapping", i, name, f.key, value.Kind(v))
			}
		}
		m.Resources = append(m.Resources, res)
	}
	return m, nil
}

// pathAfter is the segment after seg in a URL path (projects/P -> P).
func pathAfter(u, seg string) string {
	parts := strings.Split(u, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == seg {
			return parts[i+1]
		}
	}
	return ""
}

// Compare sets the Google Cloud resources of res against the deployment
// of m, as Config Connector would adopt them: by kind (the DM type's),
// Google Cloud name, project and location. It returns one line per
// difference, nil when every resource of m has an object of the same name
// and type and res makes no other:
//
//	DM only: TYPE NAME (resource R): ...    a resource dm would not adopt
//	dm only: TYPE NAME (layout path P): ... one Config Connector would create
//	moved: TYPE NAME: ...                   the same name elsewhere
//
// Resources of m whose properties name no project are in m's (the
// deployment's, from its selfLink), else in opts.Project.
func Compare(m *DMManifest, res *expand.Result, opts gcp.Options) []string {
	ours := manifest.GCPResources(res)
	oursID, oursErr := gcp.Identify(ours, opts)
	theirOpts := opts
	if m.Project != "" {
		theirOpts.Project = m.Project
	}
	theirsID, theirsErr := gcp.Identify(m.Resources, theirOpts)

	// key is what Config Connector adopts by, but for the location and
	// project, which are compared once names match.
	type key struct{ kind, name string }
	keyOf := func(id gcp.Identity, err error, r gcp.Resource) key {
		if err != nil || id.Kind == "" {
			return key{"type " + r.Type, nameProperty(r)}
		}
		return key{id.Kind, id.Name}
	}
	byKey := map[key][]int{} // ours
	for i, r := range ours {
		k := keyOf(oursID[i], oursErr[i], r)
		byKey[k] = append(byKey[k], i)
	}
	matched := make([]bool, len(ours))
	var out []string
	for i, r := range m.Resources {
		k := keyOf(theirsID[i], theirsErr[i], r)
		cands := byKey[k]
		if len(cands) == 0 {
			why := "dm makes no object of that name and type, so Config Connector would not adopt it"
			if theirsErr[i] != nil {
				why = derrors.Message(theirsErr[i])
			} else if j := sameName(ours, oursID, k.name); j >= 0 {
				why = fmt.Sprintf("dm makes %s as %s (%s), another kind", k.name, ours[j].Type, oursID[j].Kind)
			}
			out = append(out, fmt.Sprintf("DM only: %s %s (resource %s): %s", r.Type, k.name, r.Name, why))
			continue
		}
		j := cands[0]
		byKey[k] = cands[1:]
		matched[j] = true
		a, b := theirsID[i], oursID[j]
		if a.Project != b.Project || a.Location != b.Location {
			out = append(out, fmt.Sprintf("moved: %s %s: Deployment Manager's is in %s, dm's in %s, so Config Connector would create another",
				r.Type, k.name, where(a), where(b)))
		}
	}
	for j, r := range ours {
		if matched[j] {
			continue
		}
		k := keyOf(oursID[j], oursErr[j], r)
		path := r.Name
		if len(r.Path) > 0 {
			path = strings.Join(r.Path, "/")
		}
		out = append(out, fmt.Sprintf("dm only: %s %s (layout path %s): Deployment Manager's deployment did not have it, so Config Connector would create it", r.Type, k.name, path))
	}
	return out
}

// nameProperty is a resource's name as its properties give it, else its
// DM name: the Google Cloud name of a type dm cannot identify.
func nameProperty(r gcp.Resource) string {
	if s, ok := r.Properties["name"].(string); ok && s != "" {
		return s[strings.LastIndexByte(s, '/')+1:]
	}
	return r.Name
}

// sameName finds a resource of ours with Google Cloud name name.
func sameName(ours []gcp.Resource, ids []gcp.Identity, name string) int {
	for j := range ours {
		if ids[j].Name == name && ids[j].Kind != "" {
			return j
		}
	}
	return -1
}

// where says where an identity is: its location, then its project.
func where(id gcp.Identity) string {
	loc := id.Location
	if loc == "" {
		loc = "global"
	}
	if id.Project == "" {
		return loc
	}
	return loc + " of project " + id.Project
}

// ManifestError is Compare's differences as an error.
type ManifestError struct {
	File, Deployment string
	Differences      []string
}

func (e *ManifestError) Error() string {
	of := "the deployment"
	if e.Deployment != "" {
		of = "deployment " + e.Deployment
	}
	n := "1 difference"
	if len(e.Differences) != 1 {
		n = fmt.Sprintf("%d differences", len(e.Differences))
	}
	return fmt.Sprintf("%s between the objects dm makes and %s's resources (%s), by name and type", n, of, e.File)
}
