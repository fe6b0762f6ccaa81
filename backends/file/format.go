package file

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"sort"
)

// On-disk format of a log file (version 1). All integers little-endian.
//
// The file is a sequence of blocks of blockSize bytes (64 KiB unless the
// header says otherwise); the last block may be partial. Every block
// starts with a 48-byte frame: block 0 with the file header, every other
// block with a beacon. The bytes after the frames, concatenated, are the
// "logical stream" of records; a record may straddle block boundaries (its
// bytes simply continue after the next beacon). Logical offsets count
// bytes of that stream; physical offsets count bytes of the file.
//
//	file header (block 0, 48 bytes)
//	  0  magic "FVSQLLOG"
//	  8  version u16 (1)      10 flags u16 (0)     12 block size u32
//	  16 created unix µs i64  24 reserved (20 bytes, zero)
//	  44 CRC-32C of bytes 0..44
//
//	beacon (blocks k ≥ 1, 48 bytes)
//	  0  magic "FVBC"         4  CRC-32C of bytes 8..48
//	  8  block index u64      16 nextSeq i64: sequence of the first data record starting in or after this block
//	  24 maxTs i64: greatest timestamp (µs) of the records that start before this block
//	  32 lastCommit i64: logical offset of the last commit record of the batches finished before the batch this block is in (-1: none)
//	  40 firstRec u32: offset in this block's data of the first record starting in it (0xFFFFFFFF: none)
//	  44 reserved u32
//
//	record (logical stream)
//	  0  length u32 of what follows the 8-byte record header (kind + body)
//	  4  CRC-32C of the length bytes, the kind and the body
//	  8  kind u8, then the body:
//	     data      flags u8 (1: key present), seq i64, ts (unix µs) i64, key length u32, key, payload (the rest)
//	     positions count u32, then count × (name length u16, name, position i64): the complete map after the batch
//	     commit    batchStart i64, nextSeq i64, maxTs i64, lastPos i64, count u32
//
// A batch (one Send) is data records, at most one positions record, and a
// commit record last; a batch without its commit does not exist for
// readers, and the writer truncates it on open. The commit carries the
// writer's state after the batch (next sequence, greatest timestamp, the
// offset of the last positions record), so recovery needs no full scan:
// it reads the last beacon, jumps to the commit it names, and verifies
// forward from there — at most the last block plus the batch straddling
// into it.
const (
	logMagic     = "FVSQLLOG"
	beaconMagic  = "FVBC"
	logVersion   = 1
	frameSize    = 48 // file header and beacon
	defaultBlock = 64 << 10
	minBlock     = 256
	maxBlock     = 1 << 26
	recHeader    = 8
	maxRecordLen = 1 << 30

	kindData      = 1
	kindPositions = 2
	kindCommit    = 3

	dataFixed  = 1 + 1 + 8 + 8 + 4 // kind, flags, seq, ts, key length
	commitLen  = 1 + 8 + 8 + 8 + 8 + 4
	noRecord   = math.MaxUint32
	minTs      = math.MinInt64
	flagHasKey = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var le = binary.LittleEndian

// layout maps logical offsets to physical ones for one block size.
type layout struct{ block int64 }

// data is the number of record bytes per block.
func (l layout) data() int64 { return l.block - frameSize }

// phys is the physical offset of logical offset x (inside a block's data).
func (l layout) phys(x int64) int64 {
	d := l.data()
	return x/d*l.block + frameSize + x%d
}

// physEnd is the file size of a log whose logical stream ends at x: a
// stream ending exactly at a block boundary does not have the next
// block's beacon yet.
func (l layout) physEnd(x int64) int64 {
	d := l.data()
	if x > 0 && x%d == 0 {
		return x / d * l.block
	}
	return l.phys(x)
}

// logical is the logical end of a file of physical size p.
func (l layout) logical(p int64) int64 {
	blk, off := p/l.block, p%l.block-frameSize
	return blk*l.data() + max(off, 0)
}

type fileHeader struct {
	version uint16
	block   int64
	created int64
}

func encodeHeader(h fileHeader) []byte {
	b := make([]byte, frameSize)
	copy(b, logMagic)
	le.PutUint16(b[8:], h.version)
	le.PutUint32(b[12:], uint32(h.block))
	le.PutUint64(b[16:], uint64(h.created))
	le.PutUint32(b[44:], crc32.Checksum(b[:44], castagnoli))
	return b
}

// beacon is the frame at the start of every block but the first.
type beacon struct {
	block      int64
	nextSeq    int64
	maxTs      int64
	lastCommit int64
	firstRec   uint32
}

func appendBeacon(b []byte, bc beacon) []byte {
	var f [frameSize]byte
	copy(f[:], beaconMagic)
	le.PutUint64(f[8:], uint64(bc.block))
	le.PutUint64(f[16:], uint64(bc.nextSeq))
	le.PutUint64(f[24:], uint64(bc.maxTs))
	le.PutUint64(f[32:], uint64(bc.lastCommit))
	le.PutUint32(f[40:], bc.firstRec)
	le.PutUint32(f[4:], crc32.Checksum(f[8:], castagnoli))
	return append(b, f[:]...)
}

func decodeBeacon(f []byte, block int64) (beacon, bool) {
	if len(f) < frameSize || string(f[:4]) != beaconMagic || le.Uint32(f[4:]) != crc32.Checksum(f[8:frameSize], castagnoli) {
		return beacon{}, false
	}
	bc := beacon{
		block:      int64(le.Uint64(f[8:])),
		nextSeq:    int64(le.Uint64(f[16:])),
		maxTs:      int64(le.Uint64(f[24:])),
		lastCommit: int64(le.Uint64(f[32:])),
		firstRec:   le.Uint32(f[40:]),
	}
	return bc, bc.block == block
}

// record framing ------------------------------------------------------

// beginRecord appends a record header for a body of n bytes (kind
// included) and returns the buffer and the header's index.
func beginRecord(b []byte, n int) ([]byte, int) {
	at := len(b)
	b = le.AppendUint32(b, uint32(n))
	b = le.AppendUint32(b, 0) // CRC, set by endRecord
	return b, at
}

func endRecord(b []byte, at int) []byte {
	crc := crc32.Update(crc32.Checksum(b[at:at+4], castagnoli), castagnoli, b[at+recHeader:])
	le.PutUint32(b[at+4:], crc)
	return b
}

func appendData(b []byte, seq, ts int64, key, payload []byte) []byte {
	b, at := beginRecord(b, dataFixed+len(key)+len(payload))
	flags := byte(0)
	if key != nil {
		flags = flagHasKey
	}
	b = append(b, kindData, flags)
	b = le.AppendUint64(b, uint64(seq))
	b = le.AppendUint64(b, uint64(ts))
	b = le.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	b = append(b, payload...)
	return endRecord(b, at)
}

func appendPositions(b []byte, pos map[string]int64) []byte {
	names := make([]string, 0, len(pos))
	n := 1 + 4
	for k := range pos {
		names = append(names, k)
		n += 2 + len(k) + 8
	}
	sort.Strings(names)
	b, at := beginRecord(b, n)
	b = append(b, kindPositions)
	b = le.AppendUint32(b, uint32(len(names)))
	for _, k := range names {
		b = le.AppendUint16(b, uint16(len(k)))
		b = append(b, k...)
		b = le.AppendUint64(b, uint64(pos[k]))
	}
	return endRecord(b, at)
}

type commit struct {
	batchStart, nextSeq, maxTs, lastPos int64
	count                               uint32
}

func appendCommit(b []byte, c commit) []byte {
	b, at := beginRecord(b, commitLen)
	b = append(b, kindCommit)
	b = le.AppendUint64(b, uint64(c.batchStart))
	b = le.AppendUint64(b, uint64(c.nextSeq))
	b = le.AppendUint64(b, uint64(c.maxTs))
	b = le.AppendUint64(b, uint64(c.lastPos))
	b = le.AppendUint32(b, c.count)
	return endRecord(b, at)
}

// decoding (body = the bytes after the record header, kind first) ------

type dataRec struct {
	seq, ts      int64
	key, payload []byte
}

func decodeData(body []byte) (dataRec, bool) {
	if len(body) < dataFixed || body[0] != kindData {
		return dataRec{}, false
	}
	kl := int(le.Uint32(body[18:]))
	if kl > len(body)-dataFixed {
		return dataRec{}, false
	}
	d := dataRec{seq: int64(le.Uint64(body[2:])), ts: int64(le.Uint64(body[10:]))}
	rest := body[dataFixed:]
	if body[1]&flagHasKey != 0 {
		d.key = rest[:kl:kl]
	}
	d.payload = rest[kl:len(rest):len(rest)]
	return d, true
}

func decodeCommit(body []byte) (commit, bool) {
	if len(body) != commitLen || body[0] != kindCommit {
		return commit{}, false
	}
	return commit{
		batchStart: int64(le.Uint64(body[1:])),
		nextSeq:    int64(le.Uint64(body[9:])),
		maxTs:      int64(le.Uint64(body[17:])),
		lastPos:    int64(le.Uint64(body[25:])),
		count:      le.Uint32(body[33:]),
	}, true
}

func decodePositions(body []byte) (map[string]int64, bool) {
	if len(body) < 5 || body[0] != kindPositions {
		return nil, false
	}
	n := int(le.Uint32(body[1:]))
	b := body[5:]
	out := make(map[string]int64, min(n, 1<<16))
	for range n {
		if len(b) < 2 {
			return nil, false
		}
		kl := int(le.Uint16(b))
		if len(b) < 2+kl+8 {
			return nil, false
		}
		out[string(b[2:2+kl])] = int64(le.Uint64(b[2+kl:]))
		b = b[2+kl+8:]
	}
	return out, len(b) == 0
}
