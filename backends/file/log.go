package file

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// format of a file, decided by its first bytes.
type format int

const (
	formatUnknown format = iota // empty, or a prefix of the magic: not decided yet
	formatLog                   // starts with "FVSQLLOG"
	formatLines                 // anything else: text, one message per line
)

func (f format) String() string {
	return [...]string{"unknown", "log", "lines"}[f]
}

// detect decides the format from a file's first bytes.
func detect(head []byte) format {
	n := min(len(head), len(logMagic))
	switch {
	case string(head[:n]) != logMagic[:n]:
		return formatLines
	case len(head) >= len(logMagic):
		return formatLog
	default:
		return formatUnknown
	}
}

func readHead(f *os.File) ([]byte, error) {
	b := make([]byte, frameSize)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

func parseHeader(b []byte) (fileHeader, error) {
	if len(b) < frameSize {
		return fileHeader{}, errTornHeader
	}
	if le.Uint32(b[44:]) != crc32.Checksum(b[:44], castagnoli) {
		return fileHeader{}, pgerror.New(pgerror.IOError, "file: damaged log header")
	}
	h := fileHeader{version: le.Uint16(b[8:]), block: int64(le.Uint32(b[12:])), created: int64(le.Uint64(b[16:]))}
	if h.version != logVersion {
		return h, pgerror.New(pgerror.FeatureNotSupported, "file: log format version %d is not supported (this fvsql reads version %d)", h.version, logVersion)
	}
	if h.block < minBlock || h.block > maxBlock {
		return h, pgerror.New(pgerror.IOError, "file: damaged log header (block size %d)", h.block)
	}
	return h, nil
}

var errTornHeader = errors.New("file: torn header")

// logFile is the state one process keeps for one path: the single writer
// (with the flock that keeps other processes out), the state recovered on
// open, and a channel that wakes consumers following the file. All
// Streamers of the process share it through the registry, so two
// producers of one file serialise here.
type logFile struct {
	path string
	refs int // registry.mu

	mu   sync.Mutex // writers, recovery, DropStream
	w    *os.File   // the write handle (flocked); nil until the first write
	fmt  format
	lay  layout
	size int64 // physical size: the end of the last committed batch (lines: the file size)
	// log state after the last committed batch
	end, nextSeq, maxTs, lastCommit, lastPos int64
	positions                                map[string]int64
	nl                                       bool // lines: the file does not end in '\n'
	lb, pb                                   []byte
	metas                                    []recMeta

	durable atomic.Int64 // what readers of this process may read; -1 without a writer here
	nmu     sync.Mutex
	changed chan struct{} // closed when a batch is committed
}

type recMeta struct {
	start, seq, ts int64
	data           bool
}

var registry = struct {
	sync.Mutex
	m map[string]*logFile
}{m: map[string]*logFile{}}

// acquire returns the process's logFile of an absolute, clean path.
func acquire(path string) *logFile {
	registry.Lock()
	defer registry.Unlock()
	lf := registry.m[path]
	if lf == nil {
		lf = &logFile{path: path, changed: make(chan struct{})}
		lf.durable.Store(-1)
		registry.m[path] = lf
	}
	lf.refs++
	return lf
}

// release drops a reference; the last one closes the writer (and its lock).
func (lf *logFile) release() {
	registry.Lock()
	lf.refs--
	last := lf.refs == 0
	if last {
		delete(registry.m, lf.path)
	}
	registry.Unlock()
	if last {
		lf.mu.Lock()
		lf.closeWriter()
		lf.mu.Unlock()
	}
}

// wait returns a channel closed at the next commit.
func (lf *logFile) wait() <-chan struct{} {
	lf.nmu.Lock()
	defer lf.nmu.Unlock()
	return lf.changed
}

func (lf *logFile) notify() {
	lf.nmu.Lock()
	close(lf.changed)
	lf.changed = make(chan struct{})
	lf.nmu.Unlock()
}

// readLimit is the physical size a reader may read: what the writer of
// this process committed and synced, else the file's size.
func (lf *logFile) readLimit(f *os.File) (int64, error) {
	if d := lf.durable.Load(); d >= 0 {
		return d, nil
	}
	st, err := f.Stat()
	if err != nil {
		return 0, ioError(err, "file: stat %s", lf.path)
	}
	return st.Size(), nil
}

func (lf *logFile) closeWriter() {
	if lf.w != nil {
		_ = lf.w.Close() // releases the flock
		lf.w = nil
	}
	lf.durable.Store(-1)
}

// openWriter opens (creating when missing) and locks the file, decides its
// format (newFmt for an empty file) and recovers a log. lf.mu is held.
func (lf *logFile) openWriter(newFmt format, block int64) error {
	if lf.w != nil {
		return nil
	}
	created, err := createFile(lf.path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(lf.path, os.O_RDWR, 0)
	if err != nil {
		return openError(err, lf.path)
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
		}
	}()
	if err := lockFile(f); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return pgerror.New(pgerror.ObjectNotInPrerequisiteState,
				"file: %s is being written by another process (one writer per file)", lf.path)
		}
		return ioError(err, "file: lock %s", lf.path)
	}
	head, err := readHead(f)
	if err != nil {
		return ioError(err, "file: read %s", lf.path)
	}
	st, err := f.Stat()
	if err != nil {
		return ioError(err, "file: stat %s", lf.path)
	}
	lf.fmt = detect(head)
	if lf.fmt == formatLog && len(head) < frameSize || lf.fmt == formatUnknown {
		// Empty, or a header torn while the file was created: no record
		// can follow it, so the file starts over.
		lf.fmt = newFmt
		if err := f.Truncate(0); err != nil {
			return ioError(err, "file: truncate %s", lf.path)
		}
		if newFmt == formatLog {
			if err := writeHeader(f, block); err != nil {
				return ioError(err, "file: write %s", lf.path)
			}
		}
		if created {
			if err := syncDir(filepath.Dir(lf.path)); err != nil {
				return ioError(err, "file: sync directory of %s", lf.path)
			}
		}
		st, err = f.Stat()
		if err != nil {
			return ioError(err, "file: stat %s", lf.path)
		}
	}
	switch lf.fmt {
	case formatLog:
		if err := lf.recover(f, st.Size()); err != nil {
			return err
		}
	case formatLines:
		lf.size = st.Size()
		lf.nl = false
		if lf.size > 0 {
			var last [1]byte
			if _, err := f.ReadAt(last[:], lf.size-1); err != nil {
				return ioError(err, "file: read %s", lf.path)
			}
			lf.nl = last[0] != '\n'
		}
	}
	lf.w = f
	lf.durable.Store(lf.size)
	ok = true
	return nil
}

