package gcp

// Identity is what Config Connector finds an existing Google Cloud
// resource by, and so what decides whether an object adopts the resource
// Deployment Manager made or creates another: its kind, project, location
// and Google Cloud name.
type Identity struct {
	// Kind is the Config Connector kind the resource's type maps to.
	Kind string
	// Project is the resource's project (its properties', else
	// Options.Project); "" for kinds above projects.
	Project string
	// Location is the zone, region or location the body names ("" for a
	// global resource).
	Location string
	// Name is the Google Cloud name: the name property the kind reads,
	// else the DM resource name.
	Name string
}

// Identify returns the identity of each resource as Convert reads it,
// without converting the resources: names are read before any reference
// is resolved. errs[i] says why resource i has none (a type without a
// Config Connector kind, a name that is a reference); it is an error
// wrapping derrors.InvalidArgument.
func Identify(res []Resource, opts Options) (ids []Identity, errs []error) {
	c := &converter{opts: opts, byName: map[string]*item{}}
	ids = make([]Identity, len(res))
	errs = make([]error, len(res))
	for i := range res {
		r := res[i] // identify reads the resource, and does not change it
		it := &item{index: i, res: &r}
		if err := c.identify(it); err != nil {
			errs[i] = err
			continue
		}
		ids[i] = Identity{Kind: it.kind.Kind, Project: it.project, Location: it.location, Name: it.gcpName}
	}
	return ids, errs
}
