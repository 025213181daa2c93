package helmproxy

import (
	"runtime/debug"

	"github.com/dmhq/dm/internal/memlimit"
)

// DefaultMaxMemory is dm-helm's memory limit: address space beyond what
// the Go runtime reserved at start.
const DefaultMaxMemory = 2 << 30

// ApplyLimits bounds this process's memory (RLIMIT_AS, as the sandbox's
// workers) and returns what it could not apply. dm-helm calls it first.
func ApplyLimits(maxMemory uint64) []string {
	if err := memlimit.Apply(maxMemory); err != nil {
		return []string{"memory limit: " + err.Error()}
	}
	// The collector works harder before the kernel refuses memory.
	debug.SetMemoryLimit(int64(maxMemory / 8 * 7))
	return nil
}
