// Package program finds the helper programs dm starts beside itself
// (dm-helm, dm-helm-render, dm-sigstore), so that their libraries' start-up
// cost stays off the commands that do not need them.
package program

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dmhq/dm/internal/derrors"
)

// Find returns the program to run: $env when set (read with getenv; nil
// is os.Getenv), else program beside this process's executable (where
// make install and go install put it), else program on $PATH. Not finding
// it is derrors.Unavailable saying what the program does (what: "Helm
// charts are rendered") and how to install it (hint).
func Find(getenv func(string) string, program, env, what, hint string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", derrors.Errorf(derrors.Unavailable, "$%s: %v; %s", env, err, hint)
		}
		return p, nil
	}
	var tried []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), program)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		tried = append(tried, filepath.Dir(exe))
	}
	if p, err := exec.LookPath(program); err == nil {
		return p, nil
	}
	tried = append(tried, "$PATH")
	return "", derrors.Errorf(derrors.Unavailable, "%s by the %s program, which is not installed (not in %s): %s", what, program, strings.Join(tried, " nor "), hint)
}
