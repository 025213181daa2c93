package api

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
	"github.com/dmhq/dm/internal/resolve"
)

func TestParseDirSpec(t *testing.T) {
	tests := []struct {
		in, prefix, dir string
		wantErr         bool
	}{
		{"github.com/acme/t=./reg", "github.com/acme/t", "./reg", false},
		{"acme/t=/abs/dir", "github.com/acme/t", "/abs/dir", false},
		{"ghe.example.com/acme/t=d", "ghe.example.com/acme/t", "d", false},
		{"acme/t=dir=with=equals", "github.com/acme/t", "dir=with=equals", false},
		{"./reg", "", "", true},
		{"acme=./reg", "", "", true},
		{"acme/t/coll=./reg", "", "", true},
		{"acme/t=", "", "", true},
	}
	for _, tt := range tests {
		s, err := ParseDirSpec(tt.in)
		if (err != nil) != tt.wantErr || s.Prefix != tt.prefix || s.Dir != tt.dir {
			t.Errorf("ParseDirSpec(%q) = %+v, %v", tt.in, s, err)
		}
		if err != nil && !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("ParseDirSpec(%q): error %v is not InvalidArgument", tt.in, err)
		}
	}
}

func TestParseGitHubSpec(t *testing.T) {
	tests := []struct {
		in, prefix, owner, repo, branch string
		wantErr                         bool
	}{
		{"acme/t", "github.com/acme/t", "acme", "t", "", false},
		{"acme/t@main", "github.com/acme/t", "acme", "t", "main", false},
		{"github.com/acme/t@release/1.x", "github.com/acme/t", "acme", "t", "release/1.x", false},
		{"acme", "", "", "", "", true},
		{"acme/t/x", "", "", "", "", true},
		{"acme/t@", "", "", "", "", true},
		{"/t", "", "", "", "", true},
	}
	for _, tt := range tests {
		s, err := ParseGitHubSpec(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseGitHubSpec(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && (s.Prefix != tt.prefix || s.GitHub.Owner != tt.owner || s.GitHub.Repo != tt.repo || s.GitHub.Branch != tt.branch) {
			t.Errorf("ParseGitHubSpec(%q) = %+v %+v", tt.in, s, s.GitHub)
		}
	}
}

// testService serves fsys as registry github.com/a/b.
func testService(t *testing.T, fsys fstest.MapFS) *Service {
	t.Helper()
	g, err := OpenRegistry(RegistrySpec{Prefix: "github.com/a/b", FS: fsys}, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return NewService(resolve.New(resolve.Registry{}, g), expand.Options{})
}

func TestSearchOrder(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, p := range []string{
		"web/v1/web.jinja", "webapp/v1/webapp.jinja", "web/webish/v1/webish.jinja",
		"db/v1/db.jinja", "db/v1/helpers/web.jinja",
	} {
		fsys[p] = &fstest.MapFile{Data: []byte("x\n")}
	}
	s := testService(t, fsys)
	res, err := s.Search(context.Background(), "WEB", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Results {
		got = append(got, r.Ref+" "+r.Match)
	}
	want := []string{
		"github.com/a/b/web name",        // exact name
		"github.com/a/b/web/webish name", // name part
		"github.com/a/b/webapp name",     // name part
		"github.com/a/b/db path",         // a file path
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: %q, want %q", i, got[i], want[i])
		}
	}
	if _, err := s.Search(context.Background(), "  ", ""); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("empty search: %v", err)
	}
}

func TestHTTPErrorUnwrap(t *testing.T) {
	tests := []struct {
		status int
		want   error
	}{
		{404, derrors.NotFound}, {400, derrors.InvalidArgument}, {409, derrors.Ambiguous},
		{401, derrors.Unauthorized}, {403, derrors.Unauthorized}, {503, derrors.Unavailable},
		{422, derrors.LimitExceeded},
	}
	for _, tt := range tests {
		if err := error(&HTTPError{Status: tt.status, Message: "x"}); !errors.Is(err, tt.want) {
			t.Errorf("status %d: errors.Is(%v) false", tt.status, tt.want)
		}
	}
	if _, err := NewClient("not a url", nil); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("NewClient with a bad URL: %v", err)
	}
}

// TestSearchRanking ranks matches of the schema's words: exact name, name
// prefix, name part, title, collection, tag, property, description, path.
func TestSearchRanking(t *testing.T) {
	files := map[string]string{
		"redis/v1/redis.jinja":                "x\n",
		"redis-operator/v1/redis-operator.py": "x\n",
		"myredis/v1/myredis.jinja":            "x\n",
		"cache/v1/cache.jinja":                "x\n",
		"cache/v1/cache.jinja.schema":         "info: {title: Redis cache}\n",
		"redis/other/v1/other.jinja":          "x\n",
		"kv/v1/kv.jinja":                      "x\n",
		"kv/v1/kv.jinja.schema":               "info: {title: KV store, tags: [redis, memcached]}\n",
		"app/v1/app.jinja":                    "x\n",
		"app/v1/app.jinja.schema":             "properties:\n  redisHost: {type: string}\n",
		"store/v1/store.jinja":                "x\n",
		"store/v1/store.jinja.schema":         "info: {title: Store, description: Keeps data in Redis.}\n",
		"pg/v1/pg.yaml":                       "apiVersion: v1\nkind: Template\nmetadata:\n  name: pg\n  annotations: {description: PostgreSQL, tags: 'database,sql'}\nparameters: [{name: REDIS_URL}]\nobjects: []\n",
		"misc/v1/misc.jinja":                  "x\n",
		"misc/v1/docs/redis.md":               "x\n",
	}
	fsys := fstest.MapFS{}
	for p, c := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	s := testService(t, fsys)
	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"redis", []string{
			"redis name", "redis-operator name", "myredis name", "cache title",
			"redis/other collection", "kv tag", "app property", "pg property", "store description", "misc path",
		}},
		{"sql", []string{"pg tag"}},
		{"redis store", []string{"kv tag", "store description"}},
	} {
		res, err := s.Search(context.Background(), tt.q, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res.Results {
			got = append(got, strings.TrimPrefix(r.Ref, "github.com/a/b/")+" "+r.Match)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Search(%q) =\n%q, want\n%q", tt.q, got, tt.want)
		}
	}
	res, _ := s.Search(context.Background(), "cache", "")
	if len(res.Results) == 0 || res.Results[0].Title != "Redis cache" {
		t.Errorf("results carry the title: %+v", res.Results)
	}
}

