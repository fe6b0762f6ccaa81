package planner

import (
	"math"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// planStreamJoin plans CREATE STREAM … AS SELECT … FROM a [LEFT|RIGHT|
// FULL] JOIN b ON a.k = b.k AND <a time bound between a.ts and b.ts>: an
// interval join. It runs as three stages: one per side re-keys its rows by
// the join key into one internal topic (a row there is [side, a's
// columns, b's columns, key columns], the other side's columns NULL), and
// the join stage keeps each row until the watermarks (the minimum of both
// sides') make a match impossible. The select list and WHERE apply to the
// joined rows, exactly as the bounded planner would apply them.
//
// A materialized view over a join of two streams is planJoinView's.
func planStreamJoin(cat Catalog, ca *sql.CreateAs, sel *sql.Select, j *sql.Join) (*Continuous, error) {
	if ca.Kind != sql.KindStream && ca.Kind != sql.KindMaterializedView {
		return nil, pgerror.NotSupported("a join into a %s (write the join to a stream, then aggregate that stream)", ca.Kind)
	}
	if ca.Query.Emit != sql.EmitDefault {
		return nil, pgerror.New(pgerror.SyntaxError, "EMIT applies to windowed aggregations")
	}
	if ca.Kind == sql.KindMaterializedView {
		if aggregates(sel) {
			return planJoinAggregate(cat, ca, sel, j)
		}
		return planJoinView(cat, ca, sel, j)
	}
	lt, lok := j.Left.(*sql.TableName)
	rt, rok := j.Right.(*sql.TableName)
	if !lok || !rok {
		return nil, pgerror.NotSupported("a stream join of a table function or a SESSION window").
			WithHint("Join the streams, and call the function or window their join in a subquery over it; or join them in a materialized view.")
	}
	if rel, err := cat.Lookup(rt.Schema, rt.Name); err == nil && rel.Kind == catalog.MaterializedView {
		return planLookupJoin(cat, ca, sel, j, rel)
	}
	if aggregates(sel) {
		return nil, pgerror.NotSupported("aggregating a stream join in one query (write the join to a stream, then aggregate that stream; or aggregate it in a materialized view)")
	}
	jp, err := planJoinSides(cat, ca.Name, sel, lt, rt)
	if err != nil {
		return nil, err
	}
	bj, lw := jp.join, len(jp.ls.cols)
	lcol, rcol, lo, hi, ok := timeBounds(bj.On, lw, bj.LeftKeys, bj.RightKeys)
	if !ok {
		return nil, pgerror.NotSupported("a stream join without a time bound on both sides (its state would grow forever)").
			WithHint("Bound the join in time: ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' MINUTE; or join into a materialized view, which keeps every row.")
	}
	if lo > hi {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "the join's time bounds admit no pair: right.ts - left.ts would be between %s and %s",
			types.NewInterval(types.IntervalValue{Micros: lo}).Text(), types.NewInterval(types.IntervalValue{Micros: hi}).Text())
	}
	spec := jp.spec()
	spec.LeftTime, spec.RightTime, spec.Lo, spec.Hi, spec.TimeType = 1+lcol, 1+lw+rcol, lo, hi, jp.ls.cols[lcol].typ
	joinSteps := append([]plan.Step{{Op: plan.OpIntervalJoin, Join: spec}}, jp.chain.Steps...)

	rel, err := outputStream(ca, columnsOf(jp.out), jp.internal.Partitions, nil)
	if err != nil {
		return nil, err
	}
	errs := ErrorsRelation(ca.Name)
	topo := &plan.Topology{
		Stages: []plan.Stage{
			jp.sideStage("left", 0, watermarkFor(jp.left, lcol)),
			jp.sideStage("right", 1, watermarkFor(jp.right, rcol)),
			{Name: "join", Inputs: []string{jp.internal.Name}, Output: rel.Name, Steps: joinSteps},
		},
		Internal: []plan.Stream{jp.internal},
		Errors:   errs.Name,
	}
	c := &Continuous{Rel: rel, Errors: errs, Topology: topo, Inputs: []*catalog.Relation{jp.left, jp.right}}
	return c, bridgeInputs(c, ca.Name)
}

