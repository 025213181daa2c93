package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/resolve"
)

// LocalChoice is the registries a command line names for a process that
// reads them itself (dm without --server).
type LocalChoice struct {
	// Dirs are local directories, PREFIX=DIR (--registry-dir).
	Dirs []string
	// OCI are OCI registries, PREFIX=oci://HOST/PATH (--registry-oci);
	// PlainHTTP lets dm speak plain HTTP to their hosts and to that of an
	// oci:// Registry (--plain-http).
	OCI       []string
	PlainHTTP bool
	// Registry is the default registry, [host/]owner/repo[/collection]
	// or oci://HOST/OWNER/REPO (--registry). When no directory serves it, it is Example when no
	// directory is given and it names Example, else a GitHub repository.
	Registry string
	// GitHub says how GitHub registries are read: APIURL ("" or
	// fetch.DefaultGitHubAPI for api.github.com) and Token.
	GitHub GitHubSpec
	// Example is served when nothing else is.
	Example RegistrySpec
}

// ChoiceError is a setting of a LocalChoice that does not parse: the
// command line's mistake, named by its flag.
type ChoiceError struct {
	// Flag is the flag's name: registry-dir or registry.
	Flag string
	Err  error
}

func (e *ChoiceError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }
func (e *ChoiceError) Unwrap() error { return e.Err }

// Choose returns the registries c names and the default registry short
// references resolve against: Registry when given, else the only
// directory, else Example (served alone when no directory is given).
func (c LocalChoice) Choose() ([]RegistrySpec, resolve.Registry, error) {
	var specs []RegistrySpec
	served := map[string]bool{}
	for _, d := range c.Dirs {
		spec, err := ParseDirSpec(d)
		if err != nil {
			return nil, resolve.Registry{}, &ChoiceError{"registry-dir", err}
		}
		if served[spec.Prefix] {
			return nil, resolve.Registry{}, &ChoiceError{"registry-dir", fmt.Errorf("registry %s is given twice: %w", spec.Prefix, derrors.InvalidArgument)}
		}
		specs = append(specs, spec)
		served[spec.Prefix] = true
	}
	for _, o := range c.OCI {
		spec, err := ParseOCISpec(o)
		if err != nil {
			return nil, resolve.Registry{}, &ChoiceError{"registry-oci", err}
		}
		if served[spec.Prefix] {
			return nil, resolve.Registry{}, &ChoiceError{"registry-oci", fmt.Errorf("registry %s is given twice: %w", spec.Prefix, derrors.InvalidArgument)}
		}
		spec.OCI.PlainHTTP = c.PlainHTTP
		specs = append(specs, spec)
		served[spec.Prefix] = true
	}
	var def resolve.Registry
	if strings.HasPrefix(c.Registry, "oci://") {
		prefix, err := OCIPrefix(c.Registry)
		if err != nil {
			return nil, resolve.Registry{}, &ChoiceError{"registry", err}
		}
		def, _ = resolve.ParseRegistry(prefix)
		if !served[prefix] {
			specs = append(specs, RegistrySpec{Prefix: prefix, OCI: &OCISpec{URL: c.Registry, PlainHTTP: c.PlainHTTP}})
			served[prefix] = true
		}
	} else if c.Registry != "" {
		var err error
		if def, err = resolve.ParseRegistry(c.Registry); err != nil {
			return nil, resolve.Registry{}, &ChoiceError{"registry", err}
		}
		if !served[def.Prefix()] {
			switch {
			case len(c.Dirs) == 0 && def.Prefix() == c.Example.Prefix:
				specs = append(specs, c.Example)
			case def.Host != resolve.DefaultHost && (c.GitHub.APIURL == "" || c.GitHub.APIURL == fetch.DefaultGitHubAPI):
				return nil, resolve.Registry{}, fmt.Errorf("--registry %s: the host is not github.com; give its API with --github-api (GitHub Enterprise: https://%s/api/v3/) or mount a directory with --registry-dir: %w", c.Registry, def.Host, derrors.InvalidArgument)
			default:
				specs = append(specs, c.gitHub(def.Prefix(), def.Owner, def.Repo))
			}
		}
	}
	switch {
	case len(specs) == 0:
		specs = append(specs, c.Example)
		def, _ = resolve.ParseRegistry(c.Example.Prefix)
	case def.IsZero() && len(specs) == 1:
		// One directory and no default: short references mean it.
		def, _ = resolve.ParseRegistry(specs[0].Prefix)
	}
	return specs, def, nil
}

// ForReference returns the registry a full reference to a github.com
// repository names, read as c says GitHub registries are, so that such a
// reference works without configuring its registry. References to other
// hosts reach only registries configured for them, never GitHub by
// accident; ok is false for them and for short references.
func (c LocalChoice) ForReference(ref string) (spec RegistrySpec, ok bool) {
	r, err := resolve.Parse(ref)
	if err != nil || !r.Full() || r.Host != resolve.DefaultHost {
		return RegistrySpec{}, false
	}
	return c.gitHub(r.Registry(), r.Owner, r.Repo), true
}

func (c LocalChoice) gitHub(prefix, owner, repo string) RegistrySpec {
	gh := c.GitHub
	gh.Owner, gh.Repo, gh.Branch = owner, repo, ""
	return RegistrySpec{Prefix: prefix, GitHub: &gh}
}

// OpenRegistries opens the registry of each spec with OpenRegistry.
// Nothing is read yet.
func OpenRegistries(specs []RegistrySpec, setup Setup) ([]*index.Registry, error) {
	regs := make([]*index.Registry, 0, len(specs))
	for _, spec := range specs {
		g, err := OpenRegistry(spec, setup)
		if err != nil {
			return nil, err
		}
		regs = append(regs, g)
	}
	return regs, nil
}

// IndexOnce indexes each registry once, for a process that answers and
// exits: one with a persisted snapshot (a CacheDir) starts from it, and
// when it cannot be refreshed is served from it, stale, with stale told
// why; without a snapshot the refresh's error is returned.
func IndexOnce(ctx context.Context, regs []*index.Registry, stale func(g *index.Registry, err error)) error {
	for _, g := range regs {
		if g.CacheDir != "" {
			_ = g.Load()
		}
		if err := g.Refresh(ctx); err != nil {
			if g.Snapshot() == nil {
				return err
			}
			if stale != nil {
				stale(g, err)
			}
		}
	}
	return nil
}