func writeHeader(f *os.File, block int64) error {
	h := encodeHeader(fileHeader{version: logVersion, block: block, created: time.Now().UnixMicro()})
	if _, err := f.WriteAt(h, 0); err != nil {
		return err
	}
	return datasync(f)
}

// recover finds the end of the last committed batch, restores the
// writer's state from it and truncates anything after it (a torn or
// damaged tail). It reads from the commit the last intact beacon names,
// so it verifies at most the last block and the batch straddling into it.
func (lf *logFile) recover(f *os.File, size int64) error {
	head, err := readHead(f)
	if err != nil {
		return ioError(err, "file: read %s", lf.path)
	}
	h, err := parseHeader(head)
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "file: %s", lf.path)
	}
	lay := layout{h.block}
	lf.lay = lay
	lf.end, lf.nextSeq, lf.maxTs, lf.lastCommit, lf.lastPos = 0, 0, minTs, -1, -1
	lf.positions = map[string]int64{}

	r := newLogReader(f, lay)
	r.setLimit(size)
	// Start from the commit the last intact beacon names, once that
	// commit's whole batch verifies (else look further back; no usable
	// beacon: from the start).
	if size >= lay.block+frameSize {
		tried := int64(-2)
		for k := (size - frameSize) / lay.block; k >= 1; k-- {
			bc, ok := readBeacon(f, lay, k)
			if !ok || bc.lastCommit == tried {
				continue // torn, or a commit already found damaged
			}
			if bc.lastCommit < 0 {
				break
			}
			tried = bc.lastCommit
			if lf.loadCommit(r, bc.lastCommit) {
				break
			}
		}
		if lf.lastCommit < 0 {
			lf.end, lf.nextSeq, lf.maxTs, lf.lastPos = 0, 0, minTs, -1
		}
	}
	if lf.lastPos >= 0 {
		r.seekTo(lf.lastPos)
		body, st, err := r.next()
		if err != nil {
			return ioError(err, "file: read %s", lf.path)
		}
		pos, ok := decodePositions(body)
		if st != recOK || !ok {
			return pgerror.New(pgerror.IOError, "file: %s: damaged positions record at %d", lf.path, lf.lastPos)
		}
		lf.positions = pos
	}
	// Verify forward from the last known commit, batch by batch.
	r.seekTo(lf.end)
	for {
		bstart := r.pos
		seq, lastPos := lf.nextSeq, lf.lastPos
		var pos map[string]int64
		done := false
		for !done {
			recStart := r.pos
			body, st, err := r.next()
			if err != nil {
				return ioError(err, "file: read %s", lf.path)
			}
			if st != recOK {
				goto truncate
			}
			switch body[0] {
			case kindData:
				d, ok := decodeData(body)
				if !ok || d.seq != seq {
					goto truncate
				}
				seq++
			case kindPositions:
				p, ok := decodePositions(body)
				if !ok {
					goto truncate
				}
				pos, lastPos = p, recStart
			case kindCommit:
				c, ok := decodeCommit(body)
				if !ok || c.batchStart != bstart || c.nextSeq != seq || c.lastPos != lastPos {
					goto truncate
				}
				// The batch's beacons must be intact too (seeks use them).
				if !beaconsIntact(f, lay, bstart, r.pos) {
					goto truncate
				}
				lf.end, lf.nextSeq, lf.maxTs, lf.lastCommit, lf.lastPos = r.pos, seq, c.maxTs, recStart, lastPos
				if pos != nil {
					lf.positions = pos
				}
				done = true
			default:
				goto truncate
			}
		}
	}
