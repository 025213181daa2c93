// Package fetch reads registries: a tree listing (paths and content hashes)
// and file contents by content hash, from GitHub or from a local directory.
//
// Every source names file contents by their git blob SHA-1, whether or not
// they live in git, so a local mirror of a GitHub registry lists exactly the
// same hashes as GitHub does and content digests computed from a listing are
// the same for every source. Because blobs are content-addressed they never
// change and are cached forever (see Cache).
package fetch

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/dmhq/dm/internal/derrors"
)

// Entry is one file of a tree listing.
type Entry struct {
	// Path is slash-separated and relative to the registry root.
	Path string `json:"path"`
	// SHA is the git blob SHA-1 of the content, in lower-case hex.
	SHA string `json:"sha"`
	// Size is the content length in bytes.
	Size int64 `json:"size"`
}

// Tree is a listing of every file of a registry at one version.
type Tree struct {
	// Version identifies the listed state: a commit SHA for GitHub, a hash
	// of the listing for a local directory.
	Version string `json:"version"`
	// ETag is the validator of the request that produced Version, used to
	// make the next refresh conditional. It may be empty.
	ETag string `json:"etag,omitempty"`
	// Entries are sorted by Path.
	Entries []Entry `json:"entries"`
}

// A Source lists and reads one registry.
//
// Tree returns derrors.NotModified (wrapped) when the registry has not
// changed since prev; prev may be nil. Blob returns the content whose git
// blob SHA is sha, or derrors.NotFound.
type Source interface {
	Tree(ctx context.Context, prev *Tree) (*Tree, error)
	Blob(ctx context.Context, sha string) ([]byte, error)
}

// A CommitLister lists a named commit of its registry rather than the
// tracked branch's head: a push names its commit, and a registryd replica
// told of the push by another need not ask for the head again.
//
// TreeAt returns derrors.NotModified (wrapped) when prev is that commit
// already, without a request.
type CommitLister interface {
	TreeAt(ctx context.Context, commit string, prev *Tree) (*Tree, error)
}

// A BoundError says a registry's listing exceeds one of its bounds: its
// entries, the bytes of the files it lists, or the bytes of one answer of
// its source. It wraps derrors.LimitExceeded.
type BoundError struct {
	// Bound is "entries", "bytes" or "response".
	Bound      string
	Limit, Got int64
}

// Error describes the bound.
func (e *BoundError) Error() string {
	switch e.Bound {
	case "bytes":
		return fmt.Sprintf("the registry's files hold %d bytes, over the bound of %d bytes", e.Got, e.Limit)
	case "response":
		return fmt.Sprintf("an answer of the registry's source is over the bound of %d bytes", e.Limit)
	}
	return fmt.Sprintf("the registry's tree lists %d entries or more, over the bound of %d entries", e.Got, e.Limit)
}

// Unwrap returns derrors.LimitExceeded.
func (e *BoundError) Unwrap() error { return derrors.LimitExceeded }

// BlobSHA returns the git blob SHA-1 of content, the hash git and GitHub
// use to name it.
func BlobSHA(content []byte) string {
	h := sha1.New()
	h.Write([]byte("blob "))
	h.Write([]byte(strconv.Itoa(len(content))))
	h.Write([]byte{0})
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// ValidSHA reports whether s is a git blob SHA-1 in lower-case hex, as
// every source names content: other sources' formats check their hashes
// with it.
func ValidSHA(s string) bool { return validSHA(s) }

// validSHA reports whether s looks like a hex SHA-1, so that a caller's
// string never reaches a file path or URL unchecked.
func validSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
