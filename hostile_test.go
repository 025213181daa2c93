package dm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dmhq/dm/internal/fetch/githubtest"
	"github.com/dmhq/dm/internal/sandbox"
)

// Limits of the hostile-template suite: smaller than the defaults, so the
// suite is quick.
const (
	hostileMemory  = "256MiB"
	hostileTimeout = 3 * time.Second
	hostileTotal   = 6 * time.Second
	// hostileRSS bounds registryd's resident memory after every hostile
	// template (34 MiB here after each).
	hostileRSS = 100 << 20
)

// TestHostileTemplates sends a registryd binary (built without the race
// detector, whose runtime cannot work under an address-space limit) the
// shapes that used to take it
// down (issue 9), in every language, through POST /v1/expand with real
// worker processes. Each must end with an error naming a limit and the
// template, within its deadline; right after each, /healthz and a normal
// expansion answer, registryd's memory stays bounded and no worker is
// left burning CPU.
//
// It runs alone, not in parallel with the package's other tests: starved of
// CPU, a template meant to meet a memory or output limit meets its 3 s
// Timeout first (seen with the contract and deploy tests beside it).
func TestHostileTemplates(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile-template suite takes about a minute")
	}
	registryd, _ := buildBinaries(t)
	url, proc := startRegistrydProcess(t, registryd, nil, "--expand-memory", hostileMemory, "--expand-workers", "2",
		"--expand-timeout", hostileTimeout.String(), "--expand-total-timeout", hostileTotal.String())
	files := map[string]string{}
	ents, err := os.ReadDir("testdata/hostile")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/hostile", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	files["amplify.json"] = amplifyingTemplate()
	// Which limit ends each: the in-language bounds where they see the
	// size coming, the worker's memory limit or deadline where they
	// cannot. A sharing bomb may spend its time in the collector near the
	// memory limit and meet Timeout first on a loaded machine.
	cases := []struct {
		file  string
		limit string // regular expression over the Options field
		names string // regular expression: the template the error names; default file
	}{
		// Sharing instead of copying.
		{file: "share.jinja", limit: "MaxMemory|MaxOutputBytes|Timeout"},
		{file: "share.gotmpl", limit: "MaxMemory|MaxOutputBytes|Timeout"},
		{file: "extend.py", limit: "MaxMemory"},
		{file: "shared_string.py", limit: "MaxMemory|MaxResultBytes|Timeout"},
		// One call with a huge result.
		{file: "join.jinja", limit: "MaxMemory|MaxOutputBytes"},
		{file: "join.gotmpl", limit: "MaxMemory|MaxOutputBytes"},
		{file: "join.py", limit: "MaxMemory|MaxOutputBytes"},
		{file: "format.py", limit: "MaxMemory|MaxOutputBytes"},
		{file: "str.py", limit: "MaxMemory|MaxOutputBytes"},
		{file: "dumps.py", limit: "MaxMemory|MaxOutputBytes"},
		{file: "regex.gotmpl", limit: "MaxMemory|MaxOutputBytes"},
		{file: "wrapwith.gotmpl", limit: "MaxMemory|MaxOutputBytes"},
		{file: "amplify.json", limit: "MaxMemory|MaxOutputBytes|MaxRenderedBytes"},
		// CPU that outlives the timeout.
		{file: "bigint.py", limit: "Timeout|MaxMemory"},
		{file: "uniq.gotmpl", limit: "Timeout"},
		{file: "wordwrap.jinja", limit: "Timeout|MaxMemory"},
		// The deadline meets whichever template runs then: mostly a
		// busy.py child, on a loaded machine sometimes the parent between
		// two children.
		{file: "children.jinja", limit: "TotalTimeout", names: `busy\.py|children\.jinja`},
	}
	normal := `{"ref": "apps/guestbook:v1"}`
	// POST /processedTemplates runs in a worker too.
	tmpl := `{"kind":"Template","apiVersion":"v1","metadata":{"name":"t"},"parameters":[{"name":"N","value":"x"}],"objects":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"${N}"}}]}`
	kills := map[string]bool{} // reasons of the workers killed
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			req, _ := json.Marshal(map[string]any{
				"config":  "resources:\n- name: evil\n  type: " + c.file + "\n",
				"imports": files,
			})
			began := time.Now()
			status, body := postJSON(t, url+"/v1/expand", req)
			took := time.Since(began)
			t.Logf("%d in %s: %s", status, took.Round(time.Millisecond), body)
			if status < 400 || status >= 500 {
				t.Errorf("status %d, want 4xx", status)
			}
			re := regexp.MustCompile(`\bOptions\.(` + c.limit + `)\b`)
			if strings.Contains(body, "(Options.MaxMemory)") {
				kills["memory"] = true
			}
			if strings.Contains(body, "its worker was killed") {
				kills["timeout"] = true
			}
			names := c.names
			if names == "" {
				names = regexp.QuoteMeta(c.file)
			}
			// Known gap: a worker stopped for memory before it recorded
			// the invocation (seen once in 51 ms, on a loaded machine)
			// answers the limit without naming where; the limit must
			// still be the right one.
			unlocated := strings.Contains(body, "its worker was stopped") && !strings.Contains(body, "evil")
			if unlocated {
				t.Logf("the limit is not located: %s", body)
			}
			if !re.MatchString(body) || !unlocated && (!strings.Contains(body, "evil") || !regexp.MustCompile(names).MatchString(body)) {
				t.Errorf("error %s: want a limit %s naming evil and %s", body, c.limit, names)
			}
			// The deadline of any expansion: the whole-expansion limit
			// and the grace before the kill, plus start-up slack.
			if limit := hostileTotal + sandbox.DefaultGrace + 3*time.Second; took > limit {
				t.Errorf("took %s, want at most %s", took, limit)
			}
			if status, body := getBody(t, url+"/healthz"); status != http.StatusOK {
				t.Errorf("/healthz after %s: %d %s", c.file, status, body)
			}
			if status, body := postJSON(t, url+"/v1/expand", []byte(normal)); status != http.StatusOK {
				t.Errorf("a normal expansion after %s: %d %s", c.file, status, body)
			}
			if status, body := postJSON(t, url+"/processedTemplates", []byte(tmpl)); status != http.StatusOK || !strings.Contains(body, `"name":"x"`) {
				t.Errorf("POST /processedTemplates after %s: %d %s", c.file, status, body)
			}
			rss := residentBytes(t, proc.Pid)
			t.Logf("registryd's resident memory: %d MiB", rss>>20)
			if rss > hostileRSS {
				t.Errorf("registryd's resident memory is %d MiB after %s, want at most %d MiB", rss>>20, c.file, hostileRSS>>20)
			}
			// CPU is free again: the workers (registryd's children) use
			// almost no CPU in the second after the answer.
			before := childrenCPU(t, proc.Pid)
			time.Sleep(time.Second)
			if used := childrenCPU(t, proc.Pid) - before; used > 300*time.Millisecond {
				t.Errorf("workers used %s of CPU in the second after %s's error", used, c.file)
			}
		})
	}
	// Every kill is counted.
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(b)
	for reason := range kills {
		if want := `registryd_expansion_worker_exits_total{reason="` + reason + `"}`; !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// amplifyingTemplate is an OpenShift Template whose one 300 kB parameter
// is substituted into 3000 objects: 900 MB from a 600 kB file.
func amplifyingTemplate() string {
	var sb strings.Builder
	sb.WriteString(`{"kind": "Template", "apiVersion": "template.openshift.io/v1", "metadata": {"name": "amplify"},` + "\n")
	sb.WriteString(`"parameters": [{"name": "X", "value": "` + strings.Repeat("a", 300000) + `"}],` + "\n" + `"objects": [`)
	for i := range 3000 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c%d"}, "data": {"a": "${X}"}}`+"\n", i)
	}
	sb.WriteString("]}\n")
	return sb.String()
}

