package planner

import (
	"math"
	"slices"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// Window functions of a bounded SELECT. They are computed after WHERE,
// GROUP BY and HAVING, before the select list, DISTINCT, ORDER BY and
// LIMIT (PostgreSQL's order): one window step per distinct OVER clause,
// each appending its functions' values to the rows, which the select
// list and ORDER BY then read as columns. Continuous queries rank only
// through top-N (stateful.go); a window step in one is refused at CREATE.

// winCol is the column a window function call's value is appended as.
type winCol struct {
	col  int
	typ  types.Type
	name string
}

// planWindows plans the window calls of a SELECT's items and ORDER BY
// over rows of width columns (the FROM's, or the aggregation's output),
// whose expressions ctx builds. It returns the window steps and the
// columns the calls resolve to, by fingerprint.
func (b *builder) planWindows(ctx *exprCtx, width int, items []sql.SelectItem, order []sql.OrderItem) ([]plan.Step, map[string]winCol, error) {
	var calls []*sql.FuncCall
	seen := map[string]bool{}
	visit := func(e sql.Expr) {
		walkExpr(e, func(n sql.Expr) bool {
			f, ok := n.(*sql.FuncCall)
			if !ok || f.Over == nil {
				return true
			}
			if fp := fingerprint(f); !seen[fp] {
				seen[fp] = true
				calls = append(calls, f)
			}
			return false // a window call inside one is refused when its arguments are built
		})
	}
	for _, it := range items {
		visit(it.Expr)
	}
	for _, o := range order {
		visit(o.Expr)
	}
	if len(calls) == 0 {
		return nil, nil, nil
	}
	type window struct {
		over  *sql.WindowSpec
		calls []*sql.FuncCall
	}
	var windows []*window
	byOver := map[string]*window{}
	for _, f := range calls {
		fp := fingerprint(f.Over)
		w := byOver[fp]
		if w == nil {
			w = &window{over: f.Over}
			byOver[fp] = w
			windows = append(windows, w)
		}
		w.calls = append(w.calls, f)
	}
	cols := map[string]winCol{}
	var steps []plan.Step
	inner := &exprCtx{scope: ctx.scope, what: "window function arguments", aggs: ctx.aggs}
	for _, w := range windows {
		spec, err := b.overSpec(inner, w.over)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range w.calls {
			wf, err := b.windowFunc(inner, f)
			if err != nil {
				return nil, nil, err
			}
			t, err := operators.WindowResult(&wf)
			if err != nil {
				return nil, nil, err
			}
			spec.Funcs = append(spec.Funcs, wf)
			cols[fingerprint(f)] = winCol{col: width, typ: t, name: f.Name}
			width++
		}
		steps = append(steps, plan.Step{Op: plan.OpWindow, Over: spec})
	}
	return steps, cols, nil
}

// overSpec plans an OVER clause's PARTITION BY, ORDER BY and frame.
func (b *builder) overSpec(c *exprCtx, w *sql.WindowSpec) (*plan.OverSpec, error) {
	spec := &plan.OverSpec{Frame: plan.DefaultFrame}
	for _, p := range w.PartitionBy {
		x, err := b.windowExpr(c, p)
		if err != nil {
			return nil, err
		}
		spec.PartitionBy = append(spec.PartitionBy, x)
	}
	for _, o := range w.OrderBy {
		x, err := b.windowExpr(c, o.Expr)
		if err != nil {
			return nil, err
		}
		k := sortKey(len(spec.OrderBy), o)
		if slices.ContainsFunc(spec.OrderBy, func(y *expr.Expr) bool { return expr.Equal(x, y) }) {
			// a key again, in either direction, orders nothing: PostgreSQL
			// drops it too (RANGE offsets count the keys)
			continue
		}
		spec.Order = append(spec.Order, k)
		spec.OrderBy = append(spec.OrderBy, x)
	}
	if w.Frame != nil {
		fr, err := b.frame(w.Frame, spec.OrderBy)
		if err != nil {
			return nil, err
		}
		spec.Frame = fr
	}
	return spec, nil
}

// windowExpr builds an expression of a window clause or argument; an
// untyped literal or parameter becomes text, as in a select list.
func (b *builder) windowExpr(c *exprCtx, e sql.Expr) (*expr.Expr, error) {
	x, err := b.build(c, e)
	if err != nil {
		return nil, err
	}
	if isUntypedParam(x) {
		x = b.inferParam(x, types.Text)
	}
	if x.Type == types.Unknown || x.Type == types.Null {
		return expr.Cast(x, types.Text)
	}
	return x, nil
}

var frameKinds = map[sql.FrameBoundKind]plan.BoundKind{
	sql.FrameUnboundedPreceding: plan.BoundUnboundedPreceding,
	sql.FramePreceding:          plan.BoundPreceding,
	sql.FrameCurrentRow:         plan.BoundCurrentRow,
	sql.FrameFollowing:          plan.BoundFollowing,
	sql.FrameUnboundedFollowing: plan.BoundUnboundedFollowing,
}

// frame checks a frame clause as PostgreSQL does and evaluates its
// offsets: a number of rows or peer groups for ROWS and GROUPS, a
// constant of the ORDER BY value's offset type for RANGE.
func (b *builder) frame(f *sql.WindowFrame, orderBy []*expr.Expr) (plan.Frame, error) {
	fr := plan.Frame{Mode: f.Mode}
	werr := func(msg string) error { return pgerror.New(pgerror.WindowingError, "%s", msg) }
	switch {
	case f.Start.Kind == sql.FrameUnboundedFollowing:
		return fr, werr("frame start cannot be UNBOUNDED FOLLOWING")
	case f.End.Kind == sql.FrameUnboundedPreceding:
		return fr, werr("frame end cannot be UNBOUNDED PRECEDING")
	case f.Start.Kind == sql.FrameCurrentRow && f.End.Kind == sql.FramePreceding:
		return fr, werr("frame starting from current row cannot have preceding rows")
	case f.Start.Kind == sql.FrameFollowing && (f.End.Kind == sql.FramePreceding || f.End.Kind == sql.FrameCurrentRow):
		return fr, werr("frame starting from following row cannot have preceding rows")
	case f.Mode == plan.FrameGroups && len(orderBy) == 0:
		return fr, werr("GROUPS mode requires an ORDER BY clause")
	}
	for _, end := range []struct {
		in   sql.FrameBound
		out  *plan.FrameBound
		what string
	}{{f.Start, &fr.Start, "starting"}, {f.End, &fr.End, "ending"}} {
		end.out.Kind = frameKinds[end.in.Kind]
		if end.in.Offset == nil {
			continue
		}
		if f.Mode == plan.FrameRange && len(orderBy) != 1 {
			return fr, werr("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
		}
		if hasColumn(end.in.Offset) {
			return fr, pgerror.New(pgerror.InvalidColumnReference, "argument of %s must not contain variables", strings.ToUpper(f.Mode))
		}
		x, err := b.build(&exprCtx{scope: &scope{}, what: "window " + strings.ToUpper(f.Mode), noAggs: true}, end.in.Offset)
		if err != nil {
			return fr, err
		}
		if x.Kind != expr.KConst {
			return fr, pgerror.NotSupported("a window frame offset that is not a constant")
		}
		if x.Val.K == types.Null {
			return fr, pgerror.New(pgerror.NullValueNotAllowed, "frame %s offset must not be null", end.what)
		}
		if f.Mode == plan.FrameRange {
			if end.out.Value, err = rangeOffset(x, orderBy[0].Type); err != nil {
				return fr, err
			}
			continue
		}
		v, err := types.Cast(x.Val, types.Int8)
		if err != nil {
			return fr, err
		}
		if v.I < 0 {
			return fr, pgerror.New(pgerror.InvalidPrecedingOrFollowing, "frame %s offset must not be negative", end.what)
		}
		end.out.Offset = v.I
	}
	return fr, nil
}

// rangeOffset types a RANGE frame's offset x for an ORDER BY value of
// type t as PostgreSQL's in_range functions do: an integer for the
// integer types (bigint), numeric for numeric, double precision for the
// floating types, an interval for dates, timestamps and intervals; x
// must take the type implicitly, and must not be negative.
func rangeOffset(x *expr.Expr, t types.Type) (*expr.Expr, error) {
	var to types.Type
	switch t {
	case types.Int2, types.Int4, types.Int8:
		to = types.Int8
	case types.Numeric:
		to = types.Numeric
	case types.Float4, types.Float8:
		to = types.Float8
	case types.Date, types.Timestamp, types.TimestampTZ, types.Interval:
		to = types.Interval
	default:
		return nil, pgerror.New(pgerror.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s", t)
	}
	off, err := expr.Coerce(x, to, false)
	if err != nil && x.Type == types.Unknown {
		return nil, err // a string literal that does not read as the type: its input error
	}
	if err != nil || to == types.Int8 && !x.Type.IsInteger() && x.Type != types.Unknown || to == types.Numeric && x.Type.IsFloat() {
		return nil, pgerror.New(pgerror.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", t, x.Type).
			WithHint("Cast the offset value to an appropriate type.")
	}
	neg := false
	switch to {
	case types.Interval:
		iv := off.Val.Interval()
		// PostgreSQL compares an interval's span, a month as 30 days
		span := (int64(iv.Months)*30+int64(iv.Days))*types.MicrosPerDay + iv.Micros
		neg = span < 0
	case types.Float8:
		neg = off.Val.Float() < 0 || math.IsNaN(off.Val.Float())
	case types.Numeric:
		// NaN sorts above every number: it is refused as PostgreSQL does
		d := types.AsDecimal(off.Val)
		neg = d.Negative && !d.IsZero() || d.Form != apd.Finite
	default:
		neg = off.Val.I < 0
	}
	if neg {
		return nil, pgerror.New(pgerror.InvalidPrecedingOrFollowing, "invalid preceding or following size in window function")
	}
	return off, nil
}

// windowFunc types a window function call's arguments as PostgreSQL's
// signatures do: ntile(integer), lag/lead(anycompatible [, integer [,
// anycompatible]]), nth_value(anyelement, integer), first_value and
// last_value(anyelement), and the aggregates'.
// windowFilterAsCase plans agg(x) FILTER (WHERE c) OVER … as
// filterAsCase plans a grouped aggregate's FILTER: agg(CASE WHEN c THEN x
// END) OVER …, the same for the aggregates that skip NULLs. FILTER on a
// function that is no aggregate, and on array_agg (which keeps NULLs), is
// 0A000.
func windowFilterAsCase(f *sql.FuncCall) (*sql.FuncCall, error) {
	switch {
	case f.Filter == nil:
		return f, nil
	case !operators.IsAggregate(f.Name):
		return nil, pgerror.New(pgerror.FeatureNotSupported, "FILTER is not implemented for non-aggregate window functions")
	case f.Name == "array_agg" || operators.IsOrderedSet(f.Name):
		return nil, pgerror.NotSupported("FILTER on %s over a window", f.Name)
	}
	return filterAsCase(f)
}

func (b *builder) windowFunc(c *exprCtx, f *sql.FuncCall) (plan.WindowFunc, error) {
	f, err := windowFilterAsCase(f)
	if err != nil {
		return plan.WindowFunc{}, err
	}
	wf := plan.WindowFunc{Name: f.Name, Star: f.Star}
	nargs := func(lo, hi int) error {
		if len(f.Args) < lo || len(f.Args) > hi || f.Star {
			return pgerror.New(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(f.Args))
		}
		return nil
	}
	if f.Distinct {
		return wf, pgerror.NotSupported("DISTINCT is not implemented for window functions")
	}
	if len(f.OrderBy) > 0 {
		return wf, pgerror.NotSupported("aggregate ORDER BY is not implemented for window functions").
			WithHint("The window's ORDER BY orders the frame's rows.")
	}
	build := func(i int, t types.Type) (*expr.Expr, error) {
		x, err := b.windowExpr(c, f.Args[i])
		if err != nil || t == types.Unknown {
			return x, err
		}
		return expr.Coerce(b.inferParam(x, t), t, false)
	}
	switch f.Name {
	case "row_number", "rank", "dense_rank", "percent_rank", "cume_dist":
		err = nargs(0, 0)
	case "ntile":
		if err = nargs(1, 1); err == nil {
			var x *expr.Expr
			if x, err = build(0, types.Int4); err == nil {
				wf.Args = []*expr.Expr{x}
			}
		}
	case "lag", "lead", "first_value", "last_value", "nth_value":
		lo, hi := 1, 3
		switch f.Name {
		case "first_value", "last_value":
			hi = 1
		case "nth_value":
			lo, hi = 2, 2
		}
		if err = nargs(lo, hi); err != nil {
			break
		}
		for i := range f.Args {
			t := types.Unknown
			if i == 1 {
				t = types.Int4
			}
			x, berr := build(i, t)
			if berr != nil {
				return wf, berr
			}
			wf.Args = append(wf.Args, x)
		}
		if len(wf.Args) == 3 {
			// lag(anycompatible, integer, anycompatible): the value and
			// the default take their common type.
			t, cerr := expr.CommonType(wf.Args[0].Type, wf.Args[2].Type)
			if cerr != nil {
				return wf, pgerror.New(pgerror.DatatypeMismatch, "%s types %s and %s cannot be matched", f.Name, wf.Args[0].Type, wf.Args[2].Type)
			}
			for _, i := range []int{0, 2} {
				if wf.Args[i], err = expr.Coerce(wf.Args[i], t, false); err != nil {
					return wf, err
				}
			}
		}
	default:
		if !operators.IsAggregate(f.Name) {
			if expr.Exists(f.Name) {
				return wf, pgerror.New(pgerror.WrongObjectType, "OVER specified, but %s is not a window function nor an aggregate function", f.Name)
			}
			if missingAggregates[f.Name] {
				return wf, pgerror.NotSupported("aggregate function %s", f.Name)
			}
			return wf, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", f.Name)
		}
		if !f.Star {
			n := aggArity(f.Name)
			if err = nargs(n, n); err != nil {
				break
			}
			x, berr := b.aggValue(c, f)
			if berr != nil {
				return wf, berr
			}
			wf.Args = []*expr.Expr{x}
			if f.Name == "string_agg" { // its delimiter
				d, derr := b.aggDelim(c, x, f.Args[1])
				if derr != nil {
					return wf, derr
				}
				wf.Args = append(wf.Args, d)
			}
		}
		_, err = operators.WindowResult(&wf)
	}
	return wf, err
}
