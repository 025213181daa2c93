package kubereg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/server"
)

// Authorizer tells who may see a namespace's registries, as the
// apiserver's own webhook authenticator and authorizer do for aggregated
// APIs: a bearer token is checked with a TokenReview, and its holder's
// right to get a Registry object with a SubjectAccessReview. Answers are
// kept briefly, by a hash of the token (never the token itself): a warm
// request costs a map lookup, and a revoked token or right stops working
// within the cache's time to live. It implements server.Authorizer.
type Authorizer struct {
	client kubernetes.Interface
	log    *slog.Logger
	// users caches TokenReviews by token hash; decisions caches
	// SubjectAccessReviews by token hash and what was asked.
	users     *expirable.LRU[[32]byte, *authenticationv1.UserInfo]
	decisions *expirable.LRU[decision, bool]
	// strangers caches tokens the apiserver did not authenticate, as
	// briefly as refusals.
	strangers *expirable.LRU[[32]byte, bool]
	// denied caches refusals for less long, so that a right just granted
	// takes effect soon.
	denied *expirable.LRU[decision, bool]
	// inflight bounds the reviews sent at once: a flood of made-up
	// tokens costs the apiserver no more than this many requests in
	// flight.
	inflight chan struct{}
	// lastUsers and lastDecisions keep the last answers for longer
	// (StaleTTL): while the apiserver cannot be reached, they answer, as
	// registryd keeps serving everything else. Nobody can change a
	// token's or an account's rights meanwhile either.
	lastUsers     *expirable.LRU[[32]byte, *authenticationv1.UserInfo]
	lastDecisions *expirable.LRU[decision, bool]
	// away is until when the apiserver is taken as unreachable, in unix
	// nanoseconds: a failed review is not tried again sooner, so an
	// outage costs no request per request.
	away atomic.Int64
}

// Bounds of the review requests: each waits at most reviewTimeout, and
// after one fails the apiserver is left alone for reviewBackoff.
const (
	reviewTimeout = 5 * time.Second
	reviewBackoff = 5 * time.Second
)

// reachable reports whether to send a review now.
func (a *Authorizer) reachable() bool { return time.Now().UnixNano() >= a.away.Load() }

// failed notes a review that got no answer.
func (a *Authorizer) failed() { a.away.Store(time.Now().Add(reviewBackoff).UnixNano()) }

// decision is one question to the authorizer.
type decision struct {
	token          [32]byte
	namespace, obj string // a Registry's, or "" and a path
	path           string
}

// AuthorizerOptions tune an Authorizer; the zero value is the defaults.
type AuthorizerOptions struct {
	// TTL is how long an authenticated token and an allowed request are
	// trusted without asking again; zero means DefaultAuthTTL.
	TTL time.Duration
	// DeniedTTL is how long a refused token or request is; zero means
	// DefaultDeniedTTL.
	DeniedTTL time.Duration
	// StaleTTL is how long the last answers stand in while the apiserver
	// cannot be reached; zero means DefaultStaleTTL.
	StaleTTL time.Duration
	// Entries bounds each cache; zero means DefaultAuthEntries.
	Entries int
	// Concurrent bounds the reviews in flight; zero means 16.
	Concurrent int
	Logger     *slog.Logger
}

// Defaults of AuthorizerOptions: the apiserver's webhook token
// authenticator trusts a review for 2 minutes and its authorizer an
// allowed answer for 5 and a refusal for 30 seconds; registryd trusts
// both less long, since a namespace's templates are at stake.
const (
	DefaultAuthTTL     = time.Minute
	DefaultDeniedTTL   = 10 * time.Second
	DefaultAuthEntries = 10_000
	DefaultStaleTTL    = time.Hour
)

// NewAuthorizer returns an Authorizer asking the apiserver cfg reaches, as
// registryd's own account (which needs create on tokenreviews and
// subjectaccessreviews: system:auth-delegator's rights).
func NewAuthorizer(cfg *rest.Config, opts AuthorizerOptions) (*Authorizer, error) {
	c, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return newAuthorizer(c, opts), nil
}

