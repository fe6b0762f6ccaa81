package operators

import (
	"fmt"
	"strings"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Step is one step of a stage in the engine's vocabulary, as plain data:
// the planner writes it, the catalog stores it (JSON), Build turns it into
// an Operator. Which fields are used depends on Op.
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

	// changelog: a view's table read as signed rows; Width is the view's
	// column count, KeyCol the column of the record key.
	KeyCol int `json:"key_col,omitempty"`

	// topN: partition key, order (Keys), N, input width, and the ranking
	// function ("" or "row_number", "rank", "dense_rank")
	PartitionBy []*expr.Expr `json:"partition_by,omitempty"`
	N           int64        `json:"n,omitempty"`
	Width       int          `json:"width,omitempty"`
	Rank        string       `json:"rank,omitempty"`

	// window (bounded queries): the OVER clause and its functions
	Over *OverSpec `json:"over,omitempty"`

	// projectSet: the select list's set-returning functions; lateral:
	// one function of a FROM item over the rows before it (LATERAL),
	// Outer keeping a row it gives no rows for (LEFT JOIN LATERAL … ON
	// true), NULL-padded
	Sets  []SetSpec `json:"sets,omitempty"`
	Outer bool      `json:"outer,omitempty"`

	// intervalJoin, hashJoin
	Join *JoinSpec `json:"join,omitempty"`
	// lookupJoin
	Lookup *LookupSpec `json:"lookup,omitempty"`
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
	OpSession         = "sessionAggregate"
	OpIntervalJoin    = "intervalJoin"
	OpHashJoin        = "hashJoin"
	OpLookupJoin      = "lookupJoin"
	OpChangelog       = "changelog"
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
	// OrderBy and Order are agg(x ORDER BY …): the keys' expressions and
	// their directions (Order[i].Col is unused), bounded queries only.
	OrderBy []*expr.Expr `json:"order_by,omitempty"`
	Order   []SortKey    `json:"order,omitempty"`
	// Filter is array_agg(x) FILTER (WHERE c): the rows for which c is
	// not true are left out. (The other aggregates, which skip NULLs,
	// have their FILTER as a CASE in Arg; array_agg keeps NULLs.)
	Filter *expr.Expr `json:"filter,omitempty"`
}

