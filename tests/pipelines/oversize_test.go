package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOversizeRecords: records too large to pass through a pipeline as
// they are do not stall it (issue 16, "no record can stall a pipeline").
// Both cases run on one server, each in its own pipeline:
//
//   - a 13 MiB record that is not JSON, between good JSON rows, in a stream
//     whose topic fvsql created (max.message.bytes 16 MiB): its poison
//     report would carry the whole record (1.33 × 13 MiB as base64 in the
//     JSON report, over the 16 MiB limit). The report keeps the first MiB
//     of the payload and its reason states the original size.
//   - a 9 MB text value through SELECT name || name: the output record
//     would be 18 MB, more than the broker takes; the input row goes to
//     <pipeline>_errors instead, saying how large the output was.
//   - a 2.5 MB text value through the same query into a topic whose
//     max.message.bytes was lowered to 4 MiB after CREATE: the 5 MB output
//     record passes fvsql's own check, the broker refuses it (with the
//     small rows batched with it), the epoch aborts, and the next attempt
//     reports the input row instead of producing it again.
//
// In each, FLUSH returns, every good row comes out, <pipeline>_errors holds
// one report, and the pipeline is RUNNING with dropped = 1.
//
// KNOWN BUGS (the test fails on the embedded broker at commit 91f91f6):
//   - producing the oversize report or output record fails with
//     MESSAGE_TOO_LARGE, the epoch aborts and is retried for ever (status
//     RETRYING MESSAGE_TOO_LARGE), FLUSH times out and the good rows behind
//     the record never come out;
//   - or, when the failure comes back while the epoch commits (after the
//     worker looked at its produce errors), the epoch commits without the
//     record: it is lost, counted as emitted, and reported nowhere.
func TestOversizeRecords(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		// FLUSH must not give up on a stuck pipeline (after 60 s, with a
		// notice) within the test's bound: it would return as if done.
		srv := c.start(t, "fvsql", "--stream-flush-give-up", "10m")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM raw (id BIGINT, name TEXT) WITH (partitions = 2)")
		exec(t, conn, "CREATE STREAM clean AS SELECT id, name FROM raw")
		exec(t, conn, "CREATE STREAM wide (id BIGINT, name TEXT) WITH (partitions = 2)")
		exec(t, conn, "CREATE STREAM doubled AS SELECT id, name || name AS n2 FROM wide")
		exec(t, conn, "CREATE STREAM narrowin (id BIGINT, name TEXT) WITH (partitions = 2)")
		exec(t, conn, "CREATE STREAM narrow AS SELECT id, name || name AS n2 FROM narrowin")
		pipelines := []string{"clean", "doubled", "narrow"}
		for _, p := range pipelines {
			waitStats(t, conn, p, 60*time.Second, p+" to run", func(s pipelineStats) bool {
				return s.Status == "RUNNING" && s.Partitions > 0
			})
		}

		const (
			good     = 200         // good rows per stream
			badAt    = good / 2    // the oversize record comes after this many
			notJSON  = 13 << 20    // 13,631,488 bytes
			bigValue = 9_000_000   // the text value doubled into 18 MB
			midValue = 2_500_000   // doubled into 5 MB, over narrow's 4 MiB
			kept     = 1 << 20     // what a poison report keeps of a payload
			keptText = "1,048,576" // kept, as the reason writes it
		)
		rng := rand.New(rand.NewPCG(16, 13))
		letters := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte('a' + rng.IntN(26)) // random: no compression shrinks it
			}
			return b
		}
		rows := func(topic string, bad []byte) (recs []*kgo.Record, badRec *kgo.Record) {
			for id := int64(1); id <= good; id++ {
				if id == badAt+1 {
					badRec = &kgo.Record{Topic: topic, Key: []byte("big"), Value: bad}
					recs = append(recs, badRec)
				}
				v := fmt.Appendf(nil, `{"id":%d,"name":"n%d"}`, id, id)
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.FormatInt(id, 10)), Value: v})
			}
			return recs, badRec
		}
		rawBad := append([]byte("not json: "), letters(notJSON-len("not json: "))...)
		rawRecs, rawBadRec := rows(c.topic("raw"), rawBad)
		wideBad := fmt.Appendf(nil, `{"id":%d,"name":"%s"}`, good+1, letters(bigValue))
		wideRecs, wideBadRec := rows(c.topic("wide"), wideBad)
		narrowBad := fmt.Appendf(nil, `{"id":%d,"name":"%s"}`, good+1, letters(midValue))
		narrowRecs, narrowBadRec := rows(c.topic("narrowin"), narrowBad)
		// The test's producer must itself be allowed to send 13 MiB (the
		// client's default batch limit is about 1 MB).
		cl := c.client(t, kgo.ProducerBatchMaxBytes(16<<20))
		narrowLimit := strconv.Itoa(4 << 20)
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		alter, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &narrowLimit}}, c.topic("narrow"))
		if err == nil {
			_, err = alter.On(c.topic("narrow"), nil)
		}
		if err != nil {
			t.Fatalf("lowering max.message.bytes of %s: %v", c.topic("narrow"), err)
		}
		produce(t, cl, rawRecs)
		produce(t, cl, wideRecs)
		produce(t, cl, narrowRecs)
		for _, p := range []struct {
			topic string
			n     int
			bad   *kgo.Record
		}{{"raw", len(rawRecs), rawBadRec}, {"wide", len(wideRecs), wideBadRec}, {"narrowin", len(narrowRecs), narrowBadRec}} {
			t.Logf("produced %d records into %s, a %d-byte one at p%d@%d", p.n, c.topic(p.topic), len(p.bad.Value), p.bad.Partition, p.bad.Offset)
		}

		flushWithin(t, srv, conn, 90*time.Second)

		// Every good row, once, in both outputs.
		checkOutput := func(stream, col string, want func(id int64) string) {
			t.Helper()
			got := map[int64]int{}
			for _, r := range c.readCommitted(t, c.topic(stream)) {
				var row map[string]any
				if err := json.Unmarshal(r.Value, &row); err != nil {
					t.Errorf("%s: output record p%d@%d of %d bytes is not a JSON row: %v", stream, r.Partition, r.Offset, len(r.Value), err)
					continue
				}
				idf, _ := row["id"].(float64)
				id := int64(idf)
				got[id]++
				if id < 1 || id > good {
					t.Errorf("%s: output has id %d (%d bytes), which is not a good row", stream, id, len(r.Value))
				} else if s, _ := row[col].(string); s != want(id) {
					t.Errorf("%s: id %d: %s = %.80q, want %q", stream, id, col, s, want(id))
				}
			}
			var missing, dup []int64
			for id := int64(1); id <= good; id++ {
				switch got[id] {
				case 0:
					missing = append(missing, id)
				case 1:
				default:
					dup = append(dup, id)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%s: %d of the %d good rows are missing from the output: %s", stream, len(missing), good, head(missing, 20))
			}
			if len(dup) > 0 {
				t.Errorf("%s: %d ids are in the output more than once: %s", stream, len(dup), head(dup, 20))
			}
		}
		checkOutput("clean", "name", func(id int64) string { return "n" + strconv.FormatInt(id, 10) })
		checkOutput("doubled", "n2", func(id int64) string { n := "n" + strconv.FormatInt(id, 10); return n + n })
		checkOutput("narrow", "n2", func(id int64) string { n := "n" + strconv.FormatInt(id, 10); return n + n })

		// One report per pipeline, for the oversize record, its payload
		// cut to its first MiB and the original size in the reason.
		checkReport := func(pipeline string, src *kgo.Record, atLeast int) {
			t.Helper()
			reps := errorReports(t, conn, pipeline)
			if len(reps) != 1 {
				for i, r := range reps {
					t.Logf("%s_errors row %d: %s", pipeline, i, r)
				}
				t.Fatalf("%s_errors has %d rows, want 1 (for the %d-byte record)", pipeline, len(reps), len(src.Value))
			}
			r := reps[0]
			t.Logf("%s_errors: %s", pipeline, r)
			if r.part == nil || r.off == nil || *r.part != src.Partition || *r.off != src.Offset {
				t.Errorf("%s: report %s: want source p%d@%d", pipeline, r, src.Partition, src.Offset)
			}
			if len(r.payload) != kept || !bytes.Equal(r.payload, src.Value[:kept]) {
				t.Errorf("%s: report payload is %d bytes %.40q…, want the record's first %d bytes %.40q…", pipeline, len(r.payload), r.payload, kept, src.Value)
			}
			if r.text == nil || !utf8Valid(*r.text) || !strings.HasPrefix(string(src.Value), strings.TrimSuffix(*r.text, "…")) {
				t.Errorf("%s: report payload_text is not a valid prefix of the record: %.80v", pipeline, r.text)
			}
			for _, s := range []string{commas(len(src.Value)), keptText} {
				if !strings.Contains(r.reason, s) {
					t.Errorf("%s: report reason %q does not mention %q", pipeline, r.reason, s)
				}
			}
			if atLeast > 0 && !mentionsAtLeast(r.reason, atLeast) {
				t.Errorf("%s: report reason %q does not state the output row's size (at least %s bytes)", pipeline, r.reason, commas(atLeast))
			}
		}
		checkReport("clean", rawBadRec, 0)
		checkReport("doubled", wideBadRec, 2*bigValue)
		checkReport("narrow", narrowBadRec, 0)

		for _, p := range pipelines {
			st := waitStats(t, conn, p, 20*time.Second, p+" counters", func(s pipelineStats) bool {
				return s.Consumed >= good+1
			})
			if st.Status != "RUNNING" || st.Consumed != good+1 || st.Emitted != good || st.Dropped != 1 {
				t.Errorf("%s: %s; want RUNNING, consumed %d, emitted %d, dropped 1", p, st, good+1, good)
			}
		}
	})
}

