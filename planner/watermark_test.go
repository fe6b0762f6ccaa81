package planner_test

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

const recordTimeStream = `CREATE STREAM s (id BIGINT, v BIGINT, WATERMARK FOR _timestamp AS _timestamp - INTERVAL '5' SECOND)`

// TestWatermarkOnRecordTimestamp: WATERMARK FOR _timestamp plans to a
// watermark on the record timestamp, which the stored catalog keeps; the
// other metadata columns and malformed watermarks are refused with their
// SQLSTATE.
func TestWatermarkOnRecordTimestamp(t *testing.T) {
	rel, _, err := planDDL(t, nil, recordTimeStream+` WITH (partitions = 4)`)
	if err != nil {
		t.Fatal(err)
	}
	want := catalog.Watermark{Column: "_timestamp", Delay: 5_000_000}
	if rel.Watermark == nil || *rel.Watermark != want {
		t.Fatalf("watermark %+v, want %+v", rel.Watermark, want)
	}
	if len(rel.Columns) != 2 {
		t.Fatalf("columns %v: the record timestamp must not become a declared column", rel.ColumnNames())
	}

	// The stored catalog round-trips it.
	db := newTestDB(t)
	rel.OID, rel.ID = 0, "x"
	b, err := catalog.Encode(rel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.cat.Apply(300, rel.Name, b); err != nil {
		t.Fatal(err)
	}
	got, ok := db.cat.Get("s")
	if !ok || got.Watermark == nil || *got.Watermark != want {
		t.Fatalf("stored watermark %+v, want %+v", got, want)
	}

	for _, c := range []struct {
		sql  string
		want pgerror.Code
	}{
		{`CREATE STREAM s (id BIGINT, WATERMARK FOR _timestamp AS _timestamp + INTERVAL '5' SECOND)`, pgerror.InvalidObjectDefinition},
		{`CREATE STREAM s (id BIGINT, WATERMARK FOR _timestamp AS _offset)`, pgerror.InvalidObjectDefinition},
		{`CREATE STREAM s (id BIGINT, WATERMARK FOR _timestamp AS _timestamp - INTERVAL '-5' SECOND)`, pgerror.InvalidObjectDefinition},
		// a declared _timestamp would shadow the record's: refused anyway
		{`CREATE STREAM s (_timestamp TIMESTAMPTZ, WATERMARK FOR _timestamp AS _timestamp)`, pgerror.DuplicateColumn},
	} {
		if _, _, err := planDDL(t, nil, c.sql); pgerror.CodeOf(err) != c.want {
			t.Errorf("%s: %v (code %s), want %s", c.sql, err, pgerror.CodeOf(err), c.want)
		}
	}
	// The parser refuses the other metadata columns (sql/testdata/streaming);
	// the planner does too, when handed one.
	for _, col := range []string{"_offset", "_key", "_partition", "nope"} {
		cs := &sql.CreateStream{Name: "s", Columns: []sql.ColumnDef{{Name: "id", Type: types.Int8}},
			Watermark: &sql.Watermark{Column: col, Expr: &sql.ColumnRef{Name: col}}}
		if _, err := planner.PlanCreateStream(cs); pgerror.CodeOf(err) != pgerror.UndefinedColumn {
			t.Errorf("WATERMARK FOR %s: %v (code %s), want 42703", col, err, pgerror.CodeOf(err))
		}
	}
}

// recordTimeCatalog is s (id, v) with the watermark on _timestamp, over
// the given partitions, and t (id, ts) with one on its declared ts.
func recordTimeCatalog(t *testing.T, partitions int) relCatalog {
	t.Helper()
	rel, _, err := planDDL(t, nil, recordTimeStream)
	if err != nil {
		t.Fatal(err)
	}
	rel.Partitions = partitions
	other, _, err := planDDL(t, nil, `CREATE STREAM t (id BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)`)
	if err != nil {
		t.Fatal(err)
	}
	other.Partitions = partitions
	return relCatalog{"s": rel, "t": other}
}

// TestWindowOverRecordTimestamp: windows over _timestamp, in a view and
// in a stream emitting on window close, get the stream's watermark on
// the record timestamp as their first stage reads it; behind a
// repartition the window reads the input record's timestamp (carried in
// the internal rows), not the repartition record's. Run in memory over
// rows with chosen timestamps, the view counts them by their windows.
func TestWindowOverRecordTimestamp(t *testing.T) {
	const tsCol = 2 + 3 // id, v, then _key, _partition, _offset, _timestamp
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	at := func(sec int64) types.Value { return types.NewTimestamp(types.TimestampTZ, base+sec*1_000_000) }
	for _, partitions := range []int{1, 4} {
		cat := recordTimeCatalog(t, partitions)
		for _, q := range []string{
			`CREATE MATERIALIZED VIEW m AS SELECT window_start, count(*) FROM TUMBLE(s, _timestamp, INTERVAL '1' MINUTE) GROUP BY window_start, window_end`,
			`CREATE STREAM m AS SELECT window_start, count(*) FROM TUMBLE(s, _timestamp, INTERVAL '1' MINUTE) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`,
			`CREATE STREAM m AS SELECT window_start, v, sum(id) FROM HOP(s, _timestamp, INTERVAL '10' SECOND, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, v`,
			`CREATE STREAM m AS SELECT window_start, count(*) FROM SESSION(s, _timestamp, INTERVAL '1' MINUTE) GROUP BY window_start, window_end`,
		} {
			_, c, err := planDDL(t, cat, q)
			if err != nil {
				t.Fatalf("%d partitions: %s: %v", partitions, q, err)
			}
			first := c.Topology.Stages[0]
			if want := (plan.WatermarkSpec{Col: tsCol, Delay: 5_000_000}); first.Watermark == nil || *first.Watermark != want {
				t.Errorf("%d partitions: %s: first stage's watermark %+v, want %+v", partitions, q, first.Watermark, want)
			}
			for _, in := range c.Topology.Internal {
				if in.Meta {
					t.Errorf("%d partitions: %s: the window would read %s's own record timestamps", partitions, q, in.Name)
				}
			}
		}

		_, c, err := planDDL(t, cat, `CREATE MATERIALIZED VIEW m AS SELECT window_start, count(*), sum(v) FROM TUMBLE(s, _timestamp, INTERVAL '1' MINUTE) GROUP BY window_start, window_end`)
		if err != nil {
			t.Fatal(err)
		}
		var rows []types.Row
		offsets := make([]int64, partitions)
		for i, sec := range []int64{10, 50, 70, 30, 125, 59, 60} {
			part := i % partitions
			offsets[part]++
			rows = append(rows, types.Row{types.NewInt8(int64(i)), types.NewInt8(int64(i * 10)),
				types.NullValue, types.NewInt(types.Int4, int64(part)), types.NewInt8(offsets[part]), at(sec)})
		}
		p := newMemPipeline(c, cat["s"])
		if err := p.feed(rand.New(rand.NewSource(1)), rows, nil); err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{
			at(0).String() + " | 4 | 90",   // 10, 50, 30, 59 s: rows 0, 1, 3, 5
			at(60).String() + " | 2 | 80",  // 70, 60 s: rows 2, 6
			at(120).String() + " | 1 | 40", // 125 s: row 4
		}, "\n")
		if got := p.contents(); got != want {
			t.Errorf("%d partitions: view\n%s\nwant\n%s", partitions, got, want)
		}
	}
}

