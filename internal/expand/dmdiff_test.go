package expand

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The differential test: Deployment Manager's template semantics as a
// property. Templates, schemas and configurations are generated from a
// grammar and mutated from the corpus's templates (dmdiff_gen_test.go);
// each case is expanded by dm, in process, and by the reference
// (scripts/dmref/expand.py --serve: DM's expansion code on CPython 3,
// jinja2 and PyYAML, one long-lived process), and the two must agree:
// both fail, or both succeed with the same resources and outputs (as
// data: 2 and 2.0 are equal). Error messages may differ. A case where
// they disagree is minimized (delta debugging on the lines of its
// templates) and reported; DMDIFF_KEEP=DIR writes each minimized case
// there as a corpus case (config.yaml, its files, and want.json from the
// reference when it succeeds).
//
// make test runs a fixed seed and a small count; make dmdiff runs more
// (DMDIFF_N, DMDIFF_SEED).

// diffCase is one configuration and its files (paths relative to the
// configuration's directory).
type diffCase struct {
	Config string            `json:"config"`
	Files  map[string]string `json:"files"`
	// Kind names the generator that made the case, for the report.
	Kind string `json:"-"`
}

// diffAnswer is what one side made of a case.
type diffAnswer struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Resources any    `json:"resources"`
	Outputs   any    `json:"outputs"`
}

// refusedDifferences are dm's refusals of what Python runs, each with
// the reason dm refuses it (docs/dm-compatibility.md lists them): a case
// where dm fails with one of these messages and the reference succeeds
// is no difference.
var refusedDifferences = []struct {
	re     *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`random\.\w+: dm expands a configuration again`), "a random value would change the resources on every expansion"},
	{regexp.MustCompile(`sys\.exit`), "a template cannot end the expansion process"},
	{regexp.MustCompile(`is not a valid Kubernetes name`), "dm checks the names of Kubernetes objects, which DM had no notion of"},
	{regexp.MustCompile(`field \S+ not found in a resource`), "a resource field DM's API did not have, which it refused too (the reference does not check)"},
	{regexp.MustCompile(`resources\[\d+\]\.(name|type) is null`), "a resource without a name or type, which DM's API refused too (the reference does not check)"},
	{regexp.MustCompile(`has several outputs named .*; a referenced output must be unique`), "a reference to an output a template returns several times is ambiguous (the reference takes the last)"},
	{regexp.MustCompile(`has two resources named .*; names must be unique among siblings`), "resources of one name, which DM's API refused too (the reference does not check)"},
}

// lenientDifferences are what dm runs where the reference fails, each
// with the reason it does (docs/dm-compatibility.md lists them): a case
// where the reference fails with one of these messages and dm succeeds
// is no difference.
var lenientDifferences = []struct {
	re     *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`Strings must be encoded before hashing`), "hashlib of a str, as DM's Python 2.7 hashed it"},
	{regexp.MustCompile(`expected token 'end of statement block', got '(with|without)'`), "an import's words after with or without other than context, which gonja's parser leaves unread"},
}

// dmref is the reference expander, one process reading cases on stdin.
type dmref struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  *bufio.Writer
	out *bufio.Reader
}

// pythonCandidates are the interpreters tried for the reference, in
// order: DM_PYTHON, python3 on PATH, Debian's.
func pythonCandidates() []string {
	var out []string
	if p := os.Getenv("DM_PYTHON"); p != "" {
		out = append(out, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		out = append(out, p)
	}
	return append(out, "/usr/bin/python3")
}

// findReferencePython returns an interpreter that has jinja2 and PyYAML.
func findReferencePython() (string, error) {
	var tried []string
	for _, p := range pythonCandidates() {
		if slices.Contains(tried, p) {
			continue
		}
		tried = append(tried, p)
		if err := exec.Command(p, "-c", "import jinja2, yaml").Run(); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no python3 with jinja2 and PyYAML (tried %s): make test installs python3-jinja2 and python3-yaml when run as root; else apt-get install python3-jinja2 python3-yaml, or set DM_PYTHON", strings.Join(tried, ", "))
}

// startDMRef starts the reference; the test ends it.
func startDMRef(t testing.TB) *dmref {
	py, err := findReferencePython()
	if err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	cmd := exec.Command(py, "../../scripts/dmref/expand.py", "--serve")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 1 << 16}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &dmref{cmd: cmd, in: bufio.NewWriter(stdin), out: bufio.NewReaderSize(stdout, 1<<20)}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the reference ended with %v: %s", err, stderr.String())
		}
	})
	return r
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.max - l.b.Len(); n > 0 {
		l.b.Write(p[:min(n, len(p))])
	}
	return len(p), nil
}

