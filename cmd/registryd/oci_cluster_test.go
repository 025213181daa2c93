package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/fetch/oci"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/index"
)

// TestOCIRegistryObjects: a namespace's Registry with spec.oci is served
// from an OCI registry that wants credentials, read with its own
// namespace's dockerconfigjson Secret, visible to that namespace only; a
// Registry of another namespace naming the same registry without the
// Secret reads nothing of it; a host registryd may not reach is refused
// before anything is sent; spec.mirror pushes the registry's versions.
func TestOCIRegistryObjects(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	tokA, tokB := tenantAdmin(t, env, c, teamA), tenantAdmin(t, env, c, teamB)

	private := ocitest.New(t, ocitest.Options{Username: "alice", Password: "s3cret"})
	dockerConfig := `{"auths":{"` + private.Host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")) + `"}}}`
	auth, err := oci.DockerConfigAuth([]byte(dockerConfig), private.Host)
	must(t, err)
	p, err := oci.NewPusher(oci.Options{URL: private.URL + "/acme/private", PlainHTTP: true, Auth: auth})
	must(t, err)
	ocitest.PushFS(t, p, mapFS(t, fixture))
	mirror := ocitest.New(t, ocitest.Options{})
	evil := ocitest.New(t, ocitest.Options{})

	must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "creds"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)}}))
	secretReader(t, c, teamA, system, "creds")
	r := startReplica(t, replicaArgs(t, registrydAccount(t, env.Kubeconfig, c, system), "http://127.0.0.1:1/",
		"--allowed-oci-host", private.Host, "--allowed-oci-host", mirror.Host)...)

	regA := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "private"}, Spec: v1alpha1.RegistrySpec{
		Prefix: "example.com/acme/private",
		OCI:    &v1alpha1.RegistryOCI{URL: private.URL + "/acme/private", PlainHTTP: true, CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "creds"}},
		Mirror: &v1alpha1.RegistryOCI{URL: mirror.URL + "/copy", PlainHTTP: true},
	}}
	regB := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "steal"}, Spec: v1alpha1.RegistrySpec{
		Prefix: "example.com/acme/private",
		OCI:    &v1alpha1.RegistryOCI{URL: private.URL + "/acme/private", PlainHTTP: true},
	}}
	regEvil := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "evil"}, Spec: v1alpha1.RegistrySpec{
		Prefix: "example.com/acme/evil",
		OCI:    &v1alpha1.RegistryOCI{URL: evil.URL + "/x", PlainHTTP: true},
	}}
	for _, o := range []client.Object{regA, regB, regEvil} {
		must(t, c.Create(ctx, o))
	}
	wait := func(obj client.Object, typ string, st metav1.ConditionStatus, reason, msg string) {
		t.Helper()
		waitCondition(t, c, obj, typ, st, reason, msg)
	}
	wait(regA, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")
	wait(regB, v1alpha1.ConditionReady, metav1.ConditionFalse, "IndexFailed", "refused the credentials")
	wait(regEvil, v1alpha1.ConditionStalled, metav1.ConditionTrue, "HostNotAllowed", evil.Host)
	if _, n := evil.Requests(); n != 0 {
		t.Errorf("registryd sent %d requests to a host it may not reach", n)
	}

	resolveAs := func(token, ns, ref string) (int, api.Resolution) {
		resp, err := r.getAs("/v1/resolve?ref="+url.QueryEscape(ref), token, ns)
		must(t, err)
		defer resp.Body.Close()
		var res api.Resolution
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &res)
		return resp.StatusCode, res
	}
	code, res := resolveAs(tokA, teamA, "example.com/acme/private/redis:v1.0")
	if code != 200 || res.Resolved != "example.com/acme/private/redis:v1.0.3" || res.Namespace != teamA {
		t.Fatalf("team-a resolves %d %+v", code, res)
	}
	// The same content digest as the files have in a directory.
	local := &index.Registry{Name: "example.com/acme/private", Source: fetch.NewLocal(mapFS(t, fixture))}
	must(t, local.Refresh(ctx))
	lt, _ := local.Snapshot().Template("", "redis")
	if want := lt.Versions[1].Digest; res.Digest != want {
		t.Errorf("digest %s, the directory's %s", res.Digest, want)
	}
	// Anonymous clients and team-b get nothing of it: team-b's own
	// Registry of the same prefix, without the credential, has no index
	// (503), never team-a's.
	for _, who := range []struct {
		token, ns string
		code      int
	}{{"", "", 404}, {tokB, teamA, 404}, {tokB, teamB, 503}} {
		if code, res := resolveAs(who.token, who.ns, "example.com/acme/private/redis:v1.0"); code != who.code || res.Digest != "" {
			t.Errorf("namespace %q: %d %+v, want %d", who.ns, code, res, who.code)
		}
	}

	// spec.mirror: every version of team-a's registry is pushed.
	src, err := oci.NewSource(oci.SourceOptions{Options: oci.Options{URL: mirror.URL + "/copy", PlainHTTP: true, Keychain: oci.DockerKeychain(t.TempDir())}})
	must(t, err)
	waitFor(t, 60*time.Second, "the mirror to hold 5 versions", func() bool {
		tree, err := src.Tree(ctx, nil)
		return err == nil && index.Build("x.io/a/b", tree, nil).Versions == 5
	})
}
