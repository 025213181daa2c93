package dm_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Issue 20's memory goals, measured on a registryd binary by its own
// peak resident memory (VmHWM): floods of large bodies from clients
// without credentials must not take registryd's memory with them.
const (
	webhookFloodRSS = 150 << 20
	expandFloodRSS  = 400 << 20
)

// zeroes reads zero bytes without end.
type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// flood sends n requests at once, built by req(i), and returns their
// status codes (0: no answer, such as a connection cut while sending).
func flood(n int, req func(i int) *http.Request) []int {
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := http.DefaultClient.Do(req(i))
			if err != nil {
				return
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	return codes
}

// TestFloodMemory runs the floods of issue 20, each against a registryd
// of its own.
func TestFloodMemory(t *testing.T) {
	t.Parallel()
	registryd, _ := buildBinaries(t)
	t.Run("webhook", func(t *testing.T) { webhookFlood(t, registryd) })
	t.Run("expand", func(t *testing.T) { expandFlood(t, registryd) })
}

// webhookFlood: 40 concurrent 24 MiB webhook bodies without a valid
// signature (no header, a well-formed wrong one with and without a
// Content-Length) keep registryd under 150 MB and /readyz answering.
func webhookFlood(t *testing.T, registryd string) {
	url, proc := startRegistrydProcess(t, registryd, []string{"REGISTRYD_WEBHOOK_SECRET=flood-secret"},
		"--registry-dir", "github.com/acme/templates=./registry-example", "--no-sandbox", "--refresh", "0")
	t.Logf("registryd before the flood: resident memory %d MiB", statusBytes(t, proc.Pid, "VmRSS")>>20)
	const size = 24 << 20
	var ready []int
	var readyWG sync.WaitGroup
	readyWG.Go(func() {
		ready = flood(5, func(int) *http.Request { r, _ := http.NewRequest("GET", url+"/readyz", nil); return r })
	})
	codes := flood(40, func(i int) *http.Request {
		req, _ := http.NewRequest("POST", url+"/v1/webhooks/github", io.LimitReader(zeroes{}, size))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		switch i % 3 {
		case 0: // unsigned
		case 1: // a wrong signature, the length announced
			req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("ab", 32))
			req.ContentLength = size
		case 2: // a wrong signature, chunked
			req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("ab", 32))
		}
		return req
	})
	readyWG.Wait()
	for i, c := range codes {
		if c/100 == 2 {
			t.Errorf("webhook %d without a valid signature answered %d", i, c)
		}
	}
	if code, body := getBody(t, url+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the flood: %d %s", code, body)
	}
	for i, c := range ready {
		if c != http.StatusOK {
			t.Errorf("/readyz %d during the flood: %d", i, c)
		}
	}
	peak := statusBytes(t, proc.Pid, "VmHWM")
	t.Logf("webhook flood: statuses %v; registryd's peak resident memory %d MiB", count(codes), peak>>20)
	if peak > webhookFloodRSS {
		t.Errorf("registryd's peak resident memory %d MiB, want under %d MiB", peak>>20, webhookFloodRSS>>20)
	}
}

// expandFlood: 40 concurrent POST /v1/expand of 8 MiB bodies keep
// registryd under 400 MB; normal expansions sent meanwhile and after are
// answered.
func expandFlood(t *testing.T, registryd string) {
	url, proc := startRegistrydProcess(t, registryd, nil,
		"--registry-dir", "github.com/acme/templates=./registry-example", "--no-sandbox", "--refresh", "0")
	t.Logf("registryd before the flood: resident memory %d MiB", statusBytes(t, proc.Pid, "VmRSS")>>20)
	big := []byte(`{"config":"# ` + strings.Repeat("x", 8<<20-100) + `\nresources: []\n"}`)
	var normal []int
	var normalWG sync.WaitGroup
	normalWG.Go(func() {
		normal = flood(3, func(int) *http.Request {
			r, _ := http.NewRequest("POST", url+"/v1/expand", strings.NewReader(`{"ref":"redis:v1"}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		})
	})
	codes := flood(40, func(i int) *http.Request {
		req, _ := http.NewRequest("POST", url+"/v1/expand", bytes.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		return req
	})
	normalWG.Wait()
	for i, c := range normal {
		if c != http.StatusOK {
			t.Errorf("normal expansion %d during the flood: %d", i, c)
		}
	}
	if code, body := postJSON(t, url+"/v1/expand", []byte(`{"ref":"redis:v1"}`)); code != http.StatusOK {
		t.Errorf("normal expansion after the flood: %d %s", code, body)
	}
	peak := statusBytes(t, proc.Pid, "VmHWM")
	t.Logf("expand flood: statuses %v; registryd's peak resident memory %d MiB", count(codes), peak>>20)
	if peak > expandFloodRSS {
		t.Errorf("registryd's peak resident memory %d MiB, want under %d MiB", peak>>20, expandFloodRSS>>20)
	}
}

// count tallies status codes.
func count(codes []int) map[string]int {
	m := map[string]int{}
	for _, c := range codes {
		m[fmt.Sprint(c)]++
	}
	return m
}
