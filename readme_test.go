package dm_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/dmhq/dm/internal/deploy/kubetest"
)

// The examples of README.md and of the pages of docs/ are run, so that every
// command they show works as shown. The convention (docs/testing.md, "README
// examples are tested"), the same for every file:
//
//   - a ```sh block is run: each `dm ...` line, or `$ dm ...` line whose
//     following lines up to the next `$ ` are its shown output (ignored),
//     must exit 0, or N when the line ends in `# exit N`;
//   - a ```sh cluster block is run the same way against a real apiserver
//     (internal/deploy/kubetest), with KUBECONFIG pointing at its admin
//     kubeconfig and the namespaces its lines name created first (unless
//     the block creates them itself);
//   - ```text (and every other info string) is not run: synopses with
//     metavariables, commands that need the network.
//
// A synopsis-looking line (REF, [--expand], a|b, …) in a ```sh block fails,
// so the convention stays honest. Each block runs in a fresh copy of the
// repository (README's commands are typed at a checkout's top) with the
// files of testdata/readme added at its top, and HOME and the caches in
// temporary directories.

// TestMain lets the README's cluster blocks and the mechanism's share one
// apiserver (kubetest.Shared), stopped when the tests end, and removes the
// registryd and dm the tests built.
func TestMain(m *testing.M) {
	code := kubetest.Run(m)
	built.remove()
	os.Exit(code)
}

// readmeFence is one fenced code block of a Markdown file.
type readmeFence struct {
	info string // the info string: "sh", "sh cluster", "text", ...
	line int    // line number of the opening fence
	body []string
}

// readmeCmd is one command line of a ```sh block.
type readmeCmd struct {
	line      int      // line number in the Markdown file
	text      string   // the command as written, continuations joined, comment stripped
	words     []string // shell words before the first pipe
	exit      int      // wanted exit code (# exit N)
	problem   string   // why the line cannot be run as written, if it cannot
	piped     bool     // output goes into another program, which is not run
	quoted    []bool   // words[i] was quoted, so never a metavariable
	stdout    string   // > FILE (or >> FILE, with appendOut)
	stdin     string   // < FILE
	appendOut bool
}

var fenceRE = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*(.*)$")

// readmeFences returns the fenced code blocks of a Markdown file.
func readmeFences(data []byte) []readmeFence {
	var out []readmeFence
	var cur *readmeFence
	var fence, indent string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fenceRE.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur = &readmeFence{info: strings.Join(strings.Fields(m[3]), " "), line: n}
			indent, fence = m[1], m[2]
		case cur != nil && m != nil && strings.HasPrefix(m[2], fence) && m[3] == "":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body = append(cur.body, strings.TrimPrefix(line, indent))
		}
	}
	return out
}

// readmeCommands splits a ```sh block into its command lines.
func readmeCommands(f readmeFence) []readmeCmd {
	prompted := false // a block with `$ ` lines shows output after them
	for _, l := range f.body {
		if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
			prompted = true
		}
	}
	var cmds []readmeCmd
	for i := 0; i < len(f.body); i++ {
		n := f.line + 1 + i
		raw := strings.TrimSpace(f.body[i])
		if prompted {
			if !strings.HasPrefix(raw, "$ ") {
				continue // shown output, or a comment before the first command
			}
			raw = strings.TrimSpace(strings.TrimPrefix(raw, "$ "))
		}
		if raw == "" || strings.HasPrefix(raw, "#") {
			continue
		}
		for strings.HasSuffix(raw, "\\") && i+1 < len(f.body) {
			i++
			raw = strings.TrimSuffix(raw, "\\") + " " + strings.TrimSpace(f.body[i])
		}
		cmds = append(cmds, parseReadmeCmd(n, raw))
	}
	return cmds
}

// exitCommentRE matches "# exit N", which may go on to say why.
var exitCommentRE = regexp.MustCompile(`^#\s*exit\s+(\d+)\b`)

