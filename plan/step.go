package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Step is one step of a stage in the engine's vocabulary, as plain data:
// the planner writes it, the catalog stores it (JSON), engine.BuildStep
// turns it into an operator (of package operators, or join for joins). Which fields are used depends on Op.
type Step struct {
	Op string `json:"op"`

	// filter
	Pred *expr.Expr `json:"pred,omitempty"`

	// project (select, rename, drop and applyExpression compile to it)
	Exprs []*expr.Expr `json:"exprs,omitempty"`
	Names []string     `json:"names,omitempty"`

	// aggregate
	GroupBy []*expr.Expr `json:"group_by,omitempty"`
	Aggs    []AggSpec    `json:"aggs,omitempty"`

	// sort, limit; LimitExpr and OffsetExpr, when set, are evaluated
	// (bigint, NULL: none) when the step is built and replace Limit and
	// Offset (a sort keeps LIMIT + OFFSET rows)
	Keys       []SortKey  `json:"keys,omitempty"`
	Limit      int64      `json:"limit,omitempty"`
	Offset     int64      `json:"offset,omitempty"`
	LimitExpr  *expr.Expr `json:"limit_expr,omitempty"`
	OffsetExpr *expr.Expr `json:"offset_expr,omitempty"`

	// windowedAggregate: the window, the input's event-time column; Changes
	// emits an upsert per update instead of final rows at window close.
	Window   *WindowSpec `json:"window,omitempty"`
	TimeCol  int         `json:"time_col,omitempty"`
	TimeType types.Type  `json:"time_type,omitempty"`
	Changes  bool        `json:"changes,omitempty"`
	// Having (groupAggregate; windowedAggregate and sessionAggregate with Changes) is the
	// HAVING condition over the aggregate's output row: a group shows in
	// the changes only while it holds, and leaves with a delete.
	Having *expr.Expr `json:"having,omitempty"`
	// Sign (groupAggregate, topN), when not 0, is the input column holding each
	// row's sign: the input is signed rows (a view's changes, from a
	// changelog step), and rows of sign -1 are taken back out. Never 0
	// when set: the sign follows the row's columns.
	Sign int `json:"sign,omitempty"`
	// Once (groupAggregate, without aggregates, over rows that only come)
	// emits each group's row once, when its first row comes, and never
	// changes or takes it back: a stream's DISTINCT, whose rows are final
	// as soon as they are first seen.
	Once bool `json:"once,omitempty"`

	// changelog: a view's table read as signed rows; Width is the view's
	// column count, KeyCol the column of the record key.
	KeyCol int `json:"key_col,omitempty"`

	// topN: partition key, order (Keys), N, input width, and the ranking
	// function ("" or "row_number", "rank", "dense_rank")
	PartitionBy []*expr.Expr `json:"partition_by,omitempty"`
	N           int64        `json:"n,omitempty"`
	Width       int          `json:"width,omitempty"`
	Rank        string       `json:"rank,omitempty"`

	// window (bounded queries), overWindow (continuous): the OVER clause
	// and its functions
	Over *OverSpec `json:"over,omitempty"`

	// projectSet: the select list's set-returning functions; lateral:
	// one function of a FROM item over the rows before it (LATERAL),
	// Outer keeping a row it gives no rows for (LEFT JOIN LATERAL … ON
	// true), NULL-padded
	Sets  []SetSpec `json:"sets,omitempty"`
	Outer bool      `json:"outer,omitempty"`
	// Ordinal appends the position of each row among its input row's
	// (1, 2, …; NULL for a NULL-padded row), an int8 after the functions'
	// columns: WITH ORDINALITY's, and with the input row's key the key of
	// a view's row.
	Ordinal bool `json:"ordinal,omitempty"`

	// intervalJoin, hashJoin
	Join *JoinSpec `json:"join,omitempty"`
	// lookupJoin
	Lookup *LookupSpec `json:"lookup,omitempty"`

	// temporalFilter: the bounds the wall clock must be within for a row
	// to be in the view (WHERE's comparisons of now() with the row)
	Bounds []TemporalBound `json:"bounds,omitempty"`
}

