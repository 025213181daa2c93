package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: master is the side a terminal emulator
// holds, tty the terminal dm reads and writes.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	// Through the raw descriptor, so that master stays non-blocking and
	// takes read deadlines.
	rc, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr == nil {
			n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	})
	if err = errors.Join(err, ioErr); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// terminal is a user at the master side of a pseudo-terminal.
type terminal struct {
	t      *testing.T
	master *os.File
	seen   strings.Builder // everything the terminal showed
	unread string
}

// expect reads what the terminal shows until want appears; the deadline
// only keeps a broken dm from hanging the test.
func (tm *terminal) expect(want string) {
	tm.t.Helper()
	tm.master.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 4096)
	for !strings.Contains(tm.unread, want) {
		n, err := tm.master.Read(buf)
		s := strings.ReplaceAll(string(buf[:n]), "\r", "")
		tm.seen.WriteString(s)
		tm.unread += s
		if err != nil {
			tm.t.Fatalf("waiting for %q: %v; the terminal showed:\n%s", want, err, tm.seen.String())
		}
	}
	_, tm.unread, _ = strings.Cut(tm.unread, want)
}

// answerHidden types a line once the terminal no longer echoes: dm shows
// the prompt, then turns echo off, and a user typing ahead of that would
// see the answer echoed.
func (tm *terminal) answerHidden(tty *os.File, line string) {
	tm.t.Helper()
	rc, err := tty.SyscallConn()
	if err != nil {
		tm.t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		var tio *unix.Termios
		var ioErr error
		if err := rc.Control(func(fd uintptr) { tio, ioErr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil || ioErr != nil {
			tm.t.Fatal(err, ioErr)
		}
		if tio.Lflag&unix.ECHO == 0 {
			break
		}
		if time.Now().After(deadline) {
			tm.t.Fatal("the terminal still echoes")
		}
		time.Sleep(time.Millisecond)
	}
	tm.answer(line)
}

// answer types a line.
func (tm *terminal) answer(line string) {
	tm.t.Helper()
	if _, err := tm.master.WriteString(line + "\n"); err != nil {
		tm.t.Fatal(err)
	}
}

// promptRegistry holds svc:v1, whose schema requires five properties
// without defaults (two of them secrets) and one with a default.
var promptRegistry = map[string]string{
	"svc/v1/svc.jinja": `resources:
- name: {{ env['name'] }}
  type: v1/ConfigMap
  properties:
    data:
      name: {{ properties['name'] }}
      count: "{{ properties['count'] }}"
      size: {{ properties['size'] }}
      password: {{ properties['password'] }}
      token: {{ properties['token'] }}
      port: "{{ properties['port'] }}"
`,
	"svc/v1/svc.jinja.schema": `required: [name, count, size, password, token, port]
properties:
  name: {type: string, description: Name of the service.}
  count: {type: integer, minimum: 1, description: How many replicas.}
  size: {type: string, enum: [small, large], description: Machine size.}
  password: {type: string, format: password, description: Admin password.}
  token: {type: string, writeOnly: true, description: API token.}
  port: {type: integer, default: 8080}
`,
	"svc/v1/example.yaml": "resources: []\n",
	"db.yaml": `kind: Template
apiVersion: v1
metadata: {name: db}
parameters:
- {name: DB_NAME, description: Database name., required: true}
- {name: DB_PORT, type: int, required: true, description: Port.}
- {name: DB_USER, value: admin, required: true}
objects:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: db}
  data: {name: '${DB_NAME}', port: '${DB_PORT}', user: '${DB_USER}'}
`,
}

// promptConfig is a configuration of a registry template and an imported
// one, each lacking a required property.
var promptConfig = map[string]string{
	"app.yaml": `imports:
- path: lib/banner.jinja
  name: banner
resources:
- name: web
  type: svc:v1
  properties: {name: web, count: 2, size: small, password: pw}
- name: hello
  type: banner
`,
	"lib/banner.jinja":        "resources:\n- name: {{ env['name'] }}\n  type: v1/ConfigMap\n  properties: {data: {text: '{{ properties['text'] }}'}}\n",
	"lib/banner.jinja.schema": "required: [text]\nproperties:\n  text: {type: string, description: What the banner says.}\n",
}

// runOnTerminal runs dm in-process with the pseudo-terminal as its
// standard input and error, as a shell would start it; standard output
// is collected apart, as when piped.
func runOnTerminal(t *testing.T, tty *os.File, args ...string) (stdout *bytes.Buffer, done <-chan error) {
	g := &globals{getenv: func(k string) string {
		if k == "HOME" {
			return t.TempDir()
		}
		return ""
	}, stderr: tty}
	stdout = &bytes.Buffer{}
	root := newRoot(g, stdout)
	root.SetArgs(args)
	root.SetIn(tty)
	root.SetErr(tty)
	ch := make(chan error, 1)
	go func() { ch <- root.ExecuteContext(context.Background()) }()
	return stdout, ch
}

// TestPrompt drives dm expand, process and deploy through a real
// pseudo-terminal: each required property without a value is asked for
// with its description, type and choices, typed and checked by the schema
// (asked again on error), secrets without echo.
func TestPrompt(t *testing.T) {
	dir := writeTree(t, promptRegistry)
	reg := "github.com/acme/tpl=" + dir

	t.Run("expand", func(t *testing.T) {
		master, tty := openPTY(t)
		tm := &terminal{t: t, master: master}
		stdout, done := runOnTerminal(t, tty, "--registry-dir", reg, "expand", "svc:v1", "--properties", "name=web")
		tm.expect("4 required properties without a value:")
		tm.expect("count (integer): How many replicas.\ncount: ")
		tm.answer("many")
		tm.expect(`"many" is not an integer; try again` + "\ncount: ")
		tm.answer("0")
		tm.expect("try again\ncount: ") // below the schema's minimum
		tm.answer("3")
		tm.expect("size (string, one of small, large): Machine size.\nsize: ")
		tm.answer("medium")
		tm.expect(`"medium" is not one of small, large; try again` + "\nsize: ")
		tm.answer("large")
		tm.expect("password (string, secret): Admin password.\npassword: ")
		tm.answerHidden(tty, "s3cret-pw")
		tm.expect("token (string, secret): API token.\ntoken: ")
		tm.answerHidden(tty, "t0ken-xyz")
		if err := <-done; err != nil {
			t.Fatalf("dm expand: %v\nthe terminal showed:\n%s", err, tm.seen.String())
		}
		// Let the terminal show all it has before looking for echoes.
		tm.answer("")
		tm.expect("\n")
		for _, secret := range []string{"s3cret-pw", "t0ken-xyz"} {
			if strings.Contains(tm.seen.String(), secret) {
				t.Errorf("the terminal echoed a secret:\n%s", tm.seen.String())
			}
		}
		for _, want := range []string{"name: web", `count: "3"`, "size: large", "password: s3cret-pw", "token: t0ken-xyz", `port: "8080"`} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
	})

	t.Run("process", func(t *testing.T) {
		master, tty := openPTY(t)
		tm := &terminal{t: t, master: master}
		stdout, done := runOnTerminal(t, tty, "process", "-f", filepath.Join(dir, "db.yaml"), "-o", "yaml")
		tm.expect("2 required parameters without a value:")
		tm.expect("DB_NAME (string): Database name.\nDB_NAME: ")
		tm.answer("")
		tm.expect("DB_NAME is required; try again\nDB_NAME: ")
		tm.answer("orders")
		tm.expect("DB_PORT (integer): Port.\nDB_PORT: ")
		tm.answer("5432")
		if err := <-done; err != nil {
			t.Fatalf("dm process: %v\n%s", err, tm.seen.String())
		}
		for _, want := range []string{"name: orders", "port: 5432", "user: admin"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
	})

	t.Run("deploy", func(t *testing.T) {
		// The properties are asked for before the cluster is reached:
		// here there is none, after the answers.
		master, tty := openPTY(t)
		tm := &terminal{t: t, master: master}
		_, done := runOnTerminal(t, tty, "--registry-dir", reg, "--kubeconfig", filepath.Join(t.TempDir(), "none"), "deploy", "svc:v1",
			"--properties", "name=web,count=2,size=small,password=x")
		tm.expect("1 required property without a value:")
		tm.expect("token (string, secret): API token.\ntoken: ")
		tm.answerHidden(tty, "t")
		if err := <-done; err == nil || !strings.Contains(err.Error(), "kubeconfig") {
			t.Errorf("dm deploy after the answers: %v, want the missing kubeconfig", err)
		}
	})

	t.Run("configuration", func(t *testing.T) {
		cfg := filepath.Join(writeTree(t, promptConfig), "app.yaml")
		master, tty := openPTY(t)
		tm := &terminal{t: t, master: master}
		stdout, done := runOnTerminal(t, tty, "--registry-dir", reg, "expand", cfg)
		tm.expect("2 required properties without a value:")
		tm.expect("web.token (string, secret): API token.\nweb.token: ")
		tm.answerHidden(tty, "tk")
		tm.expect("hello.text (string): What the banner says.\nhello.text: ")
		tm.answer("hi there")
		if err := <-done; err != nil {
			t.Fatalf("dm expand: %v\n%s", err, tm.seen.String())
		}
		for _, want := range []string{"token: tk", "text: hi there"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
	})

	t.Run("no-prompt", func(t *testing.T) {
		_, tty := openPTY(t)
		_, done := runOnTerminal(t, tty, "--registry-dir", reg, "--no-prompt", "expand", "svc:v1")
		err := <-done
		want := "5 required properties without a value (give them with --properties KEY=VALUE or --values FILE, or run on a terminal to be asked):\n" +
			"  name (string): Name of the service.\n  count (integer): How many replicas.\n  size (string, one of small, large): Machine size.\n" +
			"  password (string, secret): Admin password.\n  token (string, secret): API token."
		if err == nil || err.Error() != want {
			t.Errorf("--no-prompt on a terminal: %v\nwant %s", err, want)
		}
	})
}

// TestNoTerminal: without a terminal (a pipe, as in CI) every missing
// property or parameter is listed with its description in one error.
func TestNoTerminal(t *testing.T) {
	dir := writeTree(t, promptRegistry)
	reg := "github.com/acme/tpl=" + dir
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--registry-dir", reg, "expand", "svc:v1", "--properties", "count=2"}, []string{"4 required properties without a value", "  name (string): Name of the service.\n  size (string, one of small, large): Machine size.\n  password (string, secret): Admin password.\n  token (string, secret): API token."}},
		{[]string{"--registry-dir", reg, "--kubeconfig", "/nonexistent", "deploy", "svc:v1"}, []string{"5 required properties without a value", "  count (integer): How many replicas."}},
		{[]string{"--registry-dir", reg, "expand", filepath.Join(writeTree(t, promptConfig), "app.yaml")}, []string{"2 required properties without a value (give them with --values FILE keyed by resource name, or run on a terminal to be asked):\n  web.token (string, secret): API token.\n  hello.text (string): What the banner says."}},
		{[]string{"process", "-f", filepath.Join(dir, "db.yaml")}, []string{"db.yaml: 2 required parameters without a value (give them with NAME=VALUE or -p NAME=VALUE, or run on a terminal to be asked):\n  DB_NAME (string): Database name.\n  DB_PORT (integer): Port."}},
	}
	for _, tt := range tests {
		r := dmRun(t, nil, tt.args...)
		for _, w := range tt.want {
			if r.code != 1 || !strings.Contains(r.stderr, w) {
				t.Errorf("dm %v: exit %d\n%s\nwant %q", tt.args, r.code, r.stderr, w)
			}
		}
	}
}
