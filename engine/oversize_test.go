package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecordLimitFits: a record recordSize counts as recordLimit bytes is
// produced, alone, by a producer configured as the workers are, into a
// topic created as fvsql creates them (its name as long as Kafka allows);
// one just over MaxMessageBytes is refused, so the test can tell.
func TestRecordLimitFits(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	topic := strings.Repeat("t", 249)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(MaxMessageBytes), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	maxBytes := strconv.Itoa(MaxMessageBytes)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &maxBytes}, topic); err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte("k"), 300)
	value := make([]byte, recordLimit-recordSize(key, nil, nil))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	if n := recordSize(key, value, nil); n != recordLimit {
		t.Fatalf("test bug: record of %d bytes, want %d", n, recordLimit)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: key, Value: value}).FirstErr(); err != nil {
		t.Fatalf("a record of recordLimit (%d) bytes: %v", recordLimit, err)
	}
	// (recordSize bounds the varints from above: 22 bytes more than
	// this record's.)
	over := append(value, make([]byte, MaxMessageBytes-recordLimit+32)...)
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: key, Value: over}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a record of %d bytes: %v, want MESSAGE_TOO_LARGE", recordSize(key, over, nil), err)
	}
}

// reportWorker is a worker with what poisonReport needs.
func reportWorker() *worker {
	return &worker{
		p:      &pipeline{name: strings.Repeat("p", 63)},
		stage:  &stageRun{def: &plan.Stage{Name: "s0"}},
		errOut: types.NewJSONCodec(ErrorsColumns, ErrorsTypes),
	}
}

// TestPoisonReportBounded: the report of a record of any size, with a
// reason of any size, fits in a record (the worst case: bytes that JSON
// escapes six-fold); it keeps the first reportPayloadMax bytes of the
// payload and its reason says how large the record was.
func TestPoisonReportBounded(t *testing.T) {
	w := reportWorker()
	payload := bytes.Repeat([]byte{0x01}, 13<<20)
	reason := strings.Repeat("\x01", 1<<20)
	rep := w.poisonReport(&kgo.Record{Partition: 3, Offset: 7, Value: payload}, "s0", reason, true)
	if n := recordSize(nil, rep, nil); n > recordLimit || n > 2<<20 {
		t.Fatalf("the report of a 13 MiB record is %d bytes", n)
	}
	row := make(types.Row, len(ErrorsColumns))
	if err := w.errOut.Decode(rep, row); err != nil {
		t.Fatal(err)
	}
	if got := []byte(row[5].S); !bytes.Equal(got, payload[:reportPayloadMax]) {
		t.Errorf("payload: %d bytes, want the first %d", len(got), reportPayloadMax)
	}
	if !strings.HasSuffix(row[2].S, "(payload truncated: 13,631,488 bytes, first 1,048,576 kept)") || len(row[2].S) > reportReasonMax+100 {
		t.Errorf("reason: %d bytes ending %q", len(row[2].S), row[2].S[max(0, len(row[2].S)-80):])
	}
	if row[3].I != 3 || row[4].I != 7 {
		t.Errorf("source p%d@%d, want p3@7", row[3].I, row[4].I)
	}

	// A small record is reported whole, its reason as it is.
	small := []byte(`{"id":`)
	rep = w.poisonReport(&kgo.Record{Value: small}, "s0", "json: unexpected end", true)
	if err := w.errOut.Decode(rep, row); err != nil {
		t.Fatal(err)
	}
	if row[5].S != string(small) || row[6].S != string(small) || row[2].S != "json: unexpected end" {
		t.Errorf("small record's report: payload %q text %q reason %q", row[5].S, row[6].S, row[2].S)
	}

	// A binary row (an internal topic's, as a late row behind a
	// repartition is reported) is readable: no NUL in payload_text, which
	// the errors stream's readers would refuse as text.
	bin := []byte{0x05, 0x12, 0x00, 0xc8, 0x01, 0x00, 'o', 'k'}
	rep = w.poisonReport(&kgo.Record{Value: bin}, "s1", "late", true)
	if err := w.errOut.Decode(rep, row); err != nil {
		t.Fatalf("the report of a binary row does not decode: %v", err)
	}
	if row[5].S != string(bin) || row[6].S != "\x05\x12\uFFFD\uFFFD\x01\uFFFDok" {
		t.Errorf("binary record's report: payload %q text %q", row[5].S, row[6].S)
	}
}