// parseReadmeCmd splits one command line into shell words (quotes and
// backslashes as sh has them; no expansion), stopping at a pipe or comment.
func parseReadmeCmd(n int, raw string) readmeCmd {
	c := readmeCmd{line: n}
	var word strings.Builder
	inWord, quoted := false, false
	var sq, dq, alt bool
	var redirects []string // <, > or >>, whose file is c.words[targets[i]]
	var targets []int
	end := len(raw)
	flush := func() {
		if inWord {
			c.words = append(c.words, word.String())
			c.quoted = append(c.quoted, quoted)
		}
		word.Reset()
		inWord, quoted = false, false
	}
	rs := []rune(raw)
	pos := 0 // byte offset of rs[i]
scan:
	for i := 0; i < len(rs); pos, i = pos+len(string(rs[i])), i+1 {
		r := rs[i]
		switch {
		case sq:
			if r == '\'' {
				sq = false
			} else {
				word.WriteRune(r)
			}
		case r == '$' && !sq && i+1 < len(rs) && (rs[i+1] == '(' || rs[i+1] == '{' || rs[i+1] == '_' || unicode.IsLetter(rs[i+1])):
			c.problem = "uses shell expansion ($...), which the test does not do: write the value out, or put the line in a ```text block"
			word.WriteRune(r)
			inWord = true
		case dq:
			if r == '"' {
				dq = false
			} else if r == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]) {
				i++
				pos += len(string(r))
				word.WriteRune(rs[i])
			} else {
				word.WriteRune(r)
			}
		case r == '\'':
			sq, inWord, quoted = true, true, true
		case r == '"':
			dq, inWord, quoted = true, true, true
		case r == '\\' && i+1 < len(rs):
			i++
			pos += len(string(r))
			word.WriteRune(rs[i])
			inWord = true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			if m := exitCommentRE.FindStringSubmatch(strings.TrimSpace(string(rs[i:]))); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			end = pos
			break scan
		case r == '|' && !inWord && (i+1 == len(rs) || rs[i+1] == ' '):
			c.piped = true
			// The rest is another program's; the command shown ends here
			// for running, but the text keeps it.
			flush()
			for j := i + 1; j < len(rs); j++ {
				if rs[j] == '#' && rs[j-1] == ' ' {
					if m := exitCommentRE.FindStringSubmatch(strings.TrimSpace(string(rs[j:]))); m != nil {
						c.exit, _ = strconv.Atoi(m[1])
					}
					end = pos + len(string(rs[i:j]))
					break
				}
			}
			c.text = strings.TrimSpace(raw[:end])
			return c.redirect(redirects, targets).check(alt)
		case r == '|':
			alt = true
			word.WriteRune(r)
			inWord = true
		case (r == '>' || r == '<' && (i+1 == len(rs) || rs[i+1] != '(')) && (!inWord || word.String() == "2" && !quoted):
			if inWord {
				c.problem = "redirects stderr, which the test reports: drop the redirection or put the line in a ```text block"
			}
			word.Reset()
			inWord, quoted = false, false
			op := string(r)
			if r == '>' && i+1 < len(rs) && rs[i+1] == '>' {
				op = ">>"
				i++
				pos++
			}
			redirects = append(redirects, op)
			targets = append(targets, len(c.words))
		case r == ';' || r == '&':
			c.problem = "runs several commands on one line (" + string(r) + "): put one command per line"
			word.WriteRune(r)
			inWord = true
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if sq || dq {
		c.problem = "has an unterminated quote"
	}
	flush()
	c.text = strings.TrimSpace(raw[:end])
	return c.redirect(redirects, targets).check(alt)
}

