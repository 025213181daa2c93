package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dmhq/dm/internal/derrors"
)

// Registry files that a browser would run if they were served as what
// their names say (issue 20).
var activeFiles = map[string]string{
	"redis/v1.2.0/helper.html": `<html><body><h1 id="x">hi</h1><script>document.title = "pwned"</script></body></html>`,
	"redis/v1.2.0/logo.svg":    `<svg xmlns="http://www.w3.org/2000/svg" onload="document.title='pwned'"><script>document.title="pwned"</script></svg>`,
	"redis/v1.2.0/x.js":        `document.title = "pwned";`,
	"redis/v1.2.0/x.png":       "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
}

// TestFileServedAsData: GET /v1/file serves every registry file as inert
// data: text as text/plain, the rest as application/octet-stream, never
// sniffed, in a sandbox without any source allowed; a download is an
// attachment.
func TestFileServedAsData(t *testing.T) {
	e := newEnv(t, "", false)
	writeTree(t, e.dir, activeFiles)
	if err := e.reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, query, ctype, disposition string
	}{
		{"helper.html", "", "text/plain; charset=utf-8", ""},
		{"logo.svg", "", "text/plain; charset=utf-8", ""},
		{"x.js", "", "text/plain; charset=utf-8", ""},
		{"redis.jinja", "", "text/plain; charset=utf-8", ""},
		{"example.yaml", "", "text/plain; charset=utf-8", ""},
		{"x.png", "", "application/octet-stream", ""},
		{"helper.html", "&download=1", "text/plain; charset=utf-8", "attachment; filename=helper.html"},
	}
	for _, tt := range tests {
		t.Run(tt.path+tt.query, func(t *testing.T) {
			resp, body := e.do(t, "GET", "/v1/file?ref=redis:v1.2&path="+tt.path+tt.query, nil)
			h := resp.Header
			if resp.StatusCode != 200 || len(body) == 0 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := h.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type %q, want %q", got, tt.ctype)
			}
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", got)
			}
			if got := h.Get("Content-Security-Policy"); got != "sandbox; default-src 'none'" {
				t.Errorf("Content-Security-Policy %q", got)
			}
			if got := h.Get("Content-Disposition"); got != tt.disposition {
				t.Errorf("Content-Disposition %q, want %q", got, tt.disposition)
			}
		})
	}
	// A 304 keeps the policy too.
	resp, _ := e.do(t, "GET", "/v1/file?ref=redis:v1.2&path=helper.html", nil)
	resp, _ = e.do(t, "GET", "/v1/file?ref=redis:v1.2&path=helper.html", http.Header{"If-None-Match": {resp.Header.Get("ETag")}})
	if resp.StatusCode != http.StatusNotModified || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("304: status %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}

// TestErrorsQuoteLittle: an error answers at most a few hundred bytes of
// the input it names, however long the input.
func TestErrorsQuoteLittle(t *testing.T) {
	e := newEnv(t, "", true)
	huge := strings.Repeat("r", 1<<20)
	tests := []struct {
		name, method, path, body string
	}{
		{"expand", "POST", "/v1/expand", `{"ref":"` + huge + `"}`},
		{"resolve", "GET", "/v1/resolve?ref=" + huge[:15<<10], ""},
		{"template", "GET", "/v1/template?ref=" + huge[:15<<10], ""},
		{"file", "GET", "/v1/file?ref=redis:v1&path=" + huge[:15<<10], ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, e.http.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			if resp.StatusCode < 400 || b.Len() > derrors.MaxMessageBytes+128 {
				t.Errorf("status %d, %d-byte answer: %.300s", resp.StatusCode, b.Len(), b.String())
			}
		})
	}
}

