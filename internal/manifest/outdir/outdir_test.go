package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func files(names ...string) []File {
	out := make([]File, len(names))
	for i, n := range names {
		out[i] = File{Name: n, Data: []byte("kind: " + n + "\n")}
	}
	return out
}

func ls(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestWrite: a run removes the files of the last run it no longer writes,
// never a file it did not write, and keeps (and names) one edited since.
func TestWrite(t *testing.T) {
	type step struct {
		// before changes the directory before the run.
		before func(dir string)
		write  []string
		want   Report
		files  []string // the directory afterwards, record included
	}
	edit := func(name string) func(dir string) {
		return func(dir string) { os.WriteFile(filepath.Join(dir, name), []byte("edited\n"), 0o644) }
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first run", []step{{
			write: []string{"a.yaml", "b.yaml"},
			want:  Report{Written: []string{"a.yaml", "b.yaml"}},
			files: []string{RecordFile, "a.yaml", "b.yaml"},
		}}},
		{"object removed", []step{
			{write: []string{"a.yaml", "b.yaml"}, want: Report{Written: []string{"a.yaml", "b.yaml"}}},
			{write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}, Removed: []string{"b.yaml"}}, files: []string{RecordFile, "a.yaml"}},
		}},
		{"a file it did not write stays", []step{
			{before: edit("mine.yaml"), write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}}},
			{write: nil, want: Report{Removed: []string{"a.yaml"}}, files: []string{RecordFile, "mine.yaml"}},
		}},
		{"edited since: kept, and named again", []step{
			{write: []string{"a.yaml", "b.yaml"}, want: Report{Written: []string{"a.yaml", "b.yaml"}}},
			{before: edit("b.yaml"), write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}, Kept: []string{"b.yaml"}}, files: []string{RecordFile, "a.yaml", "b.yaml"}},
			{write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}, Kept: []string{"b.yaml"}}},
			// Restored by hand to what dm wrote: removed.
			{before: func(dir string) { os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("kind: b.yaml\n"), 0o644) },
				write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}, Removed: []string{"b.yaml"}}, files: []string{RecordFile, "a.yaml"}},
		}},
		{"edited, still made: replaced", []step{
			{write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}}},
			{before: edit("a.yaml"), write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}, Replaced: []string{"a.yaml"}}},
		}},
		{"removed by hand", []step{
			{write: []string{"a.yaml", "b.yaml"}, want: Report{Written: []string{"a.yaml", "b.yaml"}}},
			{before: func(dir string) { os.Remove(filepath.Join(dir, "b.yaml")) }, write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}}, files: []string{RecordFile, "a.yaml"}},
		}},
		{"comes back", []step{
			{write: []string{"a.yaml", "b.yaml"}, want: Report{Written: []string{"a.yaml", "b.yaml"}}},
			{write: []string{"a.yaml"}, want: Report{Written: []string{"a.yaml"}, Removed: []string{"b.yaml"}}},
			{write: []string{"a.yaml", "b.yaml"}, want: Report{Written: []string{"a.yaml", "b.yaml"}}, files: []string{RecordFile, "a.yaml", "b.yaml"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			os.MkdirAll(dir, 0o755)
			for i, s := range tc.steps {
				if s.before != nil {
					s.before(dir)
				}
				rep, err := Write(dir, "config.yaml", files(s.write...))
				if err != nil {
					t.Fatalf("run %d: %v", i+1, err)
				}
				for _, c := range []struct {
					what      string
					got, want []string
				}{{"written", rep.Written, s.want.Written}, {"replaced", rep.Replaced, s.want.Replaced}, {"removed", rep.Removed, s.want.Removed}, {"kept", rep.Kept, s.want.Kept}} {
					if !slices.Equal(c.got, c.want) {
						t.Errorf("run %d: %s %v, want %v", i+1, c.what, c.got, c.want)
					}
				}
				if s.files != nil {
					if got := ls(t, dir); !slices.Equal(got, s.files) {
						t.Errorf("run %d: directory %v, want %v", i+1, got, s.files)
					}
				}
			}
		})
	}
}

// TestWriteRefuses: names that are not plain file names, two objects
// writing one file, and a record that is damaged or names a path outside
// the directory are errors, and nothing is removed.
func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record string
		files  []File
		want   string
	}{
		{"path", "", []File{{Name: "../x.yaml"}}, `"../x.yaml" is not a file name`},
		{"record's name", "", []File{{Name: RecordFile}}, "is not a file name"},
		{"twice", "", []File{{Name: "a.yaml"}, {Name: "a.yaml"}}, "two objects are written to"},
		{"damaged record", "{", files("a.yaml"), "is not dm convert's record"},
		{"record naming a path", `{"version": 1, "files": {"../victim": "sha256:x"}}`, files("a.yaml"), `lists "../victim"`},
		{"record naming a directory", `{"version": 1, "files": {"sub/x": "sha256:x"}}`, files("a.yaml"), `lists "sub/x"`},
		{"other version", `{"version": 2, "files": {}}`, files("a.yaml"), "has version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "out")
			os.MkdirAll(dir, 0o755)
			victim := filepath.Join(root, "victim")
			os.WriteFile(victim, []byte("x"), 0o644)
			if tc.record != "" {
				os.WriteFile(filepath.Join(dir, RecordFile), []byte(tc.record), 0o644)
			}
			_, err := Write(dir, "c", tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("the file outside the directory: %v", err)
			}
			for _, n := range ls(t, dir) {
				if n != RecordFile {
					t.Errorf("%s was written", n)
				}
			}
		})
	}
}