// redirect takes the files of redirections (ops[i] naming c.words[at[i]])
// out of the words.
func (c readmeCmd) redirect(ops []string, at []int) readmeCmd {
	drop := map[int]bool{}
	for i, op := range ops {
		if at[i] >= len(c.words) {
			c.problem = "has a redirection (" + op + ") without a file"
			return c
		}
		switch op {
		case "<":
			c.stdin = c.words[at[i]]
		case ">", ">>":
			c.stdout, c.appendOut = c.words[at[i]], op == ">>"
		}
		drop[at[i]] = true
	}
	if len(drop) == 0 {
		return c
	}
	var words []string
	var quoted []bool
	for i, w := range c.words {
		if !drop[i] {
			words, quoted = append(words, w), append(quoted, c.quoted[i])
		}
	}
	c.words, c.quoted = words, quoted
	return c
}

var envAssignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// check looks for what marks a synopsis rather than a command.
func (c readmeCmd) check(alt bool) readmeCmd {
	if c.problem != "" {
		return c
	}
	if why := synopsisSign(c.words, c.quoted, alt); why != "" {
		c.problem = "looks like a synopsis, not a command (" + why + "): move it to a ```text block, or make it concrete (a real reference, file or value)"
	}
	return c
}

var metavarRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// synopsisSign says why words look like a usage synopsis: a metavariable in
// capitals (REF, DIR, NAME=VALUE's VALUE), an optional part in brackets, an
// ellipsis or alternatives joined by |. Keys of KEY=VALUE may be capitals
// (OpenShift parameters are), and a quoted word is taken as it is.
func synopsisSign(words []string, quoted []bool, alt bool) string {
	if alt {
		return "alternatives joined by |"
	}
	for i, w := range words {
		if i < len(quoted) && quoted[i] {
			continue
		}
		if strings.Contains(w, "…") || strings.Contains(w, "...") {
			return fmt.Sprintf("ellipsis in %q", w)
		}
		v := w
		if strings.HasPrefix(w, "[") {
			return fmt.Sprintf("optional part %q", w)
		}
		if k, val, ok := strings.Cut(w, "="); ok {
			if strings.Contains(k, "[") {
				return fmt.Sprintf("optional part %q", w)
			}
			v = val
		}
		if strings.HasPrefix(v, "-") {
			continue // a flag's name
		}
		for _, seg := range strings.FieldsFunc(v, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
		}) {
			if metavarRE.MatchString(seg) {
				return fmt.Sprintf("metavariable %s", seg)
			}
		}
	}
	return ""
}

// readmeRunner runs the command lines of README blocks.
type readmeRunner struct {
	file      string // the Markdown file, for messages
	dm        string // the dm binary
	registryd string
	fixtures  string // a directory whose files are put at the top of each block's directory
	cluster   *kubetest.Env
}

// env is the environment of a block's commands: the process's, without
// anything that points dm elsewhere, with HOME and caches in dir.
func (r *readmeRunner) env(dir string, cluster bool) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "DM_SERVER", "KUBECONFIG", "GITHUB_TOKEN", "REGISTRYD_ADMIN_TOKEN":
			continue
		}
		env = append(env, kv)
	}
	home := filepath.Join(dir, ".home")
	env = append(env, "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	if cluster {
		env = append(env, "KUBECONFIG="+r.cluster.Kubeconfig)
	} else {
		// No cluster is at hand: a command that reaches for one fails
		// instead of finding a developer's.
		env = append(env, "KUBECONFIG="+filepath.Join(dir, ".no-cluster-outside-sh-cluster-blocks"))
	}
	return env
}

// prepare makes a block's working directory: a copy of the repository's
// files (README's commands are run from a checkout's top, and name
// registry-example/ and testdata), with an empty .git so that dm takes it
// for the work tree it is, and the fixtures of testdata/readme on top.
func (r *readmeRunner) prepare(dir string) error {
	if err := copyReadmeTree(".", dir); err != nil {
		return fmt.Errorf("copying the repository: %w", err)
	}
	if err := copyReadmeTree(r.fixtures, dir); err != nil {
		return fmt.Errorf("copying the fixtures: %w", err)
	}
	for _, d := range []string{".git", ".home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// copyReadmeTree copies the regular files under src into dst, overwriting,
// except top-level entries whose names start with a dot (.git, .testenv
// with its binaries), bin and *.test.
func copyReadmeTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel != "." && !strings.Contains(rel, string(filepath.Separator)) && (strings.HasPrefix(rel, ".") || rel == "bin") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular() || strings.HasSuffix(rel, ".test"):
			return nil // and compiled test binaries, which .gitignore lists
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, info.Mode().Perm())
	})
}

