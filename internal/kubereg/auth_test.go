package kubereg

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/server"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// reviewer answers TokenReviews and SubjectAccessReviews as an apiserver
// whose token "alice" is user alice, allowed to get Registry team-a/private
// and /metrics; down makes it unreachable.
type reviewer struct {
	tokens, access atomic.Int64
	down, deny     atomic.Bool
}

func (rv *reviewer) client() *fake.Clientset {
	c := fake.NewSimpleClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rv.tokens.Add(1)
		if rv.down.Load() {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if strings.HasPrefix(tr.Spec.Token, "alice") {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"team-a"}}}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rv.access.Add(1)
		if rv.down.Load() {
			return true, nil, errors.New("connection refused")
		}
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra, nra := sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes
		sar.Status.Allowed = !rv.deny.Load() && sar.Spec.User == "alice" &&
			(ra != nil && ra.Namespace == "team-a" && ra.Name == "private" && ra.Verb == "get" && ra.Group == "dm.io" && ra.Resource == "registries" ||
				nra != nil && nra.Path == "/metrics" && nra.Verb == "get")
		return true, sar, nil
	})
	return c
}

// TestAuthorizer: answers come from the apiserver's reviews, are kept
// (allowed ones for TTL, refusals and strangers for DeniedTTL), and while
// the apiserver cannot be reached the last answers stand.
func TestAuthorizer(t *testing.T) {
	ctx := context.Background()
	rv := &reviewer{}
	a := newAuthorizer(rv.client(), AuthorizerOptions{TTL: time.Hour, DeniedTTL: 50 * time.Millisecond})
	if !a.AllowedRegistry(ctx, server.NewCaller("alice"), "team-a", "private") || !a.AllowedPath(ctx, server.NewCaller("alice"), "/metrics") {
		t.Fatal("alice refused")
	}
	for _, c := range []struct{ token, ns, name string }{
		{"alice", "team-b", "private"}, {"alice", "team-a", "other"}, {"mallory", "team-a", "private"}, {"alice", "", "private"},
	} {
		if a.AllowedRegistry(ctx, server.NewCaller(c.token), c.ns, c.name) {
			t.Errorf("%s allowed %s/%s", c.token, c.ns, c.name)
		}
	}
	// Warm: no review at all.
	tokens, access := rv.tokens.Load(), rv.access.Load()
	for range 100 {
		a.AllowedRegistry(ctx, server.NewCaller("alice"), "team-a", "private")
	}
	if rv.tokens.Load() != tokens || rv.access.Load() != access {
		t.Errorf("warm answers sent %d token and %d access reviews", rv.tokens.Load()-tokens, rv.access.Load()-access)
	}
	// A refusal is kept briefly: a right granted since takes effect.
	rv.deny.Store(true)
	if a.AllowedRegistry(ctx, server.NewCaller("alice"), "team-a", "again") {
		t.Fatal("allowed while denying")
	}
	rv.deny.Store(false)
	time.Sleep(100 * time.Millisecond)
	if a.AllowedRegistry(ctx, server.NewCaller("alice"), "team-a", "again") {
		t.Error("an object alice may not get is allowed")
	}
	// The apiserver goes away: what was known stands (it cannot change
	// meanwhile); what was not is refused; a made-up token is a stranger.
	rv.down.Store(true)
	a2 := newAuthorizer(rv.client(), AuthorizerOptions{TTL: 10 * time.Millisecond, DeniedTTL: 10 * time.Millisecond})
	rv.down.Store(false)
	if !a2.AllowedRegistry(ctx, server.NewCaller("alice"), "team-a", "private") {
		t.Fatal("alice refused")
	}
	rv.down.Store(true)
	time.Sleep(30 * time.Millisecond)
	if !a2.AllowedRegistry(ctx, server.NewCaller("alice"), "team-a", "private") {
		t.Error("the last answer does not stand while the apiserver is away")
	}
	if a2.AllowedRegistry(ctx, server.NewCaller("alice"), "team-b", "x") || a2.AllowedRegistry(ctx, server.NewCaller("mallory"), "team-a", "private") {
		t.Error("an unknown answer allowed while the apiserver is away")
	}
	// During the back-off after a failure, nothing more is sent.
	sent := rv.tokens.Load() + rv.access.Load()
	for range 50 {
		a2.AllowedRegistry(ctx, server.NewCaller("bob"), "team-a", "private")
	}
	if n := rv.tokens.Load() + rv.access.Load() - sent; n > 0 {
		t.Errorf("%d reviews sent to an apiserver that just failed", n)
	}
}
