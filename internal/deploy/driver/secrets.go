package driver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
)

// The stored form of a revision in the cluster. See "Deployment history" in
// docs/deploying.md for the same in prose.
const (
	// SecretType is the type of a revision's head Secret.
	SecretType = "dm.io/release.v1"
	// ChunkSecretType is the type of the Secrets holding the parts of a
	// body too large for the head.
	ChunkSecretType = "dm.io/release.v1.chunk"

	// LabelManagedBy is set to "dm" on every Secret the driver writes.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelDeployment holds the deployment name, or "sha256_" and a hash
	// of it when the name is not a valid label value (longer than 63).
	LabelDeployment = "dm.io/deployment"
	// LabelRevision holds the revision number.
	LabelRevision = "dm.io/revision"
	// LabelStatus holds the revision's status (head Secrets only).
	LabelStatus = "dm.io/status"
	// LabelPart is "head" or "chunk".
	LabelPart = "dm.io/part"
	// LabelFormat holds release.Format.
	LabelFormat = "dm.io/format"

	// DefaultChunkSize is the largest compressed body kept in the head
	// Secret, and the size of each chunk of a larger one. Kubernetes
	// refuses Secrets of more than 1 MiB of data.
	DefaultChunkSize = 900 << 10

	// maxDescription bounds the description kept in the head, so that a
	// huge error message cannot push it past 1 MiB.
	maxDescription = 64 << 10
	// maxNameKey is the longest deployment name used as is in Secret
	// names; longer ones are shortened with a hash.
	maxNameKey = 200
	// maxRevision keeps Secret names within 253 characters.
	maxRevision = 999_999_999
)

// Data keys of a head Secret.
const (
	keyStatus      = "status"      // release.Status
	keyDescription = "description" // free text
	keyUpdated     = "updated"     // RFC 3339 with nanoseconds
	keyLease       = "lease"       // release.Lease as JSON, while one is held
	keyDigest      = "digest"      // "sha256:" + hex of the compressed body
	keyBody        = "body"        // the compressed body, when it fits
	keyChunks      = "chunks"      // else the chunk Secrets' names, one per line
	keyChunk       = "chunk"       // a chunk Secret's part of the body
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Secrets is a Driver that keeps each revision in the deployment's
// namespace as a Secret of type SecretType named dm.v1.<name>.v<revision>
// (the head), holding the record gzip-compressed. A body larger than
// ChunkSize is split across immutable chunk Secrets written before the
// head, so that a reader that finds a head always finds a whole record.
// The status, description, update time and lease live in the head outside
// the body, so the common updates (a status change, a lease's renewal) are
// one small PATCH.
//
// Writes are optimistic: Create is create-only, Update is a merge patch
// with the head's resourceVersion as precondition.
//
// A description longer than 64 KiB is stored truncated.
type Secrets struct {
	client dynamic.Interface

	// ChunkSize is the largest compressed body kept in the head, and the
	// size of the chunks of a larger one (default DefaultChunkSize).
	ChunkSize int
	// MaxRecordSize bounds the uncompressed size of a record read
	// (default DefaultMaxRecordSize).
	MaxRecordSize int64
}

var _ Driver = (*Secrets)(nil)

// NewSecrets returns a Secrets driver that talks to the cluster through
// client.
func NewSecrets(client dynamic.Interface) *Secrets {
	return &Secrets{client: client}
}

func (s *Secrets) chunkSize() int {
	if s.ChunkSize > 0 {
		return s.ChunkSize
	}
	return DefaultChunkSize
}

func (s *Secrets) maxRecordSize() int64 {
	if s.MaxRecordSize > 0 {
		return s.MaxRecordSize
	}
	return DefaultMaxRecordSize
}

func (s *Secrets) secrets(namespace string) dynamic.ResourceInterface {
	return s.client.Resource(secretsGVR).Namespace(namespace)
}

// nameKey is the deployment's part of Secret names: the name itself, or
// for a long one a prefix and a hash, so that every Secret name stays a
// valid DNS subdomain of at most 253 characters.
func nameKey(name string) string {
	if len(name) <= maxNameKey {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:maxNameKey-17], ".-")
	return prefix + "-" + hex.EncodeToString(sum[:8])
}

// HeadName returns the name of the head Secret of a revision.
func HeadName(name string, revision int) string {
	return "dm.v1." + nameKey(name) + ".v" + strconv.Itoa(revision)
}