// runFresh runs a block in a new directory of the test's and returns a
// message per failing line.
func (r *readmeRunner) runFresh(t *testing.T, f readmeFence) []string {
	t.Helper()
	dir := t.TempDir()
	if err := r.prepare(dir); err != nil {
		t.Fatal(err)
	}
	return r.runBlock(dir, f)
}

// runBlock runs a block's commands in order in dir and returns a message
// per failing line.
func (r *readmeRunner) runBlock(dir string, f readmeFence) []string {
	cluster := f.info == "sh cluster"
	env := r.env(dir, cluster)
	cwd := dir
	var fails []string
	fail := func(c readmeCmd, format string, args ...any) {
		fails = append(fails, fmt.Sprintf("%s:%d: %s\n\t%s", r.file, c.line, c.text, fmt.Sprintf(format, args...)))
	}
	cmds := readmeCommands(f)
	if cluster {
		for _, ns := range readmeNamespaces(cmds) {
			if err := r.cluster.CreateNamespace(context.Background(), ns); err != nil && !strings.Contains(err.Error(), "AlreadyExists") {
				fails = append(fails, fmt.Sprintf("%s:%d: creating namespace %s for the block: %v", r.file, f.line, ns, err))
			}
		}
	}
	for _, c := range cmds {
		if c.problem != "" {
			fail(c, "%s", c.problem)
			continue
		}
		words := c.words
		cmdEnv := env
		for len(words) > 0 && envAssignRE.MatchString(words[0]) {
			cmdEnv = append(cmdEnv[:len(cmdEnv):len(cmdEnv)], words[0])
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		switch prog := words[0]; {
		case prog == "make":
			// CI runs `make test` itself; the README test does not run make.
			continue
		case prog == "export":
			for _, kv := range words[1:] {
				if k, _, _ := strings.Cut(kv, "="); cluster && k == "KUBECONFIG" {
					continue // the test's cluster, not the one the line names
				}
				env = append(env[:len(env):len(env)], kv)
			}
			continue
		case prog == "cd" && len(words) == 2:
			next := filepath.Join(cwd, words[1])
			if !strings.HasPrefix(next, dir) {
				fail(c, "cd leaves the example's directory")
				continue
			}
			cwd = next
			continue
		case prog == "source" && len(words) >= 2 && strings.HasPrefix(words[1], "<(") && strings.HasSuffix(words[len(words)-1], ")"):
			inner := parseReadmeCmd(c.line, strings.TrimSuffix(strings.TrimPrefix(strings.Join(words[1:], " "), "<("), ")"))
			if len(inner.words) == 0 || inner.words[0] != "dm" {
				fail(c, "only `source <(dm ...)` is run; put this in a ```text block")
				continue
			}
			words = append([]string{r.dm}, inner.words[1:]...)
		case prog == "registryd":
			if msg := r.runRegistryd(cwd, cmdEnv, words[1:]); msg != "" {
				fail(c, "%s", msg)
			}
			continue
		case prog == "kubectl" && cluster:
			if r.cluster.Kubectl == "" {
				// Never a silent skip: the line cannot run here.
				fail(c, "kubectl is not in .testenv/bin: make testenv builds it (make test does)")
				continue
			}
			words = append([]string{r.cluster.Kubectl}, words[1:]...)
		case prog == "dm":
			words = append([]string{r.dm}, words[1:]...)
		default:
			where := "```sh"
			if cluster {
				where = "```sh cluster"
			}
			fail(c, "%s is not something the README test runs in a %s block (it runs dm, registryd, export, cd, source <(dm ...), and kubectl in ```sh cluster; make is skipped): put the line in a ```text block, or teach readme_test.go", prog, where)
			continue
		}
		code, stderr, err := runReadmeProcess(cwd, cmdEnv, words, c.stdin, c.stdout, c.appendOut)
		if err != nil {
			fail(c, "%v", err)
			continue
		}
		if code != c.exit {
			hint := fmt.Sprintf(`fix the command (or add "# exit %d" if failing is the point); if it cannot run here, move it to a `+"```text"+` block and say why`, code)
			if !cluster && strings.Contains(strings.ToLower(stderr), "kubeconfig") {
				hint = "it needs a cluster: tag the block ```sh cluster, so that it runs against the test's apiserver"
			}
			fail(c, "exit %d, want %d; stderr:\n%s\n\t(%s)", code, c.exit, indentReadme(stderr), hint)
		}
	}
	return fails
}

// runReadmeProcess runs one command and returns its exit code and stderr.
// stdin and stdout name files (relative to dir) to redirect from and to.
func runReadmeProcess(dir string, env, words []string, stdin, stdout string, appendOut bool) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
	cmd.Dir, cmd.Env = dir, env
	if stdin != "" {
		f, err := os.Open(filepath.Join(dir, stdin))
		if err != nil {
			return 0, "", err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	if stdout != "" {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if appendOut {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(filepath.Join(dir, stdout), flags, 0o644)
		if err != nil {
			return 0, "", err
		}
		defer f.Close()
		cmd.Stdout = f
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return 0, stderr.String(), fmt.Errorf("did not finish within 2 minutes; stderr:\n%s", indentReadme(stderr.String()))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stderr.String(), nil
	}
	if err != nil {
		return 0, "", err
	}
	return 0, stderr.String(), nil
}

// runRegistryd starts registryd with the line's flags (its own cache
// directory; a free port when the line listens on 127.0.0.1:8080 or names
// no address), waits for /readyz and stops it with SIGTERM.
func (r *readmeRunner) runRegistryd(dir string, env, args []string) string {
	for _, a := range args {
		if a == "--github" || strings.HasPrefix(a, "--github=") {
			return "needs GitHub, which the tests cannot reach: put the line in a ```text block and say so"
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err.Error()
	}
	addr := l.Addr().String()
	l.Close()
	args = append([]string(nil), args...)
	hasAddr := false
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--addr" && i+1 < len(args):
			hasAddr = true
			if args[i+1] == "127.0.0.1:8080" {
				args[i+1] = addr
			} else {
				addr = args[i+1]
			}
			i++
		case strings.HasPrefix(args[i], "--addr="):
			hasAddr = true
			if args[i] == "--addr=127.0.0.1:8080" {
				args[i] = "--addr=" + addr
			} else {
				addr = strings.TrimPrefix(args[i], "--addr=")
			}
		}
	}
	if !hasAddr {
		args = append(args, "--addr", addr)
	}
	args = append(args, "--cache-dir", filepath.Join(dir, ".home", "registryd-cache"))
	cmd := exec.Command(r.registryd, args...)
	cmd.Dir, cmd.Env = dir, env
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ready := false
	client := &http.Client{Timeout: 2 * time.Second}
wait:
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-done:
			return fmt.Sprintf("registryd exited before it was ready (%v); output:\n%s", err, indentReadme(logs.String()))
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := client.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready = true
				break wait
			}
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if !ready {
			return fmt.Sprintf("registryd was not ready within 30s; output:\n%s", indentReadme(logs.String()))
		}
		if err != nil {
			return fmt.Sprintf("registryd did not exit cleanly on SIGTERM (%v); output:\n%s", err, indentReadme(logs.String()))
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		return "registryd did not stop within 20s of SIGTERM"
	}
	return ""
}

// readmeNamespaces lists the namespaces a cluster block's lines name with
// -n/--namespace, so they can be created before the block runs; except
// those the block creates itself before using them (`kubectl create
// namespace X`, or a first use with --create-namespace), so that those lines
// are tested as a reader with a fresh cluster runs them.
func readmeNamespaces(cmds []readmeCmd) []string {
	seen := map[string]bool{"default": true}
	var out []string
	for _, c := range cmds {
		ns, creates := "", false
		for i, w := range c.words {
			switch {
			case (w == "-n" || w == "--namespace") && i+1 < len(c.words):
				ns = c.words[i+1]
			case strings.HasPrefix(w, "--namespace="):
				ns = strings.TrimPrefix(w, "--namespace=")
			case w == "--create-namespace":
				creates = true
			}
		}
		if len(c.words) >= 4 && c.words[0] == "kubectl" && c.words[1] == "create" && (c.words[2] == "namespace" || c.words[2] == "ns") {
			ns, creates = c.words[3], true
		}
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		if !creates {
			out = append(out, ns)
		}
	}
	return out
}

func indentReadme(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "\t\t(empty)"
	}
	const max = 4000
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return "\t\t" + strings.ReplaceAll(s, "\n", "\n\t\t")
}

