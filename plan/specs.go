package plan

import (
	"fmt"
	"strings"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// SortKey orders by one input column.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// SetSpec is one set-returning function call of a select list (a
// projectSet step): the overload (expr.SetFunc.Key), its arguments over
// the input row, and how many columns it returns.
type SetSpec struct {
	Fn    string       `json:"fn"`
	Args  []*expr.Expr `json:"args"`
	Width int          `json:"width"`
}

// WindowSpec describes time windows; lengths are in microseconds.
type WindowSpec struct {
	Kind  string `json:"kind"` // "tumble", "hop", "session"
	Size  int64  `json:"size,omitempty"`
	Slide int64  `json:"slide,omitempty"`
	Gap   int64  `json:"gap,omitempty"`
}

// String renders the window for EXPLAIN.
func (w WindowSpec) String() string {
	iv := func(us int64) string { return types.NewInterval(types.IntervalValue{Micros: us}).Text() }
	switch w.Kind {
	case "hop":
		return "hop(slide " + iv(w.Slide) + ", size " + iv(w.Size) + ")"
	case "session":
		return "session(gap " + iv(w.Gap) + ")"
	}
	return "tumble(" + iv(w.Size) + ")"
}

// Windows returns the [start, end) windows containing t.
func (w WindowSpec) Windows(t int64, out [][2]int64) [][2]int64 {
	out = out[:0]
	switch w.Kind {
	case "tumble":
		start := types.FloorDiv(t, w.Size) * w.Size
		return append(out, [2]int64{start, start + w.Size})
	case "hop":
		last := types.FloorDiv(t, w.Slide) * w.Slide
		for s := last; s > t-w.Size; s -= w.Slide {
			out = append(out, [2]int64{s, s + w.Size})
		}
	}
	return out
}

// OverSpec is one OVER clause of a bounded query's window step and the
// window functions computed over it: PostgreSQL's semantics, the
// function results appended to each input row in the order of Funcs.
type OverSpec struct {
	PartitionBy []*expr.Expr `json:"partition_by,omitempty"`
	OrderBy     []*expr.Expr `json:"order_by,omitempty"`
	// Order gives each OrderBy term's direction; Col is its index in OrderBy.
	Order []SortKey    `json:"order,omitempty"`
	Frame Frame        `json:"frame"`
	Funcs []WindowFunc `json:"funcs"`
}

// Frame is a window frame. The default (no frame clause) is RANGE
// BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW: the rows up to the current
// one's last peer, all of the partition without ORDER BY.
type Frame struct {
	Mode  string     `json:"mode"` // FrameRows, FrameRange or FrameGroups
	Start FrameBound `json:"start"`
	End   FrameBound `json:"end"`
}

// Frame modes.
const (
	FrameRows   = "rows"
	FrameRange  = "range"
	FrameGroups = "groups"
)

// FrameBound is one end of a frame; Offset (rows or peer groups) is for
// BoundPreceding and BoundFollowing of ROWS and GROUPS frames. A RANGE
// frame's offset is Value, a constant the frame adds to or subtracts
// from the current row's ORDER BY value (bigint for the integer types,
// numeric, double precision, interval for the time types and interval).
type FrameBound struct {
	Kind   BoundKind  `json:"kind"`
	Offset int64      `json:"offset,omitempty"`
	Value  *expr.Expr `json:"value,omitempty"`
}

// RangeOffset reports whether the bound is a RANGE frame's offset.
func (b FrameBound) RangeOffset() bool { return b.Value != nil }

// BoundKind says where a frame bound lies.
type BoundKind int

// Frame bound kinds.
const (
	BoundUnboundedPreceding BoundKind = iota
	BoundPreceding
	BoundCurrentRow
	BoundFollowing
	BoundUnboundedFollowing
)

// DefaultFrame is the frame of an OVER clause without a frame clause.
var DefaultFrame = Frame{Mode: FrameRange, Start: FrameBound{Kind: BoundUnboundedPreceding}, End: FrameBound{Kind: BoundCurrentRow}}

// WindowFunc is one window function call: a ranking or offset function
// (row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag,
// lead, first_value, last_value, nth_value) or an aggregate over the
// frame. Args are typed by the planner (lag's offset is bigint, its
// default of the value's type).
type WindowFunc struct {
	Name string       `json:"name"`
	Args []*expr.Expr `json:"args,omitempty"`
	Star bool         `json:"star,omitempty"`
}

// String renders the spec for EXPLAIN.
func (o *OverSpec) String() string {
	var sb strings.Builder
	for i, f := range o.Funcs {
		if i > 0 {
			sb.WriteString(",")
		}
		args := make([]string, len(f.Args))
		for j, a := range f.Args {
			args[j] = a.String()
		}
		if f.Star {
			args = []string{"*"}
		}
		fmt.Fprintf(&sb, " %s(%s)", f.Name, strings.Join(args, ", "))
	}
	sb.WriteString(" over (")
	sep := ""
	if len(o.PartitionBy) > 0 {
		sb.WriteString("partition by")
		for _, e := range o.PartitionBy {
			fmt.Fprintf(&sb, " %s", e)
		}
		sep = " "
	}
	if len(o.OrderBy) > 0 {
		sb.WriteString(sep + "order by")
		for _, k := range o.Order {
			fmt.Fprintf(&sb, " %s", o.OrderBy[k.Col])
			if k.Desc {
				sb.WriteString(" DESC")
			}
		}
		sep = " "
	}
	if o.Frame != DefaultFrame {
		fmt.Fprintf(&sb, "%s%s between %s and %s", sep, o.Frame.Mode, o.Frame.Start, o.Frame.End)
	}
	sb.WriteString(")")
	return sb.String()
}

func (b FrameBound) String() string {
	switch b.Kind {
	case BoundUnboundedPreceding:
		return "unbounded preceding"
	case BoundPreceding:
		if b.Value != nil {
			return b.Value.String() + " preceding"
		}
		return fmt.Sprintf("%d preceding", b.Offset)
	case BoundCurrentRow:
		return "current row"
	case BoundFollowing:
		if b.Value != nil {
			return b.Value.String() + " following"
		}
		return fmt.Sprintf("%d following", b.Offset)
	}
	return "unbounded following"
}

// JoinSpec describes an interval join of two streams (a JOIN b ON a.k =
// b.k AND b.ts BETWEEN a.ts + lo AND a.ts + hi). Both sides' rows reach
// the operator interleaved in one input, re-keyed by the join key so that
// equal keys meet in one partition: input rows are [side, left columns…,
// right columns…] with side 0 (left) or 1 (right) and the other side's
// columns NULL. Output rows are [left columns…, right columns…].
type JoinSpec struct {
	Type       string     `json:"type"` // "inner", "left", "right", "full"; a hash join's also "semi", "anti"
	LeftWidth  int        `json:"left_width"`
	RightWidth int        `json:"right_width"`
	LeftKey    []int      `json:"left_key"`  // input columns of the left key
	RightKey   []int      `json:"right_key"` // input columns of the right key, pairwise comparable
	LeftTime   int        `json:"left_time"` // input column of the left event time
	RightTime  int        `json:"right_time"`
	Lo         int64      `json:"lo"` // microseconds: right.ts - left.ts ∈ [Lo, Hi]
	Hi         int64      `json:"hi"`
	Residual   *expr.Expr `json:"residual,omitempty"` // the rest of ON, over output rows
	TimeType   types.Type `json:"time_type"`
	// SignCol is the input column of a hash join's row sign (+1 a row
	// comes, -1 it goes), when a side is itself a changelog (the signed
	// output of a join); 0: every input row comes.
	SignCol int `json:"sign_col,omitempty"`
}

// String renders the join for EXPLAIN.
func (s *JoinSpec) String() string {
	iv := func(us int64) string { return types.NewInterval(types.IntervalValue{Micros: us}).Text() }
	out := fmt.Sprintf("intervalJoin(%s, key %d=%d, right.ts - left.ts in [%s, %s]", s.Type, len(s.LeftKey), len(s.RightKey), iv(s.Lo), iv(s.Hi))
	if s.Residual != nil {
		out += ", on " + s.Residual.String()
	}
	return out + ")"
}

// HashString renders a hash join for EXPLAIN.
func (s *JoinSpec) HashString() string {
	out := fmt.Sprintf("hashJoin(%s, key %d=%d", s.Type, len(s.LeftKey), len(s.RightKey))
	if s.Residual != nil {
		out += ", on " + s.Residual.String()
	}
	if s.SignCol > 0 {
		out += ", signed input"
	}
	return out + ") signed"
}

// LookupSpec describes a stream-table join: each stream row looks up the
// current rows of a materialized view by its key or a prefix of its key
// (a whole key finds at most one row; the partition columns of a top-N
// view find its N). Output rows are [stream columns…, view columns…], one
// per match.
type LookupSpec struct {
	View        string       `json:"view"`
	Type        string       `json:"type"` // "inner" or "left"
	Key         []*expr.Expr `json:"key"`  // over the stream row: a prefix of the view's key
	StreamWidth int          `json:"stream_width"`
	ViewWidth   int          `json:"view_width"`
	Residual    *expr.Expr   `json:"residual,omitempty"` // the rest of ON, over output rows
}

// String renders the join for EXPLAIN.
func (s *LookupSpec) String() string {
	keys := ""
	for i, k := range s.Key {
		if i > 0 {
			keys += ", "
		}
		keys += k.String()
	}
	out := fmt.Sprintf("lookupJoin(%s, %s by key (%s)", s.Type, s.View, keys)
	if s.Residual != nil {
		out += ", on " + s.Residual.String()
	}
	return out + ")"
}

// Side returns the columns of side s (0 left, 1 right) of a join's
// input row.
func (s *JoinSpec) Side(row types.Row, side int) types.Row {
	if side == 0 {
		return row[1 : 1+s.LeftWidth]
	}
	return row[1+s.LeftWidth : 1+s.LeftWidth+s.RightWidth]
}

// Width is side s's column count.
func (s *JoinSpec) Width(side int) int {
	if side == 0 {
		return s.LeftWidth
	}
	return s.RightWidth
}