// errorReport is a row of a pipeline's errors stream.
type errorReport struct {
	stage, reason string
	part          *int32
	off           *int64
	payload       []byte
	text          *string
}

func (r errorReport) String() string {
	src := "no source"
	if r.part != nil && r.off != nil {
		src = fmt.Sprintf("p%d@%d", *r.part, *r.off)
	}
	return fmt.Sprintf("stage %q, %s, reason %.300q, payload %d bytes", r.stage, src, r.reason, len(r.payload))
}

// errorReports reads <pipeline>_errors through fvsql.
func errorReports(t *testing.T, conn *pgx.Conn, pipeline string) []errorReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT stage, reason, source_partition, source_offset, payload, payload_text FROM "+pipeline+"_errors")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []errorReport
	for rows.Next() {
		var r errorReport
		if err := rows.Scan(&r.stage, &r.reason, &r.part, &r.off, &r.payload, &r.text); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mentionsAtLeast says whether s holds a number written with thousands
// separators that is at least n.
func mentionsAtLeast(s string, n int) bool {
	for _, m := range thousands.FindAllString(s, -1) {
		if v, err := strconv.Atoi(strings.ReplaceAll(m, ",", "")); err == nil && v >= n {
			return true
		}
	}
	return false
}

var thousands = regexp.MustCompile(`\d{1,3}(,\d{3})+`)

// commas writes n with thousands separators, as poison reasons do.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