// joinPlan is a continuous join of two streams before its join step is
// chosen: its inputs, the joined SELECT as the bounded planner plans it
// (the join node, then the steps over joined rows), and the internal
// topic both sides write, keyed by the join key.
type joinPlan struct {
	left, right *catalog.Relation
	ls, rs      *scope
	join        *plan.Join
	chain       *plan.Chain // chain.Steps: WHERE and the select list over joined rows
	out         *scope
	internal    plan.Stream // [side, left…, right…, keys…]
	keyCols     []int       // the key columns of internal
}

func planJoinSides(cat Catalog, name string, sel *sql.Select, lt, rt *sql.TableName) (*joinPlan, error) {
	left, ls, err := streamInput(cat, lt)
	if err != nil {
		return nil, joinInputError(err)
	}
	right, rs, err := streamInput(cat, rt)
	if err != nil {
		return nil, joinInputError(err)
	}
	chain, out, err := statelessSelect(cat, sel, "a stream join")
	if err != nil {
		return nil, err
	}
	bj, ok := chain.Input.(*plan.Join)
	if !ok {
		return nil, pgerror.NotSupported("this stream join")
	}
	jp, err := newJoinPlan(name, left, right, ls, rs, bj)
	if err != nil {
		return nil, err
	}
	jp.chain, jp.out = chain, out
	return jp, nil
}

// newJoinPlan makes the internal topic of a join of left and right, as
// the bounded planner planned it (bj), for the pipeline name.
func newJoinPlan(name string, left, right *catalog.Relation, ls, rs *scope, bj *plan.Join) (*joinPlan, error) {
	lw, rw := len(ls.cols), len(rs.cols)
	if bj.Kind == "cross" {
		bj.Kind = "inner"
	}
	if bj.LeftWidth != lw || bj.RightWidth != rw {
		return nil, pgerror.New(pgerror.Internal, "planner: join widths %d+%d, scopes %d+%d", bj.LeftWidth, bj.RightWidth, lw, rw)
	}
	if len(bj.LeftKeys) == 0 {
		return nil, pgerror.NotSupported("a stream join without an equality between the two sides").
			WithHint("Join on a key: ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts.")
	}
	jp := &joinPlan{left: left, right: right, ls: ls, rs: rs, join: bj}
	internal := plan.Stream{Name: name + ".join", Topic: InternalTopic(name, "join"), Partitions: max(left.Partitions, right.Partitions, 1), Format: types.InternalFormat}
	internal.Columns = append(internal.Columns, "side")
	internal.Types = append(internal.Types, types.Int4)
	for i, c := range ls.cols {
		internal.Columns = append(internal.Columns, "l"+strconv.Itoa(i))
		internal.Types = append(internal.Types, c.typ)
	}
	for i, c := range rs.cols {
		internal.Columns = append(internal.Columns, "r"+strconv.Itoa(i))
		internal.Types = append(internal.Types, c.typ)
	}
	for i, k := range bj.LeftKeys {
		jp.keyCols = append(jp.keyCols, 1+lw+rw+i)
		internal.Columns = append(internal.Columns, "k"+strconv.Itoa(i))
		internal.Types = append(internal.Types, k.Type)
	}
	internal.Key = jp.keyCols
	jp.internal = internal
	return jp, nil
}

// sideStage is the stage that writes one side's rows (sideNo 0 left, 1
// right) into the internal topic, keyed by the join key.
func (jp *joinPlan) sideStage(stage string, sideNo int, wm *plan.WatermarkSpec) plan.Stage {
	in, keys := jp.left, jp.join.LeftKeys
	if sideNo == 1 {
		in, keys = jp.right, jp.join.RightKeys
	}
	exprs := sideRow(sideNo, jp.ls.cols, jp.rs.cols, keys)
	return plan.Stage{
		Name: stage, Inputs: []string{in.Name}, Output: jp.internal.Name,
		Steps:      []plan.Step{{Op: plan.OpProject, Exprs: exprs, Names: jp.internal.Columns}},
		Watermark:  wm,
		OutputKey:  jp.keyCols,
		SourceBase: int32(sideNo) << 16,
	}
}

