package chaos

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/nodeid/nodeid/snowflake"
)

// A worker's output file is a sequence of records, each one byte of kind, a
// little-endian uint32 payload length and the payload. The first record is
// the header. A worker killed while writing leaves at most one truncated
// record at the end of its file; Parse ignores it (lost IDs are never
// duplicates).
const (
	kindHeader   = 'H'
	kindAcquired = 'A'
	kindIDs      = 'I'
	kindLost     = 'L'
	kindReleased = 'R'
	kindEnd      = 'E'
	kindLate     = 'T'
)

// Causes of a loss, as recorded.
const (
	CauseUnknown  = 0
	CauseExpired  = 1
	CauseTakeover = 2
	CauseReleased = 3
	CauseEvicted  = 4 // by an operator: never, in a chaos run
	CauseFailover = 5 // the claim was lost in a failover of the database
)

// CauseName returns the name of a recorded cause.
func CauseName(c int64) string {
	switch c {
	case CauseExpired:
		return "expired"
	case CauseTakeover:
		return "taken over"
	case CauseReleased:
		return "released"
	case CauseEvicted:
		return "evicted"
	case CauseFailover:
		return "failover"
	}
	return fmt.Sprintf("unknown cause %d", c)
}

// Header opens a worker's file: which process wrote it and how it stamped.
type Header struct {
	Worker, Incarnation, PID int64
	Owner                    string
	OffsetMs                 int64 // the injected wall-clock offset
	Layout                   snowflake.Layout
}

// Acquired records a lease as the worker got it.
type Acquired struct {
	Node, Epoch     int64
	PrevHorizon     int64 // unix ms
	AtNs            int64 // wall clock when Acquire returned
	DeadlineNs      int64 // the lease's first local deadline, as wall time
	ClaimedBeforeNs int64 // wall clock just before Acquire was called
}

// IDs is a batch of IDs minted under one lease.
type IDs struct {
	Node, Epoch int64
	IDs         []uint64
}

// Lost records the end of a lease the worker did not release itself.
type Lost struct {
	Node, Epoch int64
	Cause       int64 // CauseExpired, CauseTakeover, CauseReleased, CauseEvicted, CauseFailover
	DeadlineNs  int64 // the last local deadline, as wall time
	LostAtNs    int64 // when the Lost channel was seen closed; 0 if it did not close within LostWait
	NoticedNs   int64 // when the minting loop noticed
	ProbeMinted int64 // 1 if a Generate after the loss returned an ID (it must not)
	ProbeID     uint64
	Ahead       int64 // ErrClockAhead retries under the lease
	Behind      int64 // ErrClockBehind retries under the lease
}

// Released records a release by the worker.
type Released struct {
	Node, Epoch int64
	StartNs     int64 // wall clock when Release was called
	AtNs        int64 // wall clock when Release returned
	Failed      int64 // 1 if Release returned an error
	Ahead       int64
	Behind      int64
}

// End marks a worker that stopped cleanly.
type End struct{ AtNs int64 }

// Late records a control timer of the worker that fired late: a timer of
// no lease, whose lateness is the machine's (a loaded CPU, a stopped
// process), which every timer of the process suffers alike.
type Late struct {
	DueNs   int64 // wall clock when it was due
	FiredNs int64 // wall clock when it fired
}

// Writer appends records to a worker's file.
type Writer struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte
}

// Create creates the file at path, which must not exist, and writes h.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	p := w.start(kindHeader)
	p = appendInts(p, h.Worker, h.Incarnation, h.PID, h.OffsetMs, h.Layout.Origin,
		int64(h.Layout.NodeBits), int64(h.Layout.StepBits), int64(h.Layout.EpochBits), int64(len(h.Owner)))
	p = append(p, h.Owner...)
	if err := w.finish(p); err != nil {
		f.Close()
		return nil, err
	}
	return w, w.Flush()
}

func (w *Writer) start(kind byte) []byte {
	return append(w.buf[:0], kind, 0, 0, 0, 0)
}

func (w *Writer) finish(p []byte) error {
	binary.LittleEndian.PutUint32(p[1:5], uint32(len(p)-5))
	w.buf = p
	_, err := w.w.Write(p)
	return err
}

func appendInts(p []byte, vs ...int64) []byte {
	for _, v := range vs {
		p = binary.LittleEndian.AppendUint64(p, uint64(v))
	}
	return p
}

// Acquired appends an acquired record.
func (w *Writer) Acquired(a Acquired) error {
	return w.finish(appendInts(w.start(kindAcquired), a.Node, a.Epoch, a.PrevHorizon, a.AtNs, a.DeadlineNs, a.ClaimedBeforeNs))
}

// IDs appends a batch of IDs.
func (w *Writer) IDs(node, epoch int64, ids []uint64) error {
	p := appendInts(w.start(kindIDs), node, epoch)
	for _, id := range ids {
		p = binary.LittleEndian.AppendUint64(p, id)
	}
	return w.finish(p)
}