// TemporalBound is one comparison of a temporal filter: the clock (now(),
// microseconds) against Expr's value over the row (a timestamp or
// timestamptz) plus Offset microseconds. A Lower bound lets the row in
// once now() >= value + Offset; an upper one keeps it while now() <
// value + Offset (strict and non-strict comparisons differ by 1 µs).
type TemporalBound struct {
	Expr   *expr.Expr `json:"expr"`
	Offset int64      `json:"offset,omitempty"`
	Lower  bool       `json:"lower,omitempty"`
}

// String renders the bound for EXPLAIN.
func (b TemporalBound) String() string {
	op := "<"
	if b.Lower {
		op = ">="
	}
	s := fmt.Sprintf("now() %s %s", op, b.Expr)
	switch {
	case b.Offset > 0:
		s += " + " + time.Duration(b.Offset*1000).String()
	case b.Offset < 0:
		s += " - " + time.Duration(-b.Offset*1000).String()
	}
	return s
}

// Step ops.
const (
	OpFilter     = "filter"
	OpProject    = "project"
	OpAggregate  = "aggregate"
	OpSort       = "sort"
	OpLimit      = "limit"
	OpDistinct   = "distinct"
	OpWindow     = "window" // window functions of a bounded query
	OpProjectSet = "projectSet"
	OpLateral    = "lateral"
	// Stateful steps of continuous queries.
	OpWindowAggregate = "windowedAggregate"
	OpGroupAggregate  = "groupAggregate"
	OpTopN            = "topN"
	// OpFinalTopN is a stream's top-N whose partition holds an event
	// time (TimeCol): each partition's rows, once, when the watermark
	// passes it (a window's top-N)
	OpFinalTopN = "finalTopN"
	// OpFirstN is a stream's top-N (Rank) whose ORDER BY starts with an
	// event time (TimeCol), ascending: each row once, when the watermark
	// passes it, numbered at most N per partition (ROW_NUMBER and N = 1:
	// each key's first row)
	OpFirstN       = "firstN"
	OpSession      = "sessionAggregate"
	OpIntervalJoin = "intervalJoin"
	// OpWindowAssign is a bounded query's TUMBLE or HOP: each row once per
	// window holding its time (Window, TimeCol, TimeType), with the
	// window's start and end appended
	OpWindowAssign = "windowAssign"
	// OpSessionAssign is a bounded query's SESSION: each row that reaches
	// it, once all have, with the start and end of its session appended.
	// A session is a run of rows of equal GroupBy values whose times
	// (TimeCol) are at most the gap (Window) apart, from its first time
	// to its last plus the gap, as a continuous query's OpSession makes
	// them; rows of Width columns
	OpSessionAssign = "sessionAssign"
	OpHashJoin      = "hashJoin"
	OpLookupJoin    = "lookupJoin"
	OpChangelog     = "changelog"
	// OpOverWindow is a continuous query's window functions of one OVER
	// clause (Over) over rows of Width columns (signed by Sign when it is
	// not 0), emitting signed rows: the row, its values, the sign.
	OpOverWindow = "overWindow"
	// OpOverTime is a stream's window functions of one OVER clause (Over)
	// whose ORDER BY starts with an event time (TimeCol), ascending, over
	// rows of Width columns: each row once, when the watermark passes its
	// time, with its values appended
	OpOverTime = "overTime"
	// OpTemporalFilter is a materialized view's filter on the wall clock
	// (Bounds): each row of an append-only input comes out when now()
	// enters its bounds and is taken back out (a delete) when now() leaves
	// them, on the clock ticks the engine gives at each epoch's end.
	OpTemporalFilter = "temporalFilter"
)

// AggSpec is one aggregate call of an aggregate step.
type AggSpec struct {
	Name     string     `json:"name"`
	Arg      *expr.Expr `json:"arg,omitempty"` // nil for count(*)
	Star     bool       `json:"star,omitempty"`
	Distinct bool       `json:"distinct,omitempty"`
	// Delim is string_agg's delimiter: an expression of constants and
	// parameters, evaluated once when the step is built.
	Delim *expr.Expr `json:"delim,omitempty"`
	// Fraction is a percentile's: constants and parameters, evaluated
	// once when the step is built (percentile_cont(0.5) WITHIN GROUP
	// (ORDER BY x) has Arg x, OrderBy [x]).
	Fraction *expr.Expr `json:"fraction,omitempty"`
	// OrderBy and Order are agg(x ORDER BY …): the keys' expressions and
	// their directions (Order[i].Col is unused), bounded queries only.
	OrderBy []*expr.Expr `json:"order_by,omitempty"`
	Order   []SortKey    `json:"order,omitempty"`
	// Filter is array_agg(x) FILTER (WHERE c): the rows for which c is
	// not true are left out. (The other aggregates, which skip NULLs,
	// have their FILTER as a CASE in Arg; array_agg keeps NULLs.)
	Filter *expr.Expr `json:"filter,omitempty"`
}