// spec is the join step's spec over the internal topic's rows, without
// time bounds.
func (jp *joinPlan) spec() *plan.JoinSpec {
	return &plan.JoinSpec{
		Type: jp.join.Kind, LeftWidth: len(jp.ls.cols), RightWidth: len(jp.rs.cols),
		LeftKey: jp.keyCols, RightKey: jp.keyCols, Residual: jp.join.On,
	}
}

// planJoinView plans a materialized view over a join of two or more
// streams, of any join types and with or without time bounds: regular
// joins that keep every row (operators.HashJoin, see joinTree), so that
// the view holds what its SELECT returns over the same input. Its rows
// are keyed by the records each stream's row came from (see
// joinTree.viewKey), so equal rows stay apart; an outer row's
// NULL-padded row leaves the view when its first partner comes.
func planJoinView(cat Catalog, ca *sql.CreateAs, sel *sql.Select, j *sql.Join) (*Continuous, error) {
	chain, sc, err := statelessSelect(cat, sel, "a materialized view over a join")
	if err != nil {
		return nil, err
	}
	bj, ok := chain.Input.(*plan.Join)
	if !ok {
		return nil, pgerror.NotSupported("this materialized view over a join")
	}
	t, err := planJoinTree(cat, ca.Name, j, bj)
	if err != nil {
		return nil, err
	}
	steps := chain.Steps
	if len(steps) == 0 || steps[len(steps)-1].Op != plan.OpProject {
		return nil, pgerror.NotSupported("this materialized view over a join")
	}
	for _, st := range steps[:len(steps)-1] {
		if st.Op != plan.OpFilter {
			return nil, pgerror.NotSupported("step %s in a materialized view over a join", st.Op)
		}
	}
	proj := steps[len(steps)-1]
	proj.Exprs = append([]*expr.Expr(nil), proj.Exprs...)
	proj.Names = append([]string(nil), proj.Names...)
	cols := columnsOf(sc)
	keyCols, keyExprs := t.viewKey()
	t.prune(neededColumns(sel, j, t.cols, keyExprs))
	var key []int
	for i, c := range keyCols {
		key = append(key, len(proj.Exprs))
		proj.Exprs = append(proj.Exprs, keyExprs[i])
		proj.Names = append(proj.Names, c.Name)
		cols = append(cols, c)
	}
	proj.Exprs = append(proj.Exprs, expr.Col(len(t.cols), types.Int8, "_sign"))
	proj.Names = append(proj.Names, "_sign")
	joinSteps := append(append([]plan.Step(nil), t.top.steps...), steps[:len(steps)-1]...)
	joinSteps = append(joinSteps, proj)
	errs := ErrorsRelation(ca.Name)
	out := &Continuous{Errors: errs, Inputs: t.inputs(), Topology: &plan.Topology{
		Stages: append(t.stages,
			plan.Stage{Name: t.top.stage, Inputs: []string{t.top.read}, Output: ca.Name + ChangesSuffix, Steps: joinSteps}),
		Internal: t.internal,
		Errors:   errs.Name,
	}}
	last := &out.Topology.Stages[len(out.Topology.Stages)-1]
	if err := viewOutput(ca, out, last, cols, key, t.top.partitions); err != nil {
		return nil, err
	}
	last.Changes.Sign = len(cols)
	return out, bridgeInputs(out, ca.Name)
}

// joinInputError explains what a stream may join.
func joinInputError(err error) error {
	if pgerror.CodeOf(err) == pgerror.WrongObjectType {
		return pgerror.NotSupported("this join in a continuous query: a stream joins a stream (interval join) or, on its right, a materialized view (stream-table join)")
	}
	return err
}

