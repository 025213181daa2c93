package fetch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v57/github"
)

// A Dater tells when directories of its registry last changed, so that a
// catalog can list versions by when their authors committed them rather
// than by when this process first listed them.
//
// Dates returns, for each directory of dirs (slash-separated, relative to
// the registry root) that it can date, the time of the last commit of t's
// version that changed a file under it. Directories it cannot date are
// absent; an error means none could be.
type Dater interface {
	Dates(ctx context.Context, t *Tree, dirs []string) (map[string]time.Time, error)
}

// DatesOf returns src's Dates when src is a Dater, nothing otherwise.
func DatesOf(ctx context.Context, src Source, t *Tree, dirs []string) (map[string]time.Time, error) {
	d, ok := src.(Dater)
	if !ok || t == nil || len(dirs) == 0 {
		return nil, nil
	}
	return d.Dates(ctx, t, dirs)
}

// gitLogTimeout bounds reading a local work tree's history for dates.
const gitLogTimeout = 10 * time.Second

// Dates dates dirs by the git history of the work tree the directory is
// in (one git log over it), and a directory git has no commit for (new,
// or no work tree at all) by the newest modification time of its files.
func (l *Local) Dates(ctx context.Context, t *Tree, dirs []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if l.dir != "" {
		if err := gitDates(ctx, l.dir, dirs, out); err != nil {
			l.logf("dating versions from git: %v", err)
		}
	}
	for _, d := range dirs {
		if _, ok := out[d]; ok {
			continue
		}
		var newest time.Time
		for _, e := range t.Entries {
			if !strings.HasPrefix(e.Path, d+"/") {
				continue
			}
			if fi, err := fs.Stat(l.fsys, e.Path); err == nil && fi.ModTime().After(newest) {
				newest = fi.ModTime()
			}
		}
		// An embedded directory's files have no times.
		if !newest.IsZero() && newest.Unix() > 0 {
			out[d] = newest
		}
	}
	return out, nil
}

// gitDates sets out[d] for each of dirs that the history of the git work
// tree holding dir changed: the commit time of the newest commit touching
// a file under it. No work tree, or no git, sets nothing.
func gitDates(ctx context.Context, dir string, dirs []string, out map[string]time.Time) error {
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, gitLogTimeout)
	defer cancel()
	want := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		want[d] = true
	}
	// Paths relative to dir, newest commit first, NUL-separated: each
	// commit is "\x01<unix time>" followed by the names it changed.
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "log", "-z", "--format=%x01%ct", "--name-only", "--no-renames", "--relative", "--", ".")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait()
	defer cancel()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, 0); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	var when time.Time
	left := len(want)
	for left > 0 && sc.Scan() {
		tok := strings.TrimPrefix(sc.Text(), "\n")
		if s, ok := strings.CutPrefix(tok, "\x01"); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				when = time.Unix(n, 0)
				continue
			}
		}
		for p := path.Dir(tok); p != "." && p != "/"; p = path.Dir(p) {
			if want[p] {
				if _, done := out[p]; !done {
					out[p] = when
					left--
				}
			}
		}
	}
	return sc.Err()
}

// MaxGitHubDates bounds the directories one GitHub Dates call asks about:
// each costs a request of the registry's rate budget.
const MaxGitHubDates = 64

// Dates asks GitHub for the last commit of t's version that changed each
// directory (GET /repos/O/R/commits?sha=&path=&per_page=1), for at most
// MaxGitHubDates of them, in order.
func (g *GitHub) Dates(ctx context.Context, t *Tree, dirs []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, d := range dirs[:min(len(dirs), MaxGitHubDates)] {
		cs, _, err := g.client.Repositories.ListCommits(ctx, g.owner, g.repo, &github.CommitsListOptions{
			SHA: t.Version, Path: d, ListOptions: github.ListOptions{PerPage: 1},
		})
		if err != nil {
			if len(out) > 0 {
				return out, nil
			}
			return nil, g.redact(g.mapError(fmt.Sprintf("%s: dating %s", g, d), err))
		}
		if len(cs) > 0 {
			if when := cs[0].GetCommit().GetCommitter().GetDate(); !when.IsZero() {
				out[d] = when.Time
			}
		}
	}
	return out, nil
}
