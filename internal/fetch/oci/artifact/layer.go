package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/fetch"
)

// layerTime is every entry's modification time: fixed, so that a layer is
// a function of its files alone.
var layerTime = time.Unix(0, 0).UTC()

// packLayer writes sorted files as a tar+gzip: regular files of mode
// 0644, owned by 0:0 without names, at layerTime, no directory entries;
// gzip at the best compression, without a name or a time.
func packLayer(sorted []Content) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range sorted {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.Path,
			Mode:     0o644,
			Size:     int64(len(f.Data)),
			ModTime:  layerTime,
			Format:   tar.FormatPAX,
		}
		if len(f.Path) <= 100 {
			h.Format = tar.FormatUSTAR
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("packing %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("packing %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unpacked is a layer's files by path, with their listing.
type Unpacked struct {
	// Files is the listing, sorted by path.
	Files []File
	// Data holds each file's content by path.
	Data map[string][]byte
}

// Unpack reads a layer: a gzip-compressed tar of regular files (directory
// entries are skipped) with valid relative paths, each at most
// MaxFileBytes, at most MaxFiles of them and maxBytes in all
// (DefaultMaxLayerBytes when zero). Links, devices, duplicates, paths
// leaving the directory and hidden files are refused, each naming the
// entry.
func Unpack(layer io.Reader, maxBytes int64) (*Unpacked, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxLayerBytes
	}
	zr, err := gzip.NewReader(layer)
	if err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "layer: not gzip: %v", err)
	}
	defer zr.Close()
	// The decompressed stream is bounded too: a small layer may expand
	// to any size. Tar headers count against it.
	lr := &io.LimitedReader{R: zr, N: maxBytes + int64(MaxFiles+2)*1024}
	tr := tar.NewReader(lr)
	u := &Unpacked{Data: map[string][]byte{}}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if lr.N <= 0 {
				return nil, derrors.Errorf(derrors.LimitExceeded, "layer: over the bound of %d bytes unpacked", maxBytes)
			}
			return nil, derrors.Errorf(derrors.InvalidArgument, "layer: not a tar archive: %v", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives write TypeRegA
		default:
			return nil, derrors.Errorf(derrors.InvalidArgument, "layer: entry %q is not a regular file (type %q)", h.Name, h.Typeflag)
		}
		if err := checkPath(name); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
		if _, dup := u.Data[name]; dup {
			return nil, derrors.Errorf(derrors.InvalidArgument, "layer: file %s appears twice", name)
		}
		if len(u.Files) >= MaxFiles {
			return nil, derrors.Errorf(derrors.LimitExceeded, "layer: over the bound of %d files", MaxFiles)
		}
		if h.Size < 0 || h.Size > MaxFileBytes {
			return nil, derrors.Errorf(derrors.LimitExceeded, "layer: file %s: %d bytes is over the %d-byte limit for registry files", name, h.Size, MaxFileBytes)
		}
		if total += h.Size; total > maxBytes {
			return nil, derrors.Errorf(derrors.LimitExceeded, "layer: over the bound of %d bytes unpacked", maxBytes)
		}
		data := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return nil, derrors.Errorf(derrors.InvalidArgument, "layer: file %s is truncated", name)
			}
			return nil, derrors.Errorf(derrors.InvalidArgument, "layer: file %s: %v", name, err)
		}
		u.Data[name] = data
		u.Files = append(u.Files, File{Path: name, SHA: fetch.BlobSHA(data), Size: h.Size})
	}
	if len(u.Files) == 0 {
		return nil, derrors.Errorf(derrors.InvalidArgument, "layer: no files")
	}
	sort.Slice(u.Files, func(i, j int) bool { return u.Files[i].Path < u.Files[j].Path })
	return u, nil
}

// Match checks that a layer's files are exactly a config's listing: a
// registry (or whoever wrote the tag) cannot list one content and serve
// another.
func (u *Unpacked) Match(c *Config) error {
	if len(c.Files) == 0 {
		if got := ContentDigest(u.Files); got != c.Digest {
			return derrors.Errorf(derrors.InvalidArgument, "layer: its files hash to %s, not to the config's digest %s", got, c.Digest)
		}
		return nil
	}
	want := map[string]File{}
	for _, f := range c.Files {
		want[f.Path] = f
	}
	for _, f := range u.Files {
		w, ok := want[f.Path]
		switch {
		case !ok:
			return derrors.Errorf(derrors.InvalidArgument, "layer: file %s is not in the config's listing", f.Path)
		case w.SHA != f.SHA:
			return derrors.Errorf(derrors.InvalidArgument, "layer: file %s hashes to %s, the config lists %s", f.Path, f.SHA, w.SHA)
		}
		delete(want, f.Path)
	}
	if len(want) > 0 {
		missing := make([]string, 0, len(want))
		for p := range want {
			missing = append(missing, p)
		}
		sort.Strings(missing)
		return derrors.Errorf(derrors.InvalidArgument, "layer: file %s of the config's listing is missing", missing[0])
	}
	return nil
}