truncate:
	lf.size = lay.physEnd(lf.end)
	if size > lf.size {
		if err := f.Truncate(lf.size); err != nil {
			return ioError(err, "file: truncate the torn tail of %s", lf.path)
		}
		if err := datasync(f); err != nil {
			return ioError(err, "file: sync %s", lf.path)
		}
	}
	return nil
}

// loadCommit restores the state a commit record at logical offset x holds,
// after checking every record of its batch.
func (lf *logFile) loadCommit(r *logReader, x int64) bool {
	r.seekTo(x)
	body, st, err := r.next()
	if err != nil || st != recOK {
		return false
	}
	c, ok := decodeCommit(body)
	if !ok || c.batchStart > x || int64(c.count) > c.nextSeq {
		return false
	}
	end := r.pos
	r.seekTo(c.batchStart)
	seq := c.nextSeq - int64(c.count)
	for r.pos < x {
		recStart := r.pos
		body, st, err := r.next()
		if err != nil || st != recOK {
			return false
		}
		switch body[0] {
		case kindData:
			if d, ok := decodeData(body); !ok || d.seq != seq {
				return false
			}
			seq++
		case kindPositions:
			if _, ok := decodePositions(body); !ok || recStart != c.lastPos {
				return false
			}
		default:
			return false
		}
	}
	if r.pos != x || seq != c.nextSeq || !beaconsIntact(r.f, r.lay, c.batchStart, end) {
		return false
	}
	lf.end, lf.nextSeq, lf.maxTs, lf.lastCommit, lf.lastPos = end, c.nextSeq, c.maxTs, x, c.lastPos
	return true
}

