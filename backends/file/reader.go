package file

import (
	"errors"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/fvsql/fvsql/backends"
)

// logReader parses records of a log's logical stream from one read
// handle. It reads only what lies before a physical limit the caller sets
// (the end present at open, or what a writer of this process has made
// durable), so it never sees a batch being written.
//
// Messages it returns slice its buffer; once a message refers to a
// buffer, the buffer is never written again (the next read allocates a new
// one), so returned messages stay valid and are the caller's.
type logReader struct {
	f       *os.File
	lay     layout
	buf     []byte // logical bytes [off, off+len(buf))
	off     int64
	pos     int64 // logical offset of the next record to parse
	limit   int64 // logical end of the readable bytes
	shared  bool  // messages refer to buf: do not reuse it
	scratch []byte
}

const readChunk = 1 << 20

// parse results
type status int

const (
	recOK         status = iota
	recIncomplete        // the bytes are not there (yet): end of what can be read
	recCorrupt           // bad length or checksum: a torn or damaged tail
)

func newLogReader(f *os.File, lay layout) *logReader {
	return &logReader{f: f, lay: lay}
}

// setLimit sets the physical end of what may be read.
func (r *logReader) setLimit(phys int64) { r.limit = r.lay.logical(phys) }

// seekTo moves to a logical offset (a record start).
func (r *logReader) seekTo(x int64) {
	r.pos = x
	if x < r.off || x > r.off+int64(len(r.buf)) {
		if r.shared {
			r.buf, r.shared = nil, false
		}
		r.buf, r.off = r.buf[:0], x
	}
}

// ensure makes buf hold at least n bytes from pos; false if the limit
// comes first.
func (r *logReader) ensure(n int64) (bool, error) {
	if r.pos < r.off {
		r.seekTo(r.pos)
	}
	have := r.off + int64(len(r.buf)) - r.pos
	if have >= n {
		return true, nil
	}
	if r.pos+n > r.limit {
		return false, nil
	}
	// Keep the bytes from pos; a buffer messages refer to is left to them.
	keep := r.buf[r.pos-r.off:]
	want := max(n, readChunk)
	want = min(want, r.limit-r.pos)
	if r.shared || int64(cap(r.buf)) < want {
		nb := make([]byte, len(keep), max(want, 2*int64(len(keep))))
		copy(nb, keep)
		r.buf, r.shared = nb, false
	} else {
		r.buf = r.buf[:copy(r.buf, keep)]
	}
	r.off = r.pos
	if err := r.readLogical(r.off+int64(len(r.buf)), r.pos+want); err != nil {
		return false, err
	}
	return r.off+int64(len(r.buf))-r.pos >= n, nil
}

// readLogical appends the logical bytes [from, to) to buf: one pread of
// the physical span, then the block frames are dropped.
func (r *logReader) readLogical(from, to int64) error {
	if to <= from {
		return nil
	}
	p0, p1 := r.lay.phys(from), r.lay.physEnd(to)
	span := int(p1 - p0)
	if cap(r.scratch) < span {
		r.scratch = make([]byte, span)
	}
	s := r.scratch[:span]
	if _, err := r.f.ReadAt(s, p0); err != nil {
		if errors.Is(err, io.EOF) { // truncated under us
			return nil
		}
		return err
	}
	d := r.lay.data()
	for x := from; x < to; {
		n := min(to-x, d-x%d)
		p := r.lay.phys(x) - p0
		r.buf = append(r.buf, s[p:p+n]...)
		x += n
	}
	return nil
}

// next parses the record at pos and, if whole and intact, returns its
// body (kind first) and moves past it.
func (r *logReader) next() ([]byte, status, error) {
	ok, err := r.ensure(recHeader)
	if err != nil || !ok {
		return nil, recIncomplete, err
	}
	at := r.pos - r.off
	h := r.buf[at : at+recHeader]
	n := int64(le.Uint32(h))
	if n == 0 || n > maxRecordLen {
		return nil, recCorrupt, nil
	}
	if ok, err = r.ensure(recHeader + n); err != nil || !ok {
		return nil, recIncomplete, err
	}
	at = r.pos - r.off
	rec := r.buf[at : at+recHeader+n]
	crc := crc32.Update(crc32.Checksum(rec[:4], castagnoli), castagnoli, rec[recHeader:])
	if crc != le.Uint32(rec[4:]) {
		return nil, recCorrupt, nil
	}
	r.pos += recHeader + n
	return rec[recHeader:], recOK, nil
}

