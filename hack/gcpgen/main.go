// Command gcpgen generates internal/gcp's tables: which Config Connector
// (KCC) kind each Google Cloud Deployment Manager type becomes, each
// kind's spec and status fields (from KCC's CRDs and service mappings),
// and the pairing of the REST body DM templates write (from Google's
// discovery documents) with the KCC spec, guided by the hints of
// internal/gcp/kinds.yaml.
//
//	go run ./hack/gcpgen            # internal/gcp/zz_generated.go from the vendored inputs
//	go run ./hack/gcpgen -report    # also list the REST fields no KCC field pairs with
//	go run ./hack/gcpgen -refresh   # first vendor the inputs again (needs ../shared/kcc and the module proxy)
//
// Its inputs are kept in the tree, so that a fresh clone generates the
// same file: third_party/kcc (the CRDs and service mappings of the mapped
// kinds, unchanged) and third_party/googleapis/discovery (the methods and
// schemas DM calls, trimmed from google.golang.org/api's documents).
// -refresh copies them from -kcc and from the module google.golang.org/api
// at apiVersion, located with `go mod download -json` run in the tools
// module hack/tools: the main module never requires it.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	kindsFile_    = "internal/gcp/kinds.yaml"
	outFile       = "internal/gcp/zz_generated.go"
	tableFile     = "docs/gcp-fields.md"
	crdDir        = "third_party/kcc/crds"
	mappingDir    = "third_party/kcc/servicemappings"
	discoveryDir  = "third_party/googleapis/discovery"
	apiModule     = "google.golang.org/api"
	apiVersion    = "v0.312.0"
	defaultKCCDir = "../shared/kcc"
	sumsFile      = "third_party/kcc/SHA256SUMS"
)

func main() {
	refresh := flag.Bool("refresh", false, "vendor the CRDs, service mappings and discovery documents again before generating")
	kccDir := flag.String("kcc", "", "Config Connector's resource definitions for -refresh (default ../shared/kcc beside the repository)")
	report := flag.Bool("report", false, "list the REST fields that pair with no KCC field, per kind")
	flag.Parse()
	root, err := repoRoot()
	if err == nil && *refresh {
		dir := *kccDir
		if dir == "" {
			dir = filepath.Join(root, defaultKCCDir)
		}
		err = refreshInputs(root, dir)
	}
	var g *generated
	if err == nil {
		g, err = generate(root)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(root, outFile), g.source, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(root, tableFile), g.table, 0o644)
	}
	if err == nil && *report {
		for _, k := range sortedKeys(g.unmatched) {
			fmt.Printf("%s: %s\n", k, strings.Join(g.unmatched[k], ", "))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gcpgen:", err)
		os.Exit(1)
	}
}

// repoRoot is the directory of the go.mod that declares github.com/dmhq/dm,
// from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/dmhq/dm\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the dm repository")
		}
		dir = parent
	}
}