// beaconsIntact checks the beacons a batch [start, end) wrote: those at
// the block boundaries from its physical start to before its end.
func beaconsIntact(f *os.File, lay layout, start, end int64) bool {
	for k := (lay.physEnd(start) + lay.block - 1) / lay.block; k*lay.block < lay.physEnd(end); k++ {
		if _, ok := readBeacon(f, lay, k); !ok {
			return false
		}
	}
	return true
}

// appendBatch writes msgs (all of this file) as one batch, with positions
// when given, and syncs: the batch is durable when it returns, or absent
// after a crash. lf.mu is held and the writer open.
func (lf *logFile) appendBatch(msgs []backends.Message, positions map[string]int64) error {
	if lf.fmt == formatLines {
		if positions != nil {
			return pgerror.NotSupported("file: positioned writes to a text file (%s); use a log file", lf.path)
		}
		return lf.appendLines(msgs)
	}
	lay := lf.lay
	start := lf.end
	lb, metas := lf.lb[:0], lf.metas[:0]
	seq, maxTs := lf.nextSeq, lf.maxTs
	now := time.Now().UnixMicro()
	for i := range msgs {
		m := &msgs[i]
		if len(m.Payload)+len(m.Key)+dataFixed > maxRecordLen {
			return pgerror.New(pgerror.ProgramLimitExceeded, "file: a message of %d bytes is too large", len(m.Payload)+len(m.Key))
		}
		ts := now
		if !m.Timestamp.IsZero() {
			ts = m.Timestamp.UnixMicro()
		}
		metas = append(metas, recMeta{start: start + int64(len(lb)), seq: seq, ts: ts, data: true})
		lb = appendData(lb, seq, ts, m.Key, m.Payload)
		seq++
		maxTs = max(maxTs, ts)
	}
	lastPos := lf.lastPos
	var merged map[string]int64
	if positions != nil {
		merged = maps.Clone(lf.positions)
		maps.Copy(merged, positions)
		lastPos = start + int64(len(lb))
		metas = append(metas, recMeta{start: lastPos})
		lb = appendPositions(lb, merged)
	}
	commitAt := start + int64(len(lb))
	metas = append(metas, recMeta{start: commitAt})
	lb = appendCommit(lb, commit{batchStart: start, nextSeq: seq, maxTs: maxTs, lastPos: lastPos, count: uint32(len(msgs))})
	end := start + int64(len(lb))

	// Lay the logical bytes out in blocks, a beacon at each block start.
	pb := lf.pb[:0]
	p, d := lf.size, lay.data()
	j, runMax := 0, lf.maxTs
	for i := 0; i < len(lb); {
		if p%lay.block == 0 {
			k := p / lay.block
			b := k * d // logical offset of the block's data
			for j < len(metas) && metas[j].start < b {
				if metas[j].data {
					runMax = max(runMax, metas[j].ts)
				}
				j++
			}
			bc := beacon{block: k, nextSeq: seq, maxTs: runMax, lastCommit: lf.lastCommit, firstRec: noRecord}
			first := end // after the batch, the next batch's first record
			if j < len(metas) {
				first = metas[j].start
				if metas[j].data {
					bc.nextSeq = metas[j].seq
				}
			}
			if first-b < d {
				bc.firstRec = uint32(first - b)
			}
			pb = appendBeacon(pb, bc)
			p += frameSize
		}
		n := min(len(lb)-i, int(lay.block-p%lay.block))
		pb = append(pb, lb[i:i+n]...)
		p += int64(n)
		i += n
	}
	lf.lb, lf.pb, lf.metas = lb, pb, metas
	if err := lf.write(pb); err != nil {
		return err
	}
	lf.end, lf.nextSeq, lf.maxTs, lf.lastCommit, lf.lastPos = end, seq, maxTs, commitAt, lastPos
	if merged != nil {
		lf.positions = merged
	}
	lf.durable.Store(lf.size)
	lf.notify()
	if cap(lf.lb) > 64<<20 { // do not keep a huge batch's buffers
		lf.lb, lf.pb, lf.metas = nil, nil, nil
	}
	return nil
}