// filter decides which data records a consumer delivers (after a seek).
type filter struct {
	minSeq  int64
	minTs   int64 // unix µs; applies until the first match
	timeSet bool
}

func (f *filter) keep(seq, ts int64) bool {
	if seq < f.minSeq {
		return false
	}
	if f.timeSet {
		if ts < f.minTs {
			return false
		}
		f.timeSet = false
	}
	return true
}

// readBatches appends the data of whole committed batches to out, until
// out holds at least want messages or nothing complete is left. A batch
// whose commit is missing (being written, or torn) is not delivered: the
// reader stays before it. It reports whether it moved.
func (r *logReader) readBatches(stream string, out []backends.Message, want int, f *filter) ([]backends.Message, bool, error) {
	moved := false
	var saved filter
	for len(out) < want {
		start, n := r.pos, len(out)
		if f != nil {
			saved = *f
		}
		undo := func() {
			r.seekTo(start) // the buffer may have moved past start
			if f != nil {
				*f = saved
			}
		}
		committed := false
		for !committed {
			body, st, err := r.next()
			if err != nil {
				undo()
				return out[:n], moved, err
			}
			if st != recOK {
				undo()
				return out[:n], moved, nil
			}
			switch body[0] {
			case kindData:
				d, ok := decodeData(body)
				if !ok {
					undo()
					return out[:n], moved, nil
				}
				if f != nil && !f.keep(d.seq, d.ts) {
					continue
				}
				r.shared = true
				out = append(out, backends.Message{
					Stream: stream, Sequence: d.seq, Timestamp: time.UnixMicro(d.ts).UTC(),
					Key: d.key, Payload: d.payload,
				})
			case kindCommit:
				c, ok := decodeCommit(body)
				if !ok || c.batchStart > start {
					undo()
					return out[:n], moved, nil
				}
				committed = true
			case kindPositions:
			default:
				undo()
				return out[:n], moved, nil
			}
		}
		moved = true
	}
	return out, moved, nil
}

// readBeacon reads the beacon of block k (k ≥ 1).
func readBeacon(f *os.File, lay layout, k int64) (beacon, bool) {
	var b [frameSize]byte
	if _, err := f.ReadAt(b[:], k*lay.block); err != nil {
		return beacon{}, false
	}
	return decodeBeacon(b[:], k)
}

// seekStart finds where to start reading for the first message with
// sequence ≥ seq (byTime false) or timestamp ≥ ts (byTime true): the first
// record of the last block whose beacon says nothing before it qualifies.
// Beacons beyond physical limit are not used. A binary search over the
// beacons, then the caller scans forward at most about one block.
func seekStart(f *os.File, lay layout, limitPhys int64, byTime bool, seq, ts int64) (int64, error) {
	// Blocks 1..nb have a whole beacon within the limit.
	nb := int64(0)
	if limitPhys >= lay.block+frameSize {
		nb = (limitPhys - frameSize) / lay.block
	}
	before := func(bc beacon) bool { // nothing before this block qualifies
		if byTime {
			return bc.maxTs < ts
		}
		return bc.nextSeq <= seq
	}
	var bad error
	get := func(k int64) beacon {
		bc, ok := readBeacon(f, lay, k)
		if !ok && bad == nil {
			bad = errors.New("file: damaged beacon")
		}
		return bc
	}
	// Largest k in [0, nb] with before(beacon k); block 0 always qualifies.
	lo, hi := int64(0), nb
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if before(get(mid)) {
			lo = mid
		} else {
			hi = mid - 1
		}
		if bad != nil {
			return 0, bad
		}
	}
	// A block no record starts in (inside a large record): go back.
	for k := lo; k > 0; k-- {
		bc := get(k)
		if bad != nil {
			return 0, bad
		}
		if bc.firstRec != noRecord {
			return k*lay.data() + int64(bc.firstRec), nil
		}
	}
	return 0, nil
}