// Limits evaluates a sort or limit step's count and offset: Limit and
// Offset, or LimitExpr and OffsetExpr for this execution's parameters.
// A sort without expressions has LIMIT + OFFSET in Limit already; with
// them, Limit and Offset are as written.
func (s *Step) Limits(env *expr.Env) (limit, offset int64, err error) {
	limit, offset = s.Limit, s.Offset
	if s.Op == OpSort && s.LimitExpr == nil && s.OffsetExpr == nil {
		return limit, 0, nil
	}
	eval := func(e *expr.Expr, what string, v *int64) error {
		if e == nil {
			return nil
		}
		ev, err := expr.CompileEnv(e, env)
		if err != nil {
			return err
		}
		x, err := ev(nil)
		if err != nil {
			return err
		}
		switch {
		case x.K == types.Null && what == "LIMIT":
			*v = -1
		case x.K == types.Null:
			*v = 0
		case x.I < 0:
			return pgerror.New(pgerror.InvalidRowCountInLimitClause, "%s must not be negative", what)
		default:
			*v = x.I
		}
		return nil
	}
	if err := eval(s.LimitExpr, "LIMIT", &limit); err != nil {
		return 0, 0, err
	}
	if err := eval(s.OffsetExpr, "OFFSET", &offset); err != nil {
		return 0, 0, err
	}
	return limit, offset, nil
}

// Stateless reports whether the step keeps no state across rows, so that
// copies of it can run on each partition in parallel.
// A lookup join reads a view's current rows but keeps nothing itself.
func (s *Step) Stateless() bool {
	return s.Op == OpFilter || s.Op == OpProject || s.Op == OpProjectSet || s.Op == OpLateral || s.Op == OpLookupJoin || s.Op == OpWindowAssign
}

// Ticks reports whether the step's operator acts on the wall clock
// (operators.Ticker): its stage's every partition is ticked at each
// epoch's end, those without new input too.
func (s *Step) Ticks() bool { return s.Op == OpTemporalFilter }

// Ticks reports whether any step of the stage acts on the wall clock
// (Step.Ticks).
func (st *Stage) Ticks() bool {
	for i := range st.Steps {
		if st.Steps[i].Ticks() {
			return true
		}
	}
	return false
}

// Seeds reports whether the step's operator is a Seeder with a group to
// seed: an unwindowed aggregate without GROUP BY.
func (s *Step) Seeds() bool { return s.Op == OpGroupAggregate && len(s.GroupBy) == 0 }

