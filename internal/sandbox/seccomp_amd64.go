package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's calls, which share the x86-64 audit
	// architecture: they are refused whole.
	x32Bit = 0x40000000
)

var archDeniedSyscalls = []uint32{unix.SYS_FORK, unix.SYS_VFORK}
