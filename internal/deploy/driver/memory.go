package driver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/dmhq/dm/internal/deploy/release"
)

// Memory is a Driver that keeps records in the process, for tests of the
// actions. It has the semantics of Secrets (ErrExists, ErrConflict, records
// stored encoded so callers never share them) and is safe for concurrent
// use. The zero value is an empty store.
type Memory struct {
	mu      sync.Mutex
	records map[memKey]memEntry
	seq     int
}

type memKey struct {
	namespace, name string
	revision        int
}

type memEntry struct {
	body    []byte // Encode's output
	version string
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return new(Memory) }

var _ Driver = (*Memory)(nil)

func (m *Memory) put(k memKey, r *release.Record) error {
	body, err := Encode(r)
	if err != nil {
		return err
	}
	if m.records == nil {
		m.records = make(map[memKey]memEntry)
	}
	m.seq++
	v := strconv.Itoa(m.seq)
	m.records[k] = memEntry{body: body, version: v}
	r.StorageVersion = v
	return nil
}

func (m *Memory) decode(e memEntry) (*release.Record, error) {
	r, err := Decode(e.body, 0)
	if err != nil {
		return nil, err
	}
	r.StorageVersion = e.version
	return r, nil
}

// Create implements Driver.
func (m *Memory) Create(ctx context.Context, r *release.Record) error {
	if err := validate(r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{r.Namespace, r.Name, r.Revision}
	if _, ok := m.records[k]; ok {
		return fmt.Errorf("%s: %w", r, ErrExists)
	}
	return m.put(k, r)
}

// Update implements Driver.
func (m *Memory) Update(ctx context.Context, r *release.Record) error {
	if err := validate(r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{r.Namespace, r.Name, r.Revision}
	e, ok := m.records[k]
	if !ok {
		return errNotFound(r.Namespace, r.Name, r.Revision)
	}
	if e.version != r.StorageVersion {
		return fmt.Errorf("%s: %w", r, ErrConflict)
	}
	return m.put(k, r)
}

// Get implements Driver.
func (m *Memory) Get(ctx context.Context, namespace, name string, revision int) (*release.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.records[memKey{namespace, name, revision}]
	if !ok {
		return nil, errNotFound(namespace, name, revision)
	}
	return m.decode(e)
}

// History implements Driver.
func (m *Memory) History(ctx context.Context, namespace, name string) ([]*release.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*release.Record
	for k, e := range m.records {
		if k.namespace != namespace || k.name != name {
			continue
		}
		r, err := m.decode(e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errNotFound(namespace, name, 0)
	}
	slices.SortFunc(out, func(a, b *release.Record) int { return cmp.Compare(a.Revision, b.Revision) })
	return out, nil
}

// List implements Driver.
func (m *Memory) List(ctx context.Context, namespace string) ([]*release.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	latest := make(map[memKey]memKey) // revision 0 -> key of the latest revision
	for k := range m.records {
		if namespace != "" && k.namespace != namespace {
			continue
		}
		d := memKey{k.namespace, k.name, 0}
		if l, ok := latest[d]; !ok || k.revision > l.revision {
			latest[d] = k
		}
	}
	out := make([]*release.Record, 0, len(latest))
	for _, k := range latest {
		r, err := m.decode(m.records[k])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sortDeployments(out)
	return out, nil
}

// Delete implements Driver.
func (m *Memory) Delete(ctx context.Context, namespace, name string, revision int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{namespace, name, revision}
	if _, ok := m.records[k]; !ok {
		return errNotFound(namespace, name, revision)
	}
	delete(m.records, k)
	return nil
}

// sortDeployments orders records by namespace and name.
func sortDeployments(rs []*release.Record) {
	slices.SortFunc(rs, func(a, b *release.Record) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