// TestWindowOverMetaColumnPlans: a window over a metadata column plans,
// or is refused with a SQLSTATE, whatever column the stream's watermark
// is on (it used to index the declared columns with the metadata
// column's position, and panic).
func TestWindowOverMetaColumnPlans(t *testing.T) {
	ok := pgerror.SuccessfulCompletion
	for _, partitions := range []int{1, 3} {
		cat := recordTimeCatalog(t, partitions)
		for _, c := range []struct {
			sql   string
			want  pgerror.Code // ok: plans
			delay int64        // -1: not checked; -2: no watermark
		}{
			// t's watermark is on ts: a window over _timestamp gets none of its delay
			{`CREATE STREAM m AS SELECT window_start, count(*) FROM TUMBLE(t, _timestamp, INTERVAL '1' MINUTE) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`, ok, 0},
			// and a view none at all: it takes every row, as its bounded SELECT does
			{`CREATE MATERIALIZED VIEW m AS SELECT window_start, count(*) FROM HOP(t, _timestamp, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE) GROUP BY window_start, window_end`, ok, -2},
			{`CREATE MATERIALIZED VIEW m AS SELECT window_start, count(*) FROM HOP(t, ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE) GROUP BY window_start, window_end`, ok, 1_000_000},
			{`CREATE STREAM m AS SELECT window_start, count(*) FROM TUMBLE(t, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`, ok, 1_000_000},
			// s's is on _timestamp, however the window names it
			{`CREATE STREAM m AS SELECT x.window_start, count(*) FROM TUMBLE(s, "_timestamp", INTERVAL '1' MINUTE) AS x GROUP BY x.window_start, x.window_end EMIT ON WINDOW CLOSE`, ok, 5_000_000},
			// the other metadata columns are not times
			{`CREATE STREAM m AS SELECT window_start, count(*) FROM TUMBLE(t, _offset, INTERVAL '1' MINUTE) GROUP BY window_start, window_end`, pgerror.DatatypeMismatch, 0},
			{`CREATE STREAM m AS SELECT window_start, count(*) FROM TUMBLE(s, _key, INTERVAL '1' MINUTE) GROUP BY window_start, window_end`, pgerror.DatatypeMismatch, 0},
			// an interval join on the record timestamps
			{`CREATE STREAM m AS SELECT s.id, t.ts FROM s JOIN t ON s.id = t.id AND t._timestamp BETWEEN s._timestamp AND s._timestamp + INTERVAL '1' MINUTE`, ok, -1},
		} {
			_, cont, err := planDDL(t, cat, c.sql)
			if pgerror.CodeOf(err) != c.want {
				t.Errorf("%d partitions: %s: %v (code %s), want %q", partitions, c.sql, err, pgerror.CodeOf(err), c.want)
				continue
			}
			if err != nil || c.delay == -1 {
				continue
			}
			if wm := cont.Topology.Stages[0].Watermark; c.delay == -2 && wm != nil {
				t.Errorf("%d partitions: %s: watermark %+v, want none", partitions, c.sql, wm)
			} else if c.delay != -2 && (wm == nil || wm.Delay != c.delay) {
				t.Errorf("%d partitions: %s: watermark %+v, want delay %d", partitions, c.sql, wm, c.delay)
			}
		}
	}
}