// planLookupJoin plans SELECT … FROM stream s [LEFT] JOIN view v ON
// s.x = v.k …, where the equalities cover the view's whole key: each
// stream row looks up the view's current row in this process's copy of
// the view. One stage, no state; the rest of ON, WHERE and the select
// list apply to the joined rows.
func planLookupJoin(cat Catalog, ca *sql.CreateAs, sel *sql.Select, j *sql.Join, view *catalog.Relation) (*Continuous, error) {
	lt, _ := j.Left.(*sql.TableName)
	in, _, err := streamInput(cat, lt)
	if err != nil {
		return nil, joinInputError(err)
	}
	if j.Kind != "" && j.Kind != "inner" && j.Kind != "left" {
		return nil, pgerror.NotSupported("%s JOIN of a stream with a materialized view (inner and LEFT only)", strings.ToUpper(j.Kind))
	}
	chain, out, err := statelessSelect(cat, sel, "a stream-table join")
	if err != nil {
		return nil, err
	}
	bj, ok := chain.Input.(*plan.Join)
	if !ok {
		return nil, pgerror.NotSupported("this stream-table join")
	}
	// The view's key, in its order, from the equalities of ON: a stream
	// expression, or a constant (v.rn = 1), per key column. The leading
	// ones found are the lookup key; the rest are checked on joined rows.
	lw, vw := bj.LeftWidth, len(view.ReadColumns())
	keyCol := func(col int) int { // view key position of a view column, or -1
		for k, name := range view.Key {
			if view.ColumnIndex(name) == col {
				return k
			}
		}
		return -1
	}
	key := make([]*expr.Expr, len(view.Key))
	var checks []*expr.Expr
	for i, r := range bj.RightKeys {
		l := bj.LeftKeys[i]
		if r.Kind == expr.KCol {
			if k := keyCol(r.Col); k >= 0 && key[k] == nil {
				key[k] = l
			}
		}
		eq, err := expr.Compare("=", l, r.Remap(shiftBy(vw, lw)))
		if err != nil {
			return nil, err
		}
		checks = append(checks, eq)
	}
	for _, c := range andArgs(bj.On) {
		if c.Kind != expr.KCall || len(c.Args) != 2 || !strings.HasPrefix(c.Fn, "=") {
			continue
		}
		col, val := c.Args[0], c.Args[1]
		if col.Kind == expr.KConst {
			col, val = val, col
		}
		if col.Kind == expr.KCol && col.Col >= lw && val.Kind == expr.KConst {
			if k := keyCol(col.Col - lw); k >= 0 && key[k] == nil {
				key[k] = val
			}
		}
	}
	n := 0
	for n < len(key) && key[n] != nil {
		n++
	}
	if n == 0 {
		return nil, pgerror.NotSupported("a stream-table join that does not give the view's key (%s)", strings.Join(view.Key, ", ")).
			WithHint("Join on the view's key: ON s.x = v.%s.", view.Key[0])
	}
	key = key[:n]
	residual := bj.On
	if len(checks) > 0 {
		if residual != nil {
			checks = append(checks, residual)
		}
		var err error
		if residual, err = expr.And(checks...); err != nil {
			return nil, err
		}
	}
	kind := bj.Kind
	if kind == "cross" {
		kind = "inner"
	}
	spec := &plan.LookupSpec{View: view.Name, Type: kind, Key: key, StreamWidth: bj.LeftWidth, ViewWidth: bj.RightWidth, Residual: residual}
	steps := append([]plan.Step{{Op: plan.OpLookupJoin, Lookup: spec}}, chain.Steps...)
	rel, err := outputStream(ca, columnsOf(out), in.Partitions, nil)
	if err != nil {
		return nil, err
	}
	errs := ErrorsRelation(ca.Name)
	topo := &plan.Topology{
		Stages: []plan.Stage{{Name: "s0", Inputs: []string{in.Name}, Output: rel.Name, Steps: steps}},
		Errors: errs.Name,
	}
	c := &Continuous{Rel: rel, Errors: errs, Topology: topo, Inputs: []*catalog.Relation{in}}
	return c, bridgeInputs(c, ca.Name)
}

// shiftBy maps columns 0..n-1 to base..base+n-1.
func shiftBy(n, base int) map[int]int {
	m := make(map[int]int, n)
	for i := 0; i < n; i++ {
		m[i] = base + i
	}
	return m
}

