package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/types"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Records that cannot be written. A record the broker will never take
// (too large, or refused for what it holds) must not stall a pipeline: an
// epoch that tried to produce it would abort and be redone with the same
// record, for ever. So such a record is a poison row, like one that does
// not decode: its input row goes to the errors stream, counted as
// dropped, and the stream goes on.
//
//   - Output rows (emit: the output stream, a view's changes and its table
//     topic) are measured before they are produced: a record larger than
//     recordLimit is not produced, its input row is reported instead.
//   - Poison reports are bounded by construction (poisonReport): they
//     keep at most reportPayloadMax of the payload, so a report always
//     fits, whatever the record it reports.
//   - What still slips through (a topic whose own limit is below fvsql's,
//     a record the broker refuses for its content) is caught after the
//     fact: the produce callback notes the refused record's fingerprint
//     (a hash of its topic, key and value), the epoch aborts as before,
//     and the next attempt reports the input row whose output has that
//     fingerprint instead of producing it (refusedRecords). Fingerprints,
//     rather than a map from each output record to its input record,
//     cost nothing until a record is refused: the next attempt recomputes
//     the same records from the same input (a row whose output is not
//     deterministic, now() in its select list, is not recognised; it is
//     caught by the size check unless a topic's limit is below fvsql's).
//     The record that failed is not always the one to blame: a broker
//     refuses a whole batch, so every record of a batch over a topic's
//     lower limit fails alike. So a record is taken for guilty only when
//     it is its partition's only failure in the epoch (alone in its
//     batch, or its batch's only record to fail), or, for a size error,
//     when it is itself at least 1 MiB (above Kafka's default limit, which
//     no record that large passes). A batch of small records refused
//     together blames none of them: that is a topic configured below the
//     batches fvsql builds, which no row is to blame for, and the
//     pipeline stays RETRYING with the broker's error.

// recordLimit is the largest record (as recordSize counts it) a pipeline
// produces. The topics fvsql creates take record batches of up to
// MaxMessageBytes, and franz-go refuses to build a larger one; a record
// produced alone is one batch. recordSize counts the batch's and the
// record's framing, and the 4 KiB margin leaves room for what it does not
// foresee.
const recordLimit = MaxMessageBytes - 4<<10

