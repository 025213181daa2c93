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
	"github.com/dmhq/dm/internal/expand"
)

// DefaultMaxRecordSize bounds the uncompressed size of a record a driver
// reads, so a corrupt or hostile body cannot exhaust memory (a gzip stream
// expands up to about 1000 times).
const DefaultMaxRecordSize = 256 << 20

// ErrFormat means a record was written in a format this dm does not read,
// by a newer dm: upgrading dm is the fix, not deleting the record.
var ErrFormat = fmt.Errorf("unsupported record format: %w", derrors.InvalidArgument)

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
		return nil, fmt.Errorf("record body is not gzip-compressed (%v): %w", err, derrors.InvalidArgument)
	}
	js, err := io.ReadAll(io.LimitReader(zr, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing record body: %v: %w", err, derrors.InvalidArgument)
	}
	if int64(len(js)) > maxSize {
		return nil, fmt.Errorf("record body is larger than %d bytes uncompressed (MaxRecordSize): %w", maxSize, derrors.LimitExceeded)
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
			return nil, fmt.Errorf("record body is not a JSON object: %v: %w", perr, derrors.InvalidArgument)
		}
		format = probe.Format
	}
	switch {
	case format == nil:
		return nil, fmt.Errorf("record body has no format version: %w", derrors.InvalidArgument)
	case *format != release.Format:
		return nil, fmt.Errorf("record format %d, this dm reads format %d (written by a newer dm? upgrade dm): %w",
			*format, release.Format, ErrFormat)
	case err != nil:
		return nil, fmt.Errorf("record body: %v: %w", err, derrors.InvalidArgument)
	}
	if err := recordNumbers(r); err != nil {
		return nil, fmt.Errorf("record body: %w: %w", err, derrors.InvalidArgument)
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
	var walk func([]*expand.LayoutResource) error
	walk = func(ns []*expand.LayoutResource) error {
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
		return fmt.Errorf("nil release record: %w", derrors.InvalidArgument)
	case len(r.Name) > 253 || !dnsSubdomain.MatchString(r.Name):
		return fmt.Errorf("deployment name %q: must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.') of at most 253 characters: %w", r.Name, derrors.InvalidArgument)
	case len(r.Namespace) > 63 || !dnsLabel.MatchString(r.Namespace):
		return fmt.Errorf("%s: namespace %q is not a valid namespace name: %w", r.Name, r.Namespace, derrors.InvalidArgument)
	case r.Revision < 1:
		return fmt.Errorf("%s/%s: revision %d: revisions count from 1: %w", r.Namespace, r.Name, r.Revision, derrors.InvalidArgument)
	case !r.Status.Valid():
		return fmt.Errorf("%s: unknown status %q: %w", r, r.Status, derrors.InvalidArgument)
	}
	return nil
}
