package sigstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
)

// TestParsePrivateKey reads the keys dm signs with: openssl's two PEM
// forms, and cosign generate-key-pair's encrypted key, made here as
// cosign makes it (PKCS #8 sealed by go-securesystemslib's scrypt and
// secretbox, under either PEM type cosign has written); every refusal
// says why.
func TestParsePrivateKey(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := encrypted.Encrypt(pkcs8, []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalPKCS8PrivateKey(p384)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	block := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	password := func(pw string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(pw), nil } }

	tests := []struct {
		name     string
		data     []byte
		password func() ([]byte, error)
		wantErr  string
	}{
		{"openssl ecparam -genkey", block(pemECPrivate, sec1), nil, ""},
		{"openssl genpkey", block(pemPKCS8, pkcs8), nil, ""},
		{"cosign 2", block(pemSigstoreEncrypt, sealed), password("hunter2"), ""},
		{"cosign 1", block(pemCosignEncrypted, sealed), password("hunter2"), ""},
		{"wrong password", block(pemSigstoreEncrypt, sealed), password("hunter3"), "wrong password?"},
		{"no password", block(pemSigstoreEncrypt, sealed), nil, "encrypted and no password"},
		{"password unreadable", block(pemSigstoreEncrypt, sealed), func() ([]byte, error) { return nil, errors.New("COSIGN_PASSWORD is not set") }, "COSIGN_PASSWORD is not set"},
		{"P-384", block(pemPKCS8, p384DER), nil, "not an ECDSA P-256 key"},
		{"RSA", block(pemPKCS8, rsaDER), nil, "*rsa.PrivateKey, not an ECDSA P-256 key"},
		{"a public key", block("PUBLIC KEY", []byte{1}), nil, `PEM block "PUBLIC KEY" is not a private key`},
		{"not PEM", []byte("hello"), nil, "not a PEM private key"},
		{"PEM of garbage", block(pemPKCS8, []byte("garbage")), nil, "parsing the PRIVATE KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePrivateKey(tt.data, tt.password)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(key) {
				t.Error("a different key")
			}
		})
	}
}