// appendLines appends payloads as lines of a text file.
func (lf *logFile) appendLines(msgs []backends.Message) error {
	b := lf.lb[:0]
	if lf.nl {
		b = append(b, '\n')
	}
	for _, m := range msgs {
		if bytes.IndexByte(m.Payload, '\n') >= 0 {
			return pgerror.New(pgerror.InvalidParameterValue, "file: %s is a text file: a payload may not contain a newline", lf.path)
		}
		b = append(b, m.Payload...)
		b = append(b, '\n')
	}
	lf.lb = b
	if err := lf.write(b); err != nil {
		return err
	}
	lf.nl = false
	lf.durable.Store(lf.size)
	lf.notify()
	return nil
}

// write appends b at the committed end and syncs. On failure the tail is
// cut back and the writer closed, so the next write recovers afresh.
func (lf *logFile) write(b []byte) error {
	if _, err := lf.w.WriteAt(b, lf.size); err != nil {
		_ = lf.w.Truncate(lf.size)
		lf.closeWriter()
		return ioError(err, "file: write %s", lf.path)
	}
	if err := datasync(lf.w); err != nil {
		// After a failed fsync the page cache cannot be trusted: start over.
		lf.closeWriter()
		return ioError(err, "file: sync %s", lf.path)
	}
	lf.size += int64(len(b))
	return nil
}

// ioError gives an OS error SQLSTATE 58030.
func ioError(err error, format string, args ...any) error {
	return pgerror.Wrap(err, pgerror.IOError, format, args...)
}

// openError classifies an error of opening or creating path.
func openError(err error, path string) error {
	var pe *os.PathError
	switch {
	case errors.Is(err, syscall.EISDIR):
		return pgerror.New(pgerror.InvalidParameterValue, "file: %s is a directory, not a stream file", path)
	case errors.Is(err, os.ErrNotExist):
		return pgerror.Wrap(err, pgerror.IOError, "file: cannot create %s: directory %s does not exist", path, filepath.Dir(path))
	case errors.Is(err, os.ErrPermission), errors.Is(err, syscall.EROFS):
		return pgerror.Wrap(err, pgerror.IOError, "file: %s is not writable", path)
	case errors.As(err, &pe):
		return pgerror.Wrap(pe.Err, pgerror.IOError, "file: %s %s", pe.Op, path)
	}
	return pgerror.Wrap(err, pgerror.IOError, "file: %s", path)
}

// createFile creates path if it is missing (the parent must exist) and
// checks it is a regular file; it reports whether it created it.
func createFile(path string) (bool, error) {
	st, err := os.Stat(path)
	if err == nil {
		if st.IsDir() {
			return false, pgerror.New(pgerror.InvalidParameterValue, "file: %s is a directory, not a stream file", path)
		}
		if !st.Mode().IsRegular() {
			return false, pgerror.New(pgerror.InvalidParameterValue, "file: %s is not a regular file", path)
		}
		return false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return false, openError(err, path)
	}
	dir := filepath.Dir(path)
	if dst, err := os.Stat(dir); err != nil {
		return false, openError(err, path)
	} else if !dst.IsDir() {
		return false, pgerror.New(pgerror.InvalidParameterValue, "file: cannot create %s: %s is not a directory", path, dir)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return false, nil // created meanwhile by someone else
	}
	if err != nil {
		return false, openError(err, path)
	}
	if err := f.Close(); err != nil {
		return false, ioError(err, "file: create %s", path)
	}
	return true, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