// docFiles lists the Markdown files whose examples are run: README.md and
// the pages of docs/, in name order.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("docs/*.md matches no file: the reference pages README links to are missing")
	}
	sort.Strings(pages)
	return append([]string{"README.md"}, pages...)
}

// TestREADME runs the ```sh and ```sh cluster blocks of README.md and of
// every docs/*.md page, each file as README's (see the top of this file),
// and testdata/readme-mechanism.md to check that failures are reported as
// they should be.
func TestREADME(t *testing.T) {
	files := docFiles(t)
	registryd, dm := buildBinaries(t)
	r := &readmeRunner{dm: dm, registryd: registryd, fixtures: "testdata/readme"}
	// One file after another: their cluster blocks share one apiserver and
	// may name the same namespaces, as a reader's would.
	for _, file := range files {
		t.Run(filepath.ToSlash(file), func(t *testing.T) {
			r := *r
			r.file = filepath.ToSlash(file)
			r.runFile(t)
		})
	}
	t.Run("mechanism", func(t *testing.T) {
		r := *r
		r.file = "testdata/readme-mechanism.md"
		r.checkMechanism(t)
	})
}

// runFile runs every ```sh and ```sh cluster block of r.file, the sh blocks
// in parallel (each has its own directory), and reports each failing line.
func (r *readmeRunner) runFile(t *testing.T) {
	data, err := os.ReadFile(r.file)
	if err != nil {
		t.Fatal(err)
	}
	var cluster []readmeFence
	t.Run("sh", func(t *testing.T) {
		for _, f := range readmeFences(data) {
			switch f.info {
			case "sh":
				t.Run(fmt.Sprintf("line%d", f.line), func(t *testing.T) {
					t.Parallel()
					for _, msg := range r.runFresh(t, f) {
						t.Error(msg)
					}
				})
			case "sh cluster":
				cluster = append(cluster, f)
			case "bash", "shell", "console", "zsh", "shell-session":
				t.Errorf("%s:%d: a ```%s block is neither run nor a synopsis: make it ```sh (run by the test) or ```text (not run)", r.file, f.line, f.info)
			}
		}
	})
	if len(cluster) == 0 {
		return
	}
	t.Run("cluster", func(t *testing.T) {
		cr := *r
		cr.cluster = kubetest.Shared(t) // skips with -short, fails without the programs
		// In README order, one after another: a reader runs them so, and
		// they may name the same namespaces.
		for _, f := range cluster {
			t.Run(fmt.Sprintf("line%d", f.line), func(t *testing.T) {
				for _, msg := range cr.runFresh(t, f) {
					t.Error(msg)
				}
			})
		}
	})
}

