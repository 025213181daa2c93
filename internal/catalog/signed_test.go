package catalog

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dm "github.com/dmhq/dm"
	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
)

// TestSignedVersions: under a registry's policy the catalog shows who
// signed a version, marks the siblings the policy refuses with the reason,
// and a refused version's page says why it is not served.
func TestSignedVersions(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, dm.ExampleRegistry()); err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tree, err := fetch.NewLocalDir(dir, nil).Tree(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := os.ReadFile(filepath.Join(dir, index.MetadataFile))
	tp, _ := index.Build(dm.ExampleRegistryPrefix, tree, meta).Template("", "redis")
	for _, v := range tp.Versions {
		if v.Semver == "v1.1.0" {
			b, err := sigstore.Sign(context.Background(), signature.SubjectOf(tp, v, ""), sigstore.SignOptions{Key: key})
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, v.Path, index.SignatureFile), b, 0o644)
		}
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	e := serveRegistry(t, api.RegistrySpec{Prefix: dm.ExampleRegistryPrefix, Dir: dir,
		Verify: &signature.PolicyConfig{Keys: [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, Required: true}}, 0)
	code, body := get(t, e.url+"/t/redis:v1.1")
	if code != 200 || !strings.Contains(body, `<dd id="signer">key SHA256:`) {
		t.Fatalf("signed version's page: %d, no signer\n%s", code, body)
	}
	if !strings.Contains(body, "refused: NoSignature") || !strings.Contains(body, "tag-signed") {
		t.Errorf("siblings not marked (refused: NoSignature, signed)")
	}
	code, body = get(t, e.url+"/t/redis:v1.0")
	if code != 422 || !strings.Contains(body, "NoSignature") || !strings.Contains(body, "redis:v1.0.2@sha256:") {
		t.Errorf("refused version's page: %d\n%s", code, body)
	}
}
