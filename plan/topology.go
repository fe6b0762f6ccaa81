package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fvsql/fvsql/types"
)

// Topology is a continuous query as stages; plain data, stored by the
// host (the catalog) as JSON.
type Topology struct {
	// Version is the layout of the stored topology (Version): 0 in
	// topologies stored before versions were kept, which are version 1.
	Version int     `json:"version,omitempty"`
	Stages  []Stage `json:"stages"`
	// Internal lists the datasets the pipeline owns (repartition topics),
	// created when the pipeline starts and deleted when it is dropped.
	Internal []Stream `json:"internal,omitempty"`
	// Errors is the dataset poison rows are reported to.
	Errors string `json:"errors"`
	// Ingest bridges streams on other backends (Redis, files, another
	// Kafka cluster) into internal topics the first stage reads;
	// Sinks forward an internal topic the last stage writes to an
	// external backend. Both run in every process running the pipeline.
	Ingest []Bridge `json:"ingest,omitempty"`
	Sinks  []Bridge `json:"sinks,omitempty"`
	// Incarnation tells this pipeline from an earlier one of the same
	// name (the catalog relation's ID, set at CREATE): its consumer
	// groups, state topics and local state are named after Ident, so a
	// view dropped and created again starts over even where a process
	// still ran the old one (whose group, with members, could not be
	// deleted: the new pipeline resumed from its offsets). Empty in
	// topologies stored before it, which keep their names.
	Incarnation string `json:"incarnation,omitempty"`
	// StartTime, when not 0 (µs since the epoch, WITH (start_time = …)),
	// starts the pipeline's stream inputs at their first record stamped
	// at or after it: the partitions of a user stream on the server's
	// Kafka that its groups have no offsets for yet (Engine.pinStart),
	// and its ingest bridges' new groups (ConsumerOptions.StartTime).
	// Views and internal topics are read from their beginning.
	StartTime int64 `json:"start_time,omitempty"`
}

// Version is the layout of the topologies this build writes and the
// newest it runs. A change to the meaning of a stored field, or a field
// an older build would ignore to a wrong result, raises it, and the
// engine then runs both layouts (an older one as it was written: the
// pipelines created before an upgrade keep running with their state). A
// process of an older build refuses a newer topology instead of running
// it wrong (a rolling upgrade runs such a pipeline on the new processes).
const Version = 1

// Ident is the name a pipeline's groups and state are named after: its
// name, then its incarnation.
func (t *Topology) Ident(name string) string {
	if t.Incarnation == "" {
		return name
	}
	return name + "." + t.Incarnation
}

// Seeded reports whether stage s gets a seed marker when the pipeline
// starts (Engine.seed): its one input is one of the pipeline's internal
// streams, with one partition, and one of its steps is an aggregate
// without GROUP BY (Step.Seeds), which emits its group over no
// rows when it reads the marker.
func (t *Topology) Seeded(s *Stage) bool {
	if len(s.Inputs) != 1 || !slices.ContainsFunc(s.Steps, func(st Step) bool { return st.Seeds() }) {
		return false
	}
	return slices.ContainsFunc(t.Internal, func(d Stream) bool { return d.Name == s.Inputs[0] && d.Partitions == 1 })
}

// Bridge links a stream on an external backend with an internal topic.
type Bridge struct {
	External string `json:"external"` // the user relation on the other backend
	Internal string `json:"internal"` // an internal stream of the topology
	// Group is the ingest bridge's consumer group on the other backend:
	// unique per pipeline incarnation, so a re-created pipeline of the
	// same name starts over.
	Group string `json:"group,omitempty"`
}

// Stage reads its inputs, runs its steps per input partition, and writes
// to its output. Its steps may hold several stateful operators, each with
// its own state (state.OperatorKeyspace), where rows meeting in the later
// one already meet in one input partition (the planner's stage fusion).
// Builds before that refuse such a stage at Validate ("a stage holds at
// most one"), so a topology with one needs no newer Version to be kept
// from them.
type Stage struct {
	Name   string   `json:"name"`
	Inputs []string `json:"inputs"` // dataset names
	Output string   `json:"output"` // dataset name
	Steps  []Step   `json:"steps"`
	// Watermark, when set, derives the stage's watermark from its input
	// rows: per input partition, the largest event time seen minus Delay.
	// A stage reading an internal topic learns watermarks from the
	// control records its upstream stage writes instead.
	Watermark *WatermarkSpec `json:"watermark,omitempty"`
	// OutputKey lists the input columns forming the record key of the
	// output (a repartition stage); empty: the output stream's own key.
	OutputKey []int `json:"output_key,omitempty"`
	// SourceBase is added to the partition numbers this stage names in
	// the watermark control records it writes: stages writing one
	// internal topic (the two sides of a join) need distinct numbers,
	// since the reader keeps one watermark per source (SourceBase = i<<16
	// for the i-th).
	SourceBase int32 `json:"source_base,omitempty"`
	// Changes makes the stage's output a changelog (materialized views):
	// rows go to the output stream with an op column first, and to the
	// compacted table topic keyed by the Key columns (tombstones for
	// deletes), in the same transaction.
	Changes *ChangesOutput `json:"changes,omitempty"`
}