func TestReadmeCommands(t *testing.T) {
	for _, tc := range []struct {
		line   string
		words  []string
		exit   int
		piped  bool
		synops bool

		stdin, stdout string
		appendOut     bool
		problem       string
	}{
		{line: "dm resolve redis:v1", words: []string{"dm", "resolve", "redis:v1"}},
		{line: "dm resolve redis:v1.9   # exit 1", words: []string{"dm", "resolve", "redis:v1.9"}, exit: 1},
		{line: "dm x # a comment with | and REF", words: []string{"dm", "x"}},
		{line: `dm expand a.yaml --properties 'x=a b' "y=#c"`, words: []string{"dm", "expand", "a.yaml", "--properties", "x=a b", "y=#c"}},
		{line: "dm expand redis:v1 -o manifest | kubectl apply -f - # exit 3", words: []string{"dm", "expand", "redis:v1", "-o", "manifest"}, piped: true, exit: 3},
		{line: "dm process -f p.yaml -p DATABASE_SERVICE_NAME=db", words: []string{"dm", "process", "-f", "p.yaml", "-p", "DATABASE_SERVICE_NAME=db"}},
		{line: "dm expand redis:v1 --properties ports=[80,443]", words: []string{"dm", "expand", "redis:v1", "--properties", "ports=[80,443]"}},
		{line: "dm expand app.yaml > out.yaml # exit 0: fine", words: []string{"dm", "expand", "app.yaml"}, stdout: "out.yaml"},
		{line: "dm expand - <app.yaml >>out.yaml", words: []string{"dm", "expand", "-"}, stdin: "app.yaml", stdout: "out.yaml", appendOut: true},
		{line: "dm expand 'a>b'", words: []string{"dm", "expand", "a>b"}},
		{line: "dm describe REF", synops: true},
		{line: "dm expand $HOME/app.yaml", problem: "shell expansion"},
		{line: `dm expand "$(pwd)/app.yaml"`, problem: "shell expansion"},
		{line: "dm expand '$(ref.x)' a;", problem: "several commands"},
		{line: "dm resolve redis:v1&& dm resolve redis:v2", problem: "several commands"},
		{line: "dm templates [REGEXP]", synops: true},
		{line: "dm versions [COLLECTION/]TEMPLATE", synops: true},
		{line: "dm lint DIR [--expand]", synops: true},
		{line: "dm lint x --prefix P", synops: true},
		{line: "dm init web --lang jinja|py", synops: true},
		{line: "dm process -f postgres.yaml NAME=VALUE", synops: true},
		{line: "dm resolve redis:v1@sha256:…", synops: true},
		{line: "dm expand CONFIG.yaml", synops: true},
		{line: "dm expand redis:v1 --properties 'tag=LATEST'", words: []string{"dm", "expand", "redis:v1", "--properties", "tag=LATEST"}},
	} {
		c := parseReadmeCmd(1, tc.line)
		if tc.problem != "" {
			if !strings.Contains(c.problem, tc.problem) {
				t.Errorf("%q: problem %q, want one that says %q", tc.line, c.problem, tc.problem)
			}
			continue
		}
		if tc.synops {
			if !strings.Contains(c.problem, "synopsis") {
				t.Errorf("%q: problem %q, want a synopsis", tc.line, c.problem)
			}
			continue
		}
		if c.stdin != tc.stdin || c.stdout != tc.stdout || c.appendOut != tc.appendOut {
			t.Errorf("%q: stdin %q stdout %q append %v; want %q %q %v", tc.line, c.stdin, c.stdout, c.appendOut, tc.stdin, tc.stdout, tc.appendOut)
		}
		if c.problem != "" || strings.Join(c.words, "\x00") != strings.Join(tc.words, "\x00") || c.exit != tc.exit || c.piped != tc.piped {
			t.Errorf("%q: words %q exit %d piped %v problem %q; want %q exit %d piped %v", tc.line, c.words, c.exit, c.piped, c.problem, tc.words, tc.exit, tc.piped)
		}
	}
}

