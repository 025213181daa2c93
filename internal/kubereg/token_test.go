package kubereg

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testIssuer   = "https://kubernetes.default.svc.cluster.local"
	testAudience = "https://kubernetes.default.svc.cluster.local"
)

// makeJWT returns a compact JWS of header and claims with a made-up
// signature: what a ServiceAccount token looks like to registryd, which
// never verifies signatures (the apiserver does).
func makeJWT(header, claims any) string {
	enc := func(v any) string {
		b, ok := v.([]byte)
		if !ok {
			b, _ = json.Marshal(v)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(claims) + ".c2lnbmF0dXJl"
}

// saToken is a JWT as the apiserver issues them, of issuer iss and
// audience aud, expiring in an hour.
func saToken(iss string, aud any) string {
	return makeJWT(map[string]string{"alg": "RS256", "kid": "k1"}, map[string]any{
		"iss": iss, "aud": aud, "sub": "system:serviceaccount:team-a:admin",
		"exp": time.Now().Add(time.Hour).Unix(), "nbf": time.Now().Add(-time.Minute).Unix(),
	})
}

// TestTokenCheck: what is refused without a review, and why; everything
// else is reviewed (the check never accepts).
func TestTokenCheck(t *testing.T) {
	k := &tokenCheck{issuers: []string{testIssuer}, audiences: []string{testAudience}, opaque: true}
	hour := time.Now().Add(time.Hour).Unix()
	for _, tt := range []struct {
		name, token, want string
	}{
		{"a ServiceAccount token", saToken(testIssuer, []string{testAudience}), ""},
		{"audience as a string", saToken(testIssuer, testAudience), ""},
		{"one of several audiences", saToken(testIssuer, []string{"vault", testAudience}), ""},
		{"a legacy token", makeJWT(map[string]string{"alg": "RS256"}, map[string]any{"iss": LegacyIssuer, "sub": "system:serviceaccount:a:b"}), ""},
		{"an opaque token", "k8s-aws-v1.aHR0cHM6Ly9zdHM", ""},
		{"a bootstrap token", "abcdef.0123456789abcdef", ""},
		{"another issuer", saToken("https://accounts.google.com", []string{testAudience}), refuseIssuer},
		{"another audience", saToken(testIssuer, []string{"vault"}), refuseAudience},
		{"no audience", makeJWT(map[string]string{"alg": "RS256"}, map[string]any{"iss": testIssuer, "exp": hour}), refuseAudience},
		{"expired", makeJWT(map[string]string{"alg": "RS256"}, map[string]any{"iss": testIssuer, "aud": testAudience, "exp": time.Now().Add(-time.Hour).Unix()}), refuseExpired},
		{"not yet valid", makeJWT(map[string]string{"alg": "RS256"}, map[string]any{"iss": testIssuer, "aud": testAudience, "nbf": hour}), refuseExpired},
		{"alg none", makeJWT(map[string]string{"alg": "none"}, map[string]any{"iss": testIssuer, "aud": testAudience}), refuseMalformed},
		{"no alg", makeJWT(map[string]string{"typ": "JWT"}, map[string]any{"iss": testIssuer, "aud": testAudience}), refuseMalformed},
		{"claims not JSON", makeJWT(map[string]string{"alg": "RS256"}, []byte("not json")), refuseMalformed},
		{"claims not base64", "eyJhbGciOiJSUzI1NiJ9.!!!.c2ln", refuseMalformed},
		{"no signature", strings.TrimSuffix(saToken(testIssuer, testAudience), "c2lnbmF0dXJl"), refuseMalformed},
		{"aud of another type", makeJWT(map[string]string{"alg": "RS256"}, map[string]any{"iss": testIssuer, "aud": 42}), refuseMalformed},
		{"exp of another type", makeJWT(map[string]string{"alg": "RS256"}, map[string]any{"iss": testIssuer, "aud": testAudience, "exp": "soon"}), refuseMalformed},
		{"a made-up JWT prefix", "eyJ.made.up", refuseMalformed},
	} {
		if got := k.refuse(tt.token, time.Now()); got != tt.want {
			t.Errorf("%s: refuse = %q, want %q", tt.name, got, tt.want)
		}
	}
	// Opaque tokens refused when asked; without known issuers and
	// audiences, only the form is checked.
	strict := &tokenCheck{}
	if got := strict.refuse("abcdef.0123456789abcdef", time.Now()); got != refuseOpaque {
		t.Errorf("an opaque token when they are refused: %q", got)
	}
	if got := strict.refuse(saToken("https://anyone", []string{"anything"}), time.Now()); got != "" {
		t.Errorf("without known issuers and audiences: %q, want reviewed", got)
	}
}

// TestTokenCheckDiscovers: the apiserver's issuer, read in the background
// at the first token, is checked from then on; until it is, issuers are
// not refused; a failed read is not tried again at once.
func TestTokenCheckDiscovers(t *testing.T) {
	var asked atomic.Int64
	var fail atomic.Bool
	fail.Store(true)
	k := &tokenCheck{opaque: true, log: slog.New(slog.DiscardHandler), discover: func(context.Context) (string, error) {
		asked.Add(1)
		if fail.Load() {
			return "", errors.New("forbidden")
		}
		return testIssuer, nil
	}}
	other := saToken("https://elsewhere.example.com", []string{testAudience})
	for range 20 {
		if got := k.refuse(other, time.Now()); got != "" {
			t.Fatalf("before the issuer is known: %q, want reviewed", got)
		}
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		k.mu.Lock()
		asking := k.asking
		k.mu.Unlock()
		if asked.Load() > 0 && !asking {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the issuer was never asked for")
		}
		time.Sleep(time.Millisecond)
	}
	k.refuse(other, time.Now())
	if n := asked.Load(); n != 1 {
		t.Errorf("the issuer was asked for %d times after a failure, want once until %s later", n, discoverRetry)
	}
	fail.Store(false)
	if err := k.learn(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := k.refuse(other, time.Now()); got != refuseIssuer {
		t.Errorf("another issuer once the apiserver's is known: %q, want %q", got, refuseIssuer)
	}
	if got := k.refuse(saToken(testIssuer, []string{"any"}), time.Now()); got != "" {
		t.Errorf("the apiserver's issuer, no audience known: %q, want reviewed", got)
	}
}

// FuzzTokenCheck: whatever the token, refuse never panics, and a token it
// lets through that claims to be a JWT is one: its header and claims
// decode.
func FuzzTokenCheck(f *testing.F) {
	f.Add(saToken(testIssuer, []string{testAudience}))
	f.Add(saToken("x", 1))
	f.Add("eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
	f.Add("eyJ..")
	f.Add("abcdef.0123456789abcdef")
	f.Fuzz(func(t *testing.T, token string) {
		k := &tokenCheck{issuers: []string{testIssuer}, audiences: []string{testAudience}, opaque: true}
		if k.refuse(token, time.Now()) == "" && looksLikeJWT(token) {
			c, ok := parseJWT(token)
			if !ok || c.Issuer != LegacyIssuer && (c.Issuer != testIssuer || len(c.Audience) == 0) {
				t.Fatalf("%q reviewed: %+v %v", token, c, ok)
			}
		}
	})
}
