package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/dmhq/dm/internal/memlimit"
)

// applyLimits confines the worker process: an address-space limit of
// maxMemory beyond what the runtime has reserved at start, Go's soft memory
// limit a little below it, a seccomp filter (no sockets, programs or child
// processes) and a Landlock domain with no file system access and no TCP
// connect or bind. Limits the kernel lacks are listed in the hello's
// Problems, so the parent can say so once.
func applyLimits(maxMemory uint64) hello {
	var h hello
	if raceEnabled && maxMemory > 0 {
		h.Problems = append(h.Problems, "memory limit: not set in a race-detector build")
		maxMemory = 0
	}
	if maxMemory > 0 {
		// The Go runtime reserves address space it has not used (about a
		// gigabyte at start); the limit counts from there.
		if err := memlimit.Apply(maxMemory); err != nil {
			h.Problems = append(h.Problems, "memory limit: "+err.Error())
		} else {
			h.MemoryLimit = maxMemory
		}
		// The collector works harder before the hard limit is reached.
		debug.SetMemoryLimit(int64(maxMemory / 8 * 7))
		// Between jobs a worker's live heap is small, so at the default
		// GOGC it collects every few jobs' garbage (a tenth of a warm
		// job's time); the soft limit above bounds the heap anyway.
		debug.SetGCPercent(400)
	}
	if err := applySeccomp(); err != nil {
		h.Problems = append(h.Problems, "seccomp: "+err.Error()+": sockets, programs and child processes are not refused by the kernel")
	} else {
		h.Seccomp = true
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		h.Problems = append(h.Problems, "Landlock is not available in this kernel: the file system and the network are not restricted by the kernel")
		return h
	}
	// No rules: every file system access, TCP connect and bind (ABI 4) and
	// signals and abstract sockets outside the worker (ABI 6) are denied.
	// Executing a program needs file access, so the worker cannot start
	// one either.
	if err := landlock.V6.BestEffort().Restrict(); err != nil {
		h.Problems = append(h.Problems, "Landlock: "+err.Error())
		return h
	}
	h.Landlock = min(abi, 6)
	h.LandlockNet = abi >= 4
	if abi < 4 {
		h.Problems = append(h.Problems, fmt.Sprintf("Landlock ABI %d has no network rules (needs 4, Linux 6.7): TCP connections are not restricted by the kernel", abi))
	}
	return h
}

// setCPULimit gives the coming job a CPU-time budget, a backstop behind
// the parent's wall-clock deadline. RLIMIT_CPU counts the whole process, so
// the soft limit is what was used so far plus the budget; only the soft
// limit moves, which needs no privilege. The kernel then sends SIGXCPU,
// which watchCPU turns into an exit the parent recognises.
func setCPULimit(total time.Duration) {
	var ru unix.Rusage
	var lim unix.Rlimit
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil || unix.Getrlimit(unix.RLIMIT_CPU, &lim) != nil {
		return
	}
	used := uint64(ru.Utime.Sec + ru.Stime.Sec)
	// Parallel GC threads can spend more CPU than wall-clock time.
	lim.Cur = min(used+uint64(2*total/time.Second)+2, lim.Max)
	_ = unix.Setrlimit(unix.RLIMIT_CPU, &lim)
}

// watchCPU exits the worker on SIGXCPU with a message the parent maps to
// the CPU limit.
func watchCPU() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, unix.SIGXCPU)
	go func() {
		<-c
		fmt.Fprintln(os.Stderr, cpuLimitMessage)
		os.Exit(exitCPU)
	}()
}