// WatermarkSpec names the event-time column of a stage's input and the
// lateness bound (microseconds) its watermark trails the data by.
//
// With Upstream set, the input is a hidden stream whose writer (a stage
// of the pipeline) sends its watermark as control records, and the
// stage's is the slowest of those minus Delay: the most by which the
// event time of the writer's rows may trail its own watermark (a
// window's start trails it by the window's size, a joined row's time by
// the join's bound). Rows ordered by the writer's watermark are not
// reordered by the hop through the topic, as a watermark computed from
// the rows read would have them.
type WatermarkSpec struct {
	Col      int   `json:"col"`
	Delay    int64 `json:"delay"`
	Upstream bool  `json:"upstream,omitempty"`
}

// ChangesOutput is where a materialized view's changes go.
type ChangesOutput struct {
	Table string `json:"table"` // the view's compacted topic (stream key, before the topic prefix)
	Key   []int  `json:"key"`   // columns of the stage's output rows forming the view's key
	// Sign, when not 0, is the column of the stage's output rows holding
	// their sign (signed rows, from a changelog step upstream): +1 rows are
	// inserts, -1 rows deletes. Else the batch's ops say.
	Sign int `json:"sign,omitempty"`
	// Before makes each update in the changes stream follow the row it
	// replaces, with op update_before (a view's <view>_changes and an EMIT
	// CHANGES stream, for outside readers that retract; not a hidden
	// view's, which nothing reads). The table topic gets the update only.
	// Topologies stored before it existed keep writing updates alone.
	Before bool `json:"before,omitempty"`
}

// Stream is a topic and the schema of its JSON records.
type Stream struct {
	Name       string       `json:"name"`
	Topic      string       `json:"topic"`
	Columns    []string     `json:"columns"`
	Types      []types.Type `json:"types"`
	Partitions int          `json:"partitions"`
	Key        []int        `json:"key,omitempty"` // columns forming the record key
	Format     string       `json:"format,omitempty"`
	// Meta: reads of the stream append the record's metadata columns
	// (_key, _partition, _offset, _timestamp) after Columns.
	Meta bool `json:"meta,omitempty"`
	// Upsert: the topic is a materialized view's table, the latest row per
	// record key (a record without a value deletes its key). Reads carry
	// the metadata columns, _key as the record key's bytes (a bytea), and
	// mark the deletes (Batch.Ops), whose declared columns are NULL; a
	// changelog step makes signed rows of them.
	Upsert bool `json:"upsert,omitempty"`
}

// MetaWidth is the number of metadata columns of a read.
const MetaWidth = 4

// Validate checks the topology's structure before anything runs.
func (t *Topology) Validate() error {
	if t.Version > Version {
		return fmt.Errorf("topology version %d is newer than this fvsql's (%d): a process of a later release created the pipeline", t.Version, Version)
	}
	if len(t.Stages) == 0 {
		return fmt.Errorf("engine: topology has no stages")
	}
	for _, s := range t.Stages {
		if len(s.Inputs) == 0 || s.Output == "" {
			return fmt.Errorf("engine: stage %s needs inputs and an output", s.Name)
		}
	}
	return nil
}

// String renders the topology for EXPLAIN.
func (t *Topology) String() string {
	var sb strings.Builder
	for i, s := range t.Stages {
		fmt.Fprintf(&sb, "stage %s: %s -> %s\n", s.Name, strings.Join(s.Inputs, ", "), s.Output)
		if wm := s.Watermark; wm != nil && wm.Upstream {
			fmt.Fprintf(&sb, "  watermark: upstream's - %s\n", types.NewInterval(types.IntervalValue{Micros: wm.Delay}).Text())
		}
		for _, st := range s.Steps {
			fmt.Fprintf(&sb, "  %s\n", st.String())
		}
		if i < len(t.Stages)-1 {
			sb.WriteString("\n")
		}
	}
	if t.Errors != "" {
		fmt.Fprintf(&sb, "poison rows -> %s\n", t.Errors)
	}
	return sb.String()
}
