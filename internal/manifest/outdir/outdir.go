// Package outdir writes files into a directory that a generator owns:
// dm convert -o DIR, one file per object, for tools that apply a
// directory as it is (Config Sync, Argo CD). The directory keeps a record
// (RecordFile) of what the last run wrote, with each file's hash, so that
// a run removes the files of objects the generator no longer makes: left
// in place, a GitOps tool would go on applying a resource the templates
// removed. It never removes a file it did not write, nor one it wrote
// that has been edited since (its hash differs from the record's): those
// are kept, named in the report, and stay in the record so that every
// later run names them again until someone removes or restores them.
//
// Every file, and the record last, is written to a temporary file in the
// directory and renamed over its name, so that a failed run leaves each
// file whole, old or new, and a record that names no file it did not
// write.
package outdir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// RecordFile is the record's name in the directory.
const RecordFile = ".dm-convert.json"

// recordVersion is the record's format.
const recordVersion = 1

// maxRecordBytes bounds the record read back: a directory's record lists
// one hash per file.
const maxRecordBytes = 16 << 20

// File is one file to write: Name is a plain file name (no directory).
type File struct {
	Name string
	Data []byte
}

// Report says what Write did.
type Report struct {
	// Written are the files written, in order.
	Written []string
	// Replaced are the files written over a version that had been edited
	// since the last run wrote it (the edit is gone: the file is the
	// object's).
	Replaced []string
	// Removed are the files of the last run that this run no longer
	// writes, removed.
	Removed []string
	// Kept are such files that were edited since the last run wrote
	// them, left in place.
	Kept []string
}

// record is RecordFile's content.
type record struct {
	Version int `json:"version"`
	// Source is what the files were made of (the configuration or
	// reference dm convert was given), for people reading the record.
	Source string `json:"source,omitempty"`
	// Files maps each file written to the SHA-256 of its content.
	Files map[string]string `json:"files"`
}

// Write writes files into dir (created if missing), removes the files the
// last run recorded and this one does not write (unless edited since),
// and records what it wrote. source names what the files were made of.
func Write(dir, source string, files []File) (*Report, error) {
	seen := map[string]bool{}
	for _, f := range files {
		if err := checkName(f.Name); err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, derrors.Errorf(derrors.InvalidArgument, "two objects are written to %s (the same kind and name)", filepath.Join(dir, f.Name))
		}
		seen[f.Name] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("-o %s: %w", dir, err)
	}
	prev, err := readRecord(dir)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	next := record{Version: recordVersion, Source: source, Files: map[string]string{}}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if want, ok := prev.Files[f.Name]; ok {
			if have, err := hashFile(path); err == nil && have != want {
				rep.Replaced = append(rep.Replaced, f.Name)
			}
		}
		if err := writeFile(dir, f.Name, f.Data); err != nil {
			return rep, err
		}
		next.Files[f.Name] = hash(f.Data)
		rep.Written = append(rep.Written, f.Name)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(prev.Files)) {
		if seen[name] {
			continue
		}
		path := filepath.Join(dir, name)
		have, err := hashFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // removed already
		case err != nil:
			errs = append(errs, err)
			next.Files[name] = prev.Files[name]
		case have != prev.Files[name]:
			rep.Kept = append(rep.Kept, name)
			next.Files[name] = prev.Files[name]
		default:
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				next.Files[name] = prev.Files[name]
				continue
			}
			rep.Removed = append(rep.Removed, name)
		}
	}
	b, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return rep, err
	}
	if err := writeFile(dir, RecordFile, append(b, '\n')); err != nil {
		return rep, err
	}
	return rep, errors.Join(errs...)
}

// checkName refuses a name that is not a plain file name in the
// directory, or is the record's.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || name == RecordFile || strings.ContainsAny(name, `/\`) || name != filepath.Base(name) {
		return derrors.Errorf(derrors.InvalidArgument, "%q is not a file name outdir writes", name)
	}
	return nil
}

// readRecord reads dir's record; a directory without one has an empty
// record. A record that cannot be read, or that names a file that is not a
// plain name in the directory, is an error: nothing is written, so that a
// damaged record never leads to removing a file it should not.
func readRecord(dir string) (record, error) {
	path := filepath.Join(dir, RecordFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return record{Files: map[string]string{}}, nil
	}
	if err != nil {
		return record{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return record{}, err
	}
	if st.Size() > maxRecordBytes {
		return record{}, derrors.Errorf(derrors.LimitExceeded, "%s is %d bytes (at most %d); remove it, and the files it lists that you no longer want", path, st.Size(), maxRecordBytes)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		return record{}, fmt.Errorf("%s: %w", path, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, derrors.Errorf(derrors.InvalidArgument, "%s is not dm convert's record (%v); remove it, and the files it lists that you no longer want", path, err)
	}
	if r.Version != recordVersion {
		return record{}, derrors.Errorf(derrors.InvalidArgument, "%s has version %d; this dm reads version %d", path, r.Version, recordVersion)
	}
	if r.Files == nil {
		r.Files = map[string]string{}
	}
	for name := range r.Files {
		if err := checkName(name); err != nil {
			return record{}, derrors.Errorf(derrors.InvalidArgument, "%s lists %q, which is not a file of the directory", path, name)
		}
	}
	return r, nil
}

// writeFile writes data to dir/name through a temporary file renamed over
// it.
func writeFile(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".dm-convert-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // once renamed, there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return nil
}

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// hashFile hashes a regular file; anything else (a directory, a link) is
// not a file the record's hash can match.
func hashFile(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "not a regular file", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return hash(b), nil
}
