package planner

import (
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// Temporal filters: a materialized view over a stream whose WHERE compares
// the clock with the row (ts > now() - INTERVAL '1 hour', now() BETWEEN
// valid_from AND valid_to) holds the rows the comparison lets through at
// the current time, as its SELECT run now would: rows come in when the
// clock reaches them and leave when it passes them
// (operators.TemporalFilter, ticked at each epoch's end). Anywhere else a
// clock call stays refused (checkContinuous).

// temporalClocks are the clock functions a temporal filter reads: the
// wall clock, as a timestamptz (localtimestamp: as a timestamp, which in
// fvsql's UTC sessions has the same value).
// (current_date, compared with a date of the row, is read by
// dateClockTerm.)
var temporalClocks = map[string]bool{
	"now": true, "current_timestamp": true, "localtimestamp": true, "statement_timestamp": true,
	"transaction_timestamp": true, "clock_timestamp": true,
}

// temporalSteps takes, out of the filter steps of a view over a stream,
// each conjunct that compares the clock (plus or minus a constant
// interval) with an expression of the row, and puts them after the
// filter as one temporalFilter step. A conjunct calling the clock in any
// other way stays in the filter, for checkContinuous to refuse.
func temporalSteps(steps []plan.Step) ([]plan.Step, error) {
	var out []plan.Step
	for _, st := range steps {
		if st.Op != plan.OpFilter || !callsClock(st.Pred) {
			out = append(out, st)
			continue
		}
		var keep []*expr.Expr
		var bounds []plan.TemporalBound
		for _, c := range andArgs(st.Pred) {
			if b, ok := temporalBound(c); ok {
				bounds = append(bounds, b)
				continue
			}
			keep = append(keep, c)
		}
		switch len(keep) {
		case 0:
		case 1:
			out = append(out, plan.Step{Op: plan.OpFilter, Pred: keep[0]})
		default:
			pred, err := expr.And(keep...)
			if err != nil {
				return nil, err
			}
			out = append(out, plan.Step{Op: plan.OpFilter, Pred: pred})
		}
		if len(bounds) > 0 {
			out = append(out, plan.Step{Op: plan.OpTemporalFilter, Bounds: bounds})
		}
	}
	return out, nil
}

// callsClock says whether e calls a clock function.
func callsClock(e *expr.Expr) bool {
	found := false
	if e != nil {
		e.Walk(func(n *expr.Expr) {
			if n.Kind == expr.KCall {
				name, _, _ := strings.Cut(n.Fn, "(")
				found = found || clockFuncs[name]
			}
		})
	}
	return found
}

// temporalBound reads c as `row op clock` or `clock op row`, where clock
// is a clock call plus or minus constant intervals and row a timestamp
// of the row alone, and returns it as a bound on the clock.
func temporalBound(c *expr.Expr) (plan.TemporalBound, bool) {
	if c.Kind != expr.KCall || len(c.Args) != 2 {
		return plan.TemporalBound{}, false
	}
	op, _, _ := strings.Cut(c.Fn, "(")
	if op != "<" && op != "<=" && op != ">" && op != ">=" {
		return plan.TemporalBound{}, false
	}
	row := c.Args[0]
	// now() + off op row, so now() op row - off, in steps of one
	// microsecond; or current_date + off op row (a date), so the clock's
	// day op row - off, in steps of a day
	step := int64(1)
	term := clockTerm
	if row.Type == types.Date || c.Args[1].Type == types.Date {
		step, term = types.MicrosPerDay, dateClockTerm
	}
	off, ok := term(c.Args[1])
	if ok {
		op = flipCompare(op) // clock + off op' row
	} else if off, ok = term(c.Args[0]); ok {
		row = c.Args[1]
	} else {
		return plan.TemporalBound{}, false
	}
	if callsClock(row) || expr.Volatile(row) {
		return plan.TemporalBound{}, false
	}
	switch {
	case step == 1 && (row.Type == types.Timestamp || row.Type == types.TimestampTZ):
	case step > 1 && row.Type == types.Date:
		// the day's start, when the clock's day begins
		var err error
		if row, err = expr.Cast(row, types.Timestamp); err != nil {
			return plan.TemporalBound{}, false
		}
	default:
		return plan.TemporalBound{}, false
	}
	// In whole steps, clock > x is clock >= x + step and clock <= x is
	// clock < x + step; the clock's day is below a day's start x exactly
	// when the clock is.
	b := plan.TemporalBound{Expr: row, Offset: -off}
	switch op {
	case "<=":
		b.Offset += step
	case ">":
		b.Lower = true
		b.Offset += step
	case ">=":
		b.Lower = true
	}
	return b, true
}

// dateClockTerm recognises current_date plus or minus constant whole
// days (date ± integer) and returns the days in microseconds.
func dateClockTerm(e *expr.Expr) (int64, bool) {
	if e.Kind != expr.KCall || e.Type != types.Date {
		return 0, false
	}
	name, _, _ := strings.Cut(e.Fn, "(")
	if len(e.Args) == 0 {
		return 0, name == "current_date"
	}
	if len(e.Args) != 2 || name != "+" && name != "-" {
		return 0, false
	}
	x, k := e.Args[0], e.Args[1]
	if name == "+" && x.Kind == expr.KConst {
		x, k = k, x
	}
	if k.Kind != expr.KConst || k.Val.IsNull() || !k.Type.IsInteger() {
		return 0, false
	}
	off, ok := dateClockTerm(x)
	d := k.Val.I * types.MicrosPerDay
	if name == "-" {
		d = -d
	}
	return off + d, ok
}

// clockTerm recognises a clock call, cast to a timestamp or not, plus or
// minus constant intervals without months (whose length depends on the
// date), and returns the intervals' sum in microseconds.
func clockTerm(e *expr.Expr) (int64, bool) {
	switch e.Kind {
	case expr.KCall:
		name, _, _ := strings.Cut(e.Fn, "(")
		if len(e.Args) == 0 {
			return 0, temporalClocks[name]
		}
		if len(e.Args) != 2 || name != "+" && name != "-" {
			return 0, false
		}
		x, k := e.Args[0], e.Args[1]
		if name == "+" && x.Kind == expr.KConst {
			x, k = k, x
		}
		if k.Kind != expr.KConst || k.Type != types.Interval || k.Val.IsNull() || k.Val.Interval().Months != 0 {
			return 0, false
		}
		off, ok := clockTerm(x)
		d := k.Val.Interval().Duration()
		if name == "-" {
			d = -d
		}
		return off + d, ok
	case expr.KCast:
		if e.Type == types.Timestamp || e.Type == types.TimestampTZ {
			return clockTerm(e.Args[0])
		}
	}
	return 0, false
}

// temporalAsSubquery moves the WHERE of a materialized view that reads
// one stream and aggregates, ranks or deduplicates its rows into a
// subquery of its own when it calls the clock: SELECT k, count(*) FROM s
// WHERE ts > now() - INTERVAL '1 hour' GROUP BY k reads (SELECT * FROM s
// WHERE …) s, a hidden view of the stream's rows with the temporal filter,
// whose changes (rows in, rows out as time moves) the aggregate takes.
// Anything else comes back as it is.
func temporalAsSubquery(cat Catalog, sel *sql.Select) *sql.Select {
	if sel.Where == nil || len(sel.From) != 1 || !sqlCallsClock(sel.Where) {
		return sel
	}
	if !aggregates(sel) && !sel.Distinct && len(sel.DistinctOn) == 0 && len(sel.OrderBy) == 0 && sel.Limit == nil && !hasWindowCall(sel) {
		return sel // a view of the rows: its filter is the temporal one
	}
	tn, ok := sel.From[0].(*sql.TableName)
	if !ok {
		return sel
	}
	if rel, err := cat.Lookup(tn.Schema, tn.Name); err != nil || rel.Kind != catalog.Stream {
		return sel
	}
	alias := tn.Alias
	if alias == "" {
		alias = tn.Name
	}
	inner := &sql.Select{Items: []sql.SelectItem{{Expr: &sql.Star{}}}, From: []sql.TableExpr{tn}, Where: sel.Where}
	out := *sel
	out.From = []sql.TableExpr{&sql.DerivedTable{Query: inner, Alias: alias}}
	out.Where = nil
	return &out
}

// sqlCallsClock says whether e calls a clock function.
func sqlCallsClock(e sql.Expr) bool {
	found := false
	walkExpr(e, func(x sql.Expr) bool {
		if f, ok := x.(*sql.FuncCall); ok && clockFuncs[strings.ToLower(f.Name)] {
			found = true
		}
		return !found
	})
	return found
}