// TestLocalFileChanged checks that a local registry file deleted or edited
// after listing is answered from a new listing, never with a 500.
func TestLocalFileChanged(t *testing.T) {
	dir := t.TempDir()
	write := func(p, c string) {
		t.Helper()
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("web/v1/web.jinja", "resources: []\n")
	write("web/v1/example.yaml", "resources: [1]\n")
	write("web/v1/web.jinja.schema", "info: {title: Web}\n")
	write("db/v1/db.jinja", "resources: []\n")
	write("db/v1/db.jinja.schema", "info: {title: DB}\n")
	g, err := OpenRegistry(RegistrySpec{Prefix: "github.com/a/b", Dir: dir}, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	def, _ := resolve.ParseRegistry("github.com/a/b")
	s := NewService(resolve.New(def, g), expand.Options{})
	ctx := context.Background()

	write("web/v1/example.yaml", "resources: [2]\n")
	tv, err := s.Template(ctx, "web:v1", "")
	if err != nil || tv.ExampleContent != "resources: [2]\n" {
		t.Fatalf("after an edit: %v, example %q; want the new content", err, tv.ExampleContent)
	}
	// A deleted file whose content is cached is still served from the
	// listing (blobs are content-addressed) until the directory is listed
	// again, as registryd's watcher does at once.
	os.Remove(filepath.Join(dir, "web", "v1", "example.yaml"))
	if _, err = s.Template(ctx, "web:v1", ""); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	g.Refresh(ctx)
	if tv, err = s.Template(ctx, "web:v1", ""); err != nil || tv.ExampleContent != "" {
		t.Fatalf("after a delete and a listing: %v, example %q; want no example", err, tv.ExampleContent)
	}
	os.Remove(filepath.Join(dir, "db", "v1", "db.jinja.schema"))
	if tv, err = s.Template(ctx, "db:v1", ""); err != nil || tv.Title != "" || tv.Schema != "" {
		t.Fatalf("after an unread schema is deleted: %v, %+v; want no schema", err, tv)
	}
	write("web/v1/web.jinja", "resources: [{name: x, type: ConfigMap}]\n")
	res, err := s.Expand(ctx, &ExpandRequest{Ref: "web:v1"})
	if err != nil || len(res.Config.Resources) != 1 {
		t.Fatalf("expand after an edit: %v, %+v", err, res)
	}
	os.RemoveAll(filepath.Join(dir, "web"))
	g.Refresh(ctx)
	_, err = s.File(ctx, "web:v1", "", "web.jinja")
	if !errors.Is(err, derrors.NotFound) || derrors.HTTPStatus(err) != 404 {
		t.Fatalf("after the template is removed: %v, want 404", err)
	}
}
