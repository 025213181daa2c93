package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A slot is a page of memory shared by the parent and one worker, where the
// worker records the template invocation it is running. A frame per
// invocation cost a write, a flush and a wake-up of the parent each time
// (about a quarter of a warm job's overhead); the slot costs a few stores,
// and it survives the worker: the parent reads it after a kill or a crash
// to name the template that was running.
//
// The worker is the only writer. It counts seq up before and after each
// record (a seqlock), so the parent never takes a half-written record for
// a whole one; a worker that died mid-write leaves seq odd, and the record
// is then read as it is, its length bounded.
//
// Layout: seq (uint64), the invocation's start on CLOCK_MONOTONIC in
// nanoseconds (int64), the record's length (uint32), the record (a
// progress as JSON).
type slot struct {
	mem []byte
}

const (
	slotSize   = 16 << 10
	slotHeader = 20
)

// slotFD is the worker's file descriptor of its slot (the first of
// exec.Cmd.ExtraFiles).
const slotFD = 3

// newSlot creates a slot for a new worker; the file is passed to it, and
// closed by the caller once it has started.
func newSlot() (*slot, *os.File, error) {
	fd, err := unix.MemfdCreate("dm-expand-progress", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "dm-expand-progress")
	if err := f.Truncate(slotSize); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("sizing the progress slot: %w", err)
	}
	s, err := mapSlot(fd)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return s, f, nil
}

// openSlot maps the slot the parent passed; the descriptor is closed
// after, so nothing else in the worker can reach it.
func openSlot() (*slot, error) {
	defer unix.Close(slotFD)
	return mapSlot(slotFD)
}

func mapSlot(fd int) (*slot, error) {
	mem, err := unix.Mmap(fd, 0, slotSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the progress slot: %w", err)
	}
	return &slot{mem: mem}, nil
}

// close unmaps the slot.
func (s *slot) close() {
	if s != nil && s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem = nil
	}
}

func (s *slot) seq() *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.mem[0])) }
func (s *slot) started() *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&s.mem[8]))
}

// record records the start of an invocation. Only the worker calls it.
func (s *slot) record(path []string, template string) {
	b, err := json.Marshal(progress{Path: path, Template: template})
	if err != nil || len(b) > slotSize-slotHeader {
		// Too deep to record whole: the template alone, cut to fit.
		if max := (slotSize - slotHeader) / 2; len(template) > max {
			template = template[:max]
		}
		b, _ = json.Marshal(progress{Template: template})
	}
	seq := s.seq()
	seq.Add(1)
	s.started().Store(monotonic())
	binary.LittleEndian.PutUint32(s.mem[16:20], uint32(len(b)))
	copy(s.mem[slotHeader:], b)
	seq.Add(1)
}

// read returns the slot's sequence number, the start of the invocation
// recorded and the record. The parent calls it; a record it cannot decode
// (a worker that died writing it, or misbehaved) reads as empty.
func (s *slot) read() (seq uint64, started int64, p progress) {
	buf := make([]byte, slotHeader, slotSize)
	for range 1000 {
		seq = s.seq().Load()
		if seq&1 == 1 {
			runtime.Gosched()
			continue
		}
		started = s.started().Load()
		copy(buf, s.mem[:slotHeader])
		n := min(int(binary.LittleEndian.Uint32(buf[16:20])), slotSize-slotHeader)
		buf = append(buf[:slotHeader], s.mem[slotHeader:slotHeader+n]...)
		if s.seq().Load() == seq {
			break
		}
	}
	return seq, started, decodeRecord(buf)
}

// decodeRecord decodes the record of a slot's bytes.
func decodeRecord(mem []byte) progress {
	var p progress
	if len(mem) < slotHeader {
		return p
	}
	n := int(binary.LittleEndian.Uint32(mem[16:20]))
	if n > len(mem)-slotHeader {
		return p
	}
	if json.Unmarshal(mem[slotHeader:slotHeader+n], &p) != nil {
		return progress{}
	}
	return p
}

// monotonic is CLOCK_MONOTONIC in nanoseconds: the same clock in both
// processes, and one that wall-clock changes do not move.
func monotonic() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// since is the time elapsed from a monotonic reading.
func since(start int64) time.Duration { return time.Duration(monotonic() - start) }
