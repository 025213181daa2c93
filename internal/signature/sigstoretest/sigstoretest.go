// Package sigstoretest runs a Sigstore on loopback for tests: a Fulcio
// that issues certificates for the identity an (unverified) OIDC token
// names, and a Rekor whose log key is sigstore-go's virtual Sigstore's,
// with the trusted_root.json that verifies what they issue. Keyless
// signing runs sigstore-go's real Fulcio and Rekor clients against them,
// offline.
package sigstoretest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-openapi/runtime"
	"github.com/go-openapi/strfmt"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/types"
	_ "github.com/sigstore/rekor/pkg/types/dsse/v0.0.1" // the entry kind dm's bundles log
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
)

// Sigstore is a Fulcio and a Rekor on loopback.
type Sigstore struct {
	// FulcioURL and RekorURL are the servers' base URLs.
	FulcioURL, RekorURL string
	// TrustedRoot is the trusted_root.json naming this Fulcio's CA and
	// this Rekor's log.
	TrustedRoot []byte

	vs           *ca.VirtualSigstore
	rootCert     *x509.Certificate
	interCert    *x509.Certificate
	interKey     *ecdsa.PrivateKey
	fulcio       *httptest.Server
	rekor        *httptest.Server
	mu           sync.Mutex
	certValidity func(now time.Time) (notBefore, notAfter time.Time)
	requests     map[string]int
}

// TB is the part of testing.TB New needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// New starts a Sigstore; the test's cleanup stops it.
func New(t TB) *Sigstore {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatalf("sigstoretest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func start() (*Sigstore, error) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		return nil, err
	}
	rootCert, rootKey, err := ca.GenerateRootCa()
	if err != nil {
		return nil, err
	}
	interCert, interKey, err := ca.GenerateFulcioIntermediate(rootCert, rootKey)
	if err != nil {
		return nil, err
	}
	s := &Sigstore{vs: vs, rootCert: rootCert, interCert: interCert, interKey: interKey, requests: map[string]int{}}
	s.fulcio = httptest.NewServer(http.HandlerFunc(s.serveFulcio))
	s.rekor = httptest.NewServer(http.HandlerFunc(s.serveRekor))
	s.FulcioURL, s.RekorURL = s.fulcio.URL, s.rekor.URL

	logID, err := vs.RekorLogID()
	if err != nil {
		return nil, err
	}
	rawID, _ := hex.DecodeString(logID)
	vlog := vs.RekorLogs()[logID]
	now := time.Now()
	tlogs := map[string]*root.TransparencyLog{logID: {
		BaseURL:             s.RekorURL,
		ID:                  rawID,
		ValidityPeriodStart: now.Add(-24 * time.Hour),
		HashFunc:            crypto.SHA256,
		PublicKey:           vlog.PublicKey,
		SignatureHashFunc:   crypto.SHA256,
	}}
	cas := []root.CertificateAuthority{&root.FulcioCertificateAuthority{
		Root: rootCert, Intermediates: []*x509.Certificate{interCert},
		ValidityPeriodStart: now.Add(-24 * time.Hour), URI: s.FulcioURL,
	}}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, nil, nil, tlogs)
	if err != nil {
		return nil, err
	}
	if s.TrustedRoot, err = tr.MarshalJSON(); err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops the servers.
func (s *Sigstore) Close() {
	s.fulcio.Close()
	s.rekor.Close()
}

// Requests returns how many requests each server ("fulcio", "rekor")
// answered.
func (s *Sigstore) Requests(server string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[server]
}

// SetCertValidity makes Fulcio issue certificates valid over what f
// returns for the time of the request: an expired certificate is one
// valid only before Rekor logged its signature.
func (s *Sigstore) SetCertValidity(f func(now time.Time) (notBefore, notAfter time.Time)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.certValidity = f
}

// Token returns an OIDC identity token for subject from issuer: a JWT
// whose signature nothing checks (this Fulcio trusts every token, as a
// real one trusts its issuers').
func Token(issuer, subject string) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims := map[string]any{"iss": issuer, "sub": subject, "aud": "sigstore", "exp": time.Now().Add(time.Hour).Unix()}
	if strings.Contains(subject, "@") && !strings.Contains(subject, "://") {
		claims["email"] = subject
		claims["email_verified"] = true
	}
	body, _ := json.Marshal(claims)
	return head + "." + enc.EncodeToString(body) + "." + enc.EncodeToString([]byte("unsigned"))
}

func (s *Sigstore) count(server string) {
	s.mu.Lock()
	s.requests[server]++
	s.mu.Unlock()
}

// oidIssuer is Fulcio's OIDC issuer extension (v1: the raw string).
var oidIssuer = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}