// Lost appends a loss record.
func (w *Writer) Lost(l Lost) error {
	return w.finish(appendInts(w.start(kindLost), l.Node, l.Epoch, l.Cause, l.DeadlineNs, l.LostAtNs,
		l.NoticedNs, l.ProbeMinted, int64(l.ProbeID), l.Ahead, l.Behind))
}

// Released appends a release record.
func (w *Writer) Released(r Released) error {
	return w.finish(appendInts(w.start(kindReleased), r.Node, r.Epoch, r.StartNs, r.AtNs, r.Failed, r.Ahead, r.Behind))
}

// Late appends a record of a late control timer.
func (w *Writer) Late(l Late) error {
	return w.finish(appendInts(w.start(kindLate), l.DueNs, l.FiredNs))
}

// End appends the clean-stop record.
func (w *Writer) End(e End) error {
	return w.finish(appendInts(w.start(kindEnd), e.AtNs))
}

// Flush writes the buffered records to the file.
func (w *Writer) Flush() error { return w.w.Flush() }

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// File is a parsed worker file. Records keep the order in which they were
// written.
type File struct {
	Path      string
	Header    Header
	Records   []any // Acquired, IDs, Lost, Released, Late, End
	Truncated bool  // the last record was cut short (the worker was killed)
}

// ReadFile reads and parses the file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Parse parses the bytes of a worker file. The IDs of the records alias
// nothing: b may be reused afterwards.
func Parse(b []byte) (*File, error) {
	f := &File{}
	first := true
	for len(b) > 0 {
		if len(b) < 5 {
			f.Truncated = true
			break
		}
		kind, n := b[0], binary.LittleEndian.Uint32(b[1:5])
		if uint64(len(b)-5) < uint64(n) {
			f.Truncated = true
			break
		}
		p := b[5 : 5+n]
		b = b[5+n:]
		if first != (kind == kindHeader) {
			return nil, errors.New("the header is not the first record, or not the only one")
		}
		first = false
		rec, err := parseRecord(kind, p)
		if err != nil {
			return nil, err
		}
		if h, ok := rec.(Header); ok {
			f.Header = h
			continue
		}
		f.Records = append(f.Records, rec)
	}
	if first {
		return nil, ErrNoHeader
	}
	return f, nil
}

// ErrNoHeader: the file does not hold a whole header, as happens when a
// worker is killed right after it started.
var ErrNoHeader = errors.New("chaos: the file has no whole header")

func parseRecord(kind byte, p []byte) (any, error) {
	ints := func(n int) ([]int64, error) {
		if len(p) < 8*n {
			return nil, fmt.Errorf("record %q is %d bytes; want at least %d", kind, len(p), 8*n)
		}
		vs := make([]int64, n)
		for i := range vs {
			vs[i] = int64(binary.LittleEndian.Uint64(p[8*i:]))
		}
		p = p[8*n:]
		return vs, nil
	}
	switch kind {
	case kindHeader:
		v, err := ints(9)
		if err != nil {
			return nil, err
		}
		if int64(len(p)) != v[8] {
			return nil, fmt.Errorf("header owner is %d bytes; want %d", len(p), v[8])
		}
		return Header{
			Worker: v[0], Incarnation: v[1], PID: v[2], OffsetMs: v[3],
			Layout: snowflake.Layout{Origin: v[4], NodeBits: uint8(v[5]), StepBits: uint8(v[6]), EpochBits: uint8(v[7])},
			Owner:  string(p),
		}, nil
	case kindAcquired:
		v, err := ints(6)
		if err != nil {
			return nil, err
		}
		return Acquired{Node: v[0], Epoch: v[1], PrevHorizon: v[2], AtNs: v[3], DeadlineNs: v[4], ClaimedBeforeNs: v[5]}, nil
	case kindIDs:
		v, err := ints(2)
		if err != nil {
			return nil, err
		}
		if len(p)%8 != 0 {
			return nil, fmt.Errorf("ID record of %d bytes", len(p))
		}
		ids := make([]uint64, len(p)/8)
		for i := range ids {
			ids[i] = binary.LittleEndian.Uint64(p[8*i:])
		}
		return IDs{Node: v[0], Epoch: v[1], IDs: ids}, nil
	case kindLost:
		v, err := ints(10)
		if err != nil {
			return nil, err
		}
		return Lost{Node: v[0], Epoch: v[1], Cause: v[2], DeadlineNs: v[3], LostAtNs: v[4], NoticedNs: v[5],
			ProbeMinted: v[6], ProbeID: uint64(v[7]), Ahead: v[8], Behind: v[9]}, nil
	case kindReleased:
		v, err := ints(7)
		if err != nil {
			return nil, err
		}
		return Released{Node: v[0], Epoch: v[1], StartNs: v[2], AtNs: v[3], Failed: v[4], Ahead: v[5], Behind: v[6]}, nil
	case kindLate:
		v, err := ints(2)
		if err != nil {
			return nil, err
		}
		return Late{DueNs: v[0], FiredNs: v[1]}, nil
	case kindEnd:
		v, err := ints(1)
		if err != nil {
			return nil, err
		}
		return End{AtNs: v[0]}, nil
	}
	return nil, fmt.Errorf("unknown record kind %q", kind)
}
