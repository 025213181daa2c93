package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStream feeds testsum what `go test -json` prints for a small module
// of passing, failing, skipping and broken packages, and checks the counts
// and what is shown.
func TestStream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a generated module")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"good/good_test.go": `package good
import "testing"
func TestA(t *testing.T) {}
func TestTable(t *testing.T) {
	for _, n := range []string{"one", "two"} {
		t.Run(n, func(t *testing.T) {})
	}
}
func TestSkip(t *testing.T) { t.Skip("needs a unicorn") }
`,
		"bad/bad_test.go": `package bad
import "testing"
func TestFails(t *testing.T) {
	t.Run("sub", func(t *testing.T) { t.Error("the sub went wrong") })
}
`,
		"broken/broken_test.go": "package broken\nimport \"testing\"\nfunc TestX(t *testing.T) { undefined() }\n",
		"panics/panics_test.go": `package panics
import ("os"; "testing")
func TestMain(m *testing.M) { os.Exit(3) }
func TestNever(t *testing.T) {}
`,
		"notests/notests.go": "package notests\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	raw, _ := cmd.Output() // it fails: that is the point
	if len(raw) == 0 {
		t.Fatal("go test -json printed nothing")
	}

	var out bytes.Buffer
	var s stream
	s.init(&out)
	if err := s.read(bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	got := s.tally
	// Passed: TestA, TestTable, its two subtests. Failed: TestFails and its
	// sub, the broken package's build, the package exiting in TestMain.
	if got.Passed != 4 || got.Failed != 4 || got.Skipped != 1 {
		t.Errorf("counted %d passed, %d failed, %d skipped; want 4, 4, 1\n%s", got.Passed, got.Failed, got.Skipped, out.String())
	}
	for _, want := range []string{
		"--- SKIP: TestSkip (example.com/m/good): good_test.go:9: needs a unicorn",
		"the sub went wrong",
		"FAIL example.com/m/broken",
		"undefined",
		"ok   example.com/m/good",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "notests") {
		t.Errorf("a package without tests was reported:\n%s", out.String())
	}
}

// TestUnfinished: a package that started and never reported (the go command
// was killed) counts as failed.
func TestUnfinished(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
`
	var out bytes.Buffer
	var s stream
	s.init(&out)
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	if s.tally.Passed != 1 || s.tally.Failed != 1 {
		t.Errorf("got %+v, want 1 passed and 1 failed", s.tally)
	}
}

func TestTallyFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "tally.json")
	steps := []struct {
		check   string
		failed  bool
		skipped bool
	}{
		{"go vet", false, false},
		{"gofmt", true, false},
		{"chromium", false, true},
	}
	for _, st := range steps {
		if _, err := run(name, false, "", st.check, st.failed, st.skipped, "why"); err != nil {
			t.Fatal(err)
		}
	}
	tl, err := loadTally(name)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tl.print(&out, "the apiserver suites")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if last != "1 passed, 1 failed, 1 skipped; left out: the apiserver suites" {
		t.Errorf("last line %q", last)
	}
	if !strings.Contains(out.String(), "gofmt: why") || !strings.Contains(out.String(), "chromium: why") {
		t.Errorf("lists lack the checks:\n%s", out.String())
	}
}
