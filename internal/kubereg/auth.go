package kubereg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
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
//
// Nobody can starve the reviews of others with made-up tokens: a token
// that cannot be the apiserver's (not a well-formed JWT, of another issuer
// or audience, expired) is refused without a review; tokens the apiserver
// has not authenticated lately are reviewed at most ClientRate a second
// per client address, one review per token at a time, in a lane of their
// own (UnknownConcurrent in flight); tokens it authenticated lately
// (dm-controller's, every user's after its first request) are answered
// from the cache and, when their answer expires, reviewed in the other
// lane, never queued behind unknown ones.
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
	// known and unknown bound the reviews sent at once, of tokens
	// authenticated lately (and of their holders' rights) and of the
	// others: a flood of made-up tokens costs the apiserver no more than
	// cap(unknown) requests in flight, and never takes a known token's
	// place.
	known, unknown chan struct{}
	// clients rate-limits the reviews of unknown tokens per client
	// address; flight makes one review of concurrent requests with one
	// token; check refuses tokens that are not worth a review.
	clients *clientLimits
	flight  singleflight.Group
	check   *tokenCheck
	// onReview and onRefuse are AuthorizerOptions' hooks.
	onReview func(lane, result string)
	onRefuse func(reason string)
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
	// unknownWait is AuthorizerOptions.UnknownWait.
	unknownWait time.Duration
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
	// Concurrent bounds the reviews in flight of tokens authenticated
	// lately and of their holders' rights; zero means 16.
	Concurrent int
	// UnknownConcurrent bounds the reviews in flight of other tokens;
	// zero means DefaultUnknownConcurrent. A review of one waits at most
	// UnknownWait (zero: a second) for its turn, else is throttled.
	UnknownConcurrent int
	UnknownWait       time.Duration
	// ClientRate and ClientBurst bound the reviews of tokens not
	// authenticated lately per client address (server.Caller.Addr): a
	// token bucket of ClientBurst filling at ClientRate a second; past it
	// the request is throttled (429). Zero means DefaultClientRate and
	// DefaultClientBurst. Clients is how many addresses' buckets are kept
	// (the least recently seen go first); zero means DefaultAuthClients.
	ClientRate  float64
	ClientBurst int
	Clients     int
	// Issuers and Audiences are the issuers and audiences a JWT bearer
	// token may name to be reviewed, besides the apiserver's own (its
	// service-account issuer, from its OIDC discovery document; the
	// issuer and audiences of registryd's own token) and LegacyIssuer;
	// others are refused without a review. Without any audience known
	// (out of a pod, no flag), audiences are not checked.
	Issuers, Audiences []string
	// RefuseOpaque refuses tokens that are not JWTs without a review.
	RefuseOpaque bool
	// OnReview, if set, hears of every TokenReview: lane "known" or
	// "unknown", result "authenticated", "refused" or "error". OnRefuse
	// hears of every token refused without one, and why: "malformed",
	// "issuer", "audience", "expired", "opaque", "client_rate", "queue".
	OnReview func(lane, result string)
	OnRefuse func(reason string)
	Logger   *slog.Logger
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

// Defaults of the bounds of unknown tokens' reviews: a client sends a new
// token now and then (a user's first request, a rotated token), not
// several a second; one review takes the apiserver milliseconds.
const (
	DefaultClientRate        = 2
	DefaultClientBurst       = 10
	DefaultAuthClients       = 4096
	DefaultUnknownConcurrent = 4
	defaultUnknownWait       = time.Second
)

