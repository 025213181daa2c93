// Package githubtest is a GitHub-REST-compatible test server that serves real
// git repositories from disk, so that tests and benchmarks exercise the
// GitHub source through go-github and the wire format instead of mocks.
//
// It answers the endpoints dm uses (repository, commit, tree, blob) with
// GitHub's JSON shapes, ETags and 304s, rate-limit headers, and injectable
// faults, and it counts requests so tests can assert request budgets.
package githubtest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitEnv isolates git from the user's and system configuration and makes
// commits independent of who runs the tests.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=githubtest",
		"GIT_AUTHOR_EMAIL=githubtest@example.com",
		"GIT_COMMITTER_NAME=githubtest",
		"GIT_COMMITTER_EMAIL=githubtest@example.com",
		"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
		"GIT_COMMITTER_DATE=2024-01-01T00:00:00Z",
	)
}

// git runs git in dir and returns its standard output.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func mustGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// NewRepo creates a git repository in a new temporary directory holding a
// copy of the regular files under srcDir (except a .git directory), committed
// on branch "main", and returns the repository's directory.
func NewRepo(t testing.TB, srcDir string) string {
	t.Helper()
	return NewRepoFS(t, os.DirFS(srcDir))
}

// NewRepoFS is NewRepo for the files of fsys.
func NewRepoFS(t testing.TB, fsys fs.FS) string {
	t.Helper()
	dir := t.TempDir()
	mustGit(t, dir, "init", "--quiet", "--initial-branch=main")
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info, err := d.Info(); err == nil && info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		return writeFile(filepath.Join(dir, filepath.FromSlash(p)), b, mode)
	})
	if err != nil {
		t.Fatalf("copying files into test repository: %v", err)
	}
	mustGit(t, dir, "add", "--all")
	mustGit(t, dir, "commit", "--quiet", "--allow-empty", "--no-gpg-sign", "-m", "initial")
	return dir
}

// Commit writes files (slash-separated path -> content; an empty content
// deletes the file) into the repository at repoDir and commits them on the
// current branch, returning the new commit SHA.
func Commit(t testing.TB, repoDir string, files map[string]string) string {
	t.Helper()
	return CommitAt(t, repoDir, files, time.Time{})
}

// CommitAt is Commit with the commit's author and committer date when
// (the fixed date of every other commit if zero).
func CommitAt(t testing.TB, repoDir string, files map[string]string, when time.Time) string {
	t.Helper()
	for p, content := range files {
		name := filepath.Join(repoDir, filepath.FromSlash(p))
		if content == "" {
			if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			continue
		}
		if err := writeFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, repoDir, "add", "--all")
	// Fixed dates keep SHAs reproducible; the parent still makes each commit
	// distinct, and --allow-empty lets tests make a new commit of the same tree.
	if when.IsZero() {
		mustGit(t, repoDir, "commit", "--quiet", "--allow-empty", "--no-gpg-sign", "-m", "update")
	} else {
		date := when.UTC().Format(time.RFC3339)
		cmd := exec.Command("git", "-C", repoDir, "commit", "--quiet", "--allow-empty", "--no-gpg-sign", "-m", "update")
		// The last of a name in Env wins.
		cmd.Env = append(gitEnv(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git commit: %v: %s", err, out)
		}
	}
	return mustGit(t, repoDir, "rev-parse", "HEAD")
}

// Head returns the commit SHA of the repository's HEAD.
func Head(t testing.TB, repoDir string) string {
	t.Helper()
	return mustGit(t, repoDir, "rev-parse", "HEAD")
}

func writeFile(name string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, b, mode)
}