// timeBounds finds, among the conjuncts of the join's residual condition,
// comparisons between a left and a right timestamp column (each plus or
// minus a constant interval) and returns the columns (within each side)
// and the bounds they put on right.ts - left.ts, in microseconds. Strict
// comparisons give the same bound as non-strict ones: the residual, which
// the join evaluates on every pair, is exact. lkeys and rkeys are the
// equality keys taken out of ON.
func timeBounds(on *expr.Expr, lw int, lkeys, rkeys []*expr.Expr) (lcol, rcol int, lo, hi int64, ok bool) {
	lo, hi = math.MinInt64, math.MaxInt64
	lcol, rcol = -1, -1
	// An equality of the two sides' timestamps became a join key (the
	// right key's columns are the right side's own): it bounds the time
	// difference to zero.
	for i, l := range lkeys {
		r := rkeys[i]
		if _, loff, lok := timeTerm(l); lok && l.Kind == expr.KCol && r.Kind == expr.KCol && loff == 0 {
			if _, _, rok := timeTerm(r); rok && lcol < 0 {
				lcol, rcol, lo, hi = l.Col, r.Col, 0, 0
			}
		}
	}
	for _, c := range andArgs(on) {
		if c.Kind != expr.KCall || len(c.Args) != 2 {
			continue
		}
		op := c.Fn
		if i := strings.IndexByte(op, '('); i >= 0 {
			op = op[:i]
		}
		if op != "=" && op != "<" && op != "<=" && op != ">" && op != ">=" {
			continue
		}
		ac, aoff, aok := timeTerm(c.Args[0])
		bc, boff, bok := timeTerm(c.Args[1])
		if !aok || !bok || (ac < lw) == (bc < lw) {
			continue
		}
		// Put it as right.ts + roff op left.ts + loff (flipping op when
		// the right column is on the right-hand side).
		l, loff, r, roff := bc, boff, ac, aoff
		if ac < lw {
			l, loff, r, roff = ac, aoff, bc, boff
			op = flipCompare(op)
		}
		if lcol < 0 {
			lcol, rcol = l, r-lw
		} else if lcol != l || rcol != r-lw {
			continue // another pair of time columns: left to the residual
		}
		// right.ts - left.ts op loff - roff
		d := loff - roff
		switch op {
		case "=":
			lo, hi = max(lo, d), min(hi, d)
		case ">", ">=":
			lo = max(lo, d)
		case "<", "<=":
			hi = min(hi, d)
		}
	}
	return lcol, rcol, lo, hi, lcol >= 0 && lo > math.MinInt64 && hi < math.MaxInt64
}

// andArgs flattens nested ANDs.
func andArgs(e *expr.Expr) []*expr.Expr {
	if e == nil {
		return nil
	}
	if e.Kind == expr.KAnd {
		var out []*expr.Expr
		for _, a := range e.Args {
			out = append(out, andArgs(a)...)
		}
		return out
	}
	return []*expr.Expr{e}
}

