package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"sort"
	"sync"

	"github.com/dmhq/dm/internal/derrors"
)

// MaxLocalFileSize bounds the size of one file a Local source reads; larger
// files are listed with their size but no content hash and cannot be read.
const MaxLocalFileSize = 8 << 20

// Local is a Source that reads a directory tree, such as os.DirFS(dir) or an
// embedded file system. Hidden files and directories (".git", ".github") are
// not part of the registry.
type Local struct {
	fsys fs.FS
	// dir is the directory fsys reads, when it is one: its git history
	// dates versions (Dates).
	dir string
	log *slog.Logger

	mu    sync.Mutex
	paths map[string]string // blob SHA -> path, from the last listing
}

// NewLocal returns a Source over fsys.
func NewLocal(fsys fs.FS) *Local {
	return &Local{fsys: fsys}
}

// NewLocalDir returns a Source over the directory dir, which Dates dates
// by the history of the git work tree holding it, if any. log may be nil.
func NewLocalDir(dir string, log *slog.Logger) *Local {
	return &Local{fsys: os.DirFS(dir), dir: dir, log: log}
}

func (l *Local) logf(format string, args ...any) {
	if l.log != nil {
		l.log.Warn(fmt.Sprintf(format, args...), "dir", l.dir)
	}
}

// Tree lists every regular file of the directory with its git blob SHA.
func (l *Local) Tree(ctx context.Context, prev *Tree) (*Tree, error) {
	t := &Tree{}
	paths := map[string]string{}
	err := fs.WalkDir(l.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p != "." && hiddenName(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := fs.ReadFile(l.fsys, p)
		if err != nil {
			return err
		}
		if len(b) > MaxLocalFileSize {
			return fmt.Errorf("%s: %d bytes is over the %d-byte limit for registry files: %w", p, len(b), MaxLocalFileSize, derrors.LimitExceeded)
		}
		sha := BlobSHA(b)
		paths[sha] = p
		t.Entries = append(t.Entries, Entry{Path: p, SHA: sha, Size: int64(len(b))})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing local registry: %w", err)
	}
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	t.Version = ListingHash(t.Entries)
	l.mu.Lock()
	l.paths = paths
	l.mu.Unlock()
	if prev != nil && prev.Version == t.Version {
		return prev, fmt.Errorf("local registry unchanged at %s: %w", t.Version[:12], derrors.NotModified)
	}
	return t, nil
}

// Blob reads the file whose content has the given SHA, checking that it still
// does.
func (l *Local) Blob(ctx context.Context, sha string) ([]byte, error) {
	if !validSHA(sha) {
		return nil, fmt.Errorf("blob %q: not a SHA-1: %w", sha, derrors.InvalidArgument)
	}
	l.mu.Lock()
	if l.paths == nil {
		l.mu.Unlock()
		if _, err := l.Tree(ctx, nil); err != nil {
			return nil, err
		}
		l.mu.Lock()
	}
	p, ok := l.paths[sha]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", sha, ErrChanged)
	}
	b, err := fs.ReadFile(l.fsys, path.Clean(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is gone: %w", p, ErrChanged)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if BlobSHA(b) != sha {
		return nil, fmt.Errorf("%s: %w", p, ErrChanged)
	}
	return b, nil
}

// ErrChanged means a local file is gone or changed since the directory was
// listed: the caller's listing is stale, and a new one answers. It wraps
// derrors.NotFound.
var ErrChanged = fmt.Errorf("changed since the registry was listed: %w", derrors.NotFound)

// ListingHash returns a hash of a tree listing's paths and content hashes; it
// serves as the version of a source that has no commits.
func ListingHash(entries []Entry) string { return ListingHashPrefixed("", entries) }

// ListingHashPrefixed returns prefix followed by ListingHash(entries), in
// one string: a version's digest is one per version of every index.
func ListingHashPrefixed(prefix string, entries []Entry) string {
	h := sha256.New()
	// One buffer for the whole listing: converting each path to bytes
	// for Write allocated twice per entry.
	var buf []byte
	for _, e := range entries {
		buf = append(buf[:0], e.Path...)
		buf = append(buf, 0)
		buf = append(buf, e.SHA...)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	var sum [sha256.Size]byte
	out := make([]byte, len(prefix)+hex.EncodedLen(len(sum)))
	copy(out, prefix)
	hex.Encode(out[len(prefix):], h.Sum(sum[:0]))
	return string(out)
}
