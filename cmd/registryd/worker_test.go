package main

import (
	"os"
	"testing"

	"github.com/dmhq/dm/internal/sandbox"
)

// TestMain lets the test binary serve as registryd's expansion worker, as
// the registryd binary does: the pool re-executes os.Executable.
func TestMain(m *testing.M) {
	if sandbox.IsWorker() {
		sandbox.ServeWorker()
	}
	os.Exit(m.Run())
}
