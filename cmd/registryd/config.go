package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// Config is registryd's configuration file (--config), in YAML:
//
//	listen: 127.0.0.1:8080          # address to serve on (--addr)
//	default_registry: acme/templates/apps  # [host/]owner/repo[/collection] for short references
//	refresh: 5m                     # how often to refresh every registry (--refresh)
//	cache_dir: /var/cache/registryd # persisted snapshots and blobs (--cache-dir)
//	github_api: https://api.github.com/  # default GitHub REST API URL (--github-api)
//	admin_token_env: REGISTRYD_ADMIN_TOKEN  # environment variable holding the admin token
//	webhook_secret_env: REGISTRYD_WEBHOOK_SECRET  # environment variable holding the GitHub webhook secret
//	registries:
//	- github: acme/templates        # OWNER/REPO[@BRANCH]; answers to github.com/OWNER/REPO
//	  branch: main                  # optional; default: the repository's default branch
//	  token_env: ACME_GITHUB_TOKEN  # optional; default: GITHUB_TOKEN
//	  api_url: https://ghe.example.com/api/v3/  # optional; default: github_api
//	  prefix: github.com/acme/templates         # optional reference prefix
//	  webhook_secret_env: ACME_WEBHOOK_SECRET   # optional: this registry's own webhook secret
//	  mirror_to: oci://registry.internal/acme/templates  # optional: push every new version there after each refresh
//	  mirror_plain_http: false      # optional: the mirror speaks plain HTTP
//	- dir: ./registry-example       # a local directory, relative to the config file
//	  prefix: github.com/acme/mirror  # required for dir: the prefix it answers to
//	- oci: oci://ghcr.io/acme/templates  # an OCI registry: HOST/PATH/[COLLECTION/]TEMPLATE:VERSION
//	  prefix: github.com/acme/templates  # required for oci: the prefix it answers to
//	  plain_http: false             # optional: speak plain HTTP to its host
//	  docker_config: /etc/registryd/docker/config.json  # optional: credentials (default Docker's configuration, $DOCKER_CONFIG)
//	  verify:                       # optional, on any registry: its signature policy
//	    keys: [keys/acme.pub]       # PEM public keys (ECDSA P-256), relative to the config file
//	    identities:                 # keyless signers: regular expressions matched whole
//	    - issuer: https://token.actions.githubusercontent.com
//	      subject: https://github.com/acme/templates/.github/workflows/.*
//	    trusted_root: trusted_root.json  # Sigstore trusted_root.json (required with identities)
//	    required: true              # refuse versions without a signature
//
// Flags override the file: a flag given on the command line wins over the
// file's setting, and --registry-dir or --github flags replace the file's
// registries. Tokens are never written in the file, only the names of the
// environment variables that hold them.
type Config struct {
	Listen          string `json:"listen,omitempty"`
	DefaultRegistry string `json:"default_registry,omitempty"`
	Refresh         string `json:"refresh,omitempty"`
	CacheDir        string `json:"cache_dir,omitempty"`
	GitHubAPI       string `json:"github_api,omitempty"`
	AdminTokenEnv   string `json:"admin_token_env,omitempty"`
	// WebhookSecretEnv names the environment variable holding the secret
	// of POST /v1/webhooks/github (default REGISTRYD_WEBHOOK_SECRET).
	WebhookSecretEnv string `json:"webhook_secret_env,omitempty"`
	// AllowURLTypes lets POST /v1/expand accept raw GitHub URLs of
	// template files as resource types.
	AllowURLTypes bool `json:"allow_url_types,omitempty"`
	// ChartRepos are the chart repositories and OCI registries (URLs)
	// whose hosts type: helm resources may fetch charts from.
	ChartRepos []string         `json:"chart_repos,omitempty"`
	Registries []RegistryConfig `json:"registries,omitempty"`
}

