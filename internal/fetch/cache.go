package fetch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"
)

// CacheStats counts what a Cache served from where.
type CacheStats struct {
	MemoryHits, DiskHits, Misses int64
}

// Cache serves blobs by SHA from memory, then from disk, then from the
// underlying Source, keeping what it fetched. Blobs are content-addressed, so
// an entry never goes stale; every blob read from disk or the source is
// checked against its SHA before it is kept.
type Cache struct {
	src      Source
	dir      string // "" for memory only
	maxBytes int64

	mu    sync.Mutex
	lru   *lru.LRU[string, []byte]
	bytes int64
	stats CacheStats

	// OnLookup, if set, is called with "memory", "disk" or "miss" for every
	// Blob call; registryd counts them in metrics.
	OnLookup func(where string)
}

// NewCache returns a Cache in front of src that keeps at most maxBytes of
// content in memory and, when dir is not empty, every blob on disk under dir.
func NewCache(src Source, dir string, maxBytes int64) *Cache {
	c := &Cache{src: src, dir: dir, maxBytes: maxBytes}
	// The entry count is bounded by bytes, not by the LRU's own size limit.
	l, _ := lru.NewLRU[string, []byte](1<<30, func(_ string, v []byte) { c.bytes -= int64(len(v)) })
	c.lru = l
	return c
}

// Unwrap returns the underlying source, for what a source offers beyond
// listings and blobs (an OCI registry's signatures).
func (c *Cache) Unwrap() Source { return c.src }

// Tree passes through to the underlying source: listings are not cached here.
func (c *Cache) Tree(ctx context.Context, prev *Tree) (*Tree, error) {
	return c.src.Tree(ctx, prev)
}

// TreeAt passes through to the underlying source when it lists commits,
// and lists its current state (Tree) when it does not.
func (c *Cache) TreeAt(ctx context.Context, commit string, prev *Tree) (*Tree, error) {
	if cl, ok := c.src.(CommitLister); ok {
		return cl.TreeAt(ctx, commit, prev)
	}
	return c.src.Tree(ctx, prev)
}

// Blob returns the content whose git blob SHA is sha.
func (c *Cache) Blob(ctx context.Context, sha string) ([]byte, error) {
	if !validSHA(sha) {
		return c.src.Blob(ctx, sha) // lets the source produce its own error
	}
	c.mu.Lock()
	if b, ok := c.lru.Get(sha); ok {
		c.stats.MemoryHits++
		c.mu.Unlock()
		c.note("memory")
		return b, nil
	}
	c.mu.Unlock()
	if b, ok := c.readDisk(sha); ok {
		c.add(sha, b, func(s *CacheStats) { s.DiskHits++ })
		c.note("disk")
		return b, nil
	}
	b, err := c.src.Blob(ctx, sha)
	if err != nil {
		return nil, err
	}
	if BlobSHA(b) != sha {
		return nil, fmt.Errorf("blob %s: content does not match its hash", sha)
	}
	c.writeDisk(sha, b)
	c.add(sha, b, func(s *CacheStats) { s.Misses++ })
	c.note("miss")
	return b, nil
}

// Stats returns the counts so far.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Cache) note(where string) {
	if c.OnLookup != nil {
		c.OnLookup(where)
	}
}

func (c *Cache) add(sha string, b []byte, count func(*CacheStats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count(&c.stats)
	if int64(len(b)) > c.maxBytes {
		return
	}
	if !c.lru.Contains(sha) {
		c.lru.Add(sha, b)
		c.bytes += int64(len(b))
	}
	for c.bytes > c.maxBytes {
		c.lru.RemoveOldest()
	}
}

func (c *Cache) blobPath(sha string) string {
	return filepath.Join(c.dir, "blobs", sha[:2], sha[2:])
}

func (c *Cache) readDisk(sha string) ([]byte, bool) {
	if c.dir == "" {
		return nil, false
	}
	b, err := os.ReadFile(c.blobPath(sha))
	if err != nil || BlobSHA(b) != sha {
		return nil, false
	}
	return b, true
}

// writeDisk stores a blob atomically (temporary file, then rename), so a
// crash never leaves a partial blob under its final name.
func (c *Cache) writeDisk(sha string, b []byte) {
	if c.dir == "" {
		return
	}
	_ = WriteFileAtomic(c.blobPath(sha), b)
}

// WriteFileAtomic writes b to name through a temporary file in the same
// directory and a rename, creating the directory if needed.
func WriteFileAtomic(name string, b []byte) (err error) {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return errors.Join(os.Rename(f.Name(), name))
}

// Dates is the underlying Source's (Dater), which caches nothing: dates
// are asked once per new version.
func (c *Cache) Dates(ctx context.Context, t *Tree, dirs []string) (map[string]time.Time, error) {
	return DatesOf(ctx, c.src, t, dirs)
}