func postJSON(t *testing.T, url string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(b)
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(b)
}

// residentBytes reads a process's VmRSS.
func residentBytes(t *testing.T, pid int) int64 { return statusBytes(t, pid, "VmRSS") }

// statusBytes reads a size field of a process's /proc status: VmRSS, or
// VmHWM (its resident memory's peak).
func statusBytes(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// childrenCPU sums the user and system time of parent's living children.
func childrenCPU(t *testing.T, parent int) time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var ticks int64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command (which may hold spaces) start
		// with state and ppid; utime and stime are the 14th and 15th.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != parent {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	// Linux reports CPU time in clock ticks of 1/100 s.
	return time.Duration(ticks) * 10 * time.Millisecond
}

// TestHostileDM: dm expands a GitHub registry's templates in a worker, so
// a memory bomb there ends with dm's clean error naming the limit, and a
// well-behaved template of the same registry still expands.
func TestHostileDM(t *testing.T) {
	t.Parallel()
	_, dmBin := buildBinaries(t)
	repo := githubtest.NewRepoFS(t, fstest.MapFS{
		"bomb/v1/bomb.py":      {Data: []byte("def GenerateConfig(context):\n    l = [\"x\"]\n    for i in range(31):\n        l.extend(l)\n    return {\"resources\": []}\n")},
		"bomb/v1/example.yaml": {Data: []byte("resources: []\n")},
		"ok/v1/ok.jinja":       {Data: []byte("resources:\n- name: c\n  type: ConfigMap\n  properties: {data: {a: b}}\n")},
		"ok/v1/example.yaml":   {Data: []byte("resources: []\n")},
	})
	srv := githubtest.New(map[string]string{"acme/evil": repo})
	defer srv.Close()
	code, _, stderr := runDM(t, dmBin, "--github-api", srv.URL, "expand", "github.com/acme/evil/bomb:v1")
	if code != 1 || !strings.Contains(stderr, "Options.MaxMemory") || !strings.Contains(stderr, "github.com/acme/evil/bomb:v1.0.0") {
		t.Errorf("dm expand of a memory bomb: exit %d, stderr %q; want 1 and a MaxMemory error naming the template", code, stderr)
	}
	code, stdout, stderr := runDM(t, dmBin, "--github-api", srv.URL, "expand", "github.com/acme/evil/ok:v1")
	if code != 0 || !strings.Contains(stdout, "ConfigMap") {
		t.Errorf("dm expand: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