// refreshInputs vendors what generate reads.
func refreshInputs(root, kccDir string) error {
	kf, err := readKinds(root)
	if err != nil {
		return err
	}
	// KCC: the CRD of every mapped kind and the service mappings that
	// describe them, unchanged, with KCC's LICENSE.
	byKind, err := indexCRDs(filepath.Join(kccDir, "crds"))
	if err != nil {
		return err
	}
	dst := filepath.Join(root, crdDir)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	var problems []string
	for _, k := range kf.Kinds {
		f, ok := byKind[k.Kind]
		if !ok {
			problems = append(problems, k.Kind+": no CRD in "+kccDir)
			continue
		}
		if err := copyFile(f, filepath.Join(dst, filepath.Base(f))); err != nil {
			return err
		}
		if p := checkReference(kccDir, k); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("kinds.yaml disagrees with %s:\n  %s", kccDir, strings.Join(problems, "\n  "))
	}
	mappings, err := filepath.Glob(filepath.Join(kccDir, "servicemappings", "*.yaml"))
	if err != nil {
		return err
	}
	mdst := filepath.Join(root, mappingDir)
	if err := os.RemoveAll(mdst); err != nil {
		return err
	}
	if err := os.MkdirAll(mdst, 0o755); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, k := range kf.Kinds {
		want[k.Kind] = true
	}
	for _, f := range mappings {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var sm serviceMapping
		if err := yaml.Unmarshal(b, &sm); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, r := range sm.Spec.Resources {
			if want[r.Kind] {
				if err := os.WriteFile(filepath.Join(mdst, filepath.Base(f)), b, 0o644); err != nil {
					return err
				}
				break
			}
		}
	}
	if err := copyFile(filepath.Join(kccDir, "LICENSE"), filepath.Join(root, "third_party/kcc/LICENSE")); err != nil {
		return err
	}
	if err := writeSums(root); err != nil {
		return err
	}
	// Discovery documents: the methods DM calls and the schemas they reach.
	modDir, err := moduleDir(root)
	if err != nil {
		return err
	}
	methods := map[string][]string{}
	for _, k := range kf.Kinds {
		if !contains(methods[k.API], k.Method) {
			methods[k.API] = append(methods[k.API], k.Method)
		}
	}
	ddst := filepath.Join(root, discoveryDir)
	if err := os.RemoveAll(ddst); err != nil {
		return err
	}
	if err := os.MkdirAll(ddst, 0o755); err != nil {
		return err
	}
	for _, api := range sortedKeys(methods) {
		sort.Strings(methods[api])
		doc, err := trimDiscovery(modDir, api, methods[api])
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(doc, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ddst, strings.ReplaceAll(api, "/", "-")+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return copyFile(filepath.Join(modDir, "LICENSE"), filepath.Join(root, "third_party/googleapis/LICENSE"))
}

// moduleDir is where the Go command keeps google.golang.org/api at
// apiVersion, downloaded through the module proxy if need be.
func moduleDir(root string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", apiModule+"@"+apiVersion)
	cmd.Dir = filepath.Join(root, "hack", "tools")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", apiModule, apiVersion, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", err
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", apiModule, apiVersion, info.Error)
	}
	return info.Dir, nil
}

var (
	restRE = regexp.MustCompile(`Google Cloud REST Resource Name</td>\s*<td>([^<]*)</td>`)
	iamRE  = regexp.MustCompile(`Can Be Referenced by IAMPolicy/IAMPolicyMember</td>\s*<td>(\w+)</td>`)
)

// checkReference compares kinds.yaml's rest and iam with the kind's
// reference page; it returns what differs, or "".
func checkReference(kccDir string, k kindSpec) string {
	files, _ := filepath.Glob(filepath.Join(kccDir, "reference", "*", strings.ToLower(k.Kind)+".md"))
	if len(files) == 0 {
		return ""
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return err.Error()
	}
	var p []string
	if m := restRE.FindSubmatch(b); m != nil && strings.TrimSpace(string(m[1])) != k.REST {
		p = append(p, fmt.Sprintf("rest is %q on its reference page, %q in kinds.yaml", strings.TrimSpace(string(m[1])), k.REST))
	}
	if m := iamRE.FindSubmatch(b); m != nil && (string(m[1]) == "Yes") != k.IAM {
		p = append(p, fmt.Sprintf("iam is %s on its reference page", m[1]))
	}
	if len(p) == 0 {
		return ""
	}
	return k.Kind + ": " + strings.Join(p, "; ")
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// vendoredFiles are the files -refresh copies from Config Connector, as
// slash paths relative to third_party/kcc, sorted.
func vendoredFiles(root string) ([]string, error) {
	var out []string
	for _, dir := range []string{"crds", "servicemappings"} {
		files, err := filepath.Glob(filepath.Join(root, "third_party/kcc", dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, dir+"/"+filepath.Base(f))
		}
	}
	out = append(out, "LICENSE")
	sort.Strings(out)
	return out, nil
}

// sums is the SHA256SUMS text of the vendored files, in sha256sum's
// format, so that a test can tell a hand edit from Config Connector's
// copy without Config Connector's tree beside the repository.
func sums(root string) ([]byte, error) {
	files, err := vendoredFiles(root)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, "third_party/kcc", filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(data), f)
	}
	return []byte(b.String()), nil
}

// writeSums records the vendored files' checksums in SHA256SUMS.
func writeSums(root string) error {
	b, err := sums(root)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, sumsFile), b, 0o644)
}
