package impact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dmhq/dm/internal/deploy"
	"github.com/dmhq/dm/internal/expand"
)

// Stand-ins for an instance's identity in a shared expansion. A template
// names its objects after env.name (and env.deployment, env.namespace),
// so that instances with the same properties expand alike but for those:
// the version is expanded once per distinct template and properties with
// these, and each instance's expansion is that one with its own name and
// namespace put in their place. They are DNS labels, so that a template
// that checks them passes.
const (
	standInName      = "dmimpactnq7xkname"
	standInNamespace = "dmimpactsq7xkns"
	// standInCore is what both begin with: an expansion that still holds
	// it, in any case, after they are replaced made something else of
	// them (upper-cased, cut), and is expanded for each instance instead.
	standInCore = "dmimpact"
)

// expansions is a deploy.Expander that expands each distinct source once
// (by a hash of everything but the instance's identity) and gives each
// instance the shared expansion with its identity.
type expansions struct {
	inner deploy.Expander
	// one calls inner one expansion at a time: dm's backend is not safe
	// for concurrent use, and there are few expansions.
	one   sync.Mutex
	mu    sync.Mutex
	byKey map[[sha256.Size]byte]*shared
	// count counts the expansions made through inner.
	count atomic.Int64
}

// shared is one expansion with the stand-ins, made once.
type shared struct {
	once sync.Once
	json []byte
	err  error
	// own is set when the expansion derives something from the
	// stand-ins that replacing them cannot give: each instance is then
	// expanded with its own identity.
	own bool
}

func newExpansions(inner deploy.Expander) *expansions {
	return &expansions{inner: inner, byKey: map[[sha256.Size]byte]*shared{}}
}

// key hashes what an expansion depends on besides the instance's
// identity: the template, properties, env (the project included) and the
// schema settings.
func key(src deploy.Source) ([sha256.Size]byte, error) {
	b, err := json.Marshal(struct {
		Input                   any
		Properties              map[string]any
		Env                     map[string]string
		Strict, SkipSchema      bool
		Project, DeletionPolicy string
	}{src.Input, src.Properties, src.Env, src.Strict, src.SkipSchemaValidation, src.Project, src.DeletionPolicy})
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("hashing the properties: %w", err)
	}
	return sha256.Sum256(b), nil
}

// Expand implements deploy.Expander.
func (e *expansions) Expand(ctx context.Context, src deploy.Source) (*expand.Result, error) {
	k, err := key(src)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	s := e.byKey[k]
	if s == nil {
		s = &shared{}
		e.byKey[k] = s
	}
	e.mu.Unlock()
	s.once.Do(func() {
		stand := src
		stand.Name, stand.Deployment, stand.Namespace = standIn(src.Name, src.Deployment), standInName, standInNamespace
		x, err := e.expand(ctx, stand)
		if err != nil {
			s.err = err
			return
		}
		s.json, s.err = json.Marshal(x)
		s.own = s.err == nil && bytes.Contains(bytes.ToLower(bytes.ReplaceAll(bytes.ReplaceAll(s.json,
			[]byte(standInName), nil), []byte(standInNamespace), nil)), []byte(standInCore))
	})
	if s.own {
		return e.expand(ctx, src)
	}
	if s.err != nil {
		return nil, &identityError{msg: e.identity(s.err.Error(), src), err: s.err}
	}
	out := &expand.Result{}
	if err := json.Unmarshal([]byte(e.identity(string(s.json), src)), out); err != nil {
		return nil, fmt.Errorf("reading the shared expansion: %w", err)
	}
	return out, nil
}

// expand expands src through inner, counted, one at a time.
func (e *expansions) expand(ctx context.Context, src deploy.Source) (*expand.Result, error) {
	e.one.Lock()
	defer e.one.Unlock()
	e.count.Add(1)
	return e.inner.Expand(ctx, src)
}

// standIn is the stand-in of a resource name: the instance's name is
// the deployment's, as deploy names a template deployed by reference.
func standIn(name, deployment string) string {
	if name == deployment {
		return standInName
	}
	return name
}

// identity puts src's name and namespace in place of the stand-ins of
// text (JSON, or an error's message).
func (e *expansions) identity(text string, src deploy.Source) string {
	return strings.NewReplacer(standInName, jsonText(src.Deployment), standInNamespace, jsonText(src.Namespace)).Replace(text)
}

// jsonText is s as it reads inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// identityError is a shared expansion's error with the instance's name
// and namespace in its message; errors.Is sees the expansion's.
type identityError struct {
	msg string
	err error
}

func (e *identityError) Error() string { return e.msg }
func (e *identityError) Unwrap() error { return e.err }