// String renders the step for EXPLAIN.
func (s *Step) String() string {
	if s.Op == OpIntervalJoin && s.Join != nil {
		return s.Join.String()
	}
	if s.Op == OpHashJoin && s.Join != nil {
		return s.Join.HashString()
	}
	if s.Op == OpLookupJoin && s.Lookup != nil {
		return s.Lookup.String()
	}
	var sb strings.Builder
	sb.WriteString(s.Op)
	switch s.Op {
	case OpFilter:
		fmt.Fprintf(&sb, " %s", s.Pred)
	case OpProject:
		for i, e := range s.Exprs {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, " %s", e)
			if i < len(s.Names) && s.Names[i] != e.String() {
				fmt.Fprintf(&sb, " AS %s", s.Names[i])
			}
		}
	case OpLateral, OpProjectSet:
		if s.Outer {
			sb.WriteString(" outer")
		}
		for i, set := range s.Sets {
			if i > 0 {
				sb.WriteString(",")
			}
			name := strings.TrimPrefix(set.Fn, "user:")
			if j := strings.IndexByte(name, '('); j > 0 && !strings.HasPrefix(set.Fn, "user:") {
				name = name[:j]
			}
			args := make([]string, len(set.Args))
			for k, a := range set.Args {
				args[k] = a.String()
			}
			fmt.Fprintf(&sb, " %s(%s)", name, strings.Join(args, ", "))
		}
	case OpAggregate, OpWindowAggregate, OpGroupAggregate, OpSession:
		if s.Window != nil {
			fmt.Fprintf(&sb, " %s", s.Window)
		}
		if s.Once {
			sb.WriteString(" first rows")
		} else if s.Changes {
			sb.WriteString(" emit changes")
		}
		if len(s.GroupBy) > 0 {
			sb.WriteString(" by")
			for i, e := range s.GroupBy {
				if i > 0 {
					sb.WriteString(",")
				}
				fmt.Fprintf(&sb, " %s", e)
			}
		}
		sb.WriteString(":")
		for i, a := range s.Aggs {
			if i > 0 {
				sb.WriteString(",")
			}
			arg := "*"
			if a.Arg != nil {
				arg = a.Arg.String()
			}
			if a.Distinct {
				arg = "DISTINCT " + arg
			}
			for i, o := range a.OrderBy {
				sep := ", "
				if i == 0 {
					sep = " ORDER BY "
				}
				arg += sep + o.String()
				if a.Order[i].Desc {
					arg += " DESC"
				}
			}
			fmt.Fprintf(&sb, " %s(%s)", a.Name, arg)
			if a.Filter != nil {
				fmt.Fprintf(&sb, " FILTER (WHERE %s)", a.Filter)
			}
		}
		if s.Having != nil {
			fmt.Fprintf(&sb, " having %s", s.Having)
		}
		if s.Sign != 0 {
			fmt.Fprintf(&sb, " signed by #%d", s.Sign)
		}
	case OpChangelog:
		fmt.Fprintf(&sb, " of %d columns by #%d", s.Width, s.KeyCol)
	case OpTemporalFilter:
		for i, b := range s.Bounds {
			if i > 0 {
				sb.WriteString(" AND")
			}
			fmt.Fprintf(&sb, " %s", b)
		}
	case OpWindowAssign, OpSessionAssign:
		if s.Window != nil {
			fmt.Fprintf(&sb, " %s on #%d", s.Window, s.TimeCol)
		}
		for i, g := range s.GroupBy {
			sep := ","
			if i == 0 {
				sep = " per"
			}
			fmt.Fprintf(&sb, "%s %s", sep, g)
		}
	case OpSort:
		for i, k := range s.Keys {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, " #%d", k.Col)
			if k.Desc {
				sb.WriteString(" DESC")
			}
		}
		if s.Limit >= 0 {
			fmt.Fprintf(&sb, " (top %d)", s.Limit)
		}
	case OpTopN, OpFinalTopN, OpFirstN:
		if s.Rank != "" && s.Rank != "row_number" {
			fmt.Fprintf(&sb, " %s", s.Rank)
		}
		fmt.Fprintf(&sb, " %d per", s.N)
		for _, e := range s.PartitionBy {
			fmt.Fprintf(&sb, " %s", e)
		}
		sb.WriteString(" by")
		for _, k := range s.Keys {
			fmt.Fprintf(&sb, " #%d", k.Col)
			if k.Desc {
				sb.WriteString(" DESC")
			}
		}
		if s.Sign != 0 {
			fmt.Fprintf(&sb, " signed by #%d", s.Sign)
		}
		if s.Op == OpFinalTopN || s.Op == OpFirstN {
			fmt.Fprintf(&sb, " when the watermark passes #%d", s.TimeCol)
		}
	case OpWindow, OpOverWindow, OpOverTime:
		if s.Over != nil {
			sb.WriteString(s.Over.String())
		}
		if s.Op == OpOverTime {
			fmt.Fprintf(&sb, " when the watermark passes #%d", s.TimeCol)
		}
		if s.Sign != 0 {
			fmt.Fprintf(&sb, " signed by #%d", s.Sign)
		}
	case OpLimit:
		if s.Limit >= 0 {
			fmt.Fprintf(&sb, " %d", s.Limit)
		}
		if s.Offset > 0 {
			fmt.Fprintf(&sb, " offset %d", s.Offset)
		}
	}
	return sb.String()
}
