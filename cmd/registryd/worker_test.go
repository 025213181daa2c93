package main

import (
	"os"
	"testing"

	"github.com/dmhq/dm/internal/sandbox"
)

// asRegistryd, set to 1 in its environment, makes the test binary run as
// registryd itself: the replica tests run registryd processes (that a test
// kills with SIGKILL) without building the command.
const asRegistryd = "DM_TEST_AS_REGISTRYD"

// TestMain lets the test binary serve as registryd's expansion worker, as
// the registryd binary does: the pool re-executes os.Executable.
func TestMain(m *testing.M) {
	if sandbox.IsWorker() {
		sandbox.ServeWorker(engines()...)
	}
	if os.Getenv(asRegistryd) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
