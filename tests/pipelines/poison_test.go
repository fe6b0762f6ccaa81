package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// poisonKind is one way a record can be bad, and what the reason of its
// poison report must say (a substring, compared case-insensitively).
type poisonKind struct {
	name   string
	count  int
	reason string
	make   func(id int64, i int, rng *rand.Rand) []byte
}

// bigString is the size of the "1 MiB" values: random letters, so that no
// compression makes them small, and just under the default Kafka limit of
// 1 MiB per record batch (max.message.bytes), so every broker takes them.
const bigString = 1_000_000

var poisonKinds = []poisonKind{
	{name: "broken JSON", count: 100, reason: "json", make: func(id int64, i int, _ *rand.Rand) []byte {
		return []byte([]string{
			`{"id":%d,"s":"1","n":1,"small":1,"d":1`,   // truncated
			`{"id":%d,"s":"1","n":1,"small":1,"d":1,}`, // trailing comma
			`{"id":%d "s":"1"}`,                        // missing comma
			`{"id":%d,"s":"1","d":1}{"x":1}`,           // data after the object
			`{'id':%d}`,                                // single quotes
		}[i%5])
	}},
	{name: "not an object", count: 100, reason: "json", make: func(id int64, i int, _ *rand.Rand) []byte {
		return []byte([]string{`[%d,"1",1,1,1]`, `"row %d"`, `%d`, `null`, `true`, ``}[i%6])
	}},
	{name: "missing field s (CAST('missing' AS INTEGER))", count: 60, reason: "invalid input syntax for type integer", make: func(id int64, i int, _ *rand.Rand) []byte {
		return []byte(`{"id":%d,"n":1,"small":1,"d":1}`)
	}},
	{name: "empty object (CAST('missing' AS INTEGER))", count: 40, reason: "invalid input syntax for type integer", make: func(id int64, i int, _ *rand.Rand) []byte {
		return []byte(`{}`)
	}},
	{name: "non-numeric s (CAST fails, 22P02)", count: 100, reason: "invalid input syntax for type integer", make: func(id int64, i int, _ *rand.Rand) []byte {
		s := []string{"abc", "12x", "", " ", "1.5", "--1", "1e3"}[i%7]
		return []byte(`{"id":%d,"s":` + strconv.Quote(s) + `,"n":1,"small":1,"d":1}`)
	}},
	{name: "s out of INTEGER range (CAST fails, 22003)", count: 40, reason: "out of range", make: func(id int64, i int, _ *rand.Rand) []byte {
		s := []string{"2147483648", "-2147483649", "99999999999"}[i%3]
		return []byte(`{"id":%d,"s":"` + s + `","n":1,"small":1,"d":1}`)
	}},
	{name: "division by zero (d = 7)", count: 100, reason: "division by zero", make: func(id int64, i int, _ *rand.Rand) []byte {
		return []byte(`{"id":%d,"s":"1","n":1,"small":1,"d":7}`)
	}},
	{name: "wrong JSON type", count: 100, reason: "int", make: func(id int64, i int, _ *rand.Rand) []byte {
		return []byte([]string{
			`{"id":"id-%d","s":"1","n":1,"small":1,"d":1}`,  // string for BIGINT
			`{"id":%d,"s":"1","n":true,"small":1,"d":1}`,    // boolean for BIGINT
			`{"id":%d,"s":"1","n":{"a":1},"small":1,"d":1}`, // object for BIGINT
			`{"id":%d,"s":"1","n":1,"small":[1],"d":1}`,     // array for SMALLINT
			`{"id":%d,"s":"1","n":1,"small":1,"d":"seven"}`, // string for BIGINT
		}[i%5])
	}},
	{name: "fraction for BIGINT", count: 40, reason: "bigint", make: func(id int64, i int, _ *rand.Rand) []byte {
		return []byte(`{"id":%d,"s":"1","n":1.5,"small":1,"d":1}`)
	}},
	{name: "BIGINT out of range", count: 100, reason: "out of range", make: func(id int64, i int, _ *rand.Rand) []byte {
		n := []string{
			"9223372036854775808",  // 2^63: MaxInt64 + 1
			"9223372036854775809",  // 2^63 + 1
			"-9223372036854775809", // MinInt64 - 1
			"18446744073709551616", // 2^64
			"1e19",
			"99999999999999999999",
		}[i%6]
		return []byte(`{"id":%d,"s":"1","n":` + n + `,"small":1,"d":1}`)
	}},
	{name: "SMALLINT out of range", count: 100, reason: "out of range", make: func(id int64, i int, _ *rand.Rand) []byte {
		n := []string{"32768", "-32769", "100000", "65536"}[i%4]
		return []byte(`{"id":%d,"s":"1","n":1,"small":` + n + `,"d":1}`)
	}},
	{name: "1 MiB string in s (CAST fails)", count: 20, reason: "invalid input syntax for type integer", make: func(id int64, i int, rng *rand.Rand) []byte {
		big := make([]byte, bigString)
		for j := range big {
			big[j] = byte('a' + rng.IntN(26))
		}
		return []byte(`{"id":%d,"s":"` + string(big) + `","n":1,"small":1,"d":1}`)
	}},
	{name: "invalid UTF-8 in a JSON string", count: 100, reason: "utf8", make: func(id int64, i int, _ *rand.Rand) []byte {
		s := []string{"\xff\xfe", "ab\xc3\x28", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80", "\xc0\xaf"}[i%5]
		return []byte(`{"id":%d,"s":"` + s + `","n":1,"small":1,"d":1}`)
	}},
}

// TestPipelinePoisonRows: 10,000 records produced straight into the topic,
// 1,000 of them malformed in different ways. The 9,000 good rows come out
// exactly; each bad one is in <pipeline>_errors once, with a reason and its
// original bytes; the counters say consumed 10000, dropped 1000; and the
// server's resident memory does not grow by more than 200 MiB.
//
// KNOWN BUGS (the test fails on both brokers at commit 3683582):
//   - The poison report of a ~1 MB record is bigger than the record (the
//     payload is base64 in the JSON report, ~1.34 MB, and reports are
//     batched up to 4 MiB), over the broker's max.message.bytes (1 MiB):
//     producing it fails with MESSAGE_TOO_LARGE, the epoch aborts and is
//     retried forever (status RETRYING; FLUSH never returns).
//   - Two produce errors of different Go types in one epoch (here
//     MESSAGE_TOO_LARGE, then kgo's "client is aborting buffered records")
//     panic the whole server: the engine keeps an epoch's first produce
//     error in an atomic.Value (ep.produceErr.CompareAndSwap(nil, err)),
//     which panics when a second error has another concrete type.
//   - JSON numbers just outside BIGINT (9223372036854775808,
//     9223372036854775809, -9223372036854775809) are not rejected: they
//     decode as -9223372036854775808 (types/json.go fromJSONNumber compares
//     with float64(MaxInt64), which rounds to 2^63, then converts the
//     out-of-range float to int64) and the rows come out with wrong values.
func TestPipelinePoisonRows(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM raw (id BIGINT, s TEXT, n BIGINT, small SMALLINT, d BIGINT) WITH (partitions = 4)")
		exec(t, conn, "CREATE STREAM clean AS SELECT id, CAST(coalesce(s, 'missing') AS INTEGER) AS si, n, small, 1000 / (d - 7) AS q FROM raw")
		waitStats(t, conn, "clean", 60*time.Second, "the pipeline to run", func(s pipelineStats) bool {
			return s.Status == "RUNNING" && s.Partitions > 0
		})
		rssBefore, err := srv.RSS()
		if err != nil {
			t.Fatal(err)
		}

		const total = 10000
		nBad := 0
		for _, k := range poisonKinds {
			nBad += k.count
		}
		if nBad != 1000 {
			t.Fatalf("test bug: %d bad records, want 1000", nBad)
		}
		rng := rand.New(rand.NewPCG(777, 1))
		// Which of the ids 1..total are bad, and of which kind.
		kindOf := make([]int, total+1)
		for i := range kindOf {
			kindOf[i] = -1
		}
		perm := rng.Perm(total)
		next := 0
		for k, kind := range poisonKinds {
			for range kind.count {
				kindOf[perm[next]+1] = k
				next++
			}
		}
		type goodRow struct{ si, n, small, q int64 }
		good := map[int64]goodRow{}
		type badRec struct {
			id      int64
			kind    int
			payload []byte
		}
		var recs []*kgo.Record
		var bads []*badRec
		badByRec := map[*kgo.Record]*badRec{}
		seen := map[int]int{}
		for id := int64(1); id <= total; id++ {
			var value []byte
			if k := kindOf[id]; k >= 0 {
				i := seen[k]
				seen[k]++
				tmpl := poisonKinds[k].make(id, i, rng)
				if bytes.Contains(tmpl, []byte("%d")) {
					tmpl = bytes.Replace(tmpl, []byte("%d"), []byte(strconv.FormatInt(id, 10)), 1)
				}
				value = tmpl
				b := &badRec{id: id, kind: k, payload: value}
				bads = append(bads, b)
				r := &kgo.Record{Key: []byte(strconv.FormatInt(id, 10)), Value: value}
				badByRec[r] = b
				recs = append(recs, r)
				continue
			}
			g := goodRow{si: id % 50000, n: id * 1000003, small: id%30000 - 15000, q: 1000 / (id%5 - 7)}
			switch id % 1000 {
			case 11:
				g.n, g.small = 9223372036854775807, 32767 // the largest values fit
			case 12:
				g.n, g.small = -9223372036854775808, -32768
			}
			good[id] = g
			value = fmt.Appendf(nil, `{"id":%d,"s":"%d","n":%d,"small":%d,"d":%d,"extra":"ignored"}`, id, g.si, g.n, g.small, id%5)
			recs = append(recs, &kgo.Record{Key: []byte(strconv.FormatInt(id, 10)), Value: value})
		}
		cl := c.client(t, kgo.DefaultProduceTopic(c.topic("raw")), kgo.ProducerBatchMaxBytes(1<<20))
		produce(t, cl, recs)
		badAt := map[[2]int64]*badRec{}
		for r, b := range badByRec {
			badAt[[2]int64{int64(r.Partition), r.Offset}] = b
		}
		t.Logf("produced %d records (%d good, %d bad in %d kinds) straight into %s", total, len(good), len(bads), len(poisonKinds), c.topic("raw"))

		// 10,000 records take seconds; a pipeline that cannot write a
		// poison report retries forever, so bound FLUSH tighter than the
		// server's 2 minutes.
		flushWithin(t, srv, conn, 60*time.Second)
		rssFlushed, err := srv.RSS()
		if err != nil {
			t.Fatal(err)
		}

		// The good rows, exactly.
		out := c.readCommitted(t, c.topic("clean"))
		gotGood := map[int64]int{}
		wrong := 0
		for _, r := range out {
			var row struct{ ID, SI, N, Small, Q *int64 }
			if err := json.Unmarshal(r.Value, &row); err != nil || row.ID == nil {
				if wrong++; wrong <= 10 {
					t.Errorf("output record p%d@%d: %q (%v)", r.Partition, r.Offset, r.Value, err)
				}
				continue
			}
			id := *row.ID
			gotGood[id]++
			g, ok := good[id]
			if !ok {
				what := "never produced"
				if id >= 1 && id <= total && kindOf[id] >= 0 {
					b := bads[0]
					for _, x := range bads {
						if x.id == id {
							b = x
						}
					}
					what = fmt.Sprintf("a bad record (%s): %.200q", poisonKinds[kindOf[id]].name, b.payload)
				}
				if wrong++; wrong <= 20 {
					t.Errorf("BUG: the output has id %d, which is %s; it came out as %s", id, what, r.Value)
				}
				continue
			}
			if row.SI == nil || row.N == nil || row.Small == nil || row.Q == nil ||
				*row.SI != g.si || *row.N != g.n || *row.Small != g.small || *row.Q != g.q {
				if wrong++; wrong <= 20 {
					t.Errorf("id %d: got %s, want si=%d n=%d small=%d q=%d", id, r.Value, g.si, g.n, g.small, g.q)
				}
			}
		}
		var missing, dup []int64
		for id := range good {
			if gotGood[id] == 0 {
				missing = append(missing, id)
			}
		}
		for id, n := range gotGood {
			if n > 1 {
				dup = append(dup, id)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%d of the %d good rows are missing from the output: %s", len(missing), len(good), head(sortIDs(missing), 20))
		}
		if len(dup) > 0 {
			t.Errorf("%d ids are in the output more than once: %s", len(dup), head(sortIDs(dup), 20))
		}
		t.Logf("output: %d records", len(out))

		// The bad records, each once in clean_errors, with its bytes.
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		rows, err := conn.Query(ctx, "SELECT pipeline, stage, reason, source_partition, source_offset, payload, payload_text, at FROM clean_errors")
		if err != nil {
			t.Fatal(err)
		}
		reported := map[*badRec]int{}
		nErr, badReason := 0, 0
		perKind := make([]int, len(poisonKinds))
		for rows.Next() {
			var (
				pipeline, stage, reason string
				part                    *int32
				off                     *int64
				payload                 []byte
				text                    *string
				at                      *time.Time
			)
			if err := rows.Scan(&pipeline, &stage, &reason, &part, &off, &payload, &text, &at); err != nil {
				t.Fatal(err)
			}
			nErr++
			if pipeline != "clean" || stage == "" || reason == "" || at == nil {
				t.Errorf("poison report %d: pipeline %q stage %q reason %.100q at %v: want pipeline clean and a stage, reason and time", nErr, pipeline, stage, reason, at)
			}
			if part == nil || off == nil {
				t.Errorf("poison report %d (%.100q) has no source partition/offset", nErr, reason)
				continue
			}
			b, ok := badAt[[2]int64{int64(*part), *off}]
			if !ok {
				if badReason++; badReason <= 10 {
					t.Errorf("poison report for p%d@%d, which is not a bad record (reason %.200q, payload %.200q)", *part, *off, reason, payload)
				}
				continue
			}
			reported[b]++
			perKind[b.kind]++
			if !bytes.Equal(payload, b.payload) {
				t.Errorf("poison report for p%d@%d (%s): payload is %d bytes %.80q, want the %d bytes produced %.80q",
					*part, *off, poisonKinds[b.kind].name, len(payload), payload, len(b.payload), b.payload)
			}
			if text == nil || !utf8Valid(*text) {
				t.Errorf("poison report for p%d@%d (%s): payload_text %v is not valid text", *part, *off, poisonKinds[b.kind].name, text)
			}
			if want := poisonKinds[b.kind].reason; !strings.Contains(strings.ToLower(reason), want) {
				if badReason++; badReason <= 20 {
					t.Errorf("poison report for p%d@%d (%s, payload %.120q): reason %.200q does not mention %q",
						*part, *off, poisonKinds[b.kind].name, b.payload, reason, want)
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		for k, kind := range poisonKinds {
			t.Logf("poison kind %-45q: %3d produced, %3d reported", kind.name, kind.count, perKind[k])
		}
		if nErr != len(bads) {
			t.Errorf("clean_errors has %d rows, want %d", nErr, len(bads))
		}
		unreported := 0
		for _, b := range bads {
			n := reported[b]
			if n == 1 {
				continue
			}
			if unreported++; unreported <= 20 {
				t.Errorf("bad record id %d (%s) %.120q is in clean_errors %d times, want once", b.id, poisonKinds[b.kind].name, b.payload, n)
			}
		}

		// The counters.
		st := waitStats(t, conn, "clean", 20*time.Second, "counters to reach 10000", func(s pipelineStats) bool {
			return s.Consumed >= total
		})
		if st.Consumed != total || st.Dropped != int64(len(bads)) || st.Emitted != int64(len(good)) || st.Filtered != 0 {
			t.Errorf("counters %s: want consumed %d, emitted %d, filtered 0, dropped %d", st, total, len(good), len(bads))
		}
		if st.Status != "RUNNING" {
			t.Errorf("status %s, want RUNNING", st)
		}

		// Memory stays flat while the pipeline works through the poison
		// (measured right after FLUSH; in embedded mode the process also
		// holds the broker's copy of the ~50 MB of records). The figure at
		// the end also counts the SELECT above, which read the ~1 MB
		// reports; it is printed, not asserted.
		rssAfter, err := srv.RSS()
		if err != nil {
			t.Fatal(err)
		}
		const mib = 1 << 20
		t.Logf("server RSS: %d MiB before, %d MiB after FLUSH (growth %+d MiB), %d MiB at the end",
			rssBefore/mib, rssFlushed/mib, (rssFlushed-rssBefore)/mib, rssAfter/mib)
		if growth := rssFlushed - rssBefore; growth > 200*mib {
			t.Errorf("server RSS grew by %d MiB (from %d MiB to %d MiB) while the pipeline processed 10,000 records, more than 200 MiB",
				growth/mib, rssBefore/mib, rssFlushed/mib)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
