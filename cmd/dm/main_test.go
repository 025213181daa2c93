package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/index/indextest"

	"sigs.k8s.io/yaml"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/resolve"
	"github.com/dmhq/dm/internal/server"
)

const redisSchema = `info:
  title: Redis cache
  description: A Redis master and replicas.
required: [name]
properties:
  name:
    type: string
    description: Deployment name.
  replicas:
    type: integer
    default: 2
`

var fixture = map[string]string{
	"registry.yaml":                        "collections:\n  apps: stacks/apps\n",
	"redis/v1.0.0/redis.jinja":             "kind: a\n",
	"redis/v1.0.0/example.yaml":            "resources: []\n",
	"redis/v1.0.3/redis.jinja":             "kind: b\n",
	"redis/v1.0.3/redis.jinja.schema":      redisSchema,
	"redis/v1.0.3/example.yaml":            "resources:\n- name: cache\n  type: redis:v1.0\n  properties: {name: cache}\n",
	"redis/v1.1.0/redis.jinja":             "kind: c\n",
	"redis/v1.1.0/example.yaml":            "resources: []\n",
	"redis/v2.0.0-rc.1/redis.jinja":        "kind: rc\n",
	"redis/v2.0.0-rc.1/example.yaml":       "resources: []\n",
	"stacks/apps/shop/v2/shop.py":          "def GenerateConfig(ctx): pass\n",
	"stacks/apps/shop/v2/example.yaml":     "resources: []\n",
	"stacks/apps/shop/v2.1.0/shop.py":      "def GenerateConfig(ctx): return 1\n",
	"stacks/apps/shop/v2.1.0/example.yaml": "resources: []\n",
}

func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := indextest.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

type result struct {
	code           int
	stdout, stderr string
}

// dmRun runs dm in-process with an environment of only vars.
func dmRun(t testing.TB, vars map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	if vars == nil {
		vars = map[string]string{}
	}
	if _, ok := vars["HOME"]; !ok {
		vars["HOME"] = t.TempDir()
	}
	code := run(context.Background(), args, &out, &errb, func(k string) string { return vars[k] })
	return result{code, out.String(), errb.String()}
}

