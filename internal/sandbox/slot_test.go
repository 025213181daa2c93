package sandbox

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSlot: what one side records the other reads, through the memory
// both map; the time left counts from the invocation's start.
func TestSlot(t *testing.T) {
	w, f, err := newSlot()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	// The parent's view: a second mapping of the same memory, as in two
	// processes.
	p, err := mapSlot(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	base, _, _ := p.read()
	st := &jobState{slot: p, base: base}
	if got := st.left(time.Second); got != time.Second {
		t.Errorf("left before any invocation = %s, want the whole limit", got)
	}
	if err := st.locate(errTest); err != errTest {
		t.Errorf("locate before any invocation = %v, want the error as it is", err)
	}

	w.record([]string{"app", "db"}, "github.com/o/r/t:v1.0.0")
	seq, _, rec := p.read()
	if seq != base+2 || !reflect.DeepEqual(rec, progress{Path: []string{"app", "db"}, Template: "github.com/o/r/t:v1.0.0"}) {
		t.Errorf("read %d %+v", seq, rec)
	}
	time.Sleep(20 * time.Millisecond)
	if left := st.left(time.Second); left <= 0 || left > time.Second-20*time.Millisecond {
		t.Errorf("left = %s, want under %s", left, time.Second-20*time.Millisecond)
	}
	if left := st.left(10 * time.Millisecond); left > 0 {
		t.Errorf("left of a 10ms limit after 20ms = %s, want none", left)
	}
	// A worker cannot buy time with a start in the future.
	w.started().Store(monotonic() + int64(time.Hour))
	if left := st.left(time.Second); left > time.Second {
		t.Errorf("left with a start in the future = %s, want at most the limit", left)
	}
	if err := st.locate(errTest); !strings.Contains(err.Error(), "github.com/o/r/t:v1.0.0") {
		t.Errorf("locate = %v, want the template named", err)
	}

	// A record too large to fit keeps the template, cut.
	w.record(make([]string, slotSize), strings.Repeat("t", slotSize))
	if _, _, rec := p.read(); rec.Path != nil || len(rec.Template) != (slotSize-slotHeader)/2 {
		t.Errorf("oversized record read as %d path elements and a template of %d bytes", len(rec.Path), len(rec.Template))
	}
}

var errTest = errTestType{}

type errTestType struct{}

func (errTestType) Error() string { return "test error" }

// FuzzSlotRecord: whatever a worker leaves in its slot, the parent reads
// a record or none, without a panic.
func FuzzSlotRecord(f *testing.F) {
	mem := make([]byte, slotHeader+64)
	binary.LittleEndian.PutUint32(mem[16:20], 44)
	copy(mem[slotHeader:], `{"path":["a"],"template":"github.com/o/r/t"}`)
	f.Add(mem)
	f.Add([]byte{})
	f.Add(make([]byte, slotHeader))
	f.Fuzz(func(t *testing.T, mem []byte) {
		p := decodeRecord(mem)
		if len(p.Template) > len(mem) {
			t.Fatalf("template of %d bytes from %d bytes", len(p.Template), len(mem))
		}
	})
}