// checkMechanism runs r.file, whose lines that must fail end in
// "# fails: MESSAGE", and checks that exactly those are reported, each with
// its MESSAGE.
func (r *readmeRunner) checkMechanism(t *testing.T) {
	data, err := os.ReadFile(r.file)
	if err != nil {
		t.Fatal(err)
	}
	wantFail := map[int]string{}
	for i, l := range strings.Split(string(data), "\n") {
		if _, msg, ok := strings.Cut(l, "# fails: "); ok {
			wantFail[i+1] = strings.TrimSpace(msg)
		}
	}
	lineRE := regexp.MustCompile(`^` + regexp.QuoteMeta(r.file) + `:(\d+): `)
	check := func(t *testing.T, r *readmeRunner, f readmeFence) {
		got := map[int]bool{}
		for _, msg := range r.runFresh(t, f) {
			m := lineRE.FindStringSubmatch(msg)
			if m == nil {
				t.Errorf("message without file:line: %s", msg)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			got[n] = true
			if want, ok := wantFail[n]; !ok {
				t.Errorf("unexpected failure: %s", msg)
			} else if !strings.Contains(msg, want) {
				t.Errorf("message does not say %q: %s", want, msg)
			}
		}
		for n := f.line + 1; n <= f.line+len(f.body); n++ {
			if _, ok := wantFail[n]; ok && !got[n] {
				t.Errorf("%s:%d: not reported as failing", r.file, n)
			}
		}
	}
	for _, f := range readmeFences(data) {
		switch f.info {
		case "sh":
			t.Run(fmt.Sprintf("line%d", f.line), func(t *testing.T) {
				t.Parallel()
				check(t, r, f)
			})
		case "sh cluster":
			t.Run(fmt.Sprintf("cluster%d", f.line), func(t *testing.T) {
				r := *r
				r.cluster = kubetest.Shared(t)
				check(t, &r, f)
			})
		}
	}
}

// TestDocLinks checks the links between README.md and the pages of docs/:
// every relative link names a file that exists and every #anchor a heading
// of the page it points at, so that a section moved from one page to
// another cannot leave a link behind.
func TestDocLinks(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(data) {
			if msg := checkDocLink(file, l.target); msg != "" {
				t.Errorf("%s:%d: link %q: %s", filepath.ToSlash(file), l.line, l.target, msg)
			}
		}
	}
}