// DeploymentLabel returns the value of LabelDeployment for a deployment:
// its name, or for a name longer than a label value may be (63), "sha256_"
// and a hash of it.
func DeploymentLabel(name string) string {
	if len(name) <= 63 {
		return name // a valid subdomain of at most 63 is a valid label value
	}
	sum := sha256.Sum256([]byte(name))
	return "sha256_" + hex.EncodeToString(sum[:24])
}

func selector(name string, part string) string {
	sel := LabelManagedBy + "=dm," + LabelPart + "=" + part
	if name != "" {
		sel += "," + LabelDeployment + "=" + DeploymentLabel(name)
	}
	return sel
}

// storageVersion is the token Records carry: the head's resourceVersion
// and the digest of the body it holds, so that Update can tell a status
// change (patch the head only) from a new body without reading first.
// A record's StorageVersion is its head's resourceVersion, its body's
// digest and the head's chunk Secrets, if any: Update then knows what it
// replaces without reading the head again (its resourceVersion, a
// precondition of the write, guarantees the head is still what was read).
// Secret names have no "/" or ",".
func storageVersion(resourceVersion, digest string, chunks []string) string {
	return resourceVersion + "/" + digest + "/" + strings.Join(chunks, ",")
}

func parseStorageVersion(v string) (resourceVersion, digest string, chunks []string, ok bool) {
	parts := strings.Split(v, "/")
	if len(parts) != 3 || parts[0] == "" {
		return "", "", nil, false
	}
	if parts[2] != "" {
		chunks = strings.Split(parts[2], ",")
	}
	return parts[0], parts[1], chunks, true
}

// body is a record's encoded body and where it goes.
type body struct {
	data   []byte
	digest string
}

// encodeBody encodes r without the fields the head keeps (status,
// description, update time, lease), so they can change without a new body.
func encodeBody(r *release.Record) (body, error) {
	c := *r
	c.Status, c.Description, c.Updated, c.Lease = "", "", time.Time{}, nil
	data, err := Encode(&c)
	if err != nil {
		return body{}, err
	}
	sum := sha256.Sum256(data)
	return body{data: data, digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "... (truncated)"
	return strings.ToValidUTF8(s[:n-len(more)], "") + more
}

func labels(r *release.Record, part string) map[string]any {
	l := map[string]any{
		LabelManagedBy:  "dm",
		LabelDeployment: DeploymentLabel(r.Name),
		LabelRevision:   strconv.Itoa(r.Revision),
		LabelPart:       part,
		LabelFormat:     strconv.Itoa(release.Format),
	}
	if part == "head" {
		l[LabelStatus] = string(r.Status)
	}
	return l
}

// newSecret returns a head or chunk Secret of r.
func newSecret(r *release.Record, name, part string, data map[string]any) *unstructured.Unstructured {
	typ := SecretType
	if part == "chunk" {
		typ = ChunkSecretType
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":      name,
			"namespace": r.Namespace,
			"labels":    labels(r, part),
		},
		"type": typ,
		"data": data,
	}}
}

// headFields returns the head's mutable data: status, description, update
// time and lease. Without a lease, patch marks the key for removal, as a
// merge patch of an existing head needs.
func headFields(r *release.Record, patch bool) (map[string]any, error) {
	data := map[string]any{
		keyStatus:      b64(string(r.Status)),
		keyDescription: b64(truncate(r.Description, maxDescription)),
		keyUpdated:     b64(r.Updated.UTC().Format(time.RFC3339Nano)),
	}
	switch {
	case r.Lease != nil:
		js, err := json.Marshal(r.Lease)
		if err != nil {
			return nil, fmt.Errorf("encoding the lease of %s: %w", r, err)
		}
		data[keyLease] = base64.StdEncoding.EncodeToString(js)
	case patch:
		data[keyLease] = nil
	}
	return data, nil
}

func (s *Secrets) check(r *release.Record) error {
	if err := validate(r); err != nil {
		return err
	}
	if r.Revision > maxRevision {
		return derrors.Errorf(derrors.InvalidArgument, "%s: revision above %d", r, maxRevision)
	}
	return nil
}