// TestRefusalBlame: which refused records the next attempt reports (see
// the top of oversize.go), and when a refusal is forgotten.
func TestRefusalBlame(t *testing.T) {
	w := reportWorker()
	w.refused.init()
	rr := &w.refused
	small, big := []byte("small"), make([]byte, 1<<20)
	rec := func(topic string, part int32, key string, value []byte) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: part, Key: []byte(key), Value: value}
	}
	tooLarge := fmt.Errorf("%w (uncompressed_bytes=1)", kerr.MessageTooLarge)
	ep := &epoch{}
	w.produceFailed(ep, rec("a", 0, "alone", small), tooLarge)               // its partition's only failure
	w.produceFailed(ep, rec("a", 1, "batch1", small), tooLarge)              // a batch of small records
	w.produceFailed(ep, rec("a", 1, "batch2", small), tooLarge)              //
	w.produceFailed(ep, rec("a", 1, "large", big), tooLarge)                 // a large one in it
	w.produceFailed(ep, rec("b", 0, "inv1", small), kerr.InvalidRecord)      // refused together
	w.produceFailed(ep, rec("b", 0, "inv2", small), kerr.InvalidRecord)      //
	w.produceFailed(ep, rec("c", 0, "gone", small), kerr.LeaderNotAvailable) // not the record's fault
	if ep.produceErr.get() == nil {
		t.Fatal("the epoch has no produce error")
	}
	rr.aborted(ep)
	blamed := func(topic, key string, value []byte) bool {
		_, ok := rr.match(&epoch{}, topic, []byte(key), value)
		return ok
	}
	for _, c := range []struct {
		topic, key string
		value      []byte
		want       bool
	}{
		{"a", "alone", small, true}, {"a", "batch1", small, false}, {"a", "batch2", small, false},
		{"a", "large", big, true}, {"b", "inv1", small, false}, {"c", "gone", small, false},
		{"a", "alone", []byte("other"), false}, {"x", "alone", small, false},
	} {
		if got := blamed(c.topic, c.key, c.value); got != c.want {
			t.Errorf("%s/%s (%d bytes): blamed %v, want %v", c.topic, c.key, len(c.value), got, c.want)
		}
	}

	// A committed epoch that reported "alone" forgets it; "large" is
	// forgotten after refusalEpochs committed epochs without it.
	next := &epoch{consumed: 1}
	if _, ok := rr.match(next, "a", []byte("alone"), small); !ok {
		t.Fatal("alone not refused")
	}
	rr.committed(next)
	if blamed("a", "alone", small) || !blamed("a", "large", big) {
		t.Fatalf("after one commit: alone %v large %v, want false true", blamed("a", "alone", small), blamed("a", "large", big))
	}
	for range refusalEpochs {
		rr.committed(&epoch{consumed: 1})
	}
	if blamed("a", "large", big) {
		t.Fatalf("large still refused after %d epochs without it", refusalEpochs+1)
	}
}

func TestThousandsAndCutText(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 13631488: "13,631,488", -1048576: "-1,048,576", 100000: "100,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	for _, c := range []struct {
		s    string
		max  int
		want string
	}{
		{"abc", 3, "abc"}, {"abcd", 3, "abc…"}, {"ab€", 3, "ab…"}, {"ab€", 4, "ab…"}, {"ab€", 5, "ab€"}, {"a\xffb", 2, "a…"},
	} {
		if got := cutText(c.s, c.max); got != c.want {
			t.Errorf("cutText(%q, %d) = %q, want %q", c.s, c.max, got, c.want)
		}
	}
}
