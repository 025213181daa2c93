package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/fetch/oci/ocitest"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// TestVerificationFailed: with --verify-key and --require-signature,
// dm-controller applies an instance of a signed version and stalls one of
// an unsigned version with reason VerificationFailed, naming the version
// and why, applying nothing of it.
func TestVerificationFailed(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	deployer(t, env, ns)
	reg := ocitest.New(t, ocitest.Options{})
	p := ocitest.NewPusher(t, reg.URL+"/acme/t")
	tmpl := func(data string) []byte {
		return []byte("resources:\n- name: cm\n  type: ConfigMap\n  properties: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"{{ env['deployment'] }}\"}, data: {v: " + data + "}}\n")
	}
	ocitest.PushFS(t, p, fstest.MapFS{
		"cm/v1.0.0/cm.jinja": {Data: tmpl("signed")}, "cm/v1.0.0/example.yaml": {Data: []byte("resources: []\n")},
		"cm/v2.0.0/cm.jinja": {Data: tmpl("unsigned")}, "cm/v2.0.0/example.yaml": {Data: []byte("resources: []\n")},
	})
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	for _, args := range [][]string{{"ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", priv}, {"ec", "-in", priv, "-pubout", "-out", pub}} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl: %v %s", err, out)
		}
	}
	kb, _ := os.ReadFile(priv)
	key, err := sigstore.ParsePrivateKey(kb, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cd, md, err := p.Existing(ctx, "", "cm", "v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sigstore.Sign(ctx, signature.Subject{Template: "cm", Version: "v1.0.0", Digest: cd, ManifestDigest: md}, sigstore.SignOptions{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PushSignature(ctx, "", "cm", "v1.0.0", md, b); err != nil {
		t.Fatal(err)
	}

	logs, stop := startController(t, env, "--registry-oci", "github.com/acme/t="+reg.URL+"/acme/t", "--plain-http", "--verify-key", pub, "--require-signature")
	for name, ref := range map[string]string{"signed": "cm:v1", "unsigned": "cm:v2"} {
		ti := map[string]any{"apiVersion": "dm.io/v1alpha1", "kind": "TemplateInstance",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"template": ref}}
		if code, body, err := env.Do(ctx, env.AdminToken, http.MethodPost, "/apis/dm.io/v1alpha1/namespaces/"+ns+"/templateinstances", ti); err != nil || code/100 != 2 {
			t.Fatalf("creating the instance: %d %s %v", code, body, err)
		}
	}
	waitLogged(t, logs, "the signed instance's ConfigMap", func() bool {
		code, _, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/signed", nil)
		return err == nil && code == http.StatusOK
	})
	var stalled string
	waitLogged(t, logs, "the unsigned instance Stalled, VerificationFailed", func() bool {
		_, body, err := env.Do(ctx, env.AdminToken, http.MethodGet, "/apis/dm.io/v1alpha1/namespaces/"+ns+"/templateinstances/unsigned", nil)
		if err != nil {
			return false
		}
		var ti struct {
			Status struct {
				Conditions []struct{ Type, Status, Reason, Message string }
			}
		}
		json.Unmarshal(body, &ti)
		for _, c := range ti.Status.Conditions {
			if c.Type == "Stalled" && c.Status == "True" && c.Reason == "VerificationFailed" {
				stalled = c.Message
				return true
			}
		}
		return false
	})
	if !strings.Contains(stalled, "github.com/acme/t/cm:v2.0.0@sha256:") || !strings.Contains(stalled, "(NoSignature)") {
		t.Errorf("Stalled message %q does not name the version and why", stalled)
	}
	if code, _, _ := env.Do(ctx, env.AdminToken, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/unsigned", nil); code != http.StatusNotFound {
		t.Errorf("the unsigned instance's ConfigMap: %d, want 404 (nothing applied)", code)
	}
	stop()
}