func newAuthorizer(c kubernetes.Interface, opts AuthorizerOptions) *Authorizer {
	if opts.TTL <= 0 {
		opts.TTL = DefaultAuthTTL
	}
	if opts.DeniedTTL <= 0 {
		opts.DeniedTTL = DefaultDeniedTTL
	}
	if opts.Entries <= 0 {
		opts.Entries = DefaultAuthEntries
	}
	if opts.Concurrent <= 0 {
		opts.Concurrent = 16
	}
	if opts.StaleTTL <= 0 {
		opts.StaleTTL = DefaultStaleTTL
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Authorizer{
		client:    c,
		log:       log,
		users:     expirable.NewLRU[[32]byte, *authenticationv1.UserInfo](opts.Entries, nil, opts.TTL),
		decisions: expirable.NewLRU[decision, bool](opts.Entries, nil, opts.TTL),
		strangers: expirable.NewLRU[[32]byte, bool](opts.Entries, nil, opts.DeniedTTL),
		denied:    expirable.NewLRU[decision, bool](opts.Entries, nil, opts.DeniedTTL),
		inflight:  make(chan struct{}, opts.Concurrent),

		lastUsers:     expirable.NewLRU[[32]byte, *authenticationv1.UserInfo](opts.Entries, nil, opts.StaleTTL),
		lastDecisions: expirable.NewLRU[decision, bool](opts.Entries, nil, opts.StaleTTL),
	}
}

// AllowedRegistry reports whether the caller may get the Registry name in
// namespace ns.
func (a *Authorizer) AllowedRegistry(ctx context.Context, c server.Caller, ns, name string) bool {
	if ns == "" || name == "" {
		return false
	}
	return a.allowed(ctx, decision{token: c.Sum, namespace: ns, obj: name}, c.Token)
}

// AllowedPath reports whether the caller may get the non-resource URL
// path (/metrics).
func (a *Authorizer) AllowedPath(ctx context.Context, c server.Caller, path string) bool {
	return a.allowed(ctx, decision{token: c.Sum, path: path}, c.Token)
}

func (a *Authorizer) allowed(ctx context.Context, d decision, token string) bool {
	if ok, found := a.decisions.Get(d); found {
		return ok
	}
	if _, found := a.denied.Get(d); found {
		return false
	}
	user, ok := a.user(ctx, d.token, token)
	if !ok {
		return false
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra(user.Extra),
	}}
	if d.path != "" {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: d.path, Verb: "get"}
	} else {
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: d.namespace, Verb: "get", Group: v1alpha1.GroupVersion.Group, Resource: "registries", Name: d.obj,
		}
	}
	var res *authorizationv1.SubjectAccessReview
	err := errUnreachable
	if a.reachable() && a.acquire(ctx) {
		rctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		res, err = a.client.AuthorizationV1().SubjectAccessReviews().Create(rctx, sar, metav1.CreateOptions{})
		cancel()
		a.release()
		if err != nil && ctx.Err() == nil {
			a.failed()
		}
	}
	if err != nil {
		// Not cached: the next request asks again. Meanwhile the last
		// answer stands, if there was one.
		last, known := a.lastDecisions.Get(d)
		a.log.Warn("cannot review access; answering as last time, else as refused", "known", known, "err", err)
		return known && last
	}
	if res.Status.Allowed {
		a.decisions.Add(d, true)
	} else {
		a.denied.Add(d, true)
	}
	a.lastDecisions.Add(d, res.Status.Allowed)
	return res.Status.Allowed
}

// user authenticates token, from the cache when it was lately.
func (a *Authorizer) user(ctx context.Context, h [32]byte, token string) (*authenticationv1.UserInfo, bool) {
	if u, found := a.users.Get(h); found {
		return u, true
	}
	if _, found := a.strangers.Get(h); found {
		return nil, false
	}
	var res *authenticationv1.TokenReview
	err := errUnreachable
	if a.reachable() && a.acquire(ctx) {
		rctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		res, err = a.client.AuthenticationV1().TokenReviews().Create(rctx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		cancel()
		a.release()
		if err != nil && ctx.Err() == nil {
			a.failed()
		}
	}
	if err != nil {
		// The error never carries the token: client-go does not echo
		// request bodies.
		u, known := a.lastUsers.Get(h)
		a.log.Warn("cannot review a token; answering as last time, else as anonymous", "known", known, "err", err)
		return u, known && u != nil
	}
	if !res.Status.Authenticated {
		a.strangers.Add(h, true)
		a.lastUsers.Add(h, nil)
		return nil, false
	}
	u := res.Status.User
	a.users.Add(h, &u)
	a.lastUsers.Add(h, &u)
	return &u, true
}

func (a *Authorizer) acquire(ctx context.Context) bool {
	select {
	case a.inflight <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (a *Authorizer) release() { <-a.inflight }

// errUnreachable is a review not sent: the last one failed moments ago.
var errUnreachable = errors.New("the apiserver did not answer a review moments ago")

func extra(in map[string]authenticationv1.ExtraValue) map[string]authorizationv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}
