// Package memlimit bounds a process's memory with the kernel: the address
// space it may map beyond what it has mapped already (the Go runtime
// reserves much at start). The sandbox's workers and dm-helm, which run
// other people's templates, call it first thing.
package memlimit

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Apply sets RLIMIT_AS to what the process has mapped plus max.
func Apply(max uint64) error {
	base, err := vmSize()
	if err != nil {
		return err
	}
	lim := base + max
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
		return fmt.Errorf("setrlimit(RLIMIT_AS): %w", err)
	}
	return nil
}

// vmSize reads the process's mapped address space.
func vmSize() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status: VmSize %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no VmSize")
}
