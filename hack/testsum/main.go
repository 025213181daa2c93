// Command testsum reads `go test -json` and keeps the count `make test`
// ends with: every test and subtest that passed, failed or was skipped,
// across several `go test` runs (the unit tests, the fuzz targets) and the
// checks that are not Go tests (go vet, gofmt, set-up).
//
//	go test -json ./... | testsum -tally FILE        # print as go test does, add to FILE
//	testsum -tally FILE -check NAME -failed          # record a check that is not a Go test
//	testsum -tally FILE -summary [-left-out TEXT]    # print the lists and the closing line
//
// While reading it prints each package's result, the whole output of every
// failed test and the reason of every skipped one, so that nothing is
// hidden the way plain `go test` hides t.Skip. A package that failed with
// no failed test (a build error, a panic in TestMain, a timeout) counts as
// one failure, and so does a package whose run never ended. The reading
// mode exits 1 when anything failed; -summary exits 1 when the tally holds
// a failure, so the last line is always "N passed, M failed, K skipped".
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	tallyFile := flag.String("tally", "", "file that accumulates the counts (required)")
	summary := flag.Bool("summary", false, "print the failures, the skips and the closing line")
	leftOut := flag.String("left-out", "", "with -summary: what this run deliberately left out")
	check := flag.String("check", "", "record one check that is not a Go test, named NAME")
	failed := flag.Bool("failed", false, "with -check: the check failed")
	detail := flag.String("detail", "", "with -check: why it failed or was skipped")
	skipped := flag.Bool("skipped", false, "with -check: the check was left out")
	flag.Parse()
	if *tallyFile == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: testsum -tally FILE [-summary [-left-out TEXT] | -check NAME [-failed|-skipped] [-detail TEXT]]")
		os.Exit(2)
	}
	code, err := run(*tallyFile, *summary, *leftOut, *check, *failed, *skipped, *detail)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(tallyFile string, summary bool, leftOut, check string, failed, skipped bool, detail string) (int, error) {
	t, err := loadTally(tallyFile)
	if err != nil {
		return 0, err
	}
	switch {
	case summary:
		t.print(os.Stdout, leftOut)
		if t.Failed > 0 {
			return 1, nil
		}
		return 0, nil
	case check != "":
		t.record(check, failed, skipped, detail)
		return 0, t.save(tallyFile)
	}
	var s stream
	s.init(os.Stdout)
	if err := s.read(os.Stdin); err != nil {
		return 0, err
	}
	s.finish()
	t.add(&s.tally)
	if err := t.save(tallyFile); err != nil {
		return 0, err
	}
	if s.tally.Failed > 0 {
		return 1, nil
	}
	return 0, nil
}

// tally is what the runs so far counted, kept in a JSON file between runs.
type tally struct {
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Skipped  int      `json:"skipped"`
	Failures []string `json:"failures,omitempty"`
	Skips    []string `json:"skips,omitempty"`
}

func loadTally(name string) (*tally, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return &tally{}, nil
	}
	if err != nil {
		return nil, err
	}
	var t tally
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &t, nil
}

func (t *tally) save(name string) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	// Written whole and renamed, so an interrupted run leaves the last
	// complete tally.
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

func (t *tally) add(o *tally) {
	t.Passed += o.Passed
	t.Failed += o.Failed
	t.Skipped += o.Skipped
	t.Failures = append(t.Failures, o.Failures...)
	t.Skips = append(t.Skips, o.Skips...)
}

func (t *tally) record(name string, failed, skipped bool, detail string) {
	label := name
	if detail != "" {
		label += ": " + detail
	}
	switch {
	case failed:
		t.Failed++
		t.Failures = append(t.Failures, label)
	case skipped:
		t.Skipped++
		t.Skips = append(t.Skips, label)
	default:
		t.Passed++
	}
}

