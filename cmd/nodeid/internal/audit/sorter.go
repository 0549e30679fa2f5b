package audit

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// record is one ID read: its sort key (node field, time, sequence and
// epoch bits, in that order from the top: see keyer), the ID itself, and
// the process it came from (an index into the --by values; 0 without
// --by).
type record struct {
	key uint64
	id  int64
	by  uint32
}

// recordSize is the size of a record in a spill file.
const recordSize = 8 + 8 + 4

func compareRecords(a, b record) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.by, b.by)
}

// defaultChunk is how many records the sorter holds in memory: 2 Mi
// records of 24 bytes, 48 MiB.
const defaultChunk = 2 << 20

// sorter sorts records in bounded memory: it fills a chunk, sorts it, and
// spills it to a temporary file when the next one needs the room; Sorted
// merges the spilled runs and the last chunk.
type sorter struct {
	dir   string // for the spill files; "" for os.TempDir
	chunk []record
	runs  []*os.File
}

func newSorter(dir string, chunk int) *sorter {
	return &sorter{dir: dir, chunk: make([]record, 0, chunk)}
}

// Add adds a record, spilling the chunk first if it is full.
func (s *sorter) Add(r record) error {
	if len(s.chunk) == cap(s.chunk) {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.chunk = append(s.chunk, r)
	return nil
}

func (s *sorter) spill() error {
	slices.SortFunc(s.chunk, compareRecords)
	f, err := os.CreateTemp(s.dir, "nodeid-audit-*.run")
	if err != nil {
		return fmt.Errorf("a temporary file for the sorted IDs (--temp-dir): %w", err)
	}
	// Unlinked at once where the system allows: nothing is left behind,
	// however the command ends.
	_ = os.Remove(f.Name())
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 1<<20)
	var b [recordSize]byte
	for _, r := range s.chunk {
		binary.LittleEndian.PutUint64(b[0:], r.key)
		binary.LittleEndian.PutUint64(b[8:], uint64(r.id))
		binary.LittleEndian.PutUint32(b[16:], r.by)
		if _, err := w.Write(b[:]); err != nil {
			return fmt.Errorf("writing the sorted IDs to %s (--temp-dir): %w", f.Name(), err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the sorted IDs to %s (--temp-dir): %w", f.Name(), err)
	}
	s.chunk = s.chunk[:0]
	return nil
}

// Close removes the spill files.
func (s *sorter) Close() {
	for _, f := range s.runs {
		name := f.Name()
		f.Close()
		_ = os.Remove(name)
	}
	s.runs = nil
}

// Runs returns how many runs were spilled to disk.
func (s *sorter) Runs() int { return len(s.runs) }

// Sorted calls yield with every record added, in order, and stops at the
// first error yield returns.
func (s *sorter) Sorted(yield func(record) error) error {
	slices.SortFunc(s.chunk, compareRecords)
	h := &mergeHeap{}
	add := func(r *runReader) error {
		ok, err := r.next()
		if ok {
			h.items = append(h.items, r)
		}
		return err
	}
	if err := add(&runReader{mem: s.chunk}); err != nil {
		return err
	}
	for _, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := add(&runReader{r: bufio.NewReaderSize(f, 256<<10)}); err != nil {
			return err
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		top := h.items[0]
		if err := yield(top.cur); err != nil {
			return err
		}
		ok, err := top.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// runReader reads one sorted run: the chunk in memory, or a spill file.
type runReader struct {
	mem []record // the in-memory run, consumed from the front
	r   *bufio.Reader
	cur record
	buf [recordSize]byte
}

// next makes the run's next record current, and reports whether there was
// one.
func (r *runReader) next() (bool, error) {
	if r.r == nil {
		if len(r.mem) == 0 {
			return false, nil
		}
		r.cur, r.mem = r.mem[0], r.mem[1:]
		return true, nil
	}
	if _, err := io.ReadFull(r.r, r.buf[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("reading back the sorted IDs: %w", err)
	}
	r.cur = record{
		key: binary.LittleEndian.Uint64(r.buf[0:]),
		id:  int64(binary.LittleEndian.Uint64(r.buf[8:])),
		by:  binary.LittleEndian.Uint32(r.buf[16:]),
	}
	return true, nil
}

// mergeHeap orders the runs by their current record.
type mergeHeap struct{ items []*runReader }

func (h *mergeHeap) Len() int           { return len(h.items) }
func (h *mergeHeap) Less(i, j int) bool { return compareRecords(h.items[i].cur, h.items[j].cur) < 0 }
func (h *mergeHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)         { h.items = append(h.items, x.(*runReader)) }
func (h *mergeHeap) Pop() any {
	old := h.items
	it := old[len(old)-1]
	h.items = old[:len(old)-1]
	return it
}