// limits evaluates a sort or limit step's count and offset: Limit and
// Offset, or LimitExpr and OffsetExpr for this execution's parameters.
// A sort without expressions has LIMIT + OFFSET in Limit already; with
// them, Limit and Offset are as written.
func (s *Step) limits(env *expr.Env) (limit, offset int64, err error) {
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

// Resolve types the aggregate.
func (a AggSpec) Resolve() (*AggFunc, error) {
	argType := types.Null
	if a.Arg != nil {
		argType = a.Arg.Type
	}
	return ResolveAgg(a.Name, argType, a.Star)
}

// withBatch is env with a Batch of the operator's own: its user function
// calls prefetch a batch's results (expr.Batch).
func withBatch(env *expr.Env) (*expr.Env, *expr.Batch) {
	if env == nil {
		env = &expr.Env{}
	}
	c := *env
	c.Batch = &expr.Batch{}
	return &c, c.Batch
}

// Stateless reports whether the step keeps no state across rows, so that
// copies of it can run on each partition in parallel.
// A lookup join reads a view's current rows but keeps nothing itself.
func (s *Step) Stateless() bool {
	return s.Op == OpFilter || s.Op == OpProject || s.Op == OpProjectSet || s.Op == OpLateral || s.Op == OpLookupJoin
}

// Seeds reports whether the step's operator is a Seeder with a group to
// seed: an unwindowed aggregate without GROUP BY.
func (s *Step) Seeds() bool { return s.Op == OpGroupAggregate && len(s.GroupBy) == 0 }

// Build makes the operator a step describes; env holds the bound $n
// values (and subqueries, in bounded queries); onErr is the per-row error
// policy.
func Build(s *Step, env *expr.Env, onErr RowError) (Operator, error) {
	return BuildWith(s, env, onErr, nil)
}

// BuildWith is Build with the resources of the running process (view
// lookups, for stream-table joins).
func BuildWith(s *Step, env *expr.Env, onErr RowError, res *Resources) (Operator, error) {
	switch s.Op {
	case OpLookupJoin:
		return buildLookupJoin(s, env, onErr, res)
	case OpFilter:
		benv, batch := withBatch(env)
		p, err := expr.CompilePredicateEnv(s.Pred, benv)
		if err != nil {
			return nil, err
		}
		return &Filter{Pred: p, OnError: onErr, batch: batch}, nil
	case OpProject:
		benv, batch := withBatch(env)
		evs, err := compileAll(s.Exprs, benv)
		if err != nil {
			return nil, err
		}
		return &Project{Exprs: evs, OnError: onErr, batch: batch}, nil
	case OpProjectSet, OpLateral:
		ps := &ProjectSet{OnError: onErr, Outer: s.Outer}
		for _, set := range s.Sets {
			ev, err := expr.CompileSet(set.Fn, set.Args, env)
			if err != nil {
				return nil, err
			}
			ps.Sets, ps.Widths = append(ps.Sets, ev), append(ps.Widths, set.Width)
		}
		return ps, nil
	case OpAggregate, OpWindowAggregate, OpGroupAggregate, OpSession:
		groupBy, err := compileAll(s.GroupBy, env)
		if err != nil {
			return nil, err
		}
		var aggs []AggCall
		for _, a := range s.Aggs {
			f, err := a.Resolve()
			if err != nil {
				return nil, err
			}
			if a.Delim != nil {
				d, err := expr.CompileEnv(a.Delim, env)
				if err != nil {
					return nil, err
				}
				v, err := d(nil)
				if err != nil {
					return nil, err
				}
				if v.K != types.Null {
					f.Delim = &v.S
				}
			}
			call := AggCall{Func: f, Distinct: a.Distinct}
			arg := a.Arg
			if len(a.OrderBy) > 0 || a.Filter != nil {
				// a record of the value and its keys; under FILTER, NULL
				// for a row left out (an empty Order keeps arrival order)
				if arg == nil { // count(*): any value that is not NULL
					arg = expr.Const(types.NewBool(true))
				}
				arg = expr.Row(append([]*expr.Expr{arg}, a.OrderBy...)...)
				if a.Filter != nil {
					if arg, err = expr.Case([]*expr.Expr{a.Filter}, []*expr.Expr{arg}, nil); err != nil {
						return nil, err
					}
				}
				call.Order = make([]SortKey, len(a.Order))
				for i, k := range a.Order {
					call.Order[i] = SortKey{Col: i + 1, Desc: k.Desc, NullsFirst: k.NullsFirst}
				}
			}
			if arg != nil {
				if call.Arg, err = expr.CompileEnv(arg, env); err != nil {
					return nil, err
				}
			}
			aggs = append(aggs, call)
		}
		var having expr.Eval
		if s.Having != nil {
			if s.Op != OpGroupAggregate && ((s.Op != OpWindowAggregate && s.Op != OpSession) || !s.Changes) {
				return nil, pgerror.New(pgerror.Internal, "operators: HAVING in a %s step", s.Op)
			}
			if having, err = expr.CompileEnv(s.Having, env); err != nil {
				return nil, err
			}
		}
		switch s.Op {
		case OpWindowAggregate:
			if s.Window == nil {
				return nil, pgerror.New(pgerror.Internal, "operators: windowedAggregate without a window")
			}
			w := NewWindowAggregate(*s.Window, s.TimeCol, s.TimeType, groupBy, aggs, s.Changes, onErr)
			w.st.having, w.st.onErr = having, onErr
			return w, nil
		case OpGroupAggregate:
			g := NewGroupAggregate(groupBy, aggs, onErr)
			g.st.having, g.st.onErr, g.st.sign = having, onErr, s.Sign
			if res != nil && res.GroupCacheBytes > 0 {
				g.st.cold.limit = res.GroupCacheBytes
			}
			return g, nil
		case OpSession:
			if s.Window == nil || s.Window.Gap <= 0 {
				return nil, pgerror.New(pgerror.Internal, "operators: sessionAggregate without a gap")
			}
			sa := NewSessionAggregate(s.Window.Gap, s.TimeCol, s.TimeType, groupBy, aggs, s.Changes, onErr)
			sa.Having = having
			return sa, nil
		}
		return &HashAggregate{GroupBy: groupBy, Aggs: aggs, OnError: onErr, Budget: res.budget()}, nil
	case OpChangelog:
		return &Changelog{Width: s.Width, KeyCol: s.KeyCol}, nil
	case OpTopN:
		parts, err := compileAll(s.PartitionBy, env)
		if err != nil {
			return nil, err
		}
		rank, err := rankingOf(s.Rank)
		if err != nil {
			return nil, err
		}
		if s.Sign != 0 && s.Sign != s.Width {
			return nil, pgerror.New(pgerror.Internal, "operators: top-N sign in column %d of rows of %d", s.Sign, s.Width)
		}
		return &TopN{PartitionBy: parts, Keys: s.Keys, N: s.N, Width: s.Width, Ranking: rank, OnError: onErr, Sign: s.Sign}, nil
	case OpIntervalJoin, OpHashJoin:
		if s.Join == nil {
			return nil, pgerror.New(pgerror.Internal, "operators: %s without a spec", s.Op)
		}
		var residual expr.Eval
		if s.Join.Residual != nil {
			var err error
			if residual, err = expr.CompileEnv(s.Join.Residual, env); err != nil {
				return nil, err
			}
		}
		if s.Op == OpHashJoin {
			return NewHashJoin(*s.Join, residual, onErr), nil
		}
		return NewIntervalJoin(*s.Join, residual, onErr), nil
	case OpSort:
		limit, offset, err := s.limits(env)
		if err != nil {
			return nil, err
		}
		if limit >= 0 {
			limit += offset
		}
		return &Sort{Keys: s.Keys, Limit: limit, Budget: res.budget()}, nil
	case OpLimit:
		limit, offset, err := s.limits(env)
		if err != nil {
			return nil, err
		}
		return &Limit{Offset: offset, Count: limit}, nil
	case OpDistinct:
		return &Distinct{Budget: res.budget()}, nil
	case OpWindow:
		if s.Over == nil {
			return nil, pgerror.New(pgerror.Internal, "operators: window without a spec")
		}
		return NewWindowFuncs(s.Over, env, onErr, res.budget())
	}
	return nil, pgerror.New(pgerror.Internal, "operators: unknown step %q", s.Op)
}

func compileAll(es []*expr.Expr, env *expr.Env) ([]expr.Eval, error) {
	out := make([]expr.Eval, len(es))
	for i, e := range es {
		ev, err := expr.CompileEnv(e, env)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

// String renders the step for EXPLAIN.
func (s *Step) String() string {
	if s.Op == OpIntervalJoin && s.Join != nil {
		return s.Join.String()
	}
	if s.Op == OpHashJoin && s.Join != nil {
		return s.Join.hashJoinString()
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
		if s.Changes {
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
	case OpTopN:
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
	case OpWindow:
		if s.Over != nil {
			sb.WriteString(s.Over.String())
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
