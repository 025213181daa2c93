package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in a worker: no socket of any kind (so
// no network, UDP included, whatever Landlock covers), no program, no
// child process, no debugging of other processes, and none of the kernel
// interfaces exploits usually start from. Neither the Go runtime nor the
// engines use any of them; on kernels without Landlock this filter alone
// keeps a worker off the network and from starting programs.
var deniedSyscalls = append([]uint32{
	unix.SYS_SOCKET, unix.SYS_SOCKETPAIR,
	unix.SYS_IO_URING_SETUP, // io_uring would run network calls past this filter
	unix.SYS_EXECVE, unix.SYS_EXECVEAT,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT,
	unix.SYS_KEXEC_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
}, archDeniedSyscalls...)

// Offsets in struct seccomp_data.
const (
	seccompNR   = 0
	seccompArch = 4
	seccompArg0 = 16 // the low 32 bits, on the little-endian architectures below
)

// applySeccomp installs the filter on every thread of the process. It
// sets no_new_privs first, which an unprivileged filter needs (Landlock
// set it already where it ran).
func applySeccomp() error {
	if auditArch == 0 {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	prog := seccompProgram()
	// no_new_privs is per thread: set it on the thread that installs the
	// filter, and the kernel copies it to the others with the filter.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	runtime.KeepAlive(prog)
	return nil
}

// seccompProgram is the classic BPF program of the filter:
//
//	arch != this binary's      -> EPERM (a 32-bit or x32 entry point would
//	                              name other calls by the same numbers)
//	a denied call              -> EPERM
//	clone3                     -> ENOSYS (its flags are behind a pointer;
//	                              callers fall back to clone)
//	clone without CLONE_THREAD -> EPERM (a new process, not a thread)
//	anything else              -> allowed
func seccompProgram() []unix.SockFilter {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	// Jumps go to the three returns at the end; their offsets are set
	// once the program's length is known.
	const (
		toAllow = iota + 1
		toDeny
		toNoSys
	)
	type ins struct {
		f      unix.SockFilter
		jt, jf int // a target above, or 0 for the next instruction
	}
	p := []ins{
		{f: unix.SockFilter{Code: ld, K: seccompArch}},
		{f: unix.SockFilter{Code: jeq, K: auditArch}, jf: toDeny},
		{f: unix.SockFilter{Code: ld, K: seccompNR}},
	}
	if x32Bit != 0 {
		p = append(p, ins{f: unix.SockFilter{Code: jge, K: x32Bit}, jt: toDeny})
	}
	for _, nr := range deniedSyscalls {
		p = append(p, ins{f: unix.SockFilter{Code: jeq, K: nr}, jt: toDeny})
	}
	p = append(p,
		ins{f: unix.SockFilter{Code: jeq, K: unix.SYS_CLONE3}, jt: toNoSys},
		ins{f: unix.SockFilter{Code: jeq, K: unix.SYS_CLONE}, jf: toAllow},
		ins{f: unix.SockFilter{Code: ld, K: seccompArg0}},
		ins{f: unix.SockFilter{Code: jset, K: unix.CLONE_THREAD}, jt: toAllow, jf: toDeny},
	)
	n := len(p)
	target := map[int]int{toAllow: n, toDeny: n + 1, toNoSys: n + 2}
	out := make([]unix.SockFilter, 0, n+3)
	for i, in := range p {
		if in.jt != 0 {
			in.f.Jt = uint8(target[in.jt] - i - 1)
		}
		if in.jf != 0 {
			in.f.Jf = uint8(target[in.jf] - i - 1)
		}
		out = append(out, in.f)
	}
	return append(out,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	)
}
