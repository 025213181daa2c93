package sigstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"

	"github.com/dmhq/dm/internal/signature"
)

// PEM block types of private keys dm reads: openssl's (SEC 1 and PKCS
// #8) and cosign's encrypted ones (scrypt and secretbox over PKCS #8).
const (
	pemECPrivate       = "EC PRIVATE KEY"
	pemPKCS8           = "PRIVATE KEY"
	pemCosignEncrypted = "ENCRYPTED COSIGN PRIVATE KEY"
	pemSigstoreEncrypt = "ENCRYPTED SIGSTORE PRIVATE KEY"
)

// ParsePrivateKey reads an ECDSA P-256 private key from PEM: openssl's
// `ecparam -genkey` (EC PRIVATE KEY) or `genpkey` (PRIVATE KEY), or a
// cosign key pair's encrypted key, decrypted with the password password
// returns (cosign's COSIGN_PASSWORD). password is called only for an
// encrypted key and may be nil otherwise.
func ParsePrivateKey(data []byte, password func() ([]byte, error)) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("not a PEM private key (want an ECDSA P-256 key from openssl or cosign generate-key-pair)")
	}
	var key any
	var err error
	switch block.Type {
	case pemECPrivate:
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case pemPKCS8:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case pemCosignEncrypted, pemSigstoreEncrypt:
		if password == nil {
			return nil, errors.New("the key is encrypted and no password was given")
		}
		pw, perr := password()
		if perr != nil {
			return nil, perr
		}
		der, derr := encrypted.Decrypt(block.Bytes, pw)
		if derr != nil {
			return nil, fmt.Errorf("decrypting the key (wrong password?): %v", derr)
		}
		key, err = x509.ParsePKCS8PrivateKey(der)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key dm reads (EC PRIVATE KEY, PRIVATE KEY, %s)", block.Type, pemCosignEncrypted)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing the %s: %v", block.Type, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("the key is a %T, not an ECDSA P-256 key (openssl ecparam -name prime256v1 -genkey)", key)
	}
	return ec, nil
}

// keypair is a sign.Keypair over an ECDSA P-256 key.
type keypair struct{ key *ecdsa.PrivateKey }

func (k keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (k keypair) GetHint() []byte         { return []byte(signature.KeyID(&k.key.PublicKey)) }
func (k keypair) GetKeyAlgorithm() string { return "ECDSA" }
func (k keypair) GetPublicKeyPem() (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&k.key.PublicKey)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

func (k keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	sum := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, k.key, sum[:])
	if err != nil {
		return nil, nil, err
	}
	return sig, sum[:], nil
}