// flipCompare turns `a op b` into the operator of `b op' a`.
func flipCompare(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

// timeTerm recognises a timestamp column, optionally plus or minus a
// constant interval: it returns the column and the offset in microseconds.
func timeTerm(e *expr.Expr) (col int, off int64, ok bool) {
	isTime := func(t types.Type) bool { return t == types.Timestamp || t == types.TimestampTZ }
	switch e.Kind {
	case expr.KCol:
		return e.Col, 0, isTime(e.Type)
	case expr.KCall:
		if len(e.Args) != 2 || !isTime(e.Type) {
			return 0, 0, false
		}
		op := e.Fn
		if i := strings.IndexByte(op, '('); i >= 0 {
			op = op[:i]
		}
		x, k := e.Args[0], e.Args[1]
		if op == "+" && x.Kind == expr.KConst {
			x, k = k, x
		}
		if x.Kind != expr.KCol || !isTime(x.Type) || k.Kind != expr.KConst || k.Type != types.Interval || k.Val.IsNull() {
			return 0, 0, false
		}
		d := k.Val.Interval().Duration()
		switch op {
		case "+":
			return x.Col, d, true
		case "-":
			return x.Col, -d, true
		}
	}
	return 0, 0, false
}

// planJoinAggregate plans a materialized view that aggregates a join of
// two or more streams: the top join's stage (a hash join, as
// planJoinView's) computes the GROUP BY expressions and re-keys the
// joined rows by the group key into a repartition topic, and the
// aggregate stage groups them. Over inner joins of streams the joined
// rows only ever come in, so every aggregate works; an outer join takes
// back a NULL-padded row when its first partner comes, so over one the
// rows are signed and the aggregates take a row back out when it leaves.
func planJoinAggregate(cat Catalog, ca *sql.CreateAs, sel *sql.Select, j *sql.Join) (*Continuous, error) {
	t, sc, err := joinTreeOf(cat, ca.Name, j)
	if err != nil {
		return nil, err
	}
	q, err := groupedQuery(cat, sel, sc)
	if err != nil {
		return nil, err
	}
	var sign *expr.Expr
	if t.outer != "" {
		sign = expr.Col(len(t.cols), types.Int8, "_sign")
		q.step.Sign = len(t.cols) + len(q.computed)
	}
	return joinIntoStateful(ca, sel, j, t, sc, q, sign, "aggregate")
}

// joinTreeOf plans a view's join: its tree of stages and its rows' scope.
func joinTreeOf(cat Catalog, name string, j *sql.Join) (*joinTree, *scope, error) {
	b := &builder{cat: cat}
	node, sc, err := b.buildJoin(j)
	if err != nil {
		return nil, nil, err
	}
	bj, ok := node.(*plan.Join)
	if !ok {
		return nil, nil, pgerror.NotSupported("this join in a materialized view")
	}
	t, err := planJoinTree(cat, name, j, bj)
	return t, sc, err
}

// joinIntoStateful finishes a view whose stateful step q (an aggregate, a
// top-N) reads the rows of the join t: the join stage filters them by the
// query's WHERE and re-keys them by q's partition (the columns sel reads,
// its computed keys, sign when the rows are signed) into a repartition
// topic, and the stage named stage runs q over them (when the partition
// holds the join key, fuseStages merges the two).
func joinIntoStateful(ca *sql.CreateAs, sel *sql.Select, j *sql.Join, t *joinTree, sc *scope, q *statefulQuery, sign *expr.Expr, stage string) (*Continuous, error) {
	width := len(t.cols)
	partitions := t.top.partitions
	if len(q.partition) == 0 {
		partitions = 1 // one global group or ranking: one instance holds it
	}
	// what the query does not read goes no further than the side stages
	needed := neededColumns(sel, j, t.cols, nil)
	t.prune(needed)
	var read []*expr.Expr
	for i, c := range sc.cols[:width] {
		if needed[i] {
			read = append(read, expr.Col(i, c.typ, c.name))
		} else {
			read = append(read, expr.TypedNull(c.typ))
		}
	}
	keyed := keyedProjection(read, q.computed, sign)
	internal := repartitionStream(ca.Name, partitions, q.partition, keyed)
	joinSteps := append([]plan.Step(nil), t.top.steps...)
	if q.filter != nil {
		joinSteps = append(joinSteps, plan.Step{Op: plan.OpFilter, Pred: q.filter})
	}
	joinSteps = append(joinSteps, keyed)
	errs := ErrorsRelation(ca.Name)
	out := &Continuous{Errors: errs, Inputs: t.inputs(), Topology: &plan.Topology{
		Stages: append(t.stages,
			plan.Stage{Name: t.top.stage, Inputs: []string{t.top.read}, Output: internal.Name, Steps: joinSteps, OutputKey: q.partition},
			plan.Stage{Name: stage, Inputs: []string{internal.Name}, Output: ca.Name + ChangesSuffix, Steps: q.statefulSteps()}),
		Internal: append(t.internal, internal),
		Errors:   errs.Name,
	}}
	if err := viewOutput(ca, out, &out.Topology.Stages[len(out.Topology.Stages)-1], q.out, q.key, partitions); err != nil {
		return nil, err
	}
	return out, bridgeInputs(out, ca.Name)
}

// planJoinTopN plans a top-N over a join whose subquery selects, ranks
// and partitions by columns (Nexmark q9: the highest bid of each auction
// among those it joins): the join stage projects the top-N's columns (and
// the sign of signed rows) and re-keys them by the PARTITION BY columns,
// and the top-N reads them, as an aggregate over a join reads its rows
// (planJoinAggregate). Partitioned by a column the join key copies, the
// re-keying is gone: fuseStages merges the top-N into the join's stage.
// A ranking of expressions is rankedJoin's (a hidden view of the join).
func planJoinTopN(cat Catalog, ca *sql.CreateAs, outer *sql.Select, dt *sql.DerivedTable, j *sql.Join) (*Continuous, error) {
	inner := dt.Query.(*sql.Select)
	t, sc, err := joinTreeOf(cat, ca.Name, j)
	if err != nil {
		return nil, err
	}
	q, err := topNQuery(&builder{cat: cat}, outer, dt, inner, sc)
	if err != nil {
		return nil, err
	}
	var sign *expr.Expr
	if t.outer != "" { // its rows are signed: the top-N forgets a row that goes
		sign = expr.Col(len(t.cols), types.Int8, "_sign")
		pre := *q.pre
		pre.Exprs = append(append([]*expr.Expr(nil), pre.Exprs...), sign)
		pre.Names = append(append([]string(nil), pre.Names...), "_sign")
		q.pre = &pre
		q.step.Sign = q.step.Width
	}
	return joinIntoStateful(ca, inner, j, t, sc, q, sign, "topN")
}

// joinTopN says whether sel is a top-N over a join that planJoinTopN
// plans: its one FROM item is a subquery whose FROM is one join (or a
// comma list, made one), and the subquery's select list, PARTITION BY
// and ORDER BY are columns. It returns the subquery with its join.
func joinTopN(cat Catalog, sel *sql.Select) (*sql.DerivedTable, *sql.Join, bool) {
	if len(sel.From) != 1 {
		return nil, nil, false
	}
	dt, ok := sel.From[0].(*sql.DerivedTable)
	if !ok {
		return nil, nil, false
	}
	inner, ok := dt.Query.(*sql.Select)
	if !ok {
		return nil, nil, false
	}
	if inner = commaAsJoins(cat, inner); len(inner.From) != 1 {
		return nil, nil, false
	}
	j, ok := inner.From[0].(*sql.Join)
	if !ok || !columnsOnlyRanking(inner) {
		return nil, nil, false
	}
	return &sql.DerivedTable{Query: inner, Alias: dt.Alias}, j, true
}

// columnsOnlyRanking says whether a ranking subquery selects, partitions
// and orders by plain columns, with one window call (a * over a join
// would name a column of both sides twice: rankedJoin refuses it).
func columnsOnlyRanking(inner *sql.Select) bool {
	if len(inner.GroupBy) > 0 || inner.Having != nil || inner.Distinct || len(inner.DistinctOn) > 0 ||
		len(inner.OrderBy) > 0 || inner.Limit != nil || inner.Offset != nil || hasSubqueryExpr(&sql.Select{Where: inner.Where}) {
		return false // a subquery in WHERE (EXISTS) joins once more: rankedJoin's view plans it
	}
	column := func(e sql.Expr) bool { _, ok := e.(*sql.ColumnRef); return ok }
	calls := 0
	for _, it := range inner.Items {
		switch x := it.Expr.(type) {
		case *sql.ColumnRef:
		case *sql.FuncCall:
			if x.Over == nil {
				return false
			}
			calls++
			for _, p := range x.Over.PartitionBy {
				if !column(p) {
					return false
				}
			}
			for _, o := range x.Over.OrderBy {
				if !column(o.Expr) {
					return false
				}
			}
		default:
			return false
		}
	}
	return calls == 1
}