// RegistryConfig is one registry of the configuration file: github, dir
// or oci.
type RegistryConfig struct {
	GitHub   string `json:"github,omitempty"`
	Branch   string `json:"branch,omitempty"`
	TokenEnv string `json:"token_env,omitempty"`
	APIURL   string `json:"api_url,omitempty"`
	Dir      string `json:"dir,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
	// WebhookSecretEnv names the environment variable holding this
	// registry's own webhook secret.
	WebhookSecretEnv string `json:"webhook_secret_env,omitempty"`
	// OCI is oci://HOST/PATH; PlainHTTP lets registryd speak plain HTTP
	// to its host; DockerConfig is a Docker configuration file holding
	// its credential (and the mirror's).
	OCI          string `json:"oci,omitempty"`
	PlainHTTP    bool   `json:"plain_http,omitempty"`
	DockerConfig string `json:"docker_config,omitempty"`
	// MirrorTo is an OCI registry the registry's versions are pushed to
	// after each refresh; MirrorPlainHTTP lets it be plain HTTP.
	MirrorTo        string `json:"mirror_to,omitempty"`
	MirrorPlainHTTP bool   `json:"mirror_plain_http,omitempty"`
	// Verify is the registry's signature policy.
	Verify *VerifyConfig `json:"verify,omitempty"`
}

// VerifyConfig is a registry's signature policy in the configuration
// file: files of keys and of a trusted root, identities, and whether a
// signature is required.
type VerifyConfig struct {
	Keys        []string             `json:"keys,omitempty"`
	Identities  []signature.Identity `json:"identities,omitempty"`
	TrustedRoot string               `json:"trusted_root,omitempty"`
	Required    bool                 `json:"required,omitempty"`
}

// policy reads the files v names.
func (v *VerifyConfig) policy(where string) (*signature.PolicyConfig, error) {
	if v == nil {
		return nil, nil
	}
	c := &signature.PolicyConfig{Identities: v.Identities, Required: v.Required}
	for i, k := range v.Keys {
		b, err := os.ReadFile(k)
		if err != nil {
			return nil, fmt.Errorf("%s: verify.keys[%d]: %w", where, i, err)
		}
		c.Keys = append(c.Keys, b)
	}
	if v.TrustedRoot != "" {
		b, err := os.ReadFile(v.TrustedRoot)
		if err != nil {
			return nil, fmt.Errorf("%s: verify.trusted_root: %w", where, err)
		}
		c.TrustedRoot = b
	}
	if _, err := sigstore.NewPolicy(*c); err != nil {
		return nil, fmt.Errorf("%s: verify: %w", where, err)
	}
	return c, nil
}

// loadConfig reads a configuration file; relative directories in it are
// made relative to the file's directory.
func loadConfig(name string) (*Config, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	c, err := decodeConfig(b)
	if err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "configuration %s: %v", name, err)
	}
	base := filepath.Dir(name)
	for i := range c.Registries {
		if d := c.Registries[i].Dir; d != "" && !filepath.IsAbs(d) {
			c.Registries[i].Dir = filepath.Join(base, d)
		}
		if d := c.Registries[i].DockerConfig; d != "" && !filepath.IsAbs(d) {
			c.Registries[i].DockerConfig = filepath.Join(base, d)
		}
		if v := c.Registries[i].Verify; v != nil {
			for j, k := range v.Keys {
				if !filepath.IsAbs(k) {
					v.Keys[j] = filepath.Join(base, k)
				}
			}
			if v.TrustedRoot != "" && !filepath.IsAbs(v.TrustedRoot) {
				v.TrustedRoot = filepath.Join(base, v.TrustedRoot)
			}
		}
	}
	return c, nil
}

// decodeConfig decodes a configuration file strictly. sigs.k8s.io/yaml
// converts YAML to JSON first, so its errors speak of JSON; the file is YAML,
// so syntax errors and unknown keys are found on the YAML itself and type
// errors are reworded.
func decodeConfig(b []byte) (*Config, error) {
	var doc any
	if err := yamlv2.Unmarshal(b, &doc); err != nil {
		return nil, err // "yaml: line N: ..."
	}
	if err := checkKeys(doc, reflect.TypeFor[Config](), ""); err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, "json: "); i >= 0 {
			msg = msg[i+len("json: "):]
		}
		// "cannot unmarshal array into Go struct field Config.refresh of
		// type string" -> "... into key refresh of type string".
		msg = goFieldRE.ReplaceAllString(msg, "key ")
		return nil, errors.New(msg)
	}
	return &c, nil
}

var goFieldRE = regexp.MustCompile(`Go struct field (?:\w+\.)+`)

// checkKeys reports the first key of doc that t's json tags do not name,
// with its path (registries[1].colour) and the keys that are known there.
func checkKeys(doc any, t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.Pointer:
		return checkKeys(doc, t.Elem(), path)
	case reflect.Slice:
		l, _ := doc.([]any)
		for i, e := range l {
			if err := checkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		m, ok := doc.(map[any]any)
		if !ok {
			return nil // a type mismatch; decoding reports it
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			fields[name] = f.Type
			names = append(names, name)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, fmt.Sprint(k))
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			at := k
			if path != "" {
				at = path + "." + k
			}
			if !ok {
				return fmt.Errorf("unknown key %q (known keys here: %s)", at, strings.Join(names, ", "))
			}
			if err := checkKeys(m[k], ft, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// settings is the configuration registryd runs with, after merging the
// file, the flags and the environment.
type settings struct {
	addr string
	// pprofAddr, when set, serves net/http/pprof on a listener of its
	// own, never on addr.
	pprofAddr  string
	registries []api.RegistrySpec
	def        resolve.Registry
	refresh    time.Duration
	cacheDir   string
	// chartRepos are the hosts type: helm resources may fetch from.
	chartRepos []string
	adminToken string
	readyWait  time.Duration
	logLevel   string
	allowURLs  bool
	// sandbox configures the expansion workers; noSandbox expands
	// in-process.
	sandbox   sandbox.Options
	noSandbox bool
	// timeout and totalTimeout are expand.Options' Timeout and
	// TotalTimeout.
	timeout, totalTimeout time.Duration
	// webhookSecret is the global webhook secret; hookSecrets the
	// registries' own, by prefix.
	webhookSecret string
	hookSecrets   map[string]string
	// webhookMaxBody is WebhookOptions.MaxBody.
	webhookMaxBody int64
	// mirrors are the registries' mirrors, by prefix (--mirror-to,
	// mirror_to).
	mirrors map[string]api.OCISpec
	// kube configures --watch-registries; githubAPI is the API URL of
	// its objects without one.
	kube      kubeFlags
	githubAPI string
	// exampleSettle is server.Options.ExampleSettle.
	exampleSettle time.Duration
	// trustedProxies is server.Options.TrustedProxies.
	trustedProxies []netip.Prefix
}

// specs turns the configured registries into specs; getenv reads tokens.
// secrets receives the registries' own webhook secrets by prefix.
func (c *Config) specs(getenv func(string) string, secrets map[string]string) ([]api.RegistrySpec, error) {
	var out []api.RegistrySpec
	for i, r := range c.Registries {
		where := fmt.Sprintf("registries[%d]", i)
		var dockerConfig []byte
		if r.DockerConfig != "" {
			b, err := os.ReadFile(r.DockerConfig)
			if err != nil {
				return nil, fmt.Errorf("%s: docker_config: %w", where, err)
			}
			dockerConfig = b
		}
		switch {
		case r.GitHub != "" && r.Dir != "":
			return nil, fmt.Errorf("%s: set either github or dir, not both: %w", where, derrors.InvalidArgument)
		case r.OCI != "" && (r.GitHub != "" || r.Dir != ""):
			return nil, fmt.Errorf("%s: set oci alone, not with github or dir: %w", where, derrors.InvalidArgument)
		case r.OCI != "":
			if r.Prefix == "" {
				return nil, fmt.Errorf("%s: oci %s needs a prefix, such as github.com/acme/templates: %w", where, r.OCI, derrors.InvalidArgument)
			}
			spec, err := api.ParseOCISpec(r.Prefix + "=" + r.OCI)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			spec.OCI.PlainHTTP = r.PlainHTTP
			spec.OCI.DockerConfig = dockerConfig
			out = append(out, spec)
		case r.GitHub != "":
			spec, err := api.ParseGitHubSpec(r.GitHub)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if r.Branch != "" {
				if spec.GitHub.Branch != "" && spec.GitHub.Branch != r.Branch {
					return nil, fmt.Errorf("%s: branch given twice (%s and %s): %w", where, spec.GitHub.Branch, r.Branch, derrors.InvalidArgument)
				}
				spec.GitHub.Branch = r.Branch
			}
			spec.GitHub.APIURL = r.APIURL
			if spec.GitHub.APIURL == "" {
				spec.GitHub.APIURL = c.GitHubAPI
			}
			env := r.TokenEnv
			if env == "" {
				env = "GITHUB_TOKEN"
			}
			spec.GitHub.Token = getenv(env)
			if r.Prefix != "" {
				p, err := api.ParsePrefix(r.Prefix)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				spec.Prefix = p
			}
			if r.WebhookSecretEnv != "" {
				if secrets[spec.Prefix] = getenv(r.WebhookSecretEnv); secrets[spec.Prefix] == "" {
					return nil, fmt.Errorf("%s: webhook_secret_env %s is not set: %w", where, r.WebhookSecretEnv, derrors.InvalidArgument)
				}
			}
			out = append(out, spec)
		case r.Dir != "":
			if r.Prefix == "" {
				return nil, fmt.Errorf("%s: dir %s needs a prefix, such as github.com/acme/templates: %w", where, r.Dir, derrors.InvalidArgument)
			}
			p, err := api.ParsePrefix(r.Prefix)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			out = append(out, api.RegistrySpec{Prefix: p, Dir: r.Dir})
		default:
			return nil, fmt.Errorf("%s: set github, dir or oci: %w", where, derrors.InvalidArgument)
		}
		pc, err := r.Verify.policy(where)
		if err != nil {
			return nil, err
		}
		out[len(out)-1].Verify = pc
	}
	return out, nil
}

// mirrorTargets returns the mirrors of the configured registries, by
// prefix; specs are what specs made of them, in their order.
func (c *Config) mirrorTargets(specs []api.RegistrySpec) (map[string]api.OCISpec, error) {
	out := map[string]api.OCISpec{}
	for i, r := range c.Registries {
		if r.MirrorTo == "" || i >= len(specs) {
			continue
		}
		where := fmt.Sprintf("registries[%d]", i)
		if err := checkMirror(r.MirrorTo); err != nil {
			return nil, fmt.Errorf("%s: mirror_to: %w", where, err)
		}
		t := api.OCISpec{URL: r.MirrorTo, PlainHTTP: r.MirrorPlainHTTP}
		if r.DockerConfig != "" {
			b, err := os.ReadFile(r.DockerConfig)
			if err != nil {
				return nil, fmt.Errorf("%s: docker_config: %w", where, err)
			}
			t.DockerConfig = b
		}
		out[specs[i].Prefix] = t
	}
	return out, nil
}

// checkMirror checks a mirror's target URL.
func checkMirror(u string) error {
	_, err := oci.ParseURL(u)
	return err
}

// parseMirrorFlag parses --mirror-to PREFIX=oci://HOST/PATH.
func parseMirrorFlag(s string) (string, string, error) {
	prefix, u, ok := strings.Cut(s, "=")
	if !ok || prefix == "" || u == "" {
		return "", "", derrors.Errorf(derrors.InvalidArgument, "--mirror-to %q: want PREFIX=oci://HOST/PATH", s)
	}
	p, err := api.ParsePrefix(prefix)
	if err != nil {
		return "", "", fmt.Errorf("--mirror-to: %w", err)
	}
	if err := checkMirror(u); err != nil {
		return "", "", fmt.Errorf("--mirror-to: %w", err)
	}
	return p, u, nil
}

// finish checks the registries and picks the default: the configured one,
// the only registry, or with none configured the embedded example
// registry.
func (s *settings) finish(defaultRegistry string) error {
	// Registries from the cluster need no example beside them.
	if len(s.registries) == 0 && !s.kube.watch {
		s.registries = []api.RegistrySpec{{Prefix: dm.ExampleRegistryPrefix, FS: dm.ExampleRegistry()}}
		if defaultRegistry == "" {
			defaultRegistry = dm.ExampleRegistryPrefix
		}
	}
	def, err := api.DefaultRegistry(s.registries, defaultRegistry)
	if err != nil {
		return err
	}
	s.def = def
	return nil
}
