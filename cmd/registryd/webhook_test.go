package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/fetch/githubtest"
)

// TestWebhook: with REGISTRYD_WEBHOOK_SECRET set, a signed push to the
// tracked branch of a --github registry serves the new commit within 5
// seconds; a bad signature answers 401; without a secret the endpoint is
// 404. The secret never reaches the log.
func TestWebhook(t *testing.T) {
	const secret = "webhook-secret-314"
	repo := githubtest.NewRepoFS(t, mapFS(t, fixture))
	gh := githubtest.New(map[string]string{"acme/tpl": repo})
	defer gh.Close()
	args := []string{"--github", "acme/tpl@main", "--github-api", gh.URL, "--refresh", "1h", "--cache-dir", t.TempDir()}

	post := func(d *daemon, sig string, body []byte) (int, string) {
		req, _ := http.NewRequest("POST", d.url+"/v1/webhooks/github", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	sign := hookSignature
	body := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"acme/tpl","default_branch":"main"}}`)

	d := start(t, args, map[string]string{"REGISTRYD_WEBHOOK_SECRET": secret})
	if code, b := post(d, sign("wrong", body), body); code != 401 {
		t.Errorf("bad signature: %d %s, want 401", code, b)
	}
	head := githubtest.Commit(t, repo, map[string]string{"redis/v1.0.9/redis.jinja": "kind: d\n"})
	if code, b := post(d, sign(secret, body), body); code/100 != 2 {
		t.Fatalf("signed push: %d %s", code, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.resolve(t, "redis:v1.0").Resolved != "github.com/acme/tpl/redis:v1.0.9" {
		if time.Now().After(deadline) {
			t.Fatalf("commit %s not served within 5s of the push", head)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.stderr.String(), secret) {
		t.Errorf("the secret appears in the log:\n%s", d.stderr)
	}

	d = start(t, args, nil)
	if code, b := post(d, sign(secret, body), body); code != 404 {
		t.Errorf("without a secret: %d %s, want 404", code, b)
	}
	d.stop()
}

// TestWebhookConfig: webhook secrets come from the environment variables
// the configuration names, globally and per registry.
func TestWebhookConfig(t *testing.T) {
	env := map[string]string{"G": "global-secret", "R": "registry-secret"}
	getenv := func(k string) string { return env[k] }
	c := &Config{WebhookSecretEnv: "G", Registries: []RegistryConfig{
		{GitHub: "acme/tpl", WebhookSecretEnv: "R"},
		{GitHub: "acme/other"},
	}}
	secrets := map[string]string{}
	specs, err := c.specs(getenv, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || secrets["github.com/acme/tpl"] != "registry-secret" || secrets["github.com/acme/other"] != "" {
		t.Errorf("secrets %v", secrets)
	}
	c.Registries[1].WebhookSecretEnv = "UNSET"
	if _, err := c.specs(getenv, map[string]string{}); err == nil || !strings.Contains(err.Error(), "webhook_secret_env UNSET is not set") || strings.Contains(err.Error(), "secret-") {
		t.Errorf("unset variable: %v", err)
	}
}

// TestWebhookMaxBodyFlag: --webhook-max-body sets the largest webhook
// body; a larger one is answered 413, and a malformed size is an error.
func TestWebhookMaxBodyFlag(t *testing.T) {
	repo := githubtest.NewRepoFS(t, mapFS(t, fixture))
	gh := githubtest.New(map[string]string{"acme/tpl": repo})
	defer gh.Close()
	args := []string{"--github", "acme/tpl@main", "--github-api", gh.URL, "--refresh", "1h", "--cache-dir", t.TempDir()}
	d := start(t, append(args, "--webhook-max-body", "1KiB"), map[string]string{"REGISTRYD_WEBHOOK_SECRET": "s"})
	body := bytes.Repeat([]byte(" "), 2<<10)
	req, _ := http.NewRequest("POST", d.url+"/v1/webhooks/github", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "1024-byte limit") {
		t.Errorf("2 KiB over --webhook-max-body 1KiB: %d %s, want 413", resp.StatusCode, b)
	}
	d.stop()
	err = run(t.Context(), append(args, "--webhook-max-body", "lots"), env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "--webhook-max-body") {
		t.Errorf("--webhook-max-body lots: %v", err)
	}
}
