package planner_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/types"
)

// TestStartTimeOption: WITH (start_time = …) on a continuous query goes
// into its topology as µs since the epoch, whichever WITH position holds
// it, and not into the relation it writes; mode = 'load_balanced' is
// accepted and 'realtime' refused with 0A000; a start time on a query that
// reads no stream, or one that is not a time, is refused with 22023.
func TestStartTimeOption(t *testing.T) {
	cat := namesCatalog("unused")
	cat["agg"] = &catalog.Relation{Name: "agg", Kind: catalog.MaterializedView, Topic: "agg", Format: "json", Partitions: 1,
		Columns: []catalog.Column{{Name: "k", Type: types.Int8}, {Name: "n", Type: types.Int8}}, Key: []string{"k"}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMicro()
	for _, c := range []struct {
		sql  string
		want int64
	}{
		{`CREATE STREAM x WITH (start_time = '2026-01-02 03:04:05+00') AS SELECT k FROM src`, at},
		{`CREATE STREAM x AS SELECT k FROM src WITH (start_time = '2026-01-02T05:04:05+02:00', mode = 'load_balanced')`, at},
		{`CREATE MATERIALIZED VIEW x WITH (start_time = '2026-01-02T03:04:05Z') AS SELECT k, count(*) AS n FROM src GROUP BY k`, at},
		{`CREATE MATERIALIZED VIEW x WITH (start_time = '2026-01-02T03:04:05Z') AS SELECT a.k, b.n FROM src a JOIN agg b ON a.k = b.k`, at},
		{`CREATE SINK x AS SELECT k FROM r1 WITH (backend = 'redis://127.0.0.1:6379', key = 'out', start_time = '2026-01-02T03:04:05Z')`, at},
		{`CREATE STREAM x AS SELECT k FROM src`, 0},
	} {
		rel, plan, err := planDDL(t, cat, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if got := plan.Topology.StartTime; got != c.want {
			t.Errorf("%s: topology start time %d, want %d", c.sql, got, c.want)
		}
		if _, ok := rel.Options[planner.OptStartTime]; ok {
			t.Errorf("%s: start_time landed in the output relation's options %v", c.sql, rel.Options)
		}
	}

	before := time.Now()
	_, plan, err := planDDL(t, cat, `CREATE STREAM x WITH (start_time = '-1 hour') AS SELECT k FROM src`)
	if err != nil {
		t.Fatal(err)
	}
	if got, lo, hi := plan.Topology.StartTime, before.Add(-time.Hour).UnixMicro(), time.Now().Add(-time.Hour).UnixMicro(); got < lo || got > hi {
		t.Errorf("start_time '-1 hour' gave %d, want within [%d, %d]", got, lo, hi)
	}

	for _, c := range []struct {
		sql  string
		want pgerror.Code
	}{
		{`CREATE STREAM x WITH (mode = 'realtime') AS SELECT k FROM src`, pgerror.FeatureNotSupported},
		{`CREATE STREAM x WITH (mode = 'sometimes') AS SELECT k FROM src`, pgerror.InvalidParameterValue},
		{`CREATE STREAM x WITH (start_time = 'yesterday-ish') AS SELECT k FROM src`, pgerror.InvalidParameterValue},
		{`CREATE STREAM x WITH (start_time = '1 hour') AS SELECT k FROM src`, pgerror.InvalidParameterValue},
		{`CREATE MATERIALIZED VIEW x WITH (start_time = '2026-01-02') AS SELECT n, count(*) AS c FROM agg GROUP BY n`, pgerror.InvalidParameterValue},
	} {
		_, _, err := planDDL(t, cat, c.sql)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != c.want {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.sql, err, c.want)
		}
	}
}
