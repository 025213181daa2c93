// Package adopt checks that the Config Connector objects a configuration
// makes adopt the Google Cloud resources Deployment Manager made, rather
// than create new ones beside them: Config Connector adopts a resource of
// its kind, project, location and Google Cloud name (gcp.Identity), so a
// resource named after a different deployment, or missing, is lost or
// duplicated without a word.
//
// Two checks: DeploymentNamed finds the resources whose names read
// env["deployment"] (templates name resources {{ env["deployment"] }}-vm,
// and dm defaults the deployment to the file's name, where DM always had
// the deployment's), by expanding twice with two names; Compare sets the
// resources against a deployment's manifest as gcloud deployment-manager
// manifests describe printed it (ParseManifest), name by name and type by
// type. The package sits after manifest and before deploy.
package adopt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/gcp"
	"github.com/dmhq/dm/internal/manifest"
)

// OtherName is a deployment name of name's length and form (letters stay
// letters of the same case, digits digits, the rest as it is) that
// differs from name in every letter and digit: a resource whose name
// reads env["deployment"], whole or in part, is named differently when
// expanded as name and as OtherName(name), and a check on the form of the
// name (a schema pattern, a length) passes for both.
func OtherName(name string) string {
	b := []byte(name)
	changed := false
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = 'a' + (c-'a'+1)%26
		case c >= 'A' && c <= 'Z':
			b[i] = 'A' + (c-'A'+1)%26
		case c >= '0' && c <= '9':
			b[i] = '0' + (c-'0'+1)%10
		default:
			continue
		}
		changed = true
	}
	if !changed {
		return name + "x"
	}
	return string(b)
}

// DeploymentNamed lists the Google Cloud resources of res (expanded as
// one deployment name) whose Google Cloud names differ in other (the same
// input expanded as another): those whose names read env["deployment"].
// Each is described as NAME (TYPE, layout path PATH). A resource that
// only res makes is listed too.
func DeploymentNamed(res, other *expand.Result, opts gcp.Options) []string {
	a, b := manifest.GCPResources(res), manifest.GCPResources(other)
	ia, _ := gcp.Identify(a, opts)
	ib, _ := gcp.Identify(b, opts)
	// Counted as a multiset of type and name: a resource only one
	// expansion makes shifts the others' positions.
	type key struct{ typ, name string }
	have := map[key]int{}
	for i, r := range b {
		have[key{r.Type, nameOf(ib[i], r)}]++
	}
	var out []string
	for i, r := range a {
		k := key{r.Type, nameOf(ia[i], r)}
		if have[k] > 0 {
			have[k]--
			continue
		}
		out = append(out, Describe(k.name, r))
	}
	return out
}

// nameOf is a resource's Google Cloud name, or its DM name where it has
// no identity (the conversion names why).
func nameOf(id gcp.Identity, r gcp.Resource) string {
	if id.Name != "" {
		return id.Name
	}
	return r.Name
}

// Describe names a resource as the checks list it: its Google Cloud name,
// DM type and layout path.
func Describe(name string, r gcp.Resource) string {
	s := name + " (" + r.Type
	if len(r.Path) > 0 {
		s += ", layout path " + strings.Join(r.Path, "/")
	}
	return s + ")"
}

// NameError is the refusal of a deployment of resources whose names read
// env["deployment"] under a deployment name nobody gave.
type NameError struct {
	// Name is the default the deployment would have had (the file's
	// name), Flag the flag that gives the name.
	Name, Flag string
	// Resources are DeploymentNamed's.
	Resources []string
}

func (e *NameError) Error() string {
	const most = 5
	list := e.Resources
	more := ""
	if len(list) > most {
		more = fmt.Sprintf(", and %d more", len(list)-most)
		list = list[:most]
	}
	what := "name of 1 Google Cloud resource reads"
	if len(e.Resources) != 1 {
		what = fmt.Sprintf("names of %d Google Cloud resources read", len(e.Resources))
	}
	return fmt.Sprintf("the %s env.deployment, which without %s is %q: %s%s; give %s NAME, the name of the Deployment Manager deployment that made them (gcloud deployment-manager deployments list), or Config Connector creates new resources beside Deployment Manager's instead of adopting them",
		what, e.Flag, e.Name, strings.Join(list, ", "), more, e.Flag)
}

// Unwrap makes a NameError an invalid argument.
func (e *NameError) Unwrap() error { return derrors.InvalidArgument }

// CheckDeploymentName returns a *NameError when res, expanded as the
// default deployment name def, has Google Cloud resources whose names
// read it; expandAs expands the same input as another deployment name.
// When the other expansion fails, the input depends on the name in a way
// that cannot be compared, and that is the error.
//
// The input is not expanded again when it has no Google Cloud resources,
// or when sources (the configuration and the files it imports; nil when
// they are not all known) are every file it read (res used no registry
// template) and none of them spells "deployment": no template can then
// read env["deployment"], and a second expansion would only double the
// cost of dm convert.
func CheckDeploymentName(res *expand.Result, def, flag string, opts gcp.Options, sources []string, expandAs func(deployment string) (*expand.Result, error)) error {
	if !manifest.HasGCP(res) {
		return nil
	}
	if sources != nil && len(res.References) == 0 && !slices.ContainsFunc(sources, func(s string) bool { return strings.Contains(s, "deployment") }) {
		return nil
	}
	other := OtherName(def)
	x, err := expandAs(other)
	if err != nil {
		return fmt.Errorf("expanding again as deployment %q, to find the resources whose names read env.deployment (which without %s is %q), fails; give %s NAME, the Deployment Manager deployment's: %w", other, flag, def, flag, err)
	}
	if named := DeploymentNamed(res, x, opts); len(named) > 0 {
		return &NameError{Name: def, Flag: flag, Resources: named}
	}
	return nil
}
