package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/controller/api/v1alpha1"
	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// TestHostileTenant (issue 28) tries registryd on a shared cluster as a
// hostile tenant would: the admin of namespace team-b, against registryd
// and dm-controller running with exactly the rights registry-example's
// registryd:v1 and dm-controller:v1.3 grant (dm-controller with a real
// ServiceAccount token, which registryd reviews), GitHub test servers on
// loopback, and registryd restarted in the middle of each attack. Each
// attack of the issue gets nothing of team-a and changes nothing team-a or
// an anonymous client resolves:
//
//  1. a Registry naming team-a's blob SHAs, from a server that serves no
//     content, gets none of team-a's files;
//  2. a Registry of team-a's prefix with a dead source never loads team-a's
//     persisted snapshot, and team-a's recreated Registry serves again;
//  3. a Registry claiming a ClusterRegistry's prefix first is refused
//     (PrefixConflict) and changes nothing anyone else resolves;
//  4. team-a's private registry answers neither anonymous clients nor
//     team-b's token: 404 everywhere, in listings, the catalog, changes,
//     /readyz; /metrics needs a token allowed to read it;
//  5. bounds: too many entries, too many bytes (TooLarge, naming the flag),
//     a 20 ms refresh interval (clamped), an apiURL registryd may not reach
//     (APINotAllowed, no request sent), and a deleted Registry's cache
//     directory gone.
func TestHostileTenant(t *testing.T) {
	env, c := startCluster(t)
	ctx := context.Background()
	// Processes started in a subtest belong to the whole test.
	top := t
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	for _, ns := range []string{teamA, teamB} {
		configMapDeployer(t, c, ns)
	}
	tokA, tokB := tenantAdmin(t, env, c, teamA), tenantAdmin(t, env, c, teamB)

	const secretText = "team-a-private-text-4711"
	cm := func(text string) string {
		return "resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {text: " + text + "}}\n"
	}
	private := map[string]string{"cm/v1.0.0/cm.jinja": cm(secretText)}
	// team-a's GitHub: a private repository, read with a token.
	ghA := githubtest.New(map[string]string{"acme/private": githubtest.NewRepoFS(t, mapFS(t, private))})
	defer ghA.Close()
	ghA.RequireToken("team-a-token")
	// The platform's GitHub, for ClusterRegistries.
	ghShared := githubtest.New(map[string]string{
		"acme/templates": githubtest.NewRepoFS(t, mapFS(t, map[string]string{"cm/v1.0.0/cm.jinja": cm("platform")})),
	})
	defer ghShared.Close()
	// team-b's own server: the same tree as team-a's (so the same blob
	// SHAs), no content; and repositories over registryd's bounds.
	big := map[string]string{}
	for i := range 60 {
		big[fmt.Sprintf("t%02d/v1.0.0/t.jinja", i)] = cm("x")
	}
	ghB := githubtest.New(map[string]string{
		"acme/private": githubtest.NewRepoFS(t, mapFS(t, private)),
		"acme/big":     githubtest.NewRepoFS(t, mapFS(t, big)),
		"acme/heavy":   githubtest.NewRepoFS(t, mapFS(t, map[string]string{"h/v1.0.0/h.jinja": cm(strings.Repeat("y", 100<<10))})),
	})
	defer ghB.Close()
	ghB.SetFaults(githubtest.Faults{HideBlobs: true})
	// A server of its own for the registry asking for a 20 ms refresh, so
	// that its requests are counted alone.
	ghEager := githubtest.New(map[string]string{"acme/eager": githubtest.NewRepoFS(t, mapFS(t, map[string]string{"e/v1.0.0/e.jinja": cm("e")}))})
	defer ghEager.Close()
	// A server registryd is not allowed to reach.
	ghEvil := githubtest.New(map[string]string{"acme/private": githubtest.NewRepoFS(t, mapFS(t, private))})
	defer ghEvil.Close()

	cache := t.TempDir()
	r := startReplica(t, replicaArgs(t, registrydAccount(t, env.Kubeconfig, c, system), ghShared.URL,
		"--allowed-github-api", ghShared.URL, "--allowed-github-api", ghA.URL, "--allowed-github-api", ghB.URL, "--allowed-github-api", ghEager.URL,
		"--max-tree-entries", "50", "--max-registry-bytes", "64KiB", "--min-refresh-interval", "1m", "--cache-dir", cache)...)
	apply := func(t *testing.T, objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	registry := func(ns, name, owner, repo, apiURL string, mod func(*v1alpha1.RegistrySpec)) *v1alpha1.Registry {
		reg := &v1alpha1.Registry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: owner, Repo: repo, Branch: "main", APIURL: apiURL}}}
		if mod != nil {
			mod(&reg.Spec)
		}
		return reg
	}
	condition := func(obj client.Object, typ string) *metav1.Condition {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil
		}
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *v1alpha1.Registry:
			conds = o.Status.Conditions
		case *v1alpha1.ClusterRegistry:
			conds = o.Status.Conditions
		case *v1alpha1.TemplateInstance:
			conds = o.Status.Conditions
		}
		return apimeta.FindStatusCondition(conds, typ)
	}
	waitCondition := func(t *testing.T, obj client.Object, typ string, st metav1.ConditionStatus, reason, msg string) {
		t.Helper()
		var last *metav1.Condition
		waitForf(t, 90*time.Second, func() string {
			return fmt.Sprintf("%s %s: %s=%s %s %q (last: %+v)", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), typ, st, reason, msg, last)
		}, func() bool {
			last = condition(obj, typ)
			return last != nil && last.Status == st && (reason == "" || last.Reason == reason) && strings.Contains(last.Message, msg)
		})
	}
	// get asks registryd as a caller: token and namespace may be "".
	get := func(t *testing.T, path, token, ns string) (int, string) {
		t.Helper()
		resp, err := r.getAs(path, token, ns)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// team-a's private Registry, and the platform's ClusterRegistry.
	apply(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "github"}, StringData: map[string]string{"token": "team-a-token"}})
	secretReader(t, c, teamA, system, "github")
	regA := registry(teamA, "private", "acme", "private", ghA.URL, func(s *v1alpha1.RegistrySpec) {
		s.TokenSecretRef = &v1alpha1.SecretKeyReference{Name: "github", Key: "token"}
	})
	platform := &v1alpha1.ClusterRegistry{ObjectMeta: metav1.ObjectMeta{Name: "templates"},
		Spec: v1alpha1.RegistrySpec{GitHub: v1alpha1.RegistryGitHub{Owner: "acme", Repo: "templates", Branch: "main"}}}
	apply(t, regA)
	waitCondition(t, regA, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")

	// dm-controller, as its template's account, asking registryd.
	startController(t, env, c, r.url)
	instance := func(t *testing.T, ns, name, ref string) *v1alpha1.TemplateInstance {
		ti := &v1alpha1.TemplateInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.TemplateInstanceSpec{Template: ref}}
		apply(t, ti)
		return ti
	}
	configMapText := func(ns, name string) string {
		got := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return ""
		}
		return got.Data["text"]
	}
	own := instance(t, teamA, "own", "github.com/acme/private/cm:v1")
	waitCondition(t, own, v1alpha1.ConditionReady, metav1.ConditionTrue, "", "")
	if got := configMapText(teamA, "own"); got != secretText {
		t.Fatalf("team-a's own instance made %q", got)
	}

	ref := url.QueryEscape("github.com/acme/private/cm:v1")
	privatePaths := []string{
		"/v1/resolve?ref=" + ref, "/v1/template?ref=" + ref, "/v1/versions?ref=" + url.QueryEscape("github.com/acme/private/cm"),
		"/v1/file?ref=" + ref + "&path=cm.jinja", "/v1/registries/github.com/acme/private",
		"/r/github.com/acme/private", "/t/github.com/acme/private/cm:v1",
	}
	listings := []string{"/v1/registries", "/v1/templates", "/v1/search?q=cm", "/v1/collections", "/v1/index/changes", "/", "/search?q=cm", "/readyz"}
	attack4 := func(t *testing.T, phase string) {
		t.Helper()
		// team-a's admin sees its registry (once the restarted registryd
		// serves it: the refusals below mean nothing before).
		waitForf(t, 60*time.Second, func() string { return phase + ": team-a's admin to read its own file" }, func() bool {
			code, body := get(t, "/v1/file?ref="+ref+"&path=cm.jinja", tokA, teamA)
			return code == 200 && strings.Contains(body, secretText)
		})
		for _, who := range []struct{ name, token, ns string }{
			{"anonymous", "", ""},
			{"anonymous naming team-a", "", teamA},
			{"team-b's admin naming team-a", tokB, teamA},
			{"team-b's admin naming team-b", tokB, teamB},
			{"a made-up token naming team-a", "made-up.token.value", teamA},
		} {
			for _, p := range privatePaths {
				code, body := get(t, p, who.token, who.ns)
				if code != http.StatusNotFound || strings.Contains(body, secretText) || strings.Contains(body, teamA) {
					t.Errorf("%s: %s: GET %s = %d, want 404 naming nothing of team-a: %.300s", phase, who.name, p, code, body)
				}
			}
			for _, p := range listings {
				if code, body := get(t, p, who.token, who.ns); strings.Contains(body, "acme/private") || strings.Contains(body, teamA) || strings.Contains(body, secretText) {
					t.Errorf("%s: %s: GET %s (%d) shows team-a's registry: %.500s", phase, who.name, p, code, body)
				}
			}
		}
		// /metrics needs a token that may read it, which no tenant's has.
		if code, _ := get(t, "/metrics", "", ""); code != http.StatusUnauthorized {
			t.Errorf("%s: anonymous /metrics: %d, want 401", phase, code)
		}
		if code, _ := get(t, "/metrics", tokB, ""); code != http.StatusForbidden {
			t.Errorf("%s: team-b's /metrics: %d, want 403", phase, code)
		}
	}

	t.Run("4 private templates need the namespace's credentials", func(t *testing.T) {
		attack4(t, "before a restart")
		r = r.restart(top)
		attack4(t, "after a restart")
	})

	t.Run("1 another tenant's blob SHAs get no content", func(t *testing.T) {
		// team-a's files are in registryd's cache (memory and disk, read
		// with team-a's token); a restart keeps the disk's.
		r = r.restart(top)
		regB := registry(teamB, "private", "acme", "private", ghB.URL, nil)
		apply(t, regB)
		waitCondition(t, regB, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")
		ghB.ResetCounts()
		stolen := instance(t, teamB, "stolen", "github.com/acme/private/cm:v1")
		waitCondition(t, stolen, v1alpha1.ConditionReady, metav1.ConditionFalse, "", "")
		for _, probe := range []func() string{
			func() string { return configMapText(teamB, "stolen") },
			func() string { _, body := get(t, "/v1/file?ref="+ref+"&path=cm.jinja", tokB, teamB); return body },
			func() string { return expandAs(t, r.url, tokB, teamB, "github.com/acme/private/cm:v1") },
		} {
			if got := probe(); strings.Contains(got, secretText) {
				t.Errorf("team-b got team-a's private text: %.300s", got)
			}
		}
		if ghB.RequestsTo("blob") == 0 {
			t.Error("team-b's files were not asked of team-b's own server")
		}
		// team-a is untouched.
		if got := configMapText(teamA, "own"); got != secretText {
			t.Errorf("team-a's instance now holds %q", got)
		}
		must(t, c.Delete(ctx, stolen))
	})

	t.Run("2 snapshots belong to their registry", func(t *testing.T) {
		// registryd is down while team-a deletes its Registry and team-b
		// points its own at a dead server: at start, team-b's registry
		// has nothing to serve, certainly not team-a's snapshot.
		_ = r.cmd.Process.Signal(os.Interrupt)
		_ = r.cmd.Wait()
		must(t, c.Delete(ctx, regA))
		dead := githubtest.New(map[string]string{})
		deadURL := dead.URL
		dead.Close()
		regB := &v1alpha1.Registry{}
		must(t, c.Get(ctx, client.ObjectKey{Namespace: teamB, Name: "private"}, regB))
		regB.Spec.GitHub.APIURL = deadURL
		must(t, c.Update(ctx, regB))
		args := append([]string(nil), r.args...)
		r = startReplicaAt(top, strings.TrimPrefix(r.url, "http://"), append(args, "--allowed-github-api", deadURL)...)
		waitCondition(t, regB, v1alpha1.ConditionReady, metav1.ConditionFalse, "IndexFailed", "")
		for _, ns := range []string{teamA, teamB} {
			tok := map[string]string{teamA: tokA, teamB: tokB}[ns]
			if code, body := get(t, "/v1/file?ref="+ref+"&path=cm.jinja", tok, ns); code == 200 || strings.Contains(body, secretText) {
				t.Errorf("%s reads %s after team-a's Registry went: %d %.200s", ns, ref, code, body)
			}
		}
		// team-a's new Registry of the same prefix serves again: another
		// namespace's object never holds it back.
		regA = registry(teamA, "private", "acme", "private", ghA.URL, func(s *v1alpha1.RegistrySpec) {
			s.TokenSecretRef = &v1alpha1.SecretKeyReference{Name: "github", Key: "token"}
		})
		apply(t, regA)
		waitCondition(t, regA, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")
		if code, body := get(t, "/v1/file?ref="+ref+"&path=cm.jinja", tokA, teamA); code != 200 || !strings.Contains(body, secretText) {
			t.Errorf("team-a's recreated Registry: %d %.200s", code, body)
		}
	})

	t.Run("3 a Registry cannot take a ClusterRegistry's prefix", func(t *testing.T) {
		squat := registry(teamB, "squat", "acme", "private", ghB.URL, func(s *v1alpha1.RegistrySpec) { s.Prefix = "github.com/acme/templates" })
		apply(t, squat)
		waitCondition(t, squat, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")
		platformRef := "github.com/acme/templates/cm:v1"
		// Before the platform serves the prefix, the squat is team-b's
		// alone: others resolve nothing through it.
		before := instance(t, teamA, "platform", platformRef)
		waitCondition(t, before, v1alpha1.ConditionReady, metav1.ConditionFalse, "", "not configured")
		if code, body := get(t, "/v1/resolve?ref="+url.QueryEscape(platformRef), "", ""); code != 404 {
			t.Errorf("anonymous resolve of the squatted prefix: %d %s", code, body)
		}
		r = r.restart(top)
		apply(t, platform)
		waitCondition(t, platform, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "")
		waitCondition(t, squat, v1alpha1.ConditionStalled, metav1.ConditionTrue, "PrefixConflict", "ClusterRegistry/templates")
		waitForf(t, 90*time.Second, func() string {
			return "team-a's platform instance to hold the platform's text: " + configMapText(teamA, "platform")
		}, func() bool {
			return configMapText(teamA, "platform") == "platform"
		})
		r = r.restart(top)
		waitCondition(t, squat, v1alpha1.ConditionStalled, metav1.ConditionTrue, "PrefixConflict", "")
		var res api.Resolution
		waitForf(t, 60*time.Second, func() string { return "the restarted registryd to resolve " + platformRef }, func() bool {
			code, body := get(t, "/v1/resolve?ref="+url.QueryEscape(platformRef), "", "")
			return code == 200 && json.Unmarshal([]byte(body), &res) == nil
		})
		for _, who := range []struct{ token, ns string }{{"", ""}, {tokA, teamA}, {tokB, teamB}} {
			if got := expandAs(t, r.url, who.token, who.ns, platformRef); !strings.Contains(got, "platform") {
				t.Errorf("POST /v1/expand of %s as %q: %.300s", platformRef, who.ns, got)
			}
			// The page shows the platform's version, by its digest.
			if code, body := get(t, "/t/github.com/acme/templates/cm:v1", who.token, who.ns); code != 200 || !strings.Contains(body, res.Digest) {
				t.Errorf("catalog page of %s as %q: %d, without the platform's digest %s", platformRef, who.ns, code, res.Digest)
			}
		}
		must(t, c.Delete(ctx, squat))
	})

	t.Run("5 every bound holds", func(t *testing.T) {
		entries := registry(teamB, "big", "acme", "big", ghB.URL, nil)
		heavy := registry(teamB, "heavy", "acme", "heavy", ghB.URL, nil)
		ghEvil.ResetCounts()
		ssrf := registry(teamB, "ssrf", "acme", "private", ghEvil.URL, func(s *v1alpha1.RegistrySpec) { s.Prefix = "github.com/acme/ssrf" })
		eager := registry(teamB, "eager", "acme", "eager", ghEager.URL, func(s *v1alpha1.RegistrySpec) {
			s.RefreshInterval = &metav1.Duration{Duration: 20 * time.Millisecond}
		})
		apply(t, entries, heavy, ssrf, eager)
		r = r.restart(top)
		waitCondition(t, entries, v1alpha1.ConditionReady, metav1.ConditionFalse, "TooLarge", "(registryd's --max-tree-entries)")
		waitCondition(t, heavy, v1alpha1.ConditionReady, metav1.ConditionFalse, "TooLarge", "(registryd's --max-registry-bytes)")
		waitCondition(t, ssrf, v1alpha1.ConditionStalled, metav1.ConditionTrue, "APINotAllowed", "--allowed-github-api")
		waitCondition(t, eager, v1alpha1.ConditionReady, metav1.ConditionTrue, "Indexed", "below registryd's --min-refresh-interval: refreshing every 1m0s")
		if n := ghEvil.Requests(); n != 0 {
			t.Errorf("registryd sent %d requests to a GitHub API it may not reach", n)
		}
		// 20 ms asked for: once indexed, 3 seconds without a request (a
		// bound on how little it asks, not a timing: it may ask less).
		ghEager.ResetCounts()
		time.Sleep(3 * time.Second)
		if n := ghEager.Requests(); n > 0 {
			t.Errorf("%d GitHub requests in 3 seconds for a registry clamped to a 1-minute refresh", n)
		}
		// A registry over a bound is not asked again before its interval
		// either: its refusals would spend the rate limit.
		ghB.ResetCounts()
		time.Sleep(3 * time.Second)
		if n := ghB.RequestsTo("tree"); n > 0 {
			t.Errorf("%d tree requests in 3 seconds for registries over their bounds", n)
		}
		if code, _ := get(t, "/v1/resolve?ref="+url.QueryEscape("github.com/acme/big/t00:v1"), tokB, teamB); code == 200 {
			t.Error("a registry over its bound is served")
		}
		// A deleted Registry leaves no directory behind.
		dirs := func() int {
			m, _ := filepath.Glob(filepath.Join(cache, "registries", "*"))
			return len(m)
		}
		n := dirs()
		must(t, c.Delete(ctx, eager))
		waitForf(t, 30*time.Second, func() string { return fmt.Sprintf("%d cache directories, want %d", dirs(), n-1) }, func() bool { return dirs() == n-1 })
	})
}

// configMapDeployer makes ServiceAccount deployer in ns, allowed to manage
// ConfigMaps and dm's history Secrets: the account the controller applies
// instances as.
func configMapDeployer(t *testing.T, c client.Client, ns string) {
	t.Helper()
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "patch", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}},
	} {
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// tenantAdmin makes the admin of namespace ns, a ServiceAccount allowed
// everything dm's kinds, Secrets and ConfigMaps there, and returns its
// token (a real one, which the apiserver reviews).
func tenantAdmin(t testing.TB, env *kubetest.Env, c client.Client, ns string) string {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admin"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admin"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"dm.io"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"*"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admin"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "admin", Namespace: ns}}},
	} {
		must(t, c.Create(ctx, obj))
	}
	return accountToken(t, env, ns, "admin")
}