// writeChunks creates the chunk Secrets of b under fresh names and
// returns them. On failure it deletes those it made.
func (s *Secrets) writeChunks(ctx context.Context, r *release.Record, b body) ([]string, error) {
	var nonce [4]byte
	rand.Read(nonce[:]) // never fails (crypto/rand)
	prefix := HeadName(r.Name, r.Revision) + "." + hex.EncodeToString(nonce[:]) + "."
	size := s.chunkSize()
	var names []string
	for i := 0; i*size < len(b.data); i++ {
		part := b.data[i*size : min((i+1)*size, len(b.data))]
		name := prefix + strconv.Itoa(i)
		obj := newSecret(r, name, "chunk", map[string]any{keyChunk: base64.StdEncoding.EncodeToString(part)})
		obj.Object["immutable"] = true
		if _, err := s.secrets(r.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			s.deleteChunks(ctx, r.Namespace, names)
			return nil, fmt.Errorf("%s: writing chunk Secret %s/%s: %w", r, r.Namespace, name, apiError(err))
		}
		names = append(names, name)
	}
	return names, nil
}

// putBody puts b into a head's data: inline if it fits, else written as
// chunks first, whose names it returns. patch marks the unused key for
// removal, as a merge patch of an existing head needs.
func (s *Secrets) putBody(ctx context.Context, r *release.Record, b body, data map[string]any, patch bool) ([]string, error) {
	data[keyDigest] = b64(b.digest)
	if len(b.data)+len(r.Description) <= s.chunkSize() {
		data[keyBody] = base64.StdEncoding.EncodeToString(b.data)
		if patch {
			data[keyChunks] = nil
		}
		return nil, nil
	}
	chunks, err := s.writeChunks(ctx, r, b)
	if err != nil {
		return nil, err
	}
	data[keyChunks] = b64(strings.Join(chunks, "\n"))
	if patch {
		data[keyBody] = nil
	}
	return chunks, nil
}

// deleteChunks deletes chunk Secrets, best effort: it runs after the
// outcome is decided (a lost race, a replaced body), even if ctx is done,
// and what it misses Delete of the revision removes.
func (s *Secrets) deleteChunks(ctx context.Context, namespace string, names []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, n := range names {
		_ = s.secrets(namespace).Delete(ctx, n, metav1.DeleteOptions{})
	}
}

// Create implements Driver. A body larger than ChunkSize is written as
// chunks first, then the head; the loser of a race deletes its chunks.
func (s *Secrets) Create(ctx context.Context, r *release.Record) error {
	if err := s.check(r); err != nil {
		return err
	}
	b, err := encodeBody(r)
	if err != nil {
		return err
	}
	data, err := headFields(r, false)
	if err != nil {
		return err
	}
	chunks, err := s.putBody(ctx, r, b, data, false)
	if err != nil {
		return err
	}
	name := HeadName(r.Name, r.Revision)
	obj := newSecret(r, name, "head", data)
	got, err := s.secrets(r.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		if rejected(err) {
			s.deleteChunks(ctx, r.Namespace, chunks)
		}
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s (Secret %s/%s): %w", r, r.Namespace, name, ErrExists)
		}
		return fmt.Errorf("%s: creating Secret %s/%s: %w", r, r.Namespace, name, apiError(err))
	}
	r.StorageVersion = storageVersion(got.GetResourceVersion(), b.digest, chunks)
	return nil
}

// Update implements Driver. When only the status, description or update
// time changed, it is one merge patch of the head; a new body is written
// first (as chunks if large) and the head patched to point at it, the old
// chunks deleted after.
func (s *Secrets) Update(ctx context.Context, r *release.Record) error {
	if err := s.check(r); err != nil {
		return err
	}
	rv, oldDigest, oldChunks, ok := parseStorageVersion(r.StorageVersion)
	if !ok {
		return derrors.Errorf(derrors.InvalidArgument, "%s: updating a record that was not read from the cluster (no storage version)", r)
	}
	name := HeadName(r.Name, r.Revision)
	b, err := encodeBody(r)
	if err != nil {
		return err
	}
	data, err := headFields(r, true)
	if err != nil {
		return err
	}
	// A new body's chunks replace the old ones, which are deleted once
	// the head names the new; a refused write (a conflict: the head
	// changed since it was read) deletes the new ones instead.
	changed := b.digest != oldDigest
	var written []string
	if changed {
		if written, err = s.putBody(ctx, r, b, data, true); err != nil {
			return err
		}
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			// A resourceVersion in a patch is a precondition: the server
			// answers 409 Conflict if the head changed since.
			"resourceVersion": rv,
			"labels":          map[string]any{LabelStatus: string(r.Status)},
		},
		"data": data,
	})
	if err != nil {
		return err
	}
	got, err := s.secrets(r.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		if rejected(err) {
			s.deleteChunks(ctx, r.Namespace, written)
		}
		return s.headError(r, name, "updating", err)
	}
	chunks := oldChunks
	if changed {
		s.deleteChunks(ctx, r.Namespace, oldChunks)
		chunks = written
	}
	r.StorageVersion = storageVersion(got.GetResourceVersion(), b.digest, chunks)
	return nil
}

