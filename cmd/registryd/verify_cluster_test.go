package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// TestVerifyRegistryObjects: spec.verify of a namespace's Registry reads
// its key from that namespace's Secret, and registryd serves the versions
// signed with it (naming the signer) and answers 422 for the others; a
// ClusterRegistry's policy comes from registryd's namespace, and a
// namespace cannot serve the same prefix without it (PrefixConflict), so
// it cannot weaken it for itself or anyone else.
func TestVerifyRegistryObjects(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	team, other := env.Namespace(t), env.Namespace(t)
	tok, otherTok := tenantAdmin(t, env, c, team), tenantAdmin(t, env, c, other)

	reg := ocitest.New(t, ocitest.Options{NoReferrers: true})
	p, err := oci.NewPusher(oci.Options{URL: reg.URL + "/acme/signed", PlainHTTP: true})
	must(t, err)
	ocitest.PushFS(t, p, mapFS(t, fixture))
	key, pub := opensslKey(t, t.TempDir(), "acme")
	// redis v1.0.3 is signed as dm sign signs it: over its content and
	// manifest digests, stored as a referrer (the tag fallback here).
	cd, md, err := p.Existing(ctx, "", "redis", "v1.0.3")
	must(t, err)
	b, err := sigstore.Sign(ctx, signature.Subject{Template: "redis", Version: "v1.0.3", Digest: cd, ManifestDigest: md}, sigstore.SignOptions{Key: key})
	must(t, err)
	_, err = p.PushSignature(ctx, "", "redis", "v1.0.3", md, b)
	must(t, err)
	pubPEM, _ := os.ReadFile(pub)

	must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "keys"}, Data: map[string][]byte{"cosign.pub": pubPEM}}))
	must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "cluster-keys"}, Data: map[string][]byte{"cosign.pub": pubPEM}}))
	secretReader(t, c, team, system, "keys")
	r := startReplica(t, replicaArgs(t, registrydAccount(t, env.Kubeconfig, c, system, "cluster-keys"), "http://127.0.0.1:1/", "--allowed-oci-host", reg.Host)...)

	ociSpec := &v1alpha1.RegistryOCI{URL: reg.URL + "/acme/signed", PlainHTTP: true}
	verify := &v1alpha1.RegistryVerify{KeySecretRef: &v1alpha1.SecretKeyReference{Name: "keys", Key: "cosign.pub"}, Required: true}
	signed := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "signed"}, Spec: v1alpha1.RegistrySpec{Prefix: "example.com/acme/signed", OCI: ociSpec, Verify: verify}}
	cluster := &v1alpha1.ClusterRegistry{ObjectMeta: metav1.ObjectMeta{Name: "verified-" + team}, Spec: v1alpha1.RegistrySpec{Prefix: "example.com/acme/" + team, OCI: ociSpec,
		Verify: &v1alpha1.RegistryVerify{KeySecretRef: &v1alpha1.SecretKeyReference{Name: "cluster-keys", Key: "cosign.pub"}, Required: true}}}
	weaker := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "weaker"}, Spec: v1alpha1.RegistrySpec{Prefix: "example.com/acme/" + team, OCI: ociSpec}}
	noRoot := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "noroot"}, Spec: v1alpha1.RegistrySpec{Prefix: "example.com/acme/noroot", OCI: ociSpec,
		Verify: &v1alpha1.RegistryVerify{Identities: []v1alpha1.OIDCIdentity{{Issuer: "https://token.actions.githubusercontent.com", Subject: ".*"}}}}}
	for _, o := range []client.Object{signed, cluster, noRoot} {
		must(t, c.Create(ctx, o))
	}
	wait := func(obj client.Object, typ string, st metav1.ConditionStatus, reason, msg string) {
		t.Helper()
		waitCondition(t, c, obj, typ, st, reason, msg)
	}
	wait(signed, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")
	wait(cluster, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")
	wait(noRoot, v1alpha1.ConditionStalled, metav1.ConditionTrue, "InvalidSpec", "trusted root")
	must(t, c.Create(ctx, weaker))
	wait(weaker, v1alpha1.ConditionStalled, metav1.ConditionTrue, "PrefixConflict", "")

	resolveAs := func(token, ns, ref string) (int, string) {
		resp, err := r.getAs("/v1/resolve?ref="+url.QueryEscape(ref), token, ns)
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		token, ns, ref string
		code           int
		want           string
	}{
		{tok, team, "example.com/acme/signed/redis:v1.0", 200, `"signer":"key SHA256:`},
		{tok, team, "example.com/acme/signed/redis:v1.1", 422, "(NoSignature)"},
		{tok, team, "example.com/acme/signed/redis:v1.1", 422, "example.com/acme/signed/redis:v1.1.0@sha256:"},
		{otherTok, other, "example.com/acme/" + team + "/redis:v1.0", 200, `"signer":"key SHA256:`},
		{otherTok, other, "example.com/acme/" + team + "/redis:v1.1", 422, "(NoSignature)"},
		{"", "", "example.com/acme/" + team + "/apps/shop:v2", 422, "(NoSignature)"},
	} {
		code, body := resolveAs(tt.token, tt.ns, tt.ref)
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s as %q: %d %s; want %d %q", tt.ref, tt.ns, code, body, tt.code, tt.want)
		}
	}
	var res struct{ Error string }
	_, body := resolveAs(tok, team, "example.com/acme/signed/redis:v1.1")
	json.Unmarshal([]byte(body), &res)
	if res.Error == "" {
		t.Errorf("422 without an error: %s", body)
	}
}

// waitCondition waits until obj (a Registry or ClusterRegistry) has
// condition typ with status st, reason (if set) and a message containing
// msg.
func waitCondition(t *testing.T, c client.Client, obj client.Object, typ string, st metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	cond := func() *metav1.Condition {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil
		}
		switch o := obj.(type) {
		case *v1alpha1.Registry:
			return apimeta.FindStatusCondition(o.Status.Conditions, typ)
		case *v1alpha1.ClusterRegistry:
			return apimeta.FindStatusCondition(o.Status.Conditions, typ)
		}
		return nil
	}
	var last *metav1.Condition
	waitForf(t, 90*time.Second, func() string {
		return fmt.Sprintf("%s: %s=%s %s %q (last %+v)", obj.GetName(), typ, st, reason, msg, last)
	}, func() bool {
		last = cond()
		return last != nil && last.Status == st && (reason == "" || last.Reason == reason) && strings.Contains(last.Message, msg)
	})
}
