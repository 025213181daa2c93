// Package configfile reads a configuration from disk with the files its
// imports name, as Deployment Manager's client gathered them to send
// along: each import relative to the configuration's directory (else to
// the nearest parent directory inside the import root that has it), a
// template's schema (<file>.schema), and the files a schema lists under
// imports, recursively. Imports may use ../ but never leave the import
// root (a directory given, else the configuration's git work tree, else
// its directory), symlinks included, so a configuration cannot send the
// user's other files to a server.
package configfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand"
)

// MaxFileSize bounds every file read here: a configuration, its imports,
// and the values and template files dm reads with ReadFile.
const MaxFileSize = 8 << 20

// StdinName is the name of a configuration read from standard input.
const StdinName = "stdin"

// File is a configuration with the files its imports name.
type File struct {
	// Name is the configuration's base name, or StdinName.
	Name    string
	Content []byte
	// Imports holds each imported file by its path as the configuration
	// (or a schema) wrote it; nil when there are none.
	Imports map[string][]byte
}

// Read reads the configuration at name ("-" reads stdin, whose imports
// are relative to the working directory) and its imports. importRoot is
// the directory imports may reach ("" for the default). A document that
// is not a configuration (a kind: Template file) is returned without
// imports: the engine tells the two apart and reports what is wrong.
func Read(name string, stdin io.Reader, importRoot string) (*File, error) {
	f := &File{Name: StdinName}
	dir := "."
	var err error
	if name == "-" {
		f.Content, err = readLimited(stdin, "standard input")
	} else {
		f.Content, err = ReadFile(name)
		f.Name, dir = filepath.Base(name), filepath.Dir(name)
	}
	if err != nil {
		return nil, err
	}
	cfg, err := expand.ParseConfig(f.Content, f.Name)
	if err != nil {
		return f, nil
	}
	root, err := ImportRoot(dir, importRoot)
	if err != nil {
		return nil, err
	}
	files, err := expand.ReadImports(cfg, f.Name, func(key string) ([]byte, error) {
		return readImport(dir, root, key)
	})
	if err != nil {
		return nil, err
	}
	if len(files) > 0 {
		f.Imports = files
	}
	return f, nil
}

// ImportRoot returns the absolute, symlink-free import root of a
// configuration in dir: root when given, else the nearest enclosing git
// work tree of dir, else dir.
func ImportRoot(dir, root string) (string, error) {
	if root == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		root = abs
		for d := abs; ; d = filepath.Dir(d) {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				root = d // the nearest enclosing git work tree
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("--import-root: %w", err)
	}
	return real, nil
}

// readImport reads the import at key (a slash path relative to the
// configuration's directory dir), which must stay inside the import root,
// symlinks included. An import missing beside the configuration is looked
// for in dir's parent directories, up to the root: the Cloud Foundation
// Toolkit's examples (templates/X/examples/x.yaml, importing
// templates/X/X.py) are meant to be copied to the toolkit's root first,
// and read in place they find their templates there. A file that is
// there is always the one read, as Deployment Manager read it.
func readImport(dir, root, key string) ([]byte, error) {
	if filepath.IsAbs(key) {
		return nil, fmt.Errorf("imports are paths relative to the configuration: %w", derrors.InvalidArgument)
	}
	rel := filepath.FromSlash(path.Clean(key))
	b, err := readInside(filepath.Join(dir, rel), root)
	if !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	abs, aerr := filepath.Abs(dir)
	if aerr != nil {
		return nil, err
	}
	real, rerr := filepath.EvalSymlinks(abs)
	if rerr != nil {
		return nil, err
	}
	for d := real; d != root && within(root, d) && filepath.Dir(d) != d; {
		d = filepath.Dir(d)
		b, perr := readInside(filepath.Join(d, rel), root)
		if !errors.Is(perr, fs.ErrNotExist) {
			return b, perr
		}
	}
	if real == root {
		// Outside a git work tree the root is the configuration's own
		// directory: say how to let dm look further up.
		return nil, fmt.Errorf("%w (the import root is the configuration's directory; --import-root DIR lets dm look for it in the parent directories up to DIR)", err)
	}
	return nil, fmt.Errorf("%w (nor in the parent directories up to the import root %s)", err, root)
}

// readInside reads the file at name, which must be inside root once its
// symlinks are followed.
func readInside(name, root string) ([]byte, error) {
	full, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil, err
	}
	if !within(root, real) {
		return nil, fmt.Errorf("%s is outside the import root %s (set it with --import-root): %w", real, root, derrors.InvalidArgument)
	}
	return ReadFile(real)
}

// within reports whether the path p is root or inside it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ReadFile reads the file name, of at most MaxFileSize bytes.
func ReadFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name)
}

// ReadStdin reads standard input, of at most MaxFileSize bytes.
func ReadStdin(stdin io.Reader) ([]byte, error) {
	return readLimited(stdin, "standard input")
}

func readLimited(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s is over the %d-byte limit: %w", name, MaxFileSize, derrors.LimitExceeded)
	}
	return b, nil
}