// rejected reports whether err is the server's answer that it did not
// write: only then may a writer delete the chunks it made for the head.
// After a lost connection or a timeout the head may have been written, and
// its chunks must stay (Delete of the revision removes them if not).
func rejected(err error) bool {
	switch apierrors.ReasonForError(err) {
	case metav1.StatusReasonAlreadyExists, metav1.StatusReasonConflict, metav1.StatusReasonNotFound,
		metav1.StatusReasonForbidden, metav1.StatusReasonUnauthorized, metav1.StatusReasonInvalid,
		metav1.StatusReasonBadRequest, metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonMethodNotAllowed,
		metav1.StatusReasonUnsupportedMediaType, metav1.StatusReasonGone:
		return true
	}
	return false
}

// headError maps an API error about a head Secret to the driver's
// sentinels.
func (s *Secrets) headError(r *release.Record, name, verb string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return errNotFound(r.Namespace, r.Name, r.Revision)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s (Secret %s/%s): %w", r, r.Namespace, name, ErrConflict)
	}
	return fmt.Errorf("%s: %s Secret %s/%s: %w", r, verb, r.Namespace, name, apiError(err))
}

// apiError returns err, which already names the verb, resource and
// namespace when the server refused (e.g. `secrets is forbidden: User "x"
// cannot list resource "secrets" in API group "" in the namespace "y"`);
// a refusal also wraps derrors.Unauthorized.
func apiError(err error) error {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return derrors.Errorf(derrors.Unauthorized, "%w", err)
	}
	return err
}

// head is a parsed head Secret.
type head struct {
	namespace, secret string
	resourceVersion   string
	revision          int
	status            release.Status
	description       string
	updated           time.Time
	lease             *release.Lease
	digest            string
	body              []byte   // inline body, or
	chunks            []string // the chunk Secrets' names
}

// corrupt returns the error for a head Secret dm cannot read, naming it and
// how to drop the revision so the deployment's history is usable again.
func corrupt(namespace, secret, format string, args ...any) error {
	return derrors.Errorf(derrors.InvalidArgument, "corrupt deployment history: Secret %s/%s: %s (to drop this revision: kubectl delete secret -n %s %s)",
		namespace, secret, fmt.Sprintf(format, args...), namespace, secret)
}

// parseHead reads a head Secret's metadata and data, without fetching
// chunks or decoding the body.
func parseHead(obj *unstructured.Unstructured) (*head, error) {
	h := &head{namespace: obj.GetNamespace(), secret: obj.GetName(), resourceVersion: obj.GetResourceVersion()}
	bad := func(format string, args ...any) error { return corrupt(h.namespace, h.secret, format, args...) }
	if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != SecretType {
		return nil, bad("type %q, want %q", t, SecretType)
	}
	l := obj.GetLabels()
	if f := l[LabelFormat]; f != strconv.Itoa(release.Format) {
		return nil, derrors.Errorf(ErrFormat, "deployment history: Secret %s/%s has format %q, this dm reads format %d (written by a newer dm? upgrade dm)",
			h.namespace, h.secret, f, release.Format)
	}
	var err error
	if h.revision, err = strconv.Atoi(l[LabelRevision]); err != nil || h.revision < 1 {
		return nil, bad("label %s=%q is not a revision", LabelRevision, l[LabelRevision])
	}
	raw, _, _ := unstructured.NestedMap(obj.Object, "data")
	data := make(map[string][]byte, len(raw))
	for k, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil, bad("data key %q is not a string", k)
		}
		if data[k], err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, bad("data key %q is not base64: %v", k, err)
		}
	}
	h.status = release.Status(data[keyStatus])
	if !h.status.Valid() {
		return nil, bad("unknown status %q", data[keyStatus])
	}
	h.description = string(data[keyDescription])
	if h.updated, err = time.Parse(time.RFC3339Nano, string(data[keyUpdated])); err != nil {
		return nil, bad("update time %q: %v", data[keyUpdated], err)
	}
	if js, ok := data[keyLease]; ok {
		h.lease = new(release.Lease)
		if err := json.Unmarshal(js, h.lease); err != nil {
			return nil, bad("lease: %v", err)
		}
	}
	h.digest = string(data[keyDigest])
	if !strings.HasPrefix(h.digest, "sha256:") {
		return nil, bad("no body digest")
	}
	body, hasBody := data[keyBody]
	chunks, hasChunks := data[keyChunks]
	switch {
	case hasBody && hasChunks:
		return nil, bad("both a body and chunks")
	case hasBody:
		h.body = body
	case hasChunks && len(chunks) > 0:
		h.chunks = strings.Split(string(chunks), "\n")
	default:
		return nil, bad("no body")
	}
	return h, nil
}