// TestExpandNeedsJSON: POST /v1/expand takes only application/json and
// POST /processedTemplates JSON or YAML, so a cross-site form or
// text/plain POST (no preflight) can start neither.
func TestExpandNeedsJSON(t *testing.T) {
	hs := exampleServer(t)
	tmpl := `{"kind":"Template","apiVersion":"template.openshift.io/v1","metadata":{"name":"x"},"objects":[]}`
	tests := []struct {
		route, body, ctype string
		status             int
	}{
		{"/v1/expand", `{"ref":"redis:v1"}`, "application/json", 200},
		{"/v1/expand", `{"ref":"redis:v1"}`, "application/json; charset=utf-8", 200},
		{"/v1/expand", `{"ref":"redis:v1"}`, "text/plain", http.StatusUnsupportedMediaType},
		{"/v1/expand", `{"ref":"redis:v1"}`, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"/v1/expand", `{"ref":"redis:v1"}`, "multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"/v1/expand", `{"ref":"redis:v1"}`, "", http.StatusUnsupportedMediaType},
		{"/v1/expand", `{"ref":"redis:v1"}`, "application/yaml", http.StatusUnsupportedMediaType},
		{"/processedTemplates", tmpl, "application/json", 200},
		{"/processedTemplates", tmpl, "application/yaml", 200},
		{"/processedTemplates", tmpl, "text/plain", http.StatusUnsupportedMediaType},
		{"/processedTemplates", tmpl, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"/processedTemplates", tmpl, "multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"/processedTemplates", tmpl, "", http.StatusUnsupportedMediaType},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("POST", hs.URL+tt.route, strings.NewReader(tt.body))
		if tt.ctype != "" {
			req.Header.Set("Content-Type", tt.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s with Content-Type %q: %d %s, want %d", tt.route, tt.ctype, resp.StatusCode, b.String(), tt.status)
		}
	}
}

// TestAdminAuthFailures: a wrong admin token is logged without the token,
// counted, and slows its client down: its next attempt waits for the
// delay to pass, or, when that is longer than a request may wait, is not
// checked (429 with Retry-After); other clients go on.
func TestAdminAuthFailures(t *testing.T) {
	const token = "admin-token-271"
	e := newEnv(t, token, true)
	log := &lockedBuffer{}
	s := New(Options{Resolver: e.srv.resolver, AdminToken: token, Logger: newTestLogger(log), AdminFailureDelay: time.Hour})
	try := func(client, tok string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/registries/"+prefix+"/refresh", nil)
		req.RemoteAddr = client + ":40000"
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	if w := try("192.0.2.1", "guess-1"); w.Code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s", w.Code, w.Body)
	}
	if w := try("192.0.2.1", token); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Errorf("right token within the delay after a failure: %d (Retry-After %q) %s, want 429", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := try("192.0.2.2", token); w.Code != http.StatusOK {
		t.Errorf("another client with the right token: %d %s", w.Code, w.Body)
	}
	// A client that never failed is never held: an admin's calls run
	// concurrently, however many.
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = try("192.0.2.3", token).Code
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("concurrent admin call %d from a client that never failed: %d, want 200", i, c)
		}
	}
	// A short delay is waited out.
	quick := New(Options{Resolver: e.srv.resolver, AdminToken: token, AdminFailureDelay: 50 * time.Millisecond})
	for i, tt := range []struct {
		tok  string
		want int
	}{{"guess-2", http.StatusUnauthorized}, {token, http.StatusOK}} {
		req := httptest.NewRequest("POST", "/v1/registries/"+prefix+"/refresh", nil)
		req.Header.Set("Authorization", "Bearer "+tt.tok)
		w := httptest.NewRecorder()
		quick.ServeHTTP(w, req)
		if w.Code != tt.want {
			t.Errorf("attempt %d with a 50ms delay: %d %s, want %d", i, w.Code, w.Body, tt.want)
		}
	}
	metrics := httptest.NewRecorder()
	s.ServeHTTP(metrics, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(metrics.Body.String(), "\nregistryd_admin_auth_failures_total 1\n") {
		t.Errorf("/metrics does not count one failure in registryd_admin_auth_failures_total:\n%s", metrics.Body)
	}
	logs := log.String()
	if !strings.Contains(logs, "admin token") || !strings.Contains(logs, "192.0.2.1") {
		t.Errorf("the failure is not logged with its client:\n%s", logs)
	}
	if strings.Contains(logs, "guess-1") || strings.Contains(logs, token) {
		t.Errorf("the log holds a token:\n%s", logs)
	}
}

// TestRegistriesHideLocalPath: a --registry-dir registry's directory is
// shown only to requests with the admin token.
func TestRegistriesHideLocalPath(t *testing.T) {
	const token = "admin-token-314"
	e := newEnv(t, token, true)
	paths := []string{"/v1/registries", "/v1/registries/" + prefix}
	for _, path := range paths {
		_, body := e.do(t, "GET", path, http.Header{"Authorization": {"Bearer " + token}})
		if !strings.Contains(string(body), e.dir) {
			t.Errorf("GET %s with the admin token hides the directory: %s", path, body)
		}
		_, body = e.do(t, "GET", path, nil)
		if strings.Contains(string(body), e.dir) {
			t.Errorf("GET %s without a token shows the directory: %s", path, body)
		}
	}
	// A wrong token is a failed attempt (and slows the client down).
	for _, path := range paths {
		_, body := e.do(t, "GET", path, http.Header{"Authorization": {"Bearer wrong"}})
		if strings.Contains(string(body), e.dir) {
			t.Errorf("GET %s with a wrong token shows the directory: %s", path, body)
		}
	}
}

// TestBodyBudget: the handlers that read bodies share one budget: past
// it a body is answered 503 with Retry-After before it is read, while a
// small request still fits in the part kept for small bodies.
func TestBodyBudget(t *testing.T) {
	hs := exampleServer(t)
	srv := hs.Config.Handler.(*Server)
	large := `{"config":"# ` + strings.Repeat("x", 2<<20) + `\nresources: []\n"}`
	held := srv.bodies.total - smallReserve // what large bodies in flight would hold
	if !srv.bodies.acquire(held) {
		t.Fatal("cannot take the budget")
	}
	for _, route := range []string{"/v1/expand", "/processedTemplates"} {
		req, _ := http.NewRequest("POST", hs.URL+route, strings.NewReader(large))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("POST %s of 2 MiB with the budget spent: %d (Retry-After %q), want 503 with Retry-After", route, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if status, body := post(t, hs.URL+"/v1/expand", `{"ref":"redis:v1"}`); status != http.StatusOK {
		t.Errorf("a small expansion with the large bodies' share spent: %d %.300s", status, body)
	}
	// The catalog's preview form holds its bytes in the same budget.
	for range smallReserve / smallBody {
		if !srv.bodies.acquire(smallBody) {
			t.Fatal("cannot take the rest of the budget")
		}
	}
	resp, err := http.PostForm(hs.URL+"/t/redis:v1/preview", url.Values{"replicas": {"3"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a preview with the budget spent: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	srv.bodies.release(smallReserve)
	srv.bodies.release(held)
	if status, body := post(t, hs.URL+"/v1/expand", large); status == http.StatusServiceUnavailable {
		t.Errorf("2 MiB with the budget free: %d %.300s", status, body)
	}
	// Handlers give their bytes back as they return, just after answering.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		srv.bodies.mu.Lock()
		used := srv.bodies.used
		srv.bodies.mu.Unlock()
		if used == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of the budget still held 5s after every answer", used)
		}
	}
}