// serve runs a registryd handler over dir as registry github.com/acme/tpl.
func serve(t *testing.T, dir string) string {
	t.Helper()
	reg, err := api.OpenRegistry(api.RegistrySpec{Prefix: "github.com/acme/tpl", Dir: dir}, api.Setup{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry("github.com/acme/tpl")
	hs := httptest.NewServer(server.New(server.Options{Resolver: resolve.New(def, reg)}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestResolve(t *testing.T) {
	dir := writeTree(t, fixture)
	other := writeTree(t, map[string]string{"x/v1/x.gotmpl": "x\n", "x/v1/example.yaml": "{}\n"})
	url := serve(t, dir)
	local := []string{"--registry-dir", "github.com/acme/tpl=" + dir}
	two := append([]string{"--registry-dir", "acme/other=" + other}, local...)
	tests := []struct {
		name       string
		vars       map[string]string
		args       []string
		code       int
		stdout     string
		stderrHas  string
		stderrNone bool
	}{
		{"local patch", nil, append(local, "resolve", "redis:v1.0"), 0, "github.com/acme/tpl/redis:v1.0.3\n", "", true},
		{"local no version", nil, append(local, "resolve", "redis"), 0, "github.com/acme/tpl/redis:v1.1.0\n", "chose v1.1.0", false},
		{"local pre-release", nil, append(local, "resolve", "redis:v2.0.0-rc.1"), 0, "github.com/acme/tpl/redis:v2.0.0-rc.1\n", "", true},
		{"local default collection", nil, append(local, "--registry", "acme/tpl/apps", "resolve", "shop:v2"), 0, "github.com/acme/tpl/apps/shop:v2.0.0\n", "", true},
		{"local github.com registry", nil, append(local, "--registry", "github.com/acme/tpl", "resolve", "apps/shop:v2.1"), 0, "github.com/acme/tpl/apps/shop:v2.1.0\n", "", true},
		{"local full", nil, append(local, "resolve", "github.com/acme/tpl/redis:v1.1"), 0, "github.com/acme/tpl/redis:v1.1.0\n", "", true},
		{"local missing", nil, append(local, "resolve", "redis:v1.2"), 1, "", "available: v1.0.0, v1.0.3, v1.1.0, v2.0.0-rc.1", false},
		{"local bad ref", nil, append(local, "resolve", "a/b/c/d/e/f/g:v1"), 1, "", "dm: ", false},
		{"two dirs short", nil, append(two, "resolve", "redis:v1"), 1, "", "no default registry", false},
		{"two dirs full", nil, append(two, "resolve", "github.com/acme/other/x:v1"), 0, "github.com/acme/other/x:v1.0.0\n", "", true},
		{"two dirs with registry", nil, append(two, "--registry", "acme/other", "resolve", "x"), 0, "github.com/acme/other/x:v1.0.0\n", "", false},
		{"server", nil, []string{"--server", url, "resolve", "redis:v1.0"}, 0, "github.com/acme/tpl/redis:v1.0.3\n", "", true},
		{"server no version", nil, []string{"--server", url, "resolve", "redis"}, 0, "github.com/acme/tpl/redis:v1.1.0\n", "chose v1.1.0", false},
		{"server env", map[string]string{"DM_SERVER": url}, []string{"resolve", "redis:v1"}, 0, "github.com/acme/tpl/redis:v1.0.3\n", "", true},
		{"server registry", nil, []string{"--server", url, "--registry", "acme/tpl/apps", "resolve", "shop:v2"}, 0, "github.com/acme/tpl/apps/shop:v2.0.0\n", "", true},
		{"server missing", nil, []string{"--server", url, "resolve", "redis:v1.2"}, 1, "", "available:", false},
		{"server down", nil, []string{"--server", "http://127.0.0.1:1", "resolve", "redis:v1.2"}, 1, "", "dm: ", false},
		{"embedded", nil, []string{"resolve", "redis"}, 0, "", "", false},
		{"json", nil, append(local, "-o", "json", "resolve", "redis:v1.0"), 0, "", "", true},
		{"no argument", nil, []string{"resolve"}, 2, "", "resolve needs REF (usage: dm resolve REF)", false},
		{"bad output", nil, []string{"-o", "xml", "resolve", "x"}, 2, "", "want table, json or yaml", false},
		{"bad flag", nil, []string{"resolve", "--nope", "x"}, 2, "", "unknown flag", false},
		{"unknown command", nil, []string{"nope"}, 2, "", "unknown command", false},
		{"misspelt command", nil, []string{"exapnd"}, 2, "", `unknown command "exapnd" for "dm"; did you mean expand?`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := dmRun(t, tt.vars, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.stdout != "" && r.stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", r.stdout, tt.stdout)
			}
			if tt.code != 0 && r.stdout != "" {
				t.Errorf("stdout %q on failure, want nothing", r.stdout)
			}
			if !strings.Contains(r.stderr, tt.stderrHas) {
				t.Errorf("stderr %q lacks %q", r.stderr, tt.stderrHas)
			}
			if tt.stderrNone && r.stderr != "" {
				t.Errorf("stderr %q, want nothing", r.stderr)
			}
		})
	}
}

func TestResolveEmbeddedAndJSON(t *testing.T) {
	r := dmRun(t, nil, "resolve", "redis:v1.0")
	if r.code != 0 || !strings.HasPrefix(r.stdout, dm.ExampleRegistryPrefix+"/redis:v1.0.") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("embedded: %+v", r)
	}
	dir := writeTree(t, fixture)
	for _, args := range [][]string{
		{"--registry-dir", "acme/tpl=" + dir, "-o", "json", "resolve", "redis:v1.0"},
		{"--server", serve(t, dir), "-o", "json", "resolve", "redis:v1.0"},
	} {
		r := dmRun(t, nil, args...)
		var res api.Resolution
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Resolved != "github.com/acme/tpl/redis:v1.0.3" || res.Digest == "" || len(res.Files) != 3 || res.TemplateFile != "redis.jinja" {
			t.Errorf("%q: %+v %v", args, res, err)
		}
	}
}

// TestGitHubInProcess resolves against the GitHub test server without a
// registryd.
func TestGitHubInProcess(t *testing.T) {
	m := fstest.MapFS{}
	for name, content := range fixture {
		m[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	gh := githubtest.New(map[string]string{"acme/tpl": githubtest.NewRepoFS(t, m)})
	defer gh.Close()
	gh.RequireToken("tok")
	vars := map[string]string{"GITHUB_TOKEN": "tok"}
	cache := t.TempDir()
	args := []string{"--registry", "acme/tpl", "--github-api", gh.URL, "--cache-dir", cache}
	r := dmRun(t, vars, append(args, "resolve", "redis:v1.0")...)
	if r.code != 0 || r.stdout != "github.com/acme/tpl/redis:v1.0.3\n" {
		t.Fatalf("%+v", r)
	}
	// Second run: the persisted index is confirmed with one conditional
	// request.
	gh.ResetCounts()
	r = dmRun(t, vars, append(args, "describe", "redis:v1.0")...)
	if r.code != 0 || !strings.Contains(r.stdout, "Redis cache") {
		t.Fatalf("%+v", r)
	}
	if n := gh.RequestsTo("commit"); n != 1 || gh.RequestsTo("tree") != 0 {
		t.Errorf("second run: %d commit and %d tree requests, want 1 and 0", n, gh.RequestsTo("tree"))
	}
	// GitHub down: the cached index still answers, with a warning.
	gh.Close()
	r = dmRun(t, vars, append(args, "resolve", "redis:v1")...)
	if r.code != 0 || r.stdout != "github.com/acme/tpl/redis:v1.0.3\n" || !strings.Contains(r.stderr, "cached index") {
		t.Errorf("GitHub down: %+v", r)
	}
}

func TestReadCommands(t *testing.T) {
	dir := writeTree(t, fixture)
	url := serve(t, dir)
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"local", []string{"--registry-dir", "github.com/acme/tpl=" + dir}},
		{"server", []string{"--server", url}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			tests := []struct {
				args []string
				want []string
				not  []string
			}{
				{[]string{"registries"}, []string{"github.com/acme/tpl (default)", "local", "ok"}, nil},
				{[]string{"templates"}, []string{"TEMPLATE", "redis", "v1.1.0", "apps/shop", "v2.1.0"}, nil},
				{[]string{"templates", "^sh"}, []string{"apps/shop"}, []string{"redis"}},
				{[]string{"templates", "apps/"}, []string{"apps/shop"}, []string{"redis"}},
				{[]string{"versions", "redis"}, []string{"v1.0.0", "v1.0.3", "v1.1.0  ", "latest", "pre-release"}, nil},
				{[]string{"versions", "apps/shop"}, []string{"v2.0.0", "v2 ", "python"}, nil},
				{[]string{"describe", "redis:v1.0"}, []string{
					"Reference:", "github.com/acme/tpl/redis:v1.0.3", "Title:", "Redis cache", "A Redis master and replicas.",
					"name", "string", "yes", "Deployment name.", "replicas", "integer", "2", "no",
					"Files:", "redis.jinja.schema", "Example (example.yaml):", "type: redis:v1.0",
				}, nil},
				{[]string{"search", "shop"}, []string{"apps/shop", "name"}, []string{"redis"}},
				{[]string{"search", "apps"}, []string{"apps/shop", "collection"}, nil},
			}
			for _, tt := range tests {
				r := dmRun(t, nil, append(mode.args, tt.args...)...)
				if r.code != 0 {
					t.Errorf("dm %q: exit %d: %s", tt.args, r.code, r.stderr)
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(r.stdout, w) {
						t.Errorf("dm %q: output lacks %q:\n%s", tt.args, w, r.stdout)
					}
				}
				for _, n := range tt.not {
					if strings.Contains(r.stdout, n) {
						t.Errorf("dm %q: output has %q:\n%s", tt.args, n, r.stdout)
					}
				}
			}
			// Structured output decodes to the wire types.
			r := dmRun(t, nil, append(mode.args, "-o", "json", "templates")...)
			var tl api.TemplateList
			if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil || len(tl.Templates) != 2 {
				t.Errorf("templates -o json: %v: %s", err, r.stdout)
			}
			r = dmRun(t, nil, append(mode.args, "-o", "yaml", "describe", "redis:v1.0")...)
			var tv api.TemplateVersion
			if err := yaml.Unmarshal([]byte(r.stdout), &tv); err != nil || tv.Title != "Redis cache" || len(tv.Properties) != 2 {
				t.Errorf("describe -o yaml: %v: %s", err, r.stdout)
			}
			for _, args := range [][]string{{"versions", "nope"}, {"describe", "redis:v9"}, {"templates", "("}, {"versions", "redis:v1"}} {
				if r := dmRun(t, nil, append(mode.args, args...)...); r.code != 1 || !strings.HasPrefix(r.stderr, "dm: ") {
					t.Errorf("dm %q: exit %d, stderr %q; want 1 and an error", args, r.code, r.stderr)
				}
			}
		})
	}
}

func TestLint(t *testing.T) {
	good := writeTree(t, fixture)
	twoTemplates := writeTree(t, map[string]string{
		"web/v1.0.0/web.jinja":    "a\n",
		"web/v1.0.0/web.py":       "b\n",
		"web/v1.0.0/example.yaml": "{}\n",
	})
	badVersion := writeTree(t, map[string]string{
		"web/v1.0.0/web.jinja":     "a\n",
		"web/v1.0.0/example.yaml":  "{}\n",
		"web/latest/web.jinja":     "a\n",
		"web/latest/example.yaml":  "{}\n",
		"db/v1/db.gotmpl":          "x\n", // no example.yaml: a warning only
		"db/v1/db.gotmpl.schema":   "{}\n",
		"db/v1/helpers/x.tmpl":     "x\n",
		"deep/er/t/v1/t.jinja":     "x\n",
		"deep/er/t/v1/example.yml": "x\n",
	})
	warnOnly := writeTree(t, map[string]string{"db/v1/db.gotmpl": "x\n"})
	tests := []struct {
		name string
		dir  string
		code int
		want []string
	}{
		{"good", good, 0, nil},
		{"two template files", twoTemplates, 1, []string{"web/v1.0.0: error: several template files: web.jinja, web.py"}},
		{"not a version", badVersion, 1, []string{"web/latest: error: version directory name \"latest\" is not a version", "db/v1: warning: no example.yaml"}},
		{"warnings only", warnOnly, 0, []string{"db/v1: warning:"}},
		{"missing directory", filepath.Join(good, "nope"), 1, nil},
		{"example registry", filepath.Join("..", "..", "registry-example"), 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := dmRun(t, nil, "lint", tt.dir)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}
	r := dmRun(t, nil, "-o", "json", "lint", twoTemplates)
	var lr lintResult
	if err := json.Unmarshal([]byte(r.stdout), &lr); err != nil || r.code != 1 || lr.Errors != 1 || len(lr.Findings) == 0 {
		t.Errorf("lint -o json: exit %d, %+v, %v", r.code, lr, err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := dmRun(t, nil, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "dm ") || !strings.Contains(r.stdout, "go1.") {
			t.Errorf("dm %v = %d %q %q, want exit 0 and \"dm <version> (... go1.N)\"", args, r.code, r.stdout, r.stderr)
		}
	}
	r := dmRun(t, nil, "version", "-o", "json")
	var v struct{ Version, Go string }
	if err := json.Unmarshal([]byte(r.stdout), &v); r.code != 0 || err != nil || v.Version == "" || v.Go == "" {
		t.Errorf("dm version -o json = %d %q (%v), want version and go fields", r.code, r.stdout, err)
	}
}

// TestUsageErrors checks that mistakes on the command line exit 2 with a
// message that names the flag, and that other failures exit 1.
func TestUsageErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"t.yaml": "apiVersion: v1\nkind: Template\nobjects: []\nparameters: [{name: DATABASE}]\n"})
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"expand", "redis:v1", "--properties", "tag"}, 2, `--properties "tag": want KEY=VALUE`},
		{[]string{"expand", "redis:v1", "--properties", "a..b=1"}, 2, "empty key segment"},
		{[]string{"process", "-f", filepath.Join(dir, "t.yaml"), "-p", "DATABASE"}, 2, `-p: parameter "DATABASE": want NAME=VALUE`},
		{[]string{"--registry-dir", "foo", "templates"}, 2, `--registry-dir: registry directory "foo": want PREFIX=DIR`},
		{[]string{"--server", "nothttp", "templates"}, 2, `--server: server URL "nothttp"`},
		{[]string{"--registry", "a/b/c/d/e", "templates"}, 2, "--registry:"},
		{[]string{}, 2, "no command given"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"expand", filepath.Join(dir, "missing.yaml")}, 1, "configuration file: stat " + filepath.Join(dir, "missing.yaml") + ": no such file or directory"},
	}
	for _, tt := range tests {
		r := dmRun(t, nil, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.HasSuffix(strings.TrimSpace(r.stderr), "invalid argument") {
			t.Errorf("dm %v = %d %q, want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	if r := dmRun(t, nil); !strings.Contains(r.stderr, "Available Commands:") || r.stdout != "" {
		t.Errorf("bare dm: stdout %q, stderr %q; want the help on stderr", r.stdout, r.stderr)
	}
}

// TestCompletion drives cobra's completion entry point as the shells do.
func TestCompletion(t *testing.T) {
	url := serveExample(t)
	complete := func(args ...string) []string {
		t.Helper()
		r := dmRun(t, nil, append([]string{"__complete"}, args...)...)
		if r.code != 0 {
			t.Fatalf("dm __complete %v: exit %d: %s", args, r.code, r.stderr)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				out = append(out, l)
			}
		}
		return out
	}
	for _, mode := range [][]string{nil, {"--server", url}} {
		got := complete(append(mode, "describe", "red")...)
		if !slices.Equal(got, []string{"redis"}) {
			t.Errorf("%v describe red: %q, want redis", mode, got)
		}
		got = complete(append(mode, "resolve", "redis:v1")...)
		if len(got) == 0 || got[0] != "redis:v1" || !slices.Contains(got, "redis:v1.0.2") || slices.Contains(got, "redis:v2") {
			t.Errorf("%v resolve redis:v1: %q", mode, got)
		}
		// web has no v1.0, so v1 (which means v1.0) would not resolve.
		if got := complete(append(mode, "show", "common/web:v")...); slices.Contains(got, "common/web:v1") || !slices.Contains(got, "common/web:v1.3") {
			t.Errorf("%v show common/web:v: %q, want v1.3 and not v1", mode, got)
		}
		if got := complete(append(mode, "show", "common/web:v1.")...); !slices.Contains(got, "common/web:v1.2") || !slices.Contains(got, "common/web:v1.2.3") {
			t.Errorf("%v show common/web:v1.: %q", mode, got)
		}
	}
	if got := complete("expand", "-o", ""); !slices.Equal(got, []string{"table", "json", "yaml", "manifest", "list"}) {
		t.Errorf("expand -o: %q", got)
	}
	if got := complete("templates", "-o", ""); !slices.Equal(got, []string{"table", "json", "yaml"}) {
		t.Errorf("templates -o: %q", got)
	}
}