// errChunkMissing means a chunk was deleted under a reader: the body was
// replaced or the revision deleted since the head was read.
var errChunkMissing = errors.New("missing")

// readBody returns the head's whole compressed body, verified against its
// digest.
func (s *Secrets) readBody(ctx context.Context, h *head) ([]byte, error) {
	data := h.body
	if h.chunks != nil {
		var buf bytes.Buffer
		for _, name := range h.chunks {
			// A head names only its own chunks: never read another Secret.
			if !strings.HasPrefix(name, h.secret+".") {
				return nil, corrupt(h.namespace, h.secret, "chunk %q is not one of its chunk Secrets", name)
			}
			if int64(buf.Len()) > s.maxRecordSize() {
				return nil, derrors.Errorf(derrors.LimitExceeded, "Secret %s/%s: record body is larger than %d bytes (MaxRecordSize)", h.namespace, h.secret, s.maxRecordSize())
			}
			obj, err := s.secrets(h.namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("chunk Secret %s: %w", name, errChunkMissing)
			}
			if err != nil {
				return nil, fmt.Errorf("reading chunk Secret %s/%s of %s: %w", h.namespace, name, h.secret, apiError(err))
			}
			if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != ChunkSecretType {
				return nil, corrupt(h.namespace, h.secret, "chunk Secret %s has type %q, want %q", name, t, ChunkSecretType)
			}
			enc, _, _ := unstructured.NestedString(obj.Object, "data", keyChunk)
			part, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				return nil, corrupt(h.namespace, h.secret, "chunk Secret %s is not base64: %v", name, err)
			}
			buf.Write(part)
		}
		data = buf.Bytes()
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != h.digest {
		return nil, corrupt(h.namespace, h.secret, "body digest %s, want %s", got, h.digest)
	}
	return data, nil
}

// decode turns a head Secret into a record, reading its chunks. A chunk
// that vanished means a concurrent Update or Delete: it reads the head
// again, a few times, so the caller sees the old record, the new one or
// ErrNotFound, never a mix.
func (s *Secrets) decode(ctx context.Context, obj *unstructured.Unstructured) (*release.Record, error) {
	for attempt := 0; ; attempt++ {
		h, err := parseHead(obj)
		if err != nil {
			return nil, err
		}
		data, err := s.readBody(ctx, h)
		if errors.Is(err, errChunkMissing) && attempt < 5 {
			again, gerr := s.secrets(h.namespace).Get(ctx, h.secret, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) {
				return nil, fmt.Errorf("Secret %s/%s: %w", h.namespace, h.secret, ErrNotFound)
			}
			if gerr != nil {
				// Not known to be corrupt: the head could not be read.
				return nil, fmt.Errorf("deployment history: reading Secret %s/%s again: %w", h.namespace, h.secret, apiError(gerr))
			}
			if again.GetResourceVersion() != h.resourceVersion {
				obj = again
				continue
			}
		}
		if errors.Is(err, errChunkMissing) {
			return nil, corrupt(h.namespace, h.secret, "%v", err)
		}
		if err != nil {
			return nil, err
		}
		r, err := Decode(data, s.maxRecordSize())
		if errors.Is(err, derrors.InvalidArgument) && !errors.Is(err, ErrFormat) {
			return nil, corrupt(h.namespace, h.secret, "%v", err)
		}
		if err != nil {
			return nil, fmt.Errorf("deployment history: Secret %s/%s: %w", h.namespace, h.secret, err)
		}
		if r.Namespace != h.namespace || r.Revision != h.revision || HeadName(r.Name, r.Revision) != h.secret {
			return nil, corrupt(h.namespace, h.secret, "holds %s", r)
		}
		r.Status, r.Description, r.Updated, r.Lease = h.status, h.description, h.updated, h.lease
		r.StorageVersion = storageVersion(h.resourceVersion, h.digest, h.chunks)
		return r, nil
	}
}