// expand asks the reference for one case.
func (r *dmref) expand(c diffCase) (diffAnswer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line, err := json.Marshal(c)
	if err != nil {
		return diffAnswer{}, err
	}
	r.in.Write(line)
	r.in.WriteByte('\n')
	if err := r.in.Flush(); err != nil {
		return diffAnswer{}, fmt.Errorf("writing to the reference: %w", err)
	}
	resp, err := r.out.ReadBytes('\n')
	if err != nil {
		return diffAnswer{}, fmt.Errorf("reading from the reference: %w", err)
	}
	var a diffAnswer
	dec := json.NewDecoder(bytes.NewReader(resp))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return diffAnswer{}, fmt.Errorf("the reference's answer %q: %w", resp, err)
	}
	return a, nil
}

// expandDM expands a case with dm as the corpus test does.
func expandDM(c diffCase) diffAnswer {
	req := Request{Config: []byte(c.Config), Imports: map[string][]byte{}, Deployment: "dep", Namespace: "ns", Env: map[string]string{}, ConfigName: "config.yaml"}
	for k, v := range c.Files {
		req.Imports[k] = []byte(v)
	}
	for k, v := range corpusEnv {
		req.Env[k] = v
	}
	res, err := expandRecovering(req)
	if err != nil {
		return diffAnswer{Error: err.Error()}
	}
	outs := make([]any, len(res.Outputs))
	for i, o := range res.Outputs {
		outs[i] = map[string]any{"name": o.Name, "value": o.Value}
	}
	b, err := json.Marshal(map[string]any{"ok": true, "resources": res.Config.Resources, "outputs": outs})
	if err != nil {
		return diffAnswer{Error: "marshal: " + err.Error()}
	}
	var a diffAnswer
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return diffAnswer{Error: "decode: " + err.Error()}
	}
	return a
}

// diffVerdict is how dm's answer differs from the reference's: "" when
// they agree, else a class ("dm fails", "dm succeeds", "results differ")
// and a description.
func diffVerdict(dm, ref diffAnswer) (class, detail string) {
	switch {
	case !dm.OK && !ref.OK:
		return "", ""
	case !dm.OK:
		for _, r := range refusedDifferences {
			if r.re.MatchString(dm.Error) {
				return "", ""
			}
		}
		return "dm fails", "dm: " + dm.Error
	case !ref.OK:
		for _, r := range lenientDifferences {
			if r.re.MatchString(ref.Error) {
				return "", ""
			}
		}
		return "dm succeeds", "reference: " + ref.Error
	}
	got := map[string]any{"resources": dm.Resources, "outputs": dm.Outputs}
	want := map[string]any{"resources": ref.Resources, "outputs": ref.Outputs}
	if d := dataDiff("", normalizeNumbers(got), normalizeNumbers(want)); d != "" {
		return "results differ", d
	}
	return "", ""
}

// normalizeNumbers makes nil lists and maps of JSON the empty ones, as
// Python's None and [] are the same absence here.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
		return x
	case nil:
		return nil
	}
	return v
}

// diffOne runs a case on both sides.
func diffOne(t testing.TB, ref *dmref, c diffCase) (class, detail string, dm, want diffAnswer) {
	want, err := ref.expand(c)
	if err != nil {
		t.Fatal(err)
	}
	dm = expandDM(c)
	class, detail = diffVerdict(dm, want)
	return class, detail, dm, want
}

// diffKey is what minimization keeps: the class of a difference and its
// cause (dm's message, the reference's error type, the path that
// differs), without positions and numbers, so that a case shrinks to the
// same cause and not to another difference its pieces have.
func diffKey(class, detail string) string {
	switch class {
	case "dm succeeds":
		// "reference: TypeError: ..." keeps its type.
		if f := strings.SplitN(detail, ":", 3); len(f) == 3 {
			detail = f[1]
		}
	case "results differ":
		if i := strings.Index(detail, ":"); i >= 0 {
			detail = detail[:i]
		}
	}
	return class + ": " + digitsRE.ReplaceAllString(detail, "")
}

var digitsRE = regexp.MustCompile(`[0-9]+`)

// minimizeCase shrinks c while it still differs in the same way: ddmin
// over the lines of each template file, then of the configuration.
func minimizeCase(t testing.TB, ref *dmref, c diffCase, class string) diffCase {
	same := func(x diffCase) bool {
		cl, detail, _, _ := diffOne(t, ref, x)
		return diffKey(cl, detail) == class
	}
	names := make([]string, 0, len(c.Files))
	for k := range c.Files {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		lines := strings.SplitAfter(c.Files[name], "\n")
		lines = ddmin(lines, func(ls []string) bool {
			x := cloneCase(c)
			x.Files[name] = strings.Join(ls, "")
			return same(x)
		})
		c.Files[name] = strings.Join(lines, "")
	}
	// Files no longer needed.
	for _, name := range names {
		x := cloneCase(c)
		delete(x.Files, name)
		if same(x) {
			c = x
		}
	}
	return c
}

func cloneCase(c diffCase) diffCase {
	x := c
	x.Files = make(map[string]string, len(c.Files))
	for k, v := range c.Files {
		x.Files[k] = v
	}
	return x
}

