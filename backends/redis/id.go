package redis

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
)

// SeqBits is the number of low bits of a Message.Sequence that hold the
// sequence part of a Redis stream ID; the milliseconds part is shifted
// above them:
//
//	Sequence = ms<<SeqBits | seq   (ms < 2^43, seq < 2^20)
//
// The encoding preserves the order of IDs, is reversible (IDOf), and fits
// every ID Redis assigns with "*" until the year 2248 as long as fewer than
// 2^20 (1,048,576) entries share one millisecond. IDs outside that range
// (set explicitly by another writer, or a clock stuck behind the stream's
// last ID for a very long burst) cannot be represented: reading them fails
// with SQLSTATE 22003, Message.ID would still be exact but Sequence could
// not keep its order.
const SeqBits = 20

const (
	maxSeq = 1<<SeqBits - 1
	maxMs  = 1<<(63-SeqBits) - 1
)

// streamID is a parsed Redis stream ID "ms-seq".
type streamID struct{ ms, seq uint64 }

func parseID(s string) (streamID, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return streamID{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return streamID{}, false
	}
	return streamID{ms, seq}, true
}

func (id streamID) String() string {
	var b [42]byte
	out := strconv.AppendUint(b[:0], id.ms, 10)
	out = append(out, '-')
	out = strconv.AppendUint(out, id.seq, 10)
	return string(out)
}

func (id streamID) less(o streamID) bool {
	return id.ms < o.ms || id.ms == o.ms && id.seq < o.seq
}

// prev is the greatest ID below id, used as an exclusive "last seen"
// position (XREAD, XGROUP SETID). 0-0 has none; no entry can have ID 0-0,
// so 0-0 itself stands for "before everything".
func (id streamID) prev() streamID {
	switch {
	case id.seq > 0:
		return streamID{id.ms, id.seq - 1}
	case id.ms > 0:
		return streamID{id.ms - 1, ^uint64(0)}
	}
	return id
}

// next is the smallest ID above id (an inclusive XRANGE start after id).
func (id streamID) next() (streamID, bool) {
	switch {
	case id.seq < ^uint64(0):
		return streamID{id.ms, id.seq + 1}, true
	case id.ms < ^uint64(0):
		return streamID{id.ms + 1, 0}, true
	}
	return id, false
}

func (id streamID) sequence() (int64, bool) {
	if id.ms > maxMs || id.seq > maxSeq {
		return 0, false
	}
	return int64(id.ms<<SeqBits | id.seq), true
}

func idOfSequence(seq int64) streamID {
	if seq < 0 {
		return streamID{}
	}
	return streamID{uint64(seq) >> SeqBits, uint64(seq) & maxSeq}
}

// Sequence encodes a Redis stream ID as the order-preserving int64 of
// Message.Sequence (see SeqBits). It fails with SQLSTATE 22P02 for text
// that is not an ID and 22003 for an ID outside the encodable range.
func Sequence(id string) (int64, error) {
	p, ok := parseID(id)
	if !ok {
		return 0, pgerror.New(pgerror.InvalidTextRepresentation, "redis: %q is not a stream ID", id)
	}
	seq, ok := p.sequence()
	if !ok {
		return 0, pgerror.New(pgerror.NumericValueOutOfRange,
			"redis: stream ID %s does not fit a sequence (milliseconds must be < 2^%d and the sequence part < 2^%d)", id, 63-SeqBits, SeqBits)
	}
	return seq, nil
}

// IDOf returns the Redis stream ID a Sequence encodes (negative: "0-0").
func IDOf(seq int64) string { return idOfSequence(seq).String() }
