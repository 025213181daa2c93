// Package browsertest starts Debian's Chromium for tests that drive web
// pages through chromedp: registryd's catalog and the files it serves.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of Debian's chromium. With -short (make
// test-short) the test is skipped; otherwise a missing chromium fails it:
// make test installs it first.
func Chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium: -short (make test-short) leaves the browser tests out")
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is missing: apt-get install chromium (make test installs it when run as root)")
	return ""
}

// New starts a headless chromium with a fresh profile and no network
// beyond loopback, for at most 90 seconds; it is gone when the test ends.
func New(t testing.TB) context.Context {
	t.Helper()
	// Not t.TempDir: chromium's helper processes may still write to the
	// profile for a moment after the browser exits, which fails its
	// cleanup.
	profile, err := os.MkdirTemp("", "dm-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1200, 900),
		// Chromium's first start on a loaded 2-core machine (make test
		// runs every package beside it) can take longer than chromedp's
		// 20 s default for printing its DevTools URL.
		chromedp.WSURLReadTimeout(90 * time.Second),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelT()
		cancelB()
		cancelA()
		for range 20 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}
