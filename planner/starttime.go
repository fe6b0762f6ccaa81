package planner

import (
	"strings"
	"time"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// The WITH options of a continuous query that concern how its pipeline
// reads and writes, not the relation it writes: they are taken out before
// the output relation's options are applied, and go into the topology.
const (
	// OptStartTime starts the pipeline's stream inputs at the first
	// record stamped at or after a time (Topology.StartTime).
	OptStartTime = "start_time"
	// OptMode names the reading mode: load_balanced, the only one a
	// pipeline has (its processes share each input).
	OptMode = "mode"
	// OptUpdateBefore, false, makes a view's changes stream (or an EMIT
	// CHANGES stream) carry updates alone, without the update_before
	// record of the row each one replaces (plan.ChangesOutput.Before).
	OptUpdateBefore = "update_before"
)

// pipeOptions are a continuous query's pipeline options.
type pipeOptions struct {
	start    int64 // µs since the epoch; 0: not given
	noBefore bool  // update_before = false
	before   bool  // update_before given (either way)
}

// pipelineOptions takes the pipeline options out of a continuous query's
// WITH list, and returns the statement without them.
func pipelineOptions(ca *sql.CreateAs, now time.Time) (pipeOptions, *sql.CreateAs, error) {
	var po pipeOptions
	var rest []sql.Option
	for _, o := range ca.Options {
		switch o.Key {
		case OptStartTime:
			us, err := ParseStartTime(o.Value, now)
			if err != nil {
				return po, nil, err
			}
			// 0 means none in a topology; a time at or before the
			// epoch is every record (Kafka has no earlier times).
			po.start = max(us, 1)
		case OptMode:
			if err := pipelineMode(o.Value); err != nil {
				return po, nil, err
			}
		case OptUpdateBefore:
			on, err := types.ParseText(types.Bool, o.Value)
			if err != nil {
				return po, nil, pgerror.New(pgerror.InvalidParameterValue, "update_before must be true or false, not %q", o.Value)
			}
			po.before, po.noBefore = true, !on.Bool()
		default:
			rest = append(rest, o)
		}
	}
	if len(rest) == len(ca.Options) {
		return po, ca, nil
	}
	out := *ca
	out.Options = rest
	return po, &out, nil
}

// applyUpdateBefore applies the update_before option to the stage that
// writes c's changes stream (a hidden view's stage never writes them).
func applyUpdateBefore(c *Continuous, po pipeOptions) error {
	if !po.before {
		return nil
	}
	st := c.Topology.Stages[len(c.Topology.Stages)-1]
	if st.Changes == nil || !st.Changes.Before {
		return pgerror.New(pgerror.InvalidParameterValue, "update_before applies to a materialized view or an EMIT CHANGES stream: this query writes no changes stream")
	}
	c.Topology.Stages[len(c.Topology.Stages)-1].Changes.Before = !po.noBefore
	return nil
}

// pipelineMode checks a mode option: a pipeline reads load-balanced, and
// a real-time reading (each reader sees every row) is a SUBSCRIBE, a
// cursor or fvsql pipe: a pipeline every process ran in full would write
// each row once per process into its one output.
func pipelineMode(mode string) error {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "load_balanced":
		return nil
	case "realtime":
		return pgerror.New(pgerror.FeatureNotSupported, "a continuous query reads load-balanced: the fvsql processes running it share its input").
			WithHint("To see every row of a stream, SUBSCRIBE to it, DECLARE a cursor for SUBSCRIBE, or read it with fvsql pipe --source.")
	}
	return pgerror.New(pgerror.InvalidParameterValue, "mode must be load_balanced or realtime, not %q", mode)
}

// ParseStartTime reads a start time (the start_time option, SUBSCRIBE's,
// fvsql pipe --from): a timestamp with time zone in PostgreSQL's or ISO
// 8601's form (UTC without a zone; also now, today, epoch), or a negative
// interval or Go duration, that long before now ('-1 hour', '2 days ago',
// '-1h30m'). It returns µs since the epoch, fixed when the statement
// runs: a pipeline that restarts starts at the same time.
func ParseStartTime(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil && d < 0 {
		return now.Add(d).UnixMicro(), nil
	}
	if us, err := types.ParseTimestamp(s, true); err == nil {
		return us, nil
	}
	iv, err := types.ParseInterval(s, "second")
	if err != nil || iv.Months != 0 || iv.Duration() >= 0 {
		return 0, pgerror.New(pgerror.InvalidParameterValue, "start_time must be a timestamp ('2026-01-02 03:04:05+00') or a negative interval ('-1 hour'), not %q", s)
	}
	return now.UnixMicro() + iv.Duration(), nil
}

// checkStartTime refuses a start time on a pipeline that reads no stream:
// views are read from their beginning (a view's changes from a time on
// would retract rows the pipeline never saw), so there it would mean
// nothing.
func checkStartTime(c *Continuous) error {
	if c.Topology.StartTime == 0 {
		return nil
	}
	for _, in := range c.Inputs {
		if in.Kind == catalog.Stream {
			return nil
		}
	}
	return pgerror.New(pgerror.InvalidParameterValue, "start_time applies to the streams a continuous query reads, and this one reads none").
		WithDetail("Views are always read from their beginning.")
}
