package expand

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// corpusEnv is the env of every corpus case; scripts/dmref/expand.py
// sets the same.
var corpusEnv = map[string]string{
	"project":        "proj",
	"project_number": "123456",
	"current_time":   "2026-01-01T00:00:00Z",
	"username":       "user@example.com",
}

// TestDMCorpus expands every configuration of testdata/dmcorpus (written
// for Deployment Manager and its successor) and compares the flat
// configuration with want.json, produced by scripts/dmref/expand.py: DM's
// expansion semantics in Python 3 + jinja2 + PyYAML. Data is compared, not
// text: 2 and 2.0 are equal, as in Python. Cases listed in KNOWN_FAILURES
// are expected to fail (their reasons say why); one that passes must be
// taken off the list.
func TestDMCorpus(t *testing.T) {
	dirs, err := filepath.Glob("testdata/dmcorpus/*")
	if err != nil {
		t.Fatal(err)
	}
	known := readKnownFailures(t, "testdata/dmcorpus/KNOWN_FAILURES")
	var cases, matched int
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		name := filepath.Base(dir)
		cases++
		t.Run(name, func(t *testing.T) {
			err := expandCorpusCase(dir)
			reason, isKnown := known[name]
			switch {
			case err == nil && isKnown:
				t.Errorf("listed in KNOWN_FAILURES (%s) but matches the reference: take it off the list", reason)
			case err == nil:
				matched++
			case isKnown:
				t.Skipf("known failure (%s): %v", reason, err)
			default:
				t.Error(err)
			}
		})
	}
	for name := range known {
		if _, err := os.Stat(filepath.Join("testdata/dmcorpus", name)); err != nil {
			t.Errorf("KNOWN_FAILURES lists %s, which is not a case", name)
		}
	}
	if cases < 40 {
		t.Errorf("the corpus has %d cases; issue 7 asks for at least 40", cases)
	}
	t.Logf("DM corpus: %d/%d configurations match the reference", matched, cases)
}

// readKnownFailures reads "case  reason" lines; # starts a comment.
func readKnownFailures(t *testing.T, file string) map[string]string {
	out := map[string]string{}
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		out[name] = strings.TrimSpace(reason)
	}
	return out
}

// expandCorpusCase expands one case as dm expand would (every file of
// the case sent, keyed by its path from the configuration's directory)
// and compares the result with want.json.
func expandCorpusCase(dir string) error {
	var cfgPath string
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Base(p) {
		case "config.yaml":
			cfgPath = p
		case "want.json", "env.yaml":
		default:
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if cfgPath == "" {
		return fmt.Errorf("no config.yaml")
	}
	cfgDir := filepath.Dir(cfgPath)
	req := Request{Imports: map[string][]byte{}, Deployment: "dep", Namespace: "ns", Env: map[string]string{}, ConfigName: "config.yaml"}
	if req.Config, err = os.ReadFile(cfgPath); err != nil {
		return err
	}
	for _, f := range files {
		rel, err := filepath.Rel(cfgDir, f)
		if err != nil {
			return err
		}
		if req.Imports[filepath.ToSlash(rel)], err = os.ReadFile(f); err != nil {
			return err
		}
	}
	for k, v := range corpusEnv {
		req.Env[k] = v
	}
	if data, err := os.ReadFile(filepath.Join(dir, "env.yaml")); err == nil {
		v, err := DecodeValue(data)
		if err != nil {
			return err
		}
		for k, e := range v.(map[string]any) {
			req.Env[k] = fmt.Sprint(e)
		}
	}
	res, err := expandRecovering(req)
	if err != nil {
		return err
	}
	gotJSON, err := json.Marshal(res.Config)
	if err != nil {
		return err
	}
	wantJSON, err := os.ReadFile(filepath.Join(dir, "want.json"))
	if err != nil {
		return fmt.Errorf("no want.json (run scripts/dmref/expand.py): %w", err)
	}
	got, want := map[string]any{}, map[string]any{}
	for _, d := range []struct {
		b []byte
		v *map[string]any
	}{{gotJSON, &got}, {wantJSON, &want}} {
		dec := json.NewDecoder(bytes.NewReader(d.b))
		dec.UseNumber()
		if err := dec.Decode(d.v); err != nil {
			return err
		}
	}
	if diff := dataDiff("", got, want); diff != "" {
		return fmt.Errorf("differs from the reference: %s\ngot:  %s\nwant: %s", diff, gotJSON, bytes.TrimSpace(wantJSON))
	}
	return nil
}

// expandRecovering expands req, turning an engine panic into an error so
// one case cannot end the test binary (the engines recover their own
// panics once issue 7 section 3 is done).
func expandRecovering(req Request) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return New(Options{Timeout: 5 * time.Second}).Expand(context.Background(), req)
}

// dataDiff compares decoded JSON values as Python compares data (numbers
// by value) and describes the first difference, or returns "".
func dataDiff(at string, got, want any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want a mapping", at, got)
		}
		keys := map[string]bool{}
		for k := range g {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			gv, gok := g[k]
			wv, wok := w[k]
			if gok != wok {
				return fmt.Sprintf("%s.%s: present %v, want present %v", at, k, gok, wok)
			}
			if d := dataDiff(at+"."+k, gv, wv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", at, got, want)
		}
		for i := range w {
			if d := dataDiff(fmt.Sprintf("%s[%d]", at, i), g[i], w[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: got %v, want the number %v", at, got, want)
		}
		gf, _, err1 := big.ParseFloat(string(g), 10, 200, big.ToNearestEven)
		wf, _, err2 := big.ParseFloat(string(w), 10, 200, big.ToNearestEven)
		if err1 != nil || err2 != nil || gf.Cmp(wf) != 0 {
			return fmt.Sprintf("%s: got %v, want %v", at, got, want)
		}
		return ""
	}
	if got != want {
		return fmt.Sprintf("%s: got %#v, want %#v", at, got, want)
	}
	return ""
}
