package main

import (
	"os"
	"testing"

	"github.com/dmhq/dm/internal/deploy/kubetest"
	"github.com/dmhq/dm/internal/expand/helmproxy/helmproxytest"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/signature/sigproxy/sigproxytest"
)

// chartPrograms are dm-helm and dm-helm-render, built by the first test
// that needs them.
var chartPrograms helmproxytest.Programs

// sigstoreProgram is dm-sigstore, built by the first test that verifies
// or signs.
var sigstoreProgram sigproxytest.Program

// TestMain lets the test binary serve as registryd's expansion worker, as
// the registryd binary does: the pool re-executes os.Executable; and
// stops the apiserver the tests share (kubetest.Shared).
func TestMain(m *testing.M) {
	if sandbox.IsWorker() {
		sandbox.ServeWorker()
	}
	code := kubetest.Run(m) // tests that need an apiserver share one
	chartPrograms.Remove()
	sigstoreProgram.Remove()
	os.Exit(code)
}
