package fetch_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// datesRepo is a git repository of three versions committed at three
// times, a fourth written and never committed.
func datesRepo(t *testing.T) (dir string, at []time.Time) {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "registry.yaml"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = githubtest.NewRepo(t, src)
	at = []time.Time{
		time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC),
		time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC),
		time.Date(2025, 9, 1, 10, 0, 0, 0, time.UTC),
	}
	githubtest.CommitAt(t, dir, map[string]string{"web/v1.0.0/web.jinja": "a\n", "db/v1.0.0/db.jinja": "a\n"}, at[0])
	githubtest.CommitAt(t, dir, map[string]string{"web/v1.1.0/web.jinja": "b\n"}, at[1])
	// A later change to one file of an old version dates it anew.
	githubtest.CommitAt(t, dir, map[string]string{"db/v1.0.0/db.jinja.schema": "{}\n"}, at[2])
	if err := os.MkdirAll(filepath.Join(dir, "web", "v2.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web", "v2.0.0", "web.jinja"), []byte("c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, at
}

func TestLocalDates(t *testing.T) {
	dir, at := datesRepo(t)
	src := fetch.NewLocalDir(dir, nil)
	tree, err := src.Tree(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Minute)
	dates, err := src.Dates(context.Background(), tree, []string{"web/v1.0.0", "web/v1.1.0", "db/v1.0.0", "web/v2.0.0", "nope/v1"})
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]time.Time{"web/v1.0.0": at[0], "web/v1.1.0": at[1], "db/v1.0.0": at[2]} {
		if !dates[dir].Equal(want) {
			t.Errorf("%s dated %s, want its last commit's %s", dir, dates[dir], want)
		}
	}
	// Never committed: its files' time.
	if d := dates["web/v2.0.0"]; d.Before(before) {
		t.Errorf("uncommitted web/v2.0.0 dated %s, want its file's modification time", d)
	}
	if _, ok := dates["nope/v1"]; ok {
		t.Errorf("a directory the listing lacks was dated")
	}

	// Outside any work tree: the files' times alone.
	plain := t.TempDir()
	if err := os.CopyFS(plain, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(plain, ".git"))
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(plain, "web", "v1.0.0", "web.jinja"), old, old); err != nil {
		t.Fatal(err)
	}
	psrc := fetch.NewLocalDir(plain, nil)
	ptree, err := psrc.Tree(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := psrc.Dates(context.Background(), ptree, []string{"web/v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if !pd["web/v1.0.0"].Equal(old) {
		t.Errorf("outside a work tree web/v1.0.0 dated %s, want its file's %s", pd["web/v1.0.0"], old)
	}

	// Through the cache, as registries read their sources.
	cd, err := fetch.DatesOf(context.Background(), fetch.NewCache(src, "", 0), tree, []string{"web/v1.1.0"})
	if err != nil || !cd["web/v1.1.0"].Equal(at[1]) {
		t.Errorf("dates through the cache: %v, %v", cd, err)
	}
}

func TestGitHubDates(t *testing.T) {
	dir, at := datesRepo(t)
	srv := githubtest.New(map[string]string{"acme/templates": dir})
	t.Cleanup(srv.Close)
	src, err := fetch.NewGitHub(fetch.GitHubOptions{Owner: "acme", Repo: "templates", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := src.Tree(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dates, err := src.Dates(context.Background(), tree, []string{"web/v1.0.0", "web/v1.1.0", "db/v1.0.0", "nope/v1"})
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]time.Time{"web/v1.0.0": at[0], "web/v1.1.0": at[1], "db/v1.0.0": at[2]} {
		if !dates[dir].Equal(want) {
			t.Errorf("%s dated %s, want its last commit's %s", dir, dates[dir], want)
		}
	}
	if _, ok := dates["nope/v1"]; ok {
		t.Errorf("a directory no commit changed was dated")
	}
}
