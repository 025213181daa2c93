//go:build !linux

// Package memlimit bounds a process's memory with the kernel where it can.
package memlimit

import "errors"

// Apply reports that this system has no limit dm sets.
func Apply(max uint64) error {
	return errors.New("not available on this system")
}