// recordSize bounds from above the bytes a record batch of this one
// record takes: the v2 batch header (61 bytes), the record's framing (its
// length, attributes, timestamp and offset deltas, key and value lengths
// and header count, at most 36 bytes as varints), its key, value and
// headers (two lengths of at most 5 bytes each, then their bytes).
func recordSize(key, value []byte, headers []kgo.RecordHeader) int {
	n := 61 + 36 + len(key) + len(value)
	for _, h := range headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

// What a poison report keeps of the row it reports. A report is a JSON
// row of the errors stream (ErrorsColumns): the payload as base64 (4/3 of
// its bytes), its text cut at 4 KiB (printable) and the reason, both
// escaped (at most 6 bytes a byte), so the largest report is about
// 1.45 MiB, far below recordLimit.
const (
	// reportPayloadMax is how much of a payload its report keeps (the
	// payload column); the reason then says how large it was.
	reportPayloadMax = 1 << 20
	// reportReasonMax bounds the reason's text: an error may quote the
	// value it failed on (a cast of a 13 MiB string).
	reportReasonMax = 8 << 10
)

// poisonReport encodes the errors-stream row that reports r (nil: a row
// that came from no one input record, a group's output): the reason cut
// at reportReasonMax, and, with payload, r's value cut at
// reportPayloadMax, the reason noting the original size.
func (w *worker) poisonReport(r *kgo.Record, stage, reason string, payload bool) []byte {
	reason = cutText(reason, reportReasonMax)
	row := types.Row{
		types.NewText(w.p.name), types.NewText(stage), types.NullValue,
		types.NullValue, types.NullValue, types.NullValue, types.NullValue, types.NewTimestamp(types.TimestampTZ, time.Now().UnixMicro()),
	}
	if r != nil {
		row[3] = types.NewInt(types.Int4, int64(r.Partition))
		row[4] = types.NewInt8(r.Offset)
		if payload {
			v := r.Value
			if len(v) > reportPayloadMax {
				reason += fmt.Sprintf(" (payload truncated: %s bytes, first %s kept)", thousands(len(v)), thousands(reportPayloadMax))
				v = v[:reportPayloadMax]
			}
			row[5] = types.NewBytea(v)
			row[6] = types.NewText(printable(v))
		}
	}
	row[2] = types.NewText(reason)
	return w.errOut.Append(make([]byte, 0, 256), row)
}

// unwritable says why an output record cannot be produced, if it cannot:
// it is larger than recordLimit, or the broker refused it in an earlier
// attempt of the epoch.
func (w *worker) unwritable(topic string, key, value []byte) (string, bool) {
	if n := recordSize(key, value, nil); n > recordLimit {
		return fmt.Sprintf("output row of %s bytes exceeds the %d MiB record limit", thousands(len(key)+len(value)), MaxMessageBytes>>20), true
	}
	if why, ok := w.refused.match(w.ep, topic, key, value); ok {
		return "the broker refused the output row: " + why, true
	}
	return "", false
}

// dropOutput reports row i of an emitted batch as poison: its input
// record when the batch carries it (a stateless chain), otherwise the row
// stands alone (no source partition, offset or payload).
func (w *worker) dropOutput(b *operators.Batch, i int, why string) {
	var r *kgo.Record
	if i < len(b.Source) {
		r, _ = b.Source[i].(*kgo.Record)
	}
	w.poison(r, w.stage.def.Name, errors.New(why))
}

// refusedRecords are the records the broker refused for good in earlier
// attempts, by fingerprint. The worker's goroutine owns it (produce
// callbacks note their failures in the epoch, epochFailures); it outlives
// the worker's lives, since the attempt that must avoid a record is the
// next life's.
type refusedRecords struct {
	seed maphash.Seed
	m    map[uint64]*refusal
}

// refusal is one refused record: the broker's error, and how many
// committed epochs have gone by without the record coming again.
type refusal struct {
	err  string
	idle int
}

// refusalEpochs is how many committed epochs a refusal is kept for
// without its record coming again (a retried epoch reads from the same
// offsets, so the record comes back within the first one or two; one
// whose output is not deterministic never does).
const refusalEpochs = 10

func (rr *refusedRecords) init() {
	if rr.m == nil {
		rr.seed = maphash.MakeSeed()
		rr.m = map[uint64]*refusal{}
	}
}

// fingerprint hashes a record's topic, key and value (nil and empty
// apart: a tombstone is not an empty value).
func (rr *refusedRecords) fingerprint(topic string, key, value []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(rr.seed)
	h.WriteString(topic)
	var n [9]byte
	binary.LittleEndian.PutUint64(n[:8], uint64(len(key)))
	if value == nil {
		n[8] = 1
	}
	h.Write(n[:])
	h.Write(key)
	h.Write(value)
	return h.Sum64()
}

// match says whether a record was refused before, and notes the match in
// the epoch: the refusal is forgotten once that epoch commits.
func (rr *refusedRecords) match(ep *epoch, topic string, key, value []byte) (string, bool) {
	if len(rr.m) == 0 {
		return "", false
	}
	fp := rr.fingerprint(topic, key, value)
	ref, ok := rr.m[fp]
	if !ok {
		return "", false
	}
	ep.matched = append(ep.matched, fp)
	return ref.err, true
}

// committed forgets the refusals an epoch that committed avoided, and
// ages the others.
func (rr *refusedRecords) committed(ep *epoch) {
	if len(rr.m) == 0 {
		return
	}
	for _, fp := range ep.matched {
		delete(rr.m, fp)
	}
	if ep.consumed == 0 {
		return
	}
	for fp, ref := range rr.m {
		if ref.idle++; ref.idle > refusalEpochs {
			delete(rr.m, fp)
		}
	}
}

// aborted takes the records an aborted epoch's broker refused, the ones
// to blame (see the comment at the top of the file).
func (rr *refusedRecords) aborted(ep *epoch) {
	fails := ep.failures.take()
	if len(fails) == 0 {
		return
	}
	perPart := map[partKey]int{}
	for _, f := range fails {
		perPart[partKey{f.topic, f.part}]++
	}
	for _, f := range fails {
		if perPart[partKey{f.topic, f.part}] == 1 || (f.sizeErr && f.size >= 1<<20) {
			rr.m[f.fp] = &refusal{err: f.err}
		}
	}
}

// epochFailures collects, from produce callbacks, the records produced in
// an epoch that failed with an error tied to the record (recordError).
type epochFailures struct {
	mu   sync.Mutex
	list []failure
}

type failure struct {
	topic   string
	part    int32
	fp      uint64
	size    int
	sizeErr bool
	err     string
}

func (f *epochFailures) add(x failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, x)
}

func (f *epochFailures) take() []failure {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.list
	f.list = nil
	return l
}

// recordError says whether a produce error is tied to the record (no
// retry of the same record can pass), and whether it is about its size.
func recordError(err error) (tied, size bool) {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return true, true
	case errors.Is(err, kerr.InvalidRecord):
		return true, false
	}
	return false, false
}

// produceFailed notes a failed produce in its epoch: the epoch's error,
// and, for an error tied to the record, its fingerprint. It runs on
// franz-go's goroutines; the seed it reads is set before the first
// produce and never changes.
func (w *worker) produceFailed(ep *epoch, r *kgo.Record, err error) {
	ep.produceErr.set(err)
	if tied, size := recordError(err); tied {
		ep.failures.add(failure{
			topic: r.Topic, part: r.Partition, fp: w.refused.fingerprint(r.Topic, r.Key, r.Value),
			size: recordSize(r.Key, r.Value, r.Headers), sizeErr: size, err: err.Error(),
		})
	}
}

// cutText cuts s to at most max bytes, at a rune boundary, marking the
// cut with "…".
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	// Back off over a rune the cut split (at most UTFMax-1 bytes of it).
	for i := 1; i < utf8.UTFMax && len(s) > 0; i++ {
		if r, n := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || n > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s + "…"
}

// thousands writes n with thousands separators (13,631,488).
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
