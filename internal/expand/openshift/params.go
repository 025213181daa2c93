package openshift

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/dmhq/dm/internal/derrors"
)

// ParseParamFlags parses `-p NAME=VALUE` arguments. The value is everything
// after the first '='. A name given twice is an error, because one of the
// two values would be silently lost.
func ParseParamFlags(args []string) (map[string]string, error) {
	out := make(map[string]string, len(args))
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			return nil, derrors.Errorf(derrors.InvalidArgument, "parameter %q: want NAME=VALUE", a)
		}
		if err := validName(name); err != nil {
			return nil, fmt.Errorf("parameter %q: %w: %w", a, err, derrors.InvalidArgument)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("parameter %s given more than once: %w", name, derrors.InvalidArgument)
		}
		out[name] = value
	}
	return out, nil
}

// ParseParamFile parses a `--param-file`. Two formats are accepted:
//   - KEY=VALUE lines, as for `oc process --param-file`: blank lines and
//     lines starting with # are skipped, the value is the rest of the line
//     after the first '=' (taken literally, quotes included);
//   - a YAML (or JSON) mapping of names to scalar values.
//
// The KEY=VALUE format is used when every non-comment line has the form
// NAME=...; otherwise the file is read as YAML. Errors name the line.
func ParseParamFile(data []byte) (map[string]string, error) {
	if isEnvFormat(data) {
		return parseEnv(data)
	}
	if err := checkAliases(data); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("param file: not KEY=VALUE lines nor a YAML mapping: %w: %w", err, derrors.InvalidArgument)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if err := validName(k); err != nil {
			return nil, fmt.Errorf("param file: %w: %w", err, derrors.InvalidArgument)
		}
		s, ok := scalarString(normalizeFloat(v))
		if !ok {
			return nil, derrors.Errorf(derrors.InvalidArgument, "param file: %s: got %s, want a scalar", k, typeName(v))
		}
		out[k] = s
	}
	return out, nil
}

// normalizeFloat turns integral float64 values, which sigs.k8s.io/yaml
// produces for every number, into int64 so that 3 is written "3".
func normalizeFloat(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

// isEnvFormat reports whether every significant line looks like NAME=...
func isEnvFormat(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	seen := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, ok := strings.Cut(line, "=")
		if !ok || validName(name) != nil {
			return false
		}
		seen = true
	}
	return seen || len(bytes.TrimSpace(data)) == 0
}

func parseEnv(data []byte) (map[string]string, error) {
	out := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimLeft(sc.Text(), " \t")
		if strings.TrimSpace(line) == "" || line[0] == '#' {
			continue
		}
		name, value, _ := strings.Cut(strings.TrimRight(line, "\r"), "=")
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("param file: line %d: parameter %s given more than once: %w", n, name, derrors.InvalidArgument)
		}
		out[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("param file: %w: %w", err, derrors.InvalidArgument)
	}
	return out, nil
}