// NewAuthorizer returns an Authorizer asking the apiserver cfg reaches, as
// registryd's own account (which needs create on tokenreviews and
// subjectaccessreviews: system:auth-delegator's rights).
func NewAuthorizer(cfg *rest.Config, opts AuthorizerOptions) (*Authorizer, error) {
	cfg = rest.CopyConfig(cfg)
	// Not client-go's token bucket (5 a second): shared by every review,
	// a flood of made-up tokens filled it and every other review waited
	// behind (22.8 s for a first read under 64 connections). The lanes
	// bound the reviews in flight instead.
	cfg.QPS, cfg.Burst = -1, 0
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if own, ok := ownClaims(cfg); ok {
		// A pod's token: its issuer and audiences are the apiserver's.
		opts.Issuers = append(opts.Issuers, own.Issuer)
		opts.Audiences = append(opts.Audiences, own.Audience...)
	}
	a := newAuthorizer(c, opts)
	a.check.discover = discoverIssuer(c)
	return a, nil
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
	if opts.UnknownConcurrent <= 0 {
		opts.UnknownConcurrent = DefaultUnknownConcurrent
	}
	if opts.UnknownWait <= 0 {
		opts.UnknownWait = defaultUnknownWait
	}
	if opts.ClientRate <= 0 {
		opts.ClientRate = DefaultClientRate
	}
	if opts.ClientBurst <= 0 {
		opts.ClientBurst = DefaultClientBurst
	}
	if opts.Clients <= 0 {
		opts.Clients = DefaultAuthClients
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clients, _ := lru.New[string, *rate.Limiter](opts.Clients)
	return &Authorizer{
		client:      c,
		log:         log,
		unknownWait: opts.UnknownWait,
		clients:     &clientLimits{rate: rate.Limit(opts.ClientRate), burst: opts.ClientBurst, buckets: clients},
		check:       &tokenCheck{issuers: dedupe(opts.Issuers), audiences: dedupe(opts.Audiences), opaque: !opts.RefuseOpaque, log: log},
		onReview:    opts.OnReview,
		onRefuse:    opts.OnRefuse,
		users:       expirable.NewLRU[[32]byte, *authenticationv1.UserInfo](opts.Entries, nil, opts.TTL),
		decisions:   expirable.NewLRU[decision, bool](opts.Entries, nil, opts.TTL),
		strangers:   expirable.NewLRU[[32]byte, bool](opts.Entries, nil, opts.DeniedTTL),
		denied:      expirable.NewLRU[decision, bool](opts.Entries, nil, opts.DeniedTTL),
		known:       make(chan struct{}, opts.Concurrent),
		unknown:     make(chan struct{}, opts.UnknownConcurrent),

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
	return a.allowed(ctx, decision{token: c.Sum, namespace: ns, obj: name}, c)
}

// AllowedPath reports whether the caller may get the non-resource URL
// path (/metrics).
func (a *Authorizer) AllowedPath(ctx context.Context, c server.Caller, path string) bool {
	return a.allowed(ctx, decision{token: c.Sum, path: path}, c)
}

// Authenticate reports whether the apiserver authenticated the caller's
// token (server.ErrUnauthenticated if not), or why its review is not sent
// now (a *server.ThrottledError).
func (a *Authorizer) Authenticate(ctx context.Context, c server.Caller) error {
	_, err := a.user(ctx, c)
	return err
}

func (a *Authorizer) allowed(ctx context.Context, d decision, c server.Caller) bool {
	if ok, found := a.decisions.Get(d); found {
		return ok
	}
	if _, found := a.denied.Get(d); found {
		return false
	}
	user, err := a.user(ctx, c)
	if err != nil {
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
	// The caller's token is authenticated: its rights are asked in the
	// lane of known tokens.
	var res *authorizationv1.SubjectAccessReview
	err = errUnreachable
	if a.reachable() && acquire(ctx, a.known, reviewTimeout) {
		rctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		res, err = a.client.AuthorizationV1().SubjectAccessReviews().Create(rctx, sar, metav1.CreateOptions{})
		cancel()
		<-a.known
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

// user authenticates c's token, from the cache when it was lately. An
// unknown token goes through the local checks, its client's rate and its
// lane before the apiserver sees it.
func (a *Authorizer) user(ctx context.Context, c server.Caller) (*authenticationv1.UserInfo, error) {
	if u, found := a.users.Get(c.Sum); found {
		return u, nil
	}
	if _, found := a.strangers.Get(c.Sum); found {
		return nil, server.ErrUnauthenticated
	}
	last, seen := a.lastUsers.Peek(c.Sum)
	known := seen && last != nil
	if !known {
		if reason := a.check.refuse(c.Token, time.Now()); reason != "" {
			a.refused(reason)
			return nil, server.ErrUnauthenticated
		}
	}
	// Concurrent requests with one token share one review. It runs
	// without the first request's cancellation (the others wait on it),
	// within reviewTimeout.
	v, err, _ := a.flight.Do(string(c.Sum[:]), func() (any, error) {
		return a.review(context.WithoutCancel(ctx), c, known)
	})
	if err != nil {
		return nil, err
	}
	return v.(*authenticationv1.UserInfo), nil
}

// review sends c's TokenReview, in the lane of known tokens or, for an
// unknown one, after its client's token bucket and within a bounded wait
// for its lane.
func (a *Authorizer) review(ctx context.Context, c server.Caller, known bool) (*authenticationv1.UserInfo, error) {
	// A review that ended just before this one began answers it.
	if u, found := a.users.Get(c.Sum); found {
		return u, nil
	}
	if _, found := a.strangers.Get(c.Sum); found {
		return nil, server.ErrUnauthenticated
	}
	lane, slots, wait := "known", a.known, reviewTimeout
	if !known {
		lane, slots, wait = "unknown", a.unknown, a.unknownWait
		if ok, after := a.clients.allow(c.Addr); !ok {
			a.refused("client_rate")
			return nil, &server.ThrottledError{After: after, Reason: fmt.Sprintf("this client address sent more than %d tokens the apiserver had not authenticated lately (%g a second: registryd's --token-review-rate)", a.clients.burst, float64(a.clients.rate))}
		}
	}
	var res *authenticationv1.TokenReview
	err := errUnreachable
	if a.reachable() {
		switch {
		case acquire(ctx, slots, wait):
			rctx, cancel := context.WithTimeout(ctx, reviewTimeout)
			res, err = a.client.AuthenticationV1().TokenReviews().Create(rctx,
				&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: c.Token}}, metav1.CreateOptions{})
			cancel()
			<-slots
			// Only a known token's failed review leaves the apiserver
			// alone for a while: made-up tokens that the apiserver is slow
			// to refuse must not make registryd stop asking for others.
			if err != nil && ctx.Err() == nil && known {
				a.failed()
			}
		case !known:
			a.refused("queue")
			return nil, &server.ThrottledError{After: time.Second, Reason: fmt.Sprintf("%d reviews of tokens the apiserver had not authenticated lately are in flight", cap(slots))}
		default:
			// Every known lane's slot held for reviewTimeout: the last
			// answer stands, as while the apiserver is away.
			err = errBusy
		}
	}
	if err != nil {
		if !errors.Is(err, errUnreachable) && !errors.Is(err, errBusy) {
			a.reviewed(lane, "error")
		}
		// The error never carries the token: client-go does not echo
		// request bodies.
		u, known := a.lastUsers.Get(c.Sum)
		a.log.Warn("cannot review a token; answering as last time, else as anonymous", "known", known, "err", err)
		if known && u != nil {
			return u, nil
		}
		return nil, server.ErrUnauthenticated
	}
	if !res.Status.Authenticated {
		a.reviewed(lane, "refused")
		a.strangers.Add(c.Sum, true)
		// Not among the last answers: a flood of made-up tokens must not
		// push the tokens authenticated lately out of them (and with them
		// out of their lane). A stranger is refused without them too.
		a.lastUsers.Remove(c.Sum)
		return nil, server.ErrUnauthenticated
	}
	a.reviewed(lane, "authenticated")
	u := res.Status.User
	a.users.Add(c.Sum, &u)
	a.lastUsers.Add(c.Sum, &u)
	return &u, nil
}

// acquire takes a slot of sem, waiting at most wait (zero: as long as ctx
// lasts).
func acquire(ctx context.Context, sem chan struct{}, wait time.Duration) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	case <-timeout:
		return false
	}
}

func (a *Authorizer) reviewed(lane, result string) {
	if a.onReview != nil {
		a.onReview(lane, result)
	}
}

func (a *Authorizer) refused(reason string) {
	if a.onRefuse != nil {
		a.onRefuse(reason)
	}
}

// clientLimits are the token buckets of unknown tokens' reviews, one per
// client address, the least recently used forgotten past the cache's
// size: an attacker with many addresses costs a bounded table.
type clientLimits struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex // makes the look-up and the creation of a bucket one step
	buckets *lru.Cache[string, *rate.Limiter]
}

// allow takes a token of addr's bucket, or says how long until there is one.
func (c *clientLimits) allow(addr string) (bool, time.Duration) {
	c.mu.Lock()
	l, ok := c.buckets.Get(addr)
	if !ok {
		l = rate.NewLimiter(c.rate, c.burst)
		c.buckets.Add(addr, l)
	}
	c.mu.Unlock()
	now := time.Now()
	if l.AllowN(now, 1) {
		return true, 0
	}
	// Not a reservation cancelled: concurrent cancellations give back
	// more than they took.
	missing := 1 - l.TokensAt(now)
	return false, time.Duration(missing / float64(c.rate) * float64(time.Second))
}

// dedupe returns l without empty or repeated strings.
func dedupe(l []string) []string {
	var out []string
	for _, s := range l {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// errUnreachable is a review not sent: the last one failed moments ago.
// errBusy is one not sent because every slot of its lane stayed taken.
var (
	errUnreachable = errors.New("the apiserver did not answer a review moments ago")
	errBusy        = errors.New("every review slot stayed taken")
)

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