// docLink is one link of a Markdown file.
type docLink struct {
	line   int
	target string
}

var (
	mdLinkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE   = regexp.MustCompile("`+[^`]*`+")
	mdHeadingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	externalLink = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// markdownLinks returns the link targets of a Markdown file outside code
// blocks and code spans.
func markdownLinks(data []byte) []docLink {
	var out []docLink
	inFence := false
	for i, line := range strings.Split(string(data), "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range mdLinkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			out = append(out, docLink{line: i + 1, target: m[1]})
		}
	}
	return out
}

// markdownAnchors returns the anchors GitHub gives a Markdown file's
// headings: lower case, punctuation dropped, spaces as hyphens, and -1, -2…
// after a repeated one.
func markdownAnchors(data []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := mdHeadingRE.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// checkDocLink says what is wrong with a link of file, or "".
func checkDocLink(file, target string) string {
	if externalLink.MatchString(target) {
		return "" // http:, https:, mailto: are not checked: the tests have no network
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if _, err := os.Stat(dest); err != nil {
			return fmt.Sprintf("no file %s", filepath.ToSlash(dest))
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	data, err := os.ReadFile(dest)
	if err != nil {
		return err.Error()
	}
	if !markdownAnchors(data)[anchor] {
		return fmt.Sprintf("%s has no heading with anchor #%s", filepath.ToSlash(dest), anchor)
	}
	return ""
}
