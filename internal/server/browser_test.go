package server

import (
	"context"
	"testing"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/dmhq/dm/internal/browsertest"
)

// TestFilesInertInBrowser opens registry files with scripts in Chromium,
// as a visitor following a link would: through GET /v1/file, through the
// catalog's file view, and as a script a catalog page loads from
// registryd's own origin (which the catalog's script-src 'self' allows).
// None of them runs: the page's title stays what it was.
func TestFilesInertInBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	e := newEnv(t, "", false)
	writeTree(t, e.dir, activeFiles)
	if err := e.reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	file := e.http.URL + "/v1/file?ref=redis:v1.2&path="
	for _, tt := range []struct{ name, url string }{
		{"html through /v1/file", file + "helper.html"},
		{"svg through /v1/file", file + "logo.svg"},
		{"js through /v1/file", file + "x.js"},
		{"html download", file + "helper.html&download=1"},
		{"catalog file view", e.http.URL + "/t/redis:v1.2/-/file/helper.html"},
		{"catalog file view of svg", e.http.URL + "/t/redis:v1.2/-/file/logo.svg"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var title string
			var element bool
			err := chromedp.Run(ctx,
				chromedp.Navigate(e.http.URL+"/"),
				chromedp.Navigate(tt.url),
				chromedp.Evaluate(`document.getElementById("x") !== null`, &element),
				chromedp.Title(&title),
			)
			if err != nil && tt.name != "html download" {
				t.Fatal(err)
			}
			if title == "pwned" || element {
				t.Errorf("the file's markup or script ran: title %q, its element present: %v", title, element)
			}
		})
	}
	// The catalog file view's raw link, followed.
	var title0, href string
	var element, found bool
	err := chromedp.Run(ctx,
		chromedp.Navigate(e.http.URL+"/t/redis:v1.2/-/file/helper.html"),
		chromedp.AttributeValue(`//a[text()="raw"]`, "href", &href, &found, chromedp.BySearch),
	)
	if err != nil || !found {
		t.Fatalf("the file view's raw link: %q, %v", href, err)
	}
	err = chromedp.Run(ctx,
		chromedp.Navigate(e.http.URL+href),
		chromedp.Evaluate(`document.getElementById("x") !== null`, &element),
		chromedp.Title(&title0),
	)
	if err != nil {
		t.Fatal(err)
	}
	if title0 == "pwned" || element {
		t.Errorf("the raw link %s ran the file: title %q, its element present: %v", href, title0, element)
	}
	// A catalog page loading a registry .js file from its own origin.
	var title, outcome string
	err = chromedp.Run(ctx,
		chromedp.Navigate(e.http.URL+"/"),
		chromedp.Evaluate(`new Promise(done => {
			const s = document.createElement("script");
			s.src = "/v1/file?ref=redis:v1.2&path=x.js";
			s.onload = () => done("loaded");
			s.onerror = () => done("refused");
			document.head.appendChild(s);
		})`, &outcome, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }),
		chromedp.Title(&title),
	)
	if err != nil {
		t.Fatal(err)
	}
	if title == "pwned" {
		t.Errorf("a registry .js file ran as a script of the catalog (%s)", outcome)
	}
}