// Get implements Driver.
func (s *Secrets) Get(ctx context.Context, namespace, name string, revision int) (*release.Record, error) {
	secret := HeadName(name, revision)
	obj, err := s.secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, errNotFound(namespace, name, revision)
	}
	if err != nil {
		return nil, fmt.Errorf("reading deployment %s/%s revision %d: %w", namespace, name, revision, apiError(err))
	}
	r, err := s.decode(ctx, obj)
	if errors.Is(err, ErrNotFound) {
		return nil, errNotFound(namespace, name, revision)
	}
	return r, err
}

// heads lists the head Secrets of a deployment (name "": of all
// deployments) in namespace ("": all namespaces).
func (s *Secrets) heads(ctx context.Context, namespace, name string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{LabelSelector: selector(name, "head"), Limit: 100}
	for {
		list, err := s.secrets(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, obj := range list.Items {
			if t, _, _ := unstructured.NestedString(obj.Object, "type"); t == SecretType {
				out = append(out, obj)
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// History implements Driver.
func (s *Secrets) History(ctx context.Context, namespace, name string) ([]*release.Record, error) {
	objs, err := s.heads(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("listing history of deployment %s/%s: %w", namespace, name, apiError(err))
	}
	var out []*release.Record
	for i := range objs {
		r, err := s.decode(ctx, &objs[i])
		if errors.Is(err, ErrNotFound) {
			continue // deleted while we read
		}
		if err != nil {
			return nil, err
		}
		if r.Name == name { // not another name with the same hashed label
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, errNotFound(namespace, name, 0)
	}
	slices.SortFunc(out, func(a, b *release.Record) int { return cmp.Compare(a.Revision, b.Revision) })
	return out, nil
}

// List implements Driver. It decodes only the latest head of each
// deployment.
func (s *Secrets) List(ctx context.Context, namespace string) ([]*release.Record, error) {
	objs, err := s.heads(ctx, namespace, "")
	if err != nil {
		where := "namespace " + namespace
		if namespace == "" {
			where = "all namespaces"
		}
		return nil, fmt.Errorf("listing deployments in %s: %w", where, apiError(err))
	}
	type key struct{ namespace, deployment string }
	type latest struct {
		obj      *unstructured.Unstructured
		revision int
	}
	byDeployment := make(map[key]latest)
	for i := range objs {
		obj := &objs[i]
		l := obj.GetLabels()
		rev, err := strconv.Atoi(l[LabelRevision])
		if err != nil {
			return nil, corrupt(obj.GetNamespace(), obj.GetName(), "label %s=%q is not a revision", LabelRevision, l[LabelRevision])
		}
		k := key{obj.GetNamespace(), l[LabelDeployment]}
		if cur, ok := byDeployment[k]; !ok || rev > cur.revision {
			byDeployment[k] = latest{obj, rev}
		}
	}
	out := make([]*release.Record, 0, len(byDeployment))
	for _, l := range byDeployment {
		r, err := s.decode(ctx, l.obj)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sortDeployments(out)
	return out, nil
}

// Delete implements Driver. It deletes the head first, so readers stop
// finding the revision, then every chunk Secret of the revision, including
// any an interrupted writer left.
func (s *Secrets) Delete(ctx context.Context, namespace, name string, revision int) error {
	secret := HeadName(name, revision)
	err := s.secrets(namespace).Delete(ctx, secret, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return errNotFound(namespace, name, revision)
	}
	if err != nil {
		return fmt.Errorf("deleting deployment %s/%s revision %d: Secret %s: %w", namespace, name, revision, secret, apiError(err))
	}
	list, err := s.secrets(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: selector(name, "chunk") + "," + LabelRevision + "=" + strconv.Itoa(revision),
	})
	if err != nil {
		return fmt.Errorf("deleting the chunks of deployment %s/%s revision %d: %w", namespace, name, revision, apiError(err))
	}
	prefix := secret + "."
	for _, obj := range list.Items {
		if !strings.HasPrefix(obj.GetName(), prefix) {
			continue // another deployment with the same hashed label
		}
		if err := s.secrets(namespace).Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting chunk Secret %s/%s: %w", namespace, obj.GetName(), apiError(err))
		}
	}
	return nil
}
