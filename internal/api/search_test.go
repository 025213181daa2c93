package api

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/derrors"
)

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

func TestTags(t *testing.T) {
	tests := []struct {
		name string
		read func([]byte) []string
		src  string
		want []string
	}{
		{"schema list", schemaTags, "info: {tags: [db, ' sql']}\n", []string{"db", " sql"}},
		{"schema string", schemaTags, "info: {tags: 'db, sql,,'}\n", []string{"db", "sql"}},
		{"schema none", schemaTags, "info: {title: x}\n", nil},
		{"schema not YAML", schemaTags, "info: [\n", nil},
	}
	for _, tt := range tests {
		if got := tt.read([]byte(tt.src)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
