package driver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/layout"
)

// DefaultMaxRecordSize bounds the uncompressed size of a record a driver
// reads, so a corrupt or hostile body cannot exhaust memory (a gzip stream
// expands up to about 1000 times).
const DefaultMaxRecordSize = 256 << 20

// ErrFormat means a record was written in a format this dm does not read,
// by a newer dm: upgrading dm is the fix, not deleting the record.
var ErrFormat = derrors.Errorf(derrors.InvalidArgument, "unsupported record format")

// stored is the JSON form of a record: the record's fields and the format
// version beside them.
type stored struct {
	Format int `json:"format"`
	*release.Record
}

// Encode returns the stored body of r: its JSON, with "format" set to
// release.Format, gzip-compressed. The output is deterministic: the same
// record encodes to the same bytes, which lets a driver tell an unchanged
// body from its digest.
func Encode(r *release.Record) ([]byte, error) {
	js, err := json.Marshal(stored{Format: release.Format, Record: r})
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", r, err)
	}
	var buf bytes.Buffer
	// BestSpeed: records are mostly repetitive YAML-ish JSON, where the
	// fast levels already compress about 10x; the slow levels cost far
	// more CPU than the bytes they save.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(js); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode parses a body Encode wrote. The uncompressed JSON may be at most
// maxSize bytes (DefaultMaxRecordSize if maxSize <= 0). Errors say what is
// wrong (not gzip, truncated, too large, not JSON, another format version)
// and wrap derrors.InvalidArgument, or derrors.LimitExceeded for the size;
// the caller names where the body came from.
func Decode(body []byte, maxSize int64) (*release.Record, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxRecordSize
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "record body is not gzip-compressed (%v)", err)
	}
	js, err := io.ReadAll(io.LimitReader(zr, maxSize+1))
	if err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "decompressing record body: %v", err)
	}
	if int64(len(js)) > maxSize {
		return nil, derrors.Errorf(derrors.LimitExceeded, "record body is larger than %d bytes uncompressed (MaxRecordSize)", maxSize)
	}
	// One parse; only a failed one is parsed again, to tell a record of
	// another format from a broken one.
	r := new(release.Record)
	in := struct {
		Format *int `json:"format"`
		*release.Record
	}{Record: r}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	err = dec.Decode(&in)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("data after the record")
		}
	}
	format := in.Format
	if err != nil {
		var probe struct {
			Format *int `json:"format"`
		}
		if perr := json.Unmarshal(js, &probe); perr != nil {
			return nil, derrors.Errorf(derrors.InvalidArgument, "record body is not a JSON object: %v", perr)
		}
		format = probe.Format
	}
	switch {
	case format == nil:
		return nil, derrors.Errorf(derrors.InvalidArgument, "record body has no format version")
	case *format != release.Format:
		return nil, derrors.Errorf(ErrFormat, "record format %d, this dm reads format %d (written by a newer dm? upgrade dm)",
			*format, release.Format)
	case err != nil:
		return nil, derrors.Errorf(derrors.InvalidArgument, "record body: %v", err)
	}
	if err := recordNumbers(r); err != nil {
		return nil, derrors.Errorf(derrors.InvalidArgument, "record body: %v", err)
	}
	return r, nil
}

// recordNumbers replaces the json.Numbers of r's untyped fields by int64
// where they are integers and float64 otherwise, as Kubernetes'
// unstructured objects hold them, so that an object read from history is
// the object that was applied.
func recordNumbers(r *release.Record) error {
	var err error
	if r.Properties, err = numbers(r.Properties); err != nil {
		return err
	}
	for i := range r.Objects {
		if r.Objects[i], err = numbers(r.Objects[i]); err != nil {
			return err
		}
	}
	var walk func([]*layout.Resource) error
	walk = func(ns []*layout.Resource) error {
		for _, n := range ns {
			if n == nil {
				continue
			}
			if n.Properties, err = numbers(n.Properties); err != nil {
				return err
			}
			if err := walk(n.Resources); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(r.Layout.Resources)
}

// numbers converts the json.Numbers in m, in place.
func numbers(m map[string]any) (map[string]any, error) {
	for k, v := range m {
		var err error
		if m[k], err = number(v); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func number(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %.40s is out of range", v)
		}
		return f, nil
	case map[string]any:
		return numbers(v)
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = number(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// dnsSubdomain is a Kubernetes object name (RFC 1123 subdomain).
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// dnsLabel is a namespace name (RFC 1123 label).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validate checks what every driver needs of a record it writes.
func validate(r *release.Record) error {
	switch {
	case r == nil:
		return derrors.Errorf(derrors.InvalidArgument, "nil release record")
	case len(r.Name) > 253 || !dnsSubdomain.MatchString(r.Name):
		return derrors.Errorf(derrors.InvalidArgument, "deployment name %q: must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.') of at most 253 characters", r.Name)
	case len(r.Namespace) > 63 || !dnsLabel.MatchString(r.Namespace):
		return derrors.Errorf(derrors.InvalidArgument, "%s: namespace %q is not a valid namespace name", r.Name, r.Namespace)
	case r.Revision < 1:
		return derrors.Errorf(derrors.InvalidArgument, "%s/%s: revision %d: revisions count from 1", r.Namespace, r.Name, r.Revision)
	case !r.Status.Valid():
		return derrors.Errorf(derrors.InvalidArgument, "%s: unknown status %q", r, r.Status)
	}
	return nil
}
