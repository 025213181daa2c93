package kubetest

import "syscall"

// sysProcAttr puts a child in its own process group (so a terminal's Ctrl-C
// reaches only the parent, which stops it in order) and has the kernel kill
// it when the parent dies, so a test binary killed at its -timeout leaves
// no etcd or apiserver behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// processExists reports whether a process with this id runs (or is a
// zombie); an error other than "no such process" counts as running.
func processExists(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
