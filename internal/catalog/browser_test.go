package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/dmhq/dm/internal/browsertest"
)

// browser starts a headless chromium (browsertest.New).
func browser(t *testing.T) context.Context { return browsertest.New(t) }

// artifacts is where screenshots go: $DM_ARTIFACTS, or the test's
// artifact directory (kept with go test -artifacts).
func artifacts(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("DM_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}

func screenshot(t *testing.T, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var buf []byte
		if err := chromedp.FullScreenshot(&buf, 80).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(artifacts(t), name+".jpg"), buf, 0o644)
	})
}

// TestBrowser drives chromium through the catalog: home, search, a
// template, an older version, a diff, the preview form with and without
// JavaScript, and a required property left empty.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	e := newTestEnv(t)
	addRequired(t, e)
	e.settle(t)

	var text, h1 string
	err := chromedp.Run(ctx,
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(`#q`, chromedp.ByQuery),
		screenshot(t, "1-home"),
		chromedp.SendKeys(`#q`, "redis", chromedp.ByQuery),
		chromedp.Submit(`#q`, chromedp.ByQuery),
		chromedp.WaitVisible(`ol.results`, chromedp.ByQuery),
		screenshot(t, "2-search"),
		chromedp.Click(`ol.results a[href="/t/github.com/acme/templates/redis"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#versions`, chromedp.ByQuery),
		chromedp.Text(`h1`, &h1, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("home -> search -> template: %v", err)
	}
	if !strings.Contains(h1, "v2.0.0") {
		t.Errorf("template page h1 %q, want the latest stable v2.0.0", h1)
	}
	err = chromedp.Run(ctx,
		screenshot(t, "3-template"),
		chromedp.Click(`//ul[@class="versions"]//a[text()="v1.0.0"]`, chromedp.BySearch),
		chromedp.WaitVisible(`//h1[contains(., "v1.0.0")]`, chromedp.BySearch),
		screenshot(t, "4-older-version"),
		chromedp.Click(`//ul[@class="versions"]//li[contains(., "v1.1.0")]/a[@class="difflink"]`, chromedp.BySearch),
		chromedp.WaitVisible(`section.diff`, chromedp.ByQuery),
		chromedp.Text(`h1`, &h1, chromedp.ByQuery),
		screenshot(t, "5-diff"),
	)
	if err != nil {
		t.Fatalf("older version -> diff: %v", err)
	}
	if h1 != "v1.1.0 → v1.0.0" {
		t.Errorf("diff page h1 %q, want v1.1.0 → v1.0.0", h1)
	}

	// The form, live with JavaScript.
	err = chromedp.Run(ctx,
		chromedp.Navigate(e.url+"/t/redis:v1"),
		chromedp.WaitVisible(`#f-replicas`, chromedp.ByQuery),
		chromedp.SendKeys(`#f-replicas`, "5", chromedp.ByQuery),
		chromedp.Click(`form.preview button[type=submit]`, chromedp.ByQuery),
		// The live preview replaces #objects as the input changes and
		// again on submit: wait for the answer to the last input, and
		// read it in one step, not through a node that may be gone.
		chromedp.Poll(`(document.querySelector("#objects")?.textContent || "").includes("replicas: 5")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`document.querySelector("#objects").textContent`, &text),
		screenshot(t, "6-preview"),
	)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if !strings.Contains(text, "kind: Deployment") || !strings.Contains(text, "replicas: 5") {
		t.Errorf("preview shows:\n%s", text)
	}

	// A required property left empty: the error is next to its field.
	err = chromedp.Run(ctx,
		chromedp.Navigate(e.url+"/t/req:v1"),
		chromedp.WaitVisible(`#f-owner`, chromedp.ByQuery),
		chromedp.Click(`form.preview button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#f-owner + #e-owner`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#e-owner").textContent`, &text),
		screenshot(t, "7-required"),
	)
	if err != nil {
		t.Fatalf("required field: %v", err)
	}
	if text != "owner is required" {
		t.Errorf("error next to the field: %q", text)
	}

	// The same without JavaScript: plain form posts.
	err = chromedp.Run(ctx,
		emulation.SetScriptExecutionDisabled(true),
		chromedp.Navigate(e.url+"/t/redis:v1"),
		chromedp.WaitVisible(`#f-replicas`, chromedp.ByQuery),
		chromedp.SendKeys(`#f-replicas`, "4", chromedp.ByQuery),
		chromedp.Click(`form.preview button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#objects`, chromedp.ByQuery),
		chromedp.Text(`#objects`, &text, chromedp.ByQuery),
		screenshot(t, "8-preview-nojs"),
	)
	if err != nil {
		t.Fatalf("preview without JavaScript: %v", err)
	}
	if !strings.Contains(text, "replicas: 4") {
		t.Errorf("preview without JavaScript shows:\n%s", text)
	}
	var js bool
	err = chromedp.Run(ctx,
		chromedp.Navigate(e.url+"/t/req:v1"),
		chromedp.WaitVisible(`#f-owner`, chromedp.ByQuery),
		chromedp.Click(`form.preview button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#e-owner`, chromedp.ByQuery),
		chromedp.Text(`#e-owner`, &text, chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.classList.contains("js")`, &js),
	)
	if err != nil {
		t.Fatalf("required field without JavaScript: %v", err)
	}
	if text != "owner is required" {
		t.Errorf("error next to the field without JavaScript: %q", text)
	}
	_ = js // Evaluate runs over CDP even with page scripts disabled.

	// At a phone's width the page does not scroll sideways, and the dark
	// scheme follows prefers-color-scheme.
	var overflow bool
	var light, dark string
	err = chromedp.Run(ctx,
		emulation.SetScriptExecutionDisabled(false),
		emulation.SetDeviceMetricsOverride(390, 844, 2, true),
		chromedp.Navigate(e.url+"/t/apps/guestbook:v1.1"),
		chromedp.WaitVisible(`#versions`, chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow),
		chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &light),
		screenshot(t, "9-phone"),
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
		chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &dark),
		screenshot(t, "10-phone-dark"),
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}),
		emulation.ClearDeviceMetricsOverride(),
	)
	if err != nil {
		t.Fatalf("phone width: %v", err)
	}
	if overflow {
		t.Errorf("the template page scrolls sideways at 390 px")
	}
	if light == dark {
		t.Errorf("prefers-color-scheme: dark leaves the background %s", light)
	}

	// The README's screenshot of the template page.
	if out := os.Getenv("DM_UPDATE_SCREENSHOT"); out != "" {
		var buf []byte
		err := chromedp.Run(ctx,
			emulation.SetScriptExecutionDisabled(false),
			emulation.SetDeviceMetricsOverride(1100, 1000, 1, false),
			chromedp.Navigate(e.url+"/t/apps/guestbook:v1.1"),
			chromedp.WaitVisible(`#versions`, chromedp.ByQuery),
			chromedp.CaptureScreenshot(&buf),
		)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// addRequired adds template req:v1.0.0, whose property owner is required.
func addRequired(t testing.TB, e *testEnv) {
	t.Helper()
	dir := filepath.Join(e.dir, "req", "v1.0.0")
	files := map[string]string{
		"req.jinja":        "resources:\n- name: {{ env.name }}\n  type: v1/ConfigMap\n  properties:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: {{ env.name }}}\n    data: {owner: {{ properties.owner }}}\n",
		"req.jinja.schema": "info: {title: Needs an owner}\nrequired: [owner]\nproperties:\n  owner: {type: string, description: Who runs it}\n",
		"example.yaml":     "resources:\n- name: r\n  type: req:v1.0.0\n  properties: {owner: ops}\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.examples.Kick()
}

// TestBrowserChart: registry-example's Helm chart has a page like any
// template's: its values as the properties table (nested values by dotted
// path, defaults from values.yaml, descriptions from the schema), its
// README rendered, its example tested, and a preview form that renders
// the chart with the values typed.
func TestBrowserChart(t *testing.T) {
	ctx := browser(t)
	e := newTestEnv(t)
	e.settle(t)

	var props, readme, example, text string
	err := chromedp.Run(ctx,
		chromedp.Navigate(e.url+"/t/charts/hello:v0.1"),
		chromedp.WaitVisible(`table.props`, chromedp.ByQuery),
		chromedp.Text(`table.props`, &props, chromedp.ByQuery),
		chromedp.Text(`section[aria-labelledby=readme] .md`, &readme, chromedp.ByQuery),
		chromedp.Text(`#example-status`, &example, chromedp.ByQuery),
		screenshot(t, "chart"),
		chromedp.SendKeys(`#f-message`, "typed in chromium", chromedp.ByQuery),
		chromedp.Click(`form.preview button[type=submit]`, chromedp.ByQuery),
		chromedp.Poll(`(document.querySelector("#objects")?.textContent || "").includes("typed in chromium")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`document.querySelector("#objects").textContent`, &text),
		screenshot(t, "chart-preview"),
	)
	if err != nil {
		t.Fatalf("chart page: %v", err)
	}
	for _, want := range []string{"image.repository", "nginx", "Image repository.", "replicaCount", "Number of nginx pods.", "service.port"} {
		if !strings.Contains(props, want) {
			t.Errorf("properties table lacks %q:\n%s", want, props)
		}
	}
	if !strings.Contains(readme, "A Helm chart kept in a dm registry") {
		t.Errorf("README not rendered:\n%s", readme)
	}
	if example != "ok" {
		t.Errorf("example status %q, want ok", example)
	}
	if !strings.Contains(text, "kind: Deployment") || !strings.Contains(text, "index.html: typed in chromium") {
		t.Errorf("preview shows:\n%s", text)
	}
}

// pageKinds are one page of each kind the catalog serves, over
// registry-example: the front page, search, a registry, template pages
// of each language (a Google Cloud one, a Helm chart, an OpenShift
// template), a diff, a file and the error page.
var pageKinds = []struct{ name, path, wait string }{
	{"home", "/", "#recent"},
	{"search", "/search?q=web", "ol.results"},
	{"registry", "/r/github.com/acme/templates", "table"},
	{"template", "/t/common/web:v1.2", "#versions"},
	{"template-gcp", "/t/gcp/vm:v1", "#versions"},
	{"template-chart", "/t/charts/hello:v0.1", "#versions"},
	{"template-openshift", "/t/postgres:v1.1", "#versions"},
	{"template-composite", "/t/apps/guestbook:v1.1", "#versions"},
	{"diff", "/t/redis:v1/diff?from=v1.0.0", "section.diff"},
	{"file", "/t/common/web:v1.2/-/file/web.gotmpl.schema", "pre"},
	{"error", "/t/nosuch:v1", "p.error"},
}

// TestBrowserWidths opens every page kind at a desktop's 1280 px and a
// phone's 420 px: none may push the page wider than the window (tables
// and code scroll inside themselves). With DM_ARTIFACTS set (make
// screenshots), a screenshot of each is written there for review.
func TestBrowserWidths(t *testing.T) {
	ctx := browser(t)
	e := newTestEnv(t)
	e.settle(t)
	for _, width := range []int64{1280, 420} {
		for _, p := range pageKinds {
			var overflow bool
			var wide string
			actions := []chromedp.Action{
				// Not as a mobile device: a phone's browser zooms out to fit
				// a page that is too wide, and innerWidth grows with it.
				emulation.SetDeviceMetricsOverride(width, 900, 1, false),
				chromedp.Navigate(e.url + p.path),
				chromedp.WaitVisible(p.wait, chromedp.ByQuery),
				chromedp.Evaluate(`document.documentElement.scrollWidth > Math.min(window.innerWidth, document.documentElement.clientWidth)`, &overflow),
				// What sticks out, to say which element to fix.
				chromedp.Evaluate(`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5 && !e.closest(".scroll, pre")).slice(0, 5).map(e => e.tagName + (e.className ? "." + e.className : "")).join(", ")`, &wide),
			}
			if os.Getenv("DM_ARTIFACTS") != "" {
				name := fmt.Sprintf("%s-%d.png", p.name, width)
				actions = append(actions, chromedp.ActionFunc(func(ctx context.Context) error {
					var buf []byte
					// Quality 100 is a PNG: what a reviewer looks at.
					if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil {
						return err
					}
					return os.WriteFile(filepath.Join(artifacts(t), name), buf, 0o644)
				}))
			}
			if err := chromedp.Run(ctx, actions...); err != nil {
				t.Fatalf("%s at %d px: %v", p.path, width, err)
			}
			if overflow {
				t.Errorf("%s (%s) scrolls sideways at %d px: %s", p.name, p.path, width, wide)
			}
		}
	}
}
