package stdio

import (
	"bytes"
	"strconv"
	"time"
)

// The line framing of the seed (SeaStreamer's stdio backend):
//
//	[timestamp | stream_key | sequence | shard_id] payload
//
// Every part is optional as long as the order holds: "[ts] p", "[key] p",
// "[ts | key | seq] p", "[key | seq | shard] p" are all frames. fvsql
// writes all four, the timestamp as RFC 3339 in UTC with microseconds.
// It reads timestamps with or without fraction and zone (no zone: UTC).
// A line that does not parse as a frame is a plain payload line — so a
// JSON array line like `["a", 1]` stays a payload (its "stream key" has
// quotes), while a plain line like "[abc] x" is read as a frame.

const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// meta is what a frame says; zero fields were absent.
type meta struct {
	ts       time.Time
	stream   string
	seq      int64
	hasSeq   bool
	shard    int32
	hasShard bool
}

// appendFrame appends a framed line (without the newline).
func appendFrame(b []byte, ts time.Time, stream string, seq int64, shard int32, payload []byte) []byte {
	b = append(b, '[')
	b = ts.UTC().AppendFormat(b, timeLayout)
	b = append(b, " | "...)
	b = append(b, stream...)
	b = append(b, " | "...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, " | "...)
	b = strconv.AppendInt(b, int64(shard), 10)
	b = append(b, "] "...)
	return append(b, payload...)
}

// validStreamKey says whether a stream name can be framed (the seed's
// characters: letters, digits, '.', '_', '-').
func validStreamKey(s string) bool {
	if s == "" || len(s) > 249 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// parseLine splits a line (newline stripped) into its frame, if any, and
// payload.
func parseLine(line []byte) (meta, []byte, bool) {
	if len(line) == 0 || line[0] != '[' {
		return meta{}, line, false
	}
	end := bytes.IndexByte(line, ']')
	if end < 0 {
		return meta{}, line, false
	}
	var m meta
	n := 0 // parts consumed: 0 ts, 1 key, 2 seq, 3 shard
	for part := range bytes.SplitSeq(line[1:end], []byte("|")) {
		p := string(bytes.TrimSpace(part))
		switch {
		case n == 0 && parseTime(p, &m.ts):
			n = 1
		case n <= 1 && validStreamKey(p) && !isNumber(p):
			m.stream, n = p, 2
		case n == 2:
			v, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return meta{}, line, false
			}
			m.seq, m.hasSeq, n = v, true, 3
		case n == 3:
			v, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return meta{}, line, false
			}
			m.shard, m.hasShard, n = int32(v), true, 4
		default:
			return meta{}, line, false
		}
	}
	if n == 0 {
		return meta{}, line, false
	}
	payload := line[end+1:]
	for len(payload) > 0 && (payload[0] == ' ' || payload[0] == '\t') {
		payload = payload[1:]
	}
	return m, payload, true
}

func isNumber(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

func parseTime(s string, out *time.Time) bool {
	if len(s) < len("2006-01-02T15:04:05") || s[4] != '-' || s[10] != 'T' {
		return false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			*out = t.UTC()
			return true
		}
	}
	return false
}

// Frame is what a line's frame says (see parseLine): zero fields were
// absent.
type Frame struct {
	Time     time.Time
	Stream   string
	Seq      int64
	HasSeq   bool
	Shard    int32
	HasShard bool
}

// ParseFrame splits a line (newline stripped) into its frame and payload;
// framed is false for a plain line, whose payload is the whole line. It
// is the one reader of the framing, for fvsql pipe's standard input too.
func ParseFrame(line []byte) (f Frame, payload []byte, framed bool) {
	m, payload, framed := parseLine(line)
	return Frame{Time: m.ts, Stream: m.stream, Seq: m.seq, HasSeq: m.hasSeq, Shard: m.shard, HasShard: m.hasShard}, payload, framed
}
