//go:build linux && !amd64 && !arm64

package sandbox

// No filter is built for other architectures; applySeccomp says so.
const (
	auditArch = 0
	x32Bit    = 0
)

var archDeniedSyscalls []uint32