// ddmin is Zeller's delta debugging: a smallest subsequence of items
// (1-minimal: no single item can go) for which keep holds; keep(items)
// is assumed to hold.
func ddmin(items []string, keep func([]string) bool) []string {
	n := 2
	for len(items) >= 2 {
		chunk := (len(items) + n - 1) / n
		reduced := false
		for start := 0; start < len(items); start += chunk {
			end := min(start+chunk, len(items))
			complement := append(slices.Clone(items[:start]), items[end:]...)
			if keep(complement) {
				items = complement
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if n >= len(items) {
				break
			}
			n = min(2*n, len(items))
		}
	}
	return items
}

// keepCase writes a minimized case under dir as a corpus case.
func keepCase(dir string, c diffCase, ref diffAnswer) (string, error) {
	name := fmt.Sprintf("diff_%s_%08x", c.Kind, caseHash(c))
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	write := func(rel, text string) error {
		p := filepath.Join(d, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(text), 0o644)
	}
	if err := write("config.yaml", c.Config); err != nil {
		return "", err
	}
	for k, v := range c.Files {
		if err := write(k, v); err != nil {
			return "", err
		}
	}
	if ref.OK {
		b, err := json.MarshalIndent(map[string]any{"resources": ref.Resources}, "", "  ")
		if err != nil {
			return "", err
		}
		if err := write("want.json", string(b)+"\n"); err != nil {
			return "", err
		}
	} else {
		if err := write("reference-error.txt", ref.Error+"\n"); err != nil {
			return "", err
		}
	}
	return d, nil
}

func caseHash(c diffCase) uint32 {
	h := uint32(2166136261)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint32(s[i])) * 16777619
		}
	}
	add(c.Config)
	names := make([]string, 0, len(c.Files))
	for k := range c.Files {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		add(k)
		add(c.Files[k])
	}
	return h
}

// formatCase prints a case for a failure message.
func formatCase(c diffCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- config.yaml\n%s", c.Config)
	names := make([]string, 0, len(c.Files))
	for k := range c.Files {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(&b, "--- %s\n%s", k, c.Files[k])
		if !strings.HasSuffix(c.Files[k], "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// readDiffCase reads a case directory: config.yaml and the files beside
// it (want.json and env.yaml aside).
func readDiffCase(dir string) (diffCase, error) {
	c := diffCase{Files: map[string]string{}, Kind: "dir"}
	b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		return c, err
	}
	c.Config = string(b)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		switch rel {
		case "config.yaml", "want.json", "env.yaml", "reference-error.txt":
			return nil
		}
		b, err := os.ReadFile(p)
		c.Files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	return c, err
}

func envInt(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return def
}

// TestDMDiff runs DMDIFF_N generated and mutated cases (default 150,
// seed DMDIFF_SEED, default 1) through dm and the reference and fails on
// each difference, minimized. Coverage (which features the cases
// reached) is logged; docs/dm-compatibility.md records it.
//
// DMDIFF_CASE=DIR runs the one case in DIR (a corpus case directory)
// instead, and logs both answers.
func TestDMDiff(t *testing.T) {
	ref := startDMRef(t)
	if dir := os.Getenv("DMDIFF_CASE"); dir != "" {
		c, err := readDiffCase(dir)
		if err != nil {
			t.Fatal(err)
		}
		class, detail, dm, want := diffOne(t, ref, c)
		t.Logf("dm: %+v\nreference: %+v", dm, want)
		if class != "" {
			t.Errorf("%s: %s", class, detail)
		}
		return
	}
	n := envInt("DMDIFF_N", 150)
	seed := uint64(envInt("DMDIFF_SEED", 1))
	keep := os.Getenv("DMDIFF_KEEP")
	maxReports := envInt("DMDIFF_MAX_REPORTS", 10)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	gen := newDiffGen(rng, corpusTemplates(t))
	gen.all = os.Getenv("DMDIFF_ALL") != ""
	seen := map[string]bool{} // minimized differences already reported
	counts := map[string]int{}
	reports := 0
	for i := 0; i < n; i++ {
		c := gen.next()
		counts[c.Kind]++
		class, detail, _, _ := diffOne(t, ref, c)
		if class == "" {
			continue
		}
		if reports >= maxReports {
			counts["differences not minimized"]++
			continue
		}
		small := c
		if os.Getenv("DMDIFF_NOMIN") == "" {
			small = minimizeCase(t, ref, c, diffKey(class, detail))
		}
		_, detail2, _, want := diffOne(t, ref, small)
		if detail2 != "" {
			detail = detail2
		}
		key := class + "\x00" + formatCase(small)
		if seen[key] {
			continue
		}
		seen[key] = true
		reports++
		msg := fmt.Sprintf("case %d (%s, seed %d): %s: %s\n%s", i, c.Kind, seed, class, detail, formatCase(small))
		if keep != "" {
			if d, err := keepCase(keep, small, want); err != nil {
				msg += "\nkeeping it: " + err.Error()
			} else {
				msg += "\nkept in " + d
			}
		}
		t.Error(msg)
	}
	t.Logf("%d cases (seed %d): %v; cases with a known difference left out: %v; features reached: %s", n, seed, counts, gen.skipped, gen.coverage())
}