// print writes the skips and failures, then the closing line, last.
func (t *tally) print(w io.Writer, leftOut string) {
	if len(t.Skips) > 0 {
		fmt.Fprintf(w, "\nskipped (%d):\n", len(t.Skips))
		for _, s := range t.Skips {
			fmt.Fprintln(w, "  "+s)
		}
	}
	if len(t.Failures) > 0 {
		fmt.Fprintf(w, "\nfailed (%d):\n", len(t.Failures))
		for _, f := range t.Failures {
			fmt.Fprintln(w, "  "+f)
		}
	}
	line := fmt.Sprintf("%d passed, %d failed, %d skipped", t.Passed, t.Failed, t.Skipped)
	if leftOut != "" {
		// One line, so that whoever reads only the last line reads both.
		line += "; left out: " + leftOut
	}
	fmt.Fprintln(w, line)
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// stream follows one `go test -json` run.
type stream struct {
	w       io.Writer
	tally   tally
	outputs map[string]*strings.Builder // by package + "\x00" + test; "" test for the package
	started map[string]bool             // packages that started and have not ended
	failed  map[string]int              // failed tests per package
	builds  map[string]*strings.Builder // build output by import path
}

func (s *stream) init(w io.Writer) {
	s.w = w
	s.outputs = map[string]*strings.Builder{}
	s.started = map[string]bool{}
	s.failed = map[string]int{}
	s.builds = map[string]*strings.Builder{}
}

// maxOutput bounds what is kept of one test's output: a test that logs
// without end must not take the machine's memory.
const maxOutput = 1 << 20

func (s *stream) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not test2json's: the go command's own words. Pass them on.
			fmt.Fprintln(s.w, string(line))
			continue
		}
		s.handle(&e)
	}
	return sc.Err()
}

func (s *stream) buf(m map[string]*strings.Builder, key string) *strings.Builder {
	b := m[key]
	if b == nil {
		b = &strings.Builder{}
		m[key] = b
	}
	return b
}

func (s *stream) handle(e *event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		if b := s.buf(s.builds, e.ImportPath); b.Len() < maxOutput {
			b.WriteString(e.Output)
		}
	case "build-fail":
		fmt.Fprint(s.w, s.buf(s.builds, e.ImportPath).String())
	case "start":
		s.started[e.Package] = true
	case "output":
		if b := s.buf(s.outputs, key); b.Len() < maxOutput {
			b.WriteString(e.Output)
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.endPackage(e)
			return
		}
		s.endTest(e, key)
	}
}

func (s *stream) endTest(e *event, key string) {
	out := ""
	if b := s.outputs[key]; b != nil {
		out = b.String()
		delete(s.outputs, key)
	}
	name := e.Test + " (" + e.Package + ")"
	switch e.Action {
	case "pass":
		s.tally.Passed++
	case "fail":
		s.tally.Failed++
		s.failed[e.Package]++
		s.tally.Failures = append(s.tally.Failures, name)
		fmt.Fprintf(s.w, "--- FAIL: %s\n%s", name, indent(out))
	case "skip":
		s.tally.Skipped++
		reason := skipReason(out)
		s.tally.Skips = append(s.tally.Skips, name+": "+reason)
		fmt.Fprintf(s.w, "--- SKIP: %s: %s\n", name, reason)
	}
}

func (s *stream) endPackage(e *event) {
	delete(s.started, e.Package)
	out := ""
	if b := s.outputs[e.Package+"\x00"]; b != nil {
		out = b.String()
		delete(s.outputs, e.Package+"\x00")
	}
	elapsed := time.Duration(e.Elapsed * float64(time.Second)).Round(10 * time.Millisecond)
	switch e.Action {
	case "pass":
		fmt.Fprintf(s.w, "ok   %s %v\n", e.Package, elapsed)
	case "skip":
		// No test files: nothing ran and nothing was skipped.
	case "fail":
		fmt.Fprintf(s.w, "FAIL %s %v\n", e.Package, elapsed)
		if s.failed[e.Package] == 0 {
			// A failure no test owns: a build error, a panic outside a
			// test, a timeout. It counts, or the line would say 0 failed.
			why := "package failed outside any test"
			if e.FailedBuild != "" {
				why = "build failed (" + e.FailedBuild + ")"
			}
			s.tally.Failed++
			s.tally.Failures = append(s.tally.Failures, e.Package+": "+why)
			fmt.Fprint(s.w, indent(lastLines(out, 40)))
		}
	}
}

// finish counts packages whose run began and never ended (the go command
// or the test binary was killed).
func (s *stream) finish() {
	var pkgs []string
	for p := range s.started {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		s.tally.Failed++
		s.tally.Failures = append(s.tally.Failures, p+": the run ended before the package reported a result")
		fmt.Fprintf(s.w, "FAIL %s (no result)\n", p)
	}
}

// skipReason is what the test said when it skipped, without the framing
// lines test2json passes on.
func skipReason(out string) string {
	var parts []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	r := strings.Join(parts, " ")
	if len(r) > 300 {
		r = r[:300] + "…"
	}
	return r
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	s = strings.TrimRight(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n"
}