// accountToken returns a token of ServiceAccount ns/name (TokenRequest).
func accountToken(t testing.TB, env *kubetest.Env, ns, name string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tr *authenticationv1.TokenRequest
	waitFor(t, 30*time.Second, "a token of "+ns+"/"+name, func() bool {
		tr, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
		return err == nil
	})
	return tr.Status.Token
}

// startController runs dm-controller until the test ends, asking the
// registryd at server, with exactly the rights registry-example's
// dm-controller:v1.3 grants its ServiceAccount (whose real token it sends
// to registryd, as in a pod) and applying as each namespace's deployer.
func startController(t *testing.T, env *kubetest.Env, c client.Client, server string) {
	t.Helper()
	ctx := context.Background()
	applyTemplateRBAC(t, c, "dm-controller:v1.3", system, map[string]any{"server": server, "defaultServiceAccount": "deployer"})
	rc := &rest.Config{Host: env.Server, BearerToken: accountToken(t, env, system, "dm-controller"),
		TLSClientConfig: rest.TLSClientConfig{CAData: env.CAData}}
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := controller.Run(cctx, controller.RunConfig{REST: rc, Server: server, MetricsAddr: "0", HealthAddr: "0",
			Options: controller.Options{DefaultServiceAccount: "deployer"}}); err != nil {
			t.Errorf("dm-controller: %v", err)
		}
	}()
	t.Cleanup(func() {
		stop()
		wg.Wait()
	})
}

// expandAs posts ref to registryd's POST /v1/expand as a caller (token
// and namespace may be "") and returns the answer's body.
func expandAs(t testing.TB, server, token, ns, ref string) string {
	t.Helper()
	body, _ := json.Marshal(api.ExpandRequest{Ref: ref, Deployment: "x", Namespace: ns})
	u := server + "/v1/expand"
	if ns != "" {
		u += "?namespace=" + ns
	}
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