func (s *Sigstore) serveFulcio(w http.ResponseWriter, r *http.Request) {
	s.count("fulcio")
	if r.Method != http.MethodPost || r.URL.Path != "/api/v2/signingCert" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	parts := strings.Split(tok, ".")
	if !ok || len(parts) != 3 {
		http.Error(w, "no bearer token", http.StatusUnauthorized)
		return
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Iss, Sub, Email string
	}
	if err != nil || json.Unmarshal(raw, &claims) != nil || claims.Iss == "" {
		http.Error(w, "malformed token", http.StatusUnauthorized)
		return
	}
	var req struct {
		PublicKeyRequest struct {
			PublicKey struct {
				Content string `json:"content"`
			} `json:"publicKey"`
			ProofOfPossession string `json:"proofOfPossession"`
		} `json:"publicKeyRequest"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "malformed request", http.StatusBadRequest)
		return
	}
	block, _ := pem.Decode([]byte(req.PublicKeyRequest.PublicKey.Content))
	if block == nil {
		http.Error(w, "no PEM public key", http.StatusBadRequest)
		return
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	subject := claims.Sub
	if claims.Email != "" {
		subject = claims.Email
	}
	// Proof of possession: the subject signed with the key.
	pop, _ := base64.StdEncoding.DecodeString(req.PublicKeyRequest.ProofOfPossession)
	sum := sha256.Sum256([]byte(subject))
	if ek, ok := pub.(*ecdsa.PublicKey); !ok || !ecdsa.VerifyASN1(ek, sum[:], pop) {
		http.Error(w, "proof of possession does not verify", http.StatusBadRequest)
		return
	}
	now := time.Now()
	nb, na := now.Add(-time.Minute), now.Add(10*time.Minute)
	s.mu.Lock()
	if s.certValidity != nil {
		nb, na = s.certValidity(now)
	}
	s.mu.Unlock()
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:    serial,
		NotBefore:       nb,
		NotAfter:        na,
		KeyUsage:        x509.KeyUsageDigitalSignature,
		ExtKeyUsage:     []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{{Id: oidIssuer, Value: []byte(claims.Iss)}},
	}
	if claims.Email != "" {
		tmpl.EmailAddresses = []string{subject}
	} else if u, err := url.Parse(subject); err == nil && u.Scheme != "" {
		tmpl.URIs = []*url.URL{u}
	} else {
		http.Error(w, "subject is neither an email nor a URI", http.StatusBadRequest)
		return
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.interCert, pub, s.interKey)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	chain := []string{pemCert(der), pemCert(s.interCert.Raw), pemCert(s.rootCert.Raw)}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"signedCertificateEmbeddedSct": map[string]any{"chain": map[string]any{"certificates": chain}}})
}

func pemCert(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func (s *Sigstore) serveRekor(w http.ResponseWriter, r *http.Request) {
	s.count("rekor")
	if r.Method != http.MethodPost || r.URL.Path != "/api/v1/log/entries" {
		http.Error(w, `{"code":404,"message":"not found"}`, http.StatusNotFound)
		return
	}
	pe, err := models.UnmarshalProposedEntry(io.LimitReader(r.Body, 1<<20), runtime.JSONConsumer())
	if err != nil {
		http.Error(w, fmt.Sprintf(`{"code":400,"message":%q}`, err.Error()), http.StatusBadRequest)
		return
	}
	entry, err := types.CreateVersionedEntry(pe)
	if err != nil {
		http.Error(w, fmt.Sprintf(`{"code":400,"message":%q}`, err.Error()), http.StatusBadRequest)
		return
	}
	body, err := types.CanonicalizeEntry(context.Background(), entry)
	if err != nil {
		http.Error(w, fmt.Sprintf(`{"code":400,"message":%q}`, err.Error()), http.StatusBadRequest)
		return
	}
	logID, _ := s.vs.RekorLogID()
	integrated := time.Now().Unix()
	b64 := base64.StdEncoding.EncodeToString(body)
	// One entry per log: the virtual Sigstore's inclusion proofs are of
	// a tree of size one, index 0.
	var index int64
	set, err := s.vs.RekorSignPayload(tlog.RekorPayload{Body: b64, IntegratedTime: integrated, LogIndex: index, LogID: logID})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	proof, err := s.vs.GetInclusionProof(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	leaf := sha256.Sum256(append([]byte{0}, body...))
	uuid := hex.EncodeToString(leaf[:])
	resp := models.LogEntry{uuid: models.LogEntryAnon{
		Body:           b64,
		IntegratedTime: &integrated,
		LogID:          &logID,
		LogIndex:       &index,
		Verification:   &models.LogEntryAnonVerification{InclusionProof: proof, SignedEntryTimestamp: strfmt.Base64(set)},
	}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", uuid)
	w.Header().Set("Location", "/api/v1/log/entries/"+uuid)
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(resp)
}
