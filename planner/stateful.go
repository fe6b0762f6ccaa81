package planner

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// ChangesSuffix names a materialized view's changes stream.
const ChangesSuffix = "_changes"

// PositionColumn is the hidden key column of a RANK() or DENSE_RANK()
// top-N view, or of a ROW_NUMBER() one that does not select the number:
// the row's position among its partition key's rows.
const PositionColumn = "_position"

// rankingFuncs are the window functions a top-N query numbers rows with.
var rankingFuncs = map[string]bool{"row_number": true, "rank": true, "dense_rank": true}

// statefulQuery is a continuous query with one stateful step, before it
// is cut into stages.
type statefulQuery struct {
	in        *catalog.Relation
	filter    *expr.Expr       // WHERE over the input, or nil
	partition []int            // input columns the stateful step partitions state by
	step      plan.Step        // the stateful step
	having    *expr.Expr       // HAVING over the step's output (final rows only), or nil
	project   plan.Step        // the select list over the step's output
	out       []catalog.Column // output columns
	key       []int            // output columns forming a view's key
	watermark *plan.WatermarkSpec
	changes   bool       // the step emits a changelog
	pre       *plan.Step // a projection before the stateful step (top-N)
	// computed are GROUP BY expressions appended to the input's read
	// columns before the rows are re-keyed (partition and the step refer
	// to them by their positions after the read columns).
	computed []*expr.Expr
	// carry: the stateful stage reads the input's metadata (a window
	// view's key is each row's record), so a repartition carries the
	// read columns, metadata included, rather than putting its own.
	carry bool
}

// planStateful recognises the stateful shapes of continuous queries:
// windowed aggregation over TUMBLE/HOP, unwindowed GROUP BY, and top-N
// (ROW_NUMBER() … WHERE rn <= N). It returns nil for stateless queries.
func planStateful(cat Catalog, sel *sql.Select, kind sql.ObjectKind, emit sql.EmitMode) (*statefulQuery, error) {
	if len(sel.From) != 1 {
		return nil, pgerror.NotSupported("continuous queries over more than one input (joins)")
	}
	switch from := sel.From[0].(type) {
	case *sql.WindowTVF:
		return planWindowed(cat, sel, from, kind, emit)
	case *sql.DerivedTable:
		return planTopN(cat, sel, from, kind)
	case *sql.TableName:
		if len(sel.GroupBy) > 0 || anyAggregate(sel.Items) {
			if kind != sql.KindMaterializedView && emit != sql.EmitDefault && !anyAggregate(sel.Items) {
				return nil, pgerror.New(pgerror.SyntaxError, "EMIT applies to windowed aggregations")
			}
			return planGrouped(cat, sel, from, kind)
		}
		return nil, nil
	}
	return nil, pgerror.NotSupported("continuous queries over %s", fromKind(sel.From[0]))
}

// aggregates says whether sel aggregates its rows: GROUP BY, HAVING or
// an aggregate call in its select list.
func aggregates(sel *sql.Select) bool {
	return len(sel.GroupBy) > 0 || sel.Having != nil || anyAggregate(sel.Items)
}

func anyAggregate(items []sql.SelectItem) bool {
	for _, it := range items {
		if hasAggregate(it.Expr) {
			return true
		}
	}
	return false
}

// streamInput resolves a continuous query's input stream and its scope.
func streamInput(cat Catalog, t *sql.TableName) (*catalog.Relation, *scope, error) {
	return inputOf(cat, t, false)
}

// changelogInput is streamInput for the queries that can also read a
// materialized view, as its changes (a changelog step makes signed rows
// of its table): grouped aggregates that take a row back out
// (operators.Retracts), and views of its rows.
func changelogInput(cat Catalog, t *sql.TableName) (*catalog.Relation, *scope, error) {
	return inputOf(cat, t, true)
}

func inputOf(cat Catalog, t *sql.TableName, views bool) (*catalog.Relation, *scope, error) {
	in, err := cat.Lookup(t.Schema, t.Name)
	if err != nil {
		return nil, nil, err
	}
	if in.Kind == catalog.MaterializedView && !views {
		return nil, nil, pgerror.New(pgerror.FeatureNotSupported, "this continuous query over the materialized view %q is not supported yet", in.Name).
			WithDetail("A view's rows change; so far only a materialized view can read another, to filter and project its rows, join them or aggregate them.").
			WithHint("A stream over a view's query takes EMIT CHANGES (CREATE STREAM s AS SELECT … FROM view EMIT CHANGES: its changes, with an op column); or build it from the view's input stream.")
	}
	if in.Kind != catalog.Stream && in.Kind != catalog.MaterializedView {
		return nil, nil, pgerror.New(pgerror.WrongObjectType, "%q is a %s; continuous queries read streams", in.Name, in.Kind)
	}
	return in, relationScope(cat, t, in), nil
}

func (b *builder) where(sc *scope, e sql.Expr) (*expr.Expr, error) {
	if e == nil {
		return nil, nil
	}
	if hasAggregate(e) {
		return nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in WHERE")
	}
	pred, err := b.build(&exprCtx{scope: sc, what: "WHERE", noAggs: true}, e)
	if err != nil {
		return nil, err
	}
	if err := boolCondition(pred, "WHERE"); err != nil {
		return nil, err
	}
	return pred, nil
}

// having builds a HAVING condition over an aggregation's output.
func (b *builder) having(sc *scope, a *aggState, e sql.Expr) (*expr.Expr, error) {
	pred, err := b.build(&exprCtx{scope: sc, what: "HAVING", aggs: a}, e)
	if err != nil {
		return nil, err
	}
	if err := boolCondition(pred, "HAVING"); err != nil {
		return nil, err
	}
	return pred, nil
}

func intervalMicros(b *builder, e sql.Expr, what string) (int64, error) {
	if e == nil {
		return 0, pgerror.New(pgerror.SyntaxError, "window %s is missing", what)
	}
	x, err := b.build(&exprCtx{scope: &scope{}, what: "window " + what, noAggs: true}, e)
	if err == nil {
		x, err = expr.Coerce(x, types.Interval, false)
	}
	if err != nil || x.Kind != expr.KConst || x.Val.K != types.Interval {
		return 0, pgerror.New(pgerror.InvalidParameterValue, "window %s must be a constant interval", what)
	}
	iv := x.Val.Interval()
	if iv.Months != 0 {
		return 0, pgerror.New(pgerror.InvalidParameterValue, "window %s must not use months or years (their length varies)", what)
	}
	// at most about 10,000 years, the span of all time stamps: a window's
	// time plus its size or gap stays far from overflowing
	const maxDays = 3_650_000
	if d, us := int64(iv.Days), iv.Micros; d > maxDays || d < -maxDays || us > maxDays*types.MicrosPerDay || us < -maxDays*types.MicrosPerDay ||
		d*types.MicrosPerDay+us > maxDays*types.MicrosPerDay {
		return 0, pgerror.New(pgerror.InvalidParameterValue, "window %s must be at most %d days", what, maxDays)
	}
	us := iv.Duration()
	if us <= 0 {
		return 0, pgerror.New(pgerror.InvalidParameterValue, "window %s must be positive", what)
	}
	return us, nil
}

// watermarkFor returns the watermark of a stream's time column col (an
// index into its read columns, so possibly a metadata column): its
// declared delay when the WATERMARK is on that column, else none. A
// metadata column shadowed by a declared one has no name in ReadColumns,
// so the declared column takes the WATERMARK, as it takes the name.
func watermarkFor(in *catalog.Relation, col int) *plan.WatermarkSpec {
	spec := &plan.WatermarkSpec{Col: col}
	if declaresWatermark(in, col) {
		spec.Delay = in.Watermark.Delay
	}
	return spec
}

// declaresWatermark says whether stream in declares its WATERMARK on its
// read column col.
func declaresWatermark(in *catalog.Relation, col int) bool {
	read := in.ReadColumns()
	return in.Watermark != nil && col < len(read) && in.Watermark.Column == read[col].Name
}

// groupKeys are a continuous aggregation's GROUP BY terms, resolved.
type groupKeys struct {
	cols []int // the group columns, in the input scope (computed ones after its read columns)
	// computed are the GROUP BY expressions that are not plain columns
	// (date_trunc('hour', ts), k % 10): the stage before the aggregation
	// appends them to each row, so that the rows are re-keyed by their
	// values; their scope columns are nameless, so nothing resolves to them
	// by name, and fps holds the fingerprint select-list terms match them by.
	computed  []*expr.Expr
	fps       map[int]string
	sawWindow bool
}

// groupColumns resolves GROUP BY terms: input columns, select-list
// positions and aliases, and expressions over the input, which become
// computed columns appended to sc (windowed: window_start/window_end are
// set aside).
func (b *builder) groupColumns(sc *scope, terms []sql.Expr, items []sql.SelectItem, windowed bool) (*groupKeys, error) {
	g := &groupKeys{fps: map[int]string{}}
	add := func(i int) {
		for _, x := range g.cols {
			if x == i {
				return
			}
		}
		g.cols = append(g.cols, i)
	}
	for _, t := range terms {
		term := t
		if lit, ok := t.(*sql.Literal); ok && lit.Value.K.IsInteger() {
			n := int(lit.Value.I)
			if n < 1 || n > len(items) {
				return nil, pgerror.New(pgerror.InvalidColumnReference, "GROUP BY position %d is not in select list", n)
			}
			term = items[n-1].Expr
		} else if c, ok := t.(*sql.ColumnRef); ok && c.Table == "" {
			if _, err := sc.resolve("", c.Name); err != nil {
				for _, it := range items {
					if it.Alias == c.Name {
						term = it.Expr
					}
				}
			}
		}
		if c, ok := term.(*sql.ColumnRef); ok {
			if windowed && (c.Name == "window_start" || c.Name == "window_end") {
				g.sawWindow = true
				continue
			}
			i, err := sc.resolve(c.Table, c.Name)
			if err != nil {
				return nil, err
			}
			add(i)
			continue
		}
		if hasAggregate(term) {
			return nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in GROUP BY")
		}
		x, err := b.build(&exprCtx{scope: sc, what: "GROUP BY", noAggs: true}, term)
		if err != nil {
			return nil, err
		}
		if x.Kind == expr.KCol { // (k) or a cast-free alias of a column
			add(x.Col)
			continue
		}
		fp := fingerprint(term)
		dup := false
		for i, f := range g.fps {
			if f == fp {
				add(i)
				dup = true
			}
		}
		if dup {
			continue
		}
		i := len(sc.cols)
		sc.cols = append(sc.cols, scopeCol{typ: x.Type, hidden: true})
		g.computed = append(g.computed, x)
		g.fps[i] = fp
		add(i)
	}
	return g, nil
}

// aggregateSelect plans the select list over an aggregation whose output
// is: the group columns, [window_start, window_end,] the aggregates.
func (b *builder) aggregateSelect(in *scope, sel *sql.Select, g *groupKeys, windowed bool, timeType types.Type, qual string) (*aggState, plan.Step, []catalog.Column, error) {
	a := &aggState{out: &scope{}}
	groupCols := g.cols
	for gi, c := range groupCols {
		src := in.cols[c]
		a.out.cols = append(a.out.cols, scopeCol{table: src.table, name: src.name, typ: src.typ, hidden: src.hidden})
		if fp, ok := g.fps[c]; ok {
			a.groupKeys = append(a.groupKeys, fp)
			a.groupCols = append(a.groupCols, gi)
			continue
		}
		for _, alt := range []*sql.ColumnRef{{Name: src.name}, {Table: src.table, Name: src.name}} {
			a.groupKeys = append(a.groupKeys, fingerprint(alt))
			a.groupCols = append(a.groupCols, gi)
		}
	}
	if windowed {
		for wi, name := range []string{"window_start", "window_end"} {
			a.out.cols = append(a.out.cols, scopeCol{table: qual, name: name, typ: timeType})
			for _, alt := range []*sql.ColumnRef{{Name: name}, {Table: qual, Name: name}} {
				a.groupKeys = append(a.groupKeys, fingerprint(alt))
				a.groupCols = append(a.groupCols, len(groupCols)+wi)
			}
		}
	}
	a.ngroups = len(a.out.cols)
	actx := &exprCtx{scope: in, what: "aggregate"}
	for _, it := range sel.Items {
		if _, ok := it.Expr.(*sql.Star); ok {
			return nil, plan.Step{}, nil, pgerror.New(pgerror.GroupingError, "SELECT * is not allowed with GROUP BY")
		}
		if err := b.collectAggs(actx, a, it.Expr); err != nil {
			return nil, plan.Step{}, nil, err
		}
	}
	if sel.Having != nil {
		if err := b.collectAggs(actx, a, sel.Having); err != nil {
			return nil, plan.Step{}, nil, err
		}
	}
	for _, s := range a.specs {
		f, _ := operators.ResolveSpec(s)
		a.out.cols = append(a.out.cols, scopeCol{name: s.Name, typ: f.Ret})
	}
	proj := plan.Step{Op: plan.OpProject}
	var cols []catalog.Column
	ctx := &exprCtx{scope: in, what: "SELECT", aggs: a}
	for _, it := range sel.Items {
		x, err := b.build(ctx, it.Expr)
		if err != nil {
			return nil, plan.Step{}, nil, err
		}
		if x.Type == types.Unknown {
			if x, err = expr.Cast(x, types.Text); err != nil {
				return nil, plan.Step{}, nil, err
			}
		}
		name := outputName(it)
		proj.Exprs = append(proj.Exprs, x)
		proj.Names = append(proj.Names, name)
		cols = append(cols, catalog.Column{Name: name, Type: x.Type})
	}
	return a, proj, cols, nil
}

// keyOf finds the output columns that carry the aggregation's group
// columns (the view's key). A group column the select list leaves out is
// kept as a hidden column (_group1, …): the view holds one row per group,
// as the SELECT does, however few of its keys it shows.
func keyOf(proj *plan.Step, cols *[]catalog.Column, out *scope, ngroups int) []int {
	var key []int
	for g := 0; g < ngroups; g++ {
		key = append(key, keyColumn(proj, cols, g, out.cols[g].typ, len(key)+1))
	}
	return key
}

// keyColumn returns the output column that carries the step output's
// column col, adding it as the hidden column _group<n> when no select
// item is that column.
func keyColumn(proj *plan.Step, cols *[]catalog.Column, col int, typ types.Type, n int) int {
	for i, e := range proj.Exprs {
		if e.Kind == expr.KCol && e.Col == col {
			return i
		}
	}
	name := "_group" + strconv.Itoa(n)
	proj.Exprs = append(proj.Exprs, expr.Col(col, typ, name))
	proj.Names = append(proj.Names, name)
	*cols = append(*cols, catalog.Column{Name: name, Type: typ, Hidden: true})
	return len(proj.Exprs) - 1
}

// windowOf resolves a window TVF's time column in sc (its index and
// type, a timestamp) and its window.
func (b *builder) windowOf(tvf *sql.WindowTVF, sc *scope) (int, types.Type, plan.WindowSpec, error) {
	spec := plan.WindowSpec{Kind: tvf.Kind}
	tcol, err := sc.resolve("", tvf.TimeCol)
	if err != nil {
		return 0, 0, spec, err
	}
	ttype := sc.cols[tcol].typ
	if ttype != types.Timestamp && ttype != types.TimestampTZ {
		return 0, 0, spec, pgerror.New(pgerror.DatatypeMismatch, "window time column %q must be a timestamp, not %s", tvf.TimeCol, ttype)
	}
	switch tvf.Kind {
	case "tumble":
		if spec.Size, err = intervalMicros(b, tvf.Size, "size"); err != nil {
			return 0, 0, spec, err
		}
	case "hop":
		if spec.Slide, err = intervalMicros(b, tvf.Slide, "slide"); err != nil {
			return 0, 0, spec, err
		}
		if spec.Size, err = intervalMicros(b, tvf.Size, "size"); err != nil {
			return 0, 0, spec, err
		}
		if spec.Size < spec.Slide {
			return 0, 0, spec, pgerror.New(pgerror.InvalidParameterValue, "HOP size must be at least its slide")
		}
		if spec.Size/spec.Slide > 1000 {
			return 0, 0, spec, pgerror.New(pgerror.InvalidParameterValue, "HOP size/slide is %d windows per row; at most 1000", spec.Size/spec.Slide)
		}
	case "session":
		if spec.Gap, err = intervalMicros(b, tvf.Gap, "gap"); err != nil {
			return 0, 0, spec, err
		}
	default:
		return 0, 0, spec, pgerror.NotSupported("%s windows", strings.ToUpper(tvf.Kind))
	}
	return tcol, ttype, spec, nil
}

func planWindowed(cat Catalog, sel *sql.Select, tvf *sql.WindowTVF, kind sql.ObjectKind, emit sql.EmitMode) (*statefulQuery, error) {
	in, sc, err := streamInput(cat, tvf.Source)
	if err != nil {
		return nil, err
	}
	if tvf.Alias != "" {
		for i := range sc.cols {
			sc.cols[i].table = tvf.Alias
		}
	}
	b := &builder{cat: cat}
	tcol, ttype, spec, err := b.windowOf(tvf, sc)
	if err != nil {
		return nil, err
	}
	filter, err := b.where(sc, sel.Where)
	if err != nil {
		return nil, err
	}
	g, err := b.groupColumns(sc, sel.GroupBy, sel.Items, true)
	if err != nil {
		return nil, err
	}
	groupCols := g.cols
	if !g.sawWindow {
		return nil, pgerror.New(pgerror.GroupingError, "a windowed query must GROUP BY window_start or window_end")
	}
	qual := tvf.Source.Name
	if tvf.Alias != "" {
		qual = tvf.Alias
	}
	a, proj, cols, err := b.aggregateSelect(sc, sel, g, true, ttype, qual)
	if err != nil {
		return nil, err
	}
	changes := kind == sql.KindMaterializedView
	switch emit {
	case sql.EmitChanges:
		changes = true
	case sql.EmitOnWindowClose:
		if kind == sql.KindMaterializedView {
			return nil, pgerror.NotSupported("EMIT ON WINDOW CLOSE for materialized views")
		}
		changes = false
	}
	if changes && kind == sql.KindStream {
		return nil, pgerror.NotSupported("EMIT CHANGES into a stream (use CREATE MATERIALIZED VIEW)")
	}
	var having *expr.Expr
	if sel.Having != nil {
		if having, err = b.having(sc, a, sel.Having); err != nil {
			return nil, err
		}
	}
	groupBy := make([]*expr.Expr, len(groupCols))
	for i, c := range groupCols {
		groupBy[i] = sc.ref(c)
	}
	computed := g.computed
	if tcol >= len(in.Columns) && in.Partitions > 1 {
		// A window over a metadata column (_timestamp) behind a
		// repartition must see the input record's value, not the
		// repartition record's: carrying it as one more computed column
		// makes the first stage project the read columns, metadata
		// included, into the internal rows (statefulQuery.readsMeta does
		// not count the step's time column, so nothing else would).
		computed = append(computed[:len(computed):len(computed)], sc.ref(tcol))
	}
	wm := watermarkFor(in, tcol)
	if changes && wm.Delay == 0 && !declaresWatermark(in, tcol) {
		// A view needs no watermark to put out its windows (it updates
		// them), so over a stream that declares none it takes every row,
		// whenever it comes, as its bounded SELECT does: counted late
		// behind the largest time seen, rows that came out of order would
		// be left out or not by how the partitions' reading interleaved.
		wm = nil
	}
	q := &statefulQuery{
		in: in, filter: filter, partition: groupCols, computed: computed, having: having, project: proj, out: cols, changes: changes,
		watermark: wm,
		step: plan.Step{
			Op: plan.OpWindowAggregate, Window: &spec, TimeCol: tcol, TimeType: ttype,
			GroupBy: groupBy, Aggs: a.specs, Changes: changes,
		},
	}
	if spec.Kind == "session" {
		q.step.Op = plan.OpSession
	}
	if changes && having != nil {
		// the aggregate decides which groups show, and deletes those that stop
		q.step.Having, q.having = having, nil
	}
	if changes {
		// the key: group columns and window_start (window_end follows from it)
		q.key = keyOf(&q.project, &q.out, a.out, len(groupCols)+1)
	}
	return q, nil
}

func planGrouped(cat Catalog, sel *sql.Select, t *sql.TableName, kind sql.ObjectKind) (*statefulQuery, error) {
	if kind != sql.KindMaterializedView {
		if anyAggregate(sel.Items) || sel.Having != nil && hasAggregate(sel.Having) {
			return nil, pgerror.NotSupported("GROUP BY without a window into a %s (its rows change forever; use CREATE MATERIALIZED VIEW, or a TUMBLE/HOP window)", kind)
		}
		return distinctGroups(cat, sel, t)
	}
	in, sc, err := changelogInput(cat, t)
	if err != nil {
		return nil, err
	}
	q, err := groupedQuery(cat, sel, sc)
	if err != nil {
		return nil, err
	}
	q.in = in
	return q, nil
}

// distinctGroups plans a stream's GROUP BY without aggregates (its
// DISTINCT, after distinctAsGroups) over one stream: a grouping that emits
// each group's row once, when its first row comes (plan.Step.Once). The
// stream's rows only come, so a group once seen is in the answer for
// good: the rows are final at once, and the stream holds each distinct
// row once, as the SELECT over its rows so far does. Its state is every
// group seen, as a view's DISTINCT keeps.
func distinctGroups(cat Catalog, sel *sql.Select, t *sql.TableName) (*statefulQuery, error) {
	in, sc, err := streamInput(cat, t)
	if err != nil {
		return nil, err
	}
	q, err := groupedQuery(cat, sel, sc)
	if err != nil {
		return nil, err
	}
	q.in, q.changes, q.key = in, false, nil
	q.step.Changes, q.step.Once = false, true
	q.visibleOnly()
	return q, nil
}

// groupedQuery plans an unwindowed aggregation of the rows of scope sc
// (signed, when they change: the caller sets the step's Sign; every
// aggregate can take a row back out).
func groupedQuery(cat Catalog, sel *sql.Select, sc *scope) (*statefulQuery, error) {
	b := &builder{cat: cat}
	filter, err := b.where(sc, sel.Where)
	if err != nil {
		return nil, err
	}
	if len(sel.GroupBy) == 0 && sel.Where != nil {
		// One global group: its SELECT has a row even when no row passes
		// WHERE (count 0, sum NULL), so the rows WHERE drops must still
		// reach the aggregate and make the group. WHERE becomes every
		// aggregate's FILTER instead. (The aggregate's FuncCalls are
		// changed in place; the condition is the same if planned again.)
		filter = nil
		fold := func(e sql.Expr) {
			walkExpr(e, func(n sql.Expr) bool {
				if f, ok := n.(*sql.FuncCall); ok && operators.IsAggregate(f.Name) && f.Over == nil {
					if f.Filter == nil {
						f.Filter = sel.Where
					} else if f.Filter != sel.Where {
						f.Filter = &sql.Binary{Op: "and", L: sel.Where, R: f.Filter}
					}
					return false
				}
				return true
			})
		}
		for _, it := range sel.Items {
			fold(it.Expr)
		}
		fold(sel.Having)
	}
	g, err := b.groupColumns(sc, sel.GroupBy, sel.Items, false)
	if err != nil {
		return nil, err
	}
	groupCols := g.cols
	a, proj, cols, err := b.aggregateSelect(sc, sel, g, false, types.Null, "")
	if err != nil {
		return nil, err
	}
	groupBy := make([]*expr.Expr, len(groupCols))
	for i, c := range groupCols {
		groupBy[i] = sc.ref(c)
	}
	key := keyOf(&proj, &cols, a.out, len(groupCols))
	var having *expr.Expr
	if sel.Having != nil {
		if having, err = b.having(sc, a, sel.Having); err != nil {
			return nil, err
		}
	}
	return &statefulQuery{
		filter: filter, partition: groupCols, computed: g.computed, project: proj, out: cols, key: key, changes: true,
		step: plan.Step{Op: plan.OpGroupAggregate, GroupBy: groupBy, Aggs: a.specs, Changes: true, Having: having},
	}, nil
}

// planTopN recognises SELECT … FROM (SELECT …, ROW_NUMBER() OVER
// (PARTITION BY p ORDER BY o) AS rn FROM s [WHERE …]) t WHERE rn <= N.
func planTopN(cat Catalog, outer *sql.Select, dt *sql.DerivedTable, kind sql.ObjectKind) (*statefulQuery, error) {
	inner, ok := dt.Query.(*sql.Select)
	if !ok || len(inner.From) != 1 {
		return nil, pgerror.NotSupported("this subquery in a continuous query")
	}
	t, ok := inner.From[0].(*sql.TableName)
	if !ok {
		return nil, pgerror.NotSupported("continuous queries over %s", fromKind(inner.From[0]))
	}
	if len(inner.GroupBy) > 0 || inner.Having != nil || len(inner.OrderBy) > 0 || inner.Limit != nil || inner.Distinct ||
		len(outer.GroupBy) > 0 || outer.Having != nil || len(outer.OrderBy) > 0 || outer.Limit != nil || outer.Distinct {
		return nil, pgerror.NotSupported("this subquery in a continuous query (only the ROW_NUMBER() top-N pattern)")
	}
	if kind != sql.KindMaterializedView {
		return planFinalTopN(cat, outer, dt, inner, t, kind)
	}
	in, sc, err := changelogInput(cat, t) // a view's rows come signed: see planStatefulTopology
	if err != nil {
		return nil, err
	}
	q, err := topNQuery(&builder{cat: cat}, outer, dt, inner, sc)
	if err != nil {
		return nil, err
	}
	q.in = in
	return q, nil
}

// planFinalTopN plans a top-N into a stream: its rows must be final, so
// its PARTITION BY must hold an event time (a window's window_start or
// window_end, usually), and each partition's rows come out once the
// watermark passes it (plan.OpFinalTopN). Its stream's columns are the
// select list's: no hidden key columns.
func planFinalTopN(cat Catalog, outer *sql.Select, dt *sql.DerivedTable, inner *sql.Select, t *sql.TableName, kind sql.ObjectKind) (*statefulQuery, error) {
	in, sc, err := streamInput(cat, t)
	if err != nil {
		return nil, err
	}
	q, err := topNQuery(&builder{cat: cat}, outer, dt, inner, sc)
	if err != nil {
		return nil, err
	}
	if len(q.computed) > 0 {
		return nil, pgerror.NotSupported("expressions in the PARTITION BY or ORDER BY of a top-N into a %s", kind).
			WithHint("Compute them in a subquery: FROM (SELECT *, <expression> AS o FROM s) t, and order by o.")
	}
	// the event time: a timestamp; of a stream with a WATERMARK, its
	// column (another timestamp's rows come in no order the watermark
	// tells); of a subquery's hidden stream, a window's bound or the
	// input's time, whose lag upstreamWatermarks derives (or refuses)
	read := in.ReadColumns()
	at := slices.IndexFunc(q.step.PartitionBy, func(p *expr.Expr) bool { return p.Type == types.Timestamp || p.Type == types.TimestampTZ })
	hidden := false
	if o, ok := cat.(*overlay); ok {
		_, hidden = o.views[in.Name]
	}
	if at >= 0 && in.Watermark != nil && !hidden {
		at = slices.IndexFunc(q.partition, func(c int) bool { return c < len(read) && read[c].Name == in.Watermark.Column })
		if at < 0 {
			return nil, pgerror.NotSupported("top-N into a %s partitioned by no event time of %q (its WATERMARK is on %q)", kind, in.Name, in.Watermark.Column).
				WithHint("Partition by %s (or by the window_start or window_end of a window over %s, in a subquery); or use CREATE MATERIALIZED VIEW.", in.Watermark.Column, in.Name)
		}
	}
	if at >= 0 {
		q.step.Op = plan.OpFinalTopN
		q.step.TimeCol, q.step.TimeType = q.step.PartitionBy[at].Col, q.step.PartitionBy[at].Type
		q.watermark = watermarkFor(in, q.partition[at])
	} else if err := firstInTime(q, in, read, hidden, kind); err != nil {
		return nil, err
	}
	q.changes, q.key, q.in = false, nil, in
	q.visibleOnly()
	return q, nil
}

// visibleOnly leaves out of a stream's output the hidden columns a view
// would keep as its key (group columns or a top-N's position the select
// list leaves out): they are no columns of a stream.
func (q *statefulQuery) visibleOnly() {
	proj := plan.Step{Op: plan.OpProject}
	var cols []catalog.Column
	for i, c := range q.out {
		if !c.Hidden {
			proj.Exprs, proj.Names = append(proj.Exprs, q.project.Exprs[i]), append(proj.Names, q.project.Names[i])
			cols = append(cols, c)
		}
	}
	q.project, q.out = proj, cols
}

// firstInTime plans a stream's top-N without an event time in its
// PARTITION BY as a top-N in event time (plan.OpFirstN), if it is one: a
// ROW_NUMBER(), RANK() or DENSE_RANK() whose ORDER BY starts with the
// input's event time, ascending (its WATERMARK column; of a subquery's hidden stream, a time
// whose lag upstreamWatermarks derives or refuses). A row's number is
// final once the watermark passes it (its ties share its time), so each
// row comes out once, then.
//
//	SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY id ORDER BY ts) AS rn FROM orders) t WHERE rn = 1
//	→ each id's first row, when the watermark passes its ts (deduplication)
//
// Anything else would have to change rows it put out, and is refused.
func firstInTime(q *statefulQuery, in *catalog.Relation, read []catalog.Column, hidden bool, kind sql.ObjectKind) error {
	refuse := pgerror.NotSupported("top-N into a %s without an event time in its PARTITION BY or first in its ORDER BY (its rows would change)", kind).
		WithHint("Order by the event time first, ascending (each key's first rows: ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) <= N), or partition by a window's start or end (a window's top-N: PARTITION BY window_start, window_end), whose rows are final once the watermark passes them; or use CREATE MATERIALIZED VIEW.")
	if len(q.step.Keys) == 0 || q.step.Keys[0].Desc || q.pre == nil {
		return refuse
	}
	if q.step.Keys[0].NullsFirst {
		// a row of NULL time would be first, and could come any time
		return pgerror.NotSupported("top-N into a %s ordered by its event time NULLS FIRST", kind).
			WithHint("Order by the event time ascending, NULLS LAST (the default).")
	}
	j := q.step.Keys[0].Col
	t := q.pre.Exprs[j]
	if t.Kind != expr.KCol || t.Type != types.Timestamp && t.Type != types.TimestampTZ {
		return refuse
	}
	if in.Watermark != nil && !hidden && (t.Col >= len(read) || read[t.Col].Name != in.Watermark.Column) {
		return pgerror.NotSupported("top-N into a %s ordered by %q, not the event time of %q (its WATERMARK is on %q)", kind, q.pre.Names[j], in.Name, in.Watermark.Column).
			WithHint("Order by %s first; or use CREATE MATERIALIZED VIEW.", in.Watermark.Column)
	}
	q.step.Op = plan.OpFirstN
	q.step.TimeCol, q.step.TimeType = j, t.Type
	q.watermark = watermarkFor(in, t.Col)
	return nil
}

// topNQuery plans a top-N's subquery inner (its FROM clause's columns
// are sc's) and its reader outer: its WHERE as the filter, its select
// list (columns) as the projection before the top-N step, and the
// outer select list over the step's rows.
func topNQuery(b *builder, outer *sql.Select, dt *sql.DerivedTable, inner *sql.Select, sc *scope) (*statefulQuery, error) {
	filter, err := b.where(sc, inner.Where)
	if err != nil {
		return nil, err
	}
	items, err := expandStars(sc, inner.Items)
	if err != nil {
		return nil, err
	}
	// Inner select list: plain columns and exactly one ranking function.
	var rnName, ranking string
	var over *sql.WindowSpec
	var width int
	var innerCols []int // input column of each non-rn item
	var innerNames []string
	for _, it := range items {
		if f, ok := it.Expr.(*sql.FuncCall); ok && f.Over != nil {
			if !rankingFuncs[f.Name] || over != nil {
				return nil, pgerror.NotSupported("window function %s in a continuous query (only one ROW_NUMBER(), RANK() or DENSE_RANK())", f.Name)
			}
			if len(f.Args) > 0 || f.Star || f.Distinct {
				return nil, pgerror.New(pgerror.SyntaxError, "%s() takes no arguments", f.Name)
			}
			over = f.Over
			ranking = f.Name
			rnName = it.Alias
			if rnName == "" {
				rnName = f.Name
			}
			continue
		}
		c, ok := it.Expr.(*sql.ColumnRef)
		if !ok {
			return nil, pgerror.NotSupported("expressions beside ROW_NUMBER() in a top-N query (select columns)")
		}
		i, err := sc.resolve(c.Table, c.Name)
		if err != nil {
			return nil, err
		}
		name := it.Alias
		if name == "" {
			name = c.Name
		}
		innerCols = append(innerCols, i)
		innerNames = append(innerNames, name)
		width++
	}
	if over == nil {
		return nil, pgerror.NotSupported("a subquery without ROW_NUMBER(), RANK() or DENSE_RANK() in a continuous query")
	}
	// The operator's input row is the inner projection without rn.
	// A term that is an expression is computed before the repartition,
	// after the read columns (as a GROUP BY key is), and carried.
	nread := len(sc.cols)
	var computed []*expr.Expr
	pos := func(e sql.Expr, what string) (int, error) {
		var i int
		if c, ok := e.(*sql.ColumnRef); ok {
			var err error
			if i, err = sc.resolve(c.Table, c.Name); err != nil {
				return 0, err
			}
		} else {
			x, err := b.build(&exprCtx{scope: sc, what: what, noAggs: true}, e)
			if err != nil {
				return 0, err
			}
			if expr.Volatile(x) {
				return 0, pgerror.NotSupported("a volatile function or a subquery in a top-N query's %s", what).
					WithDetail("A row's place is computed again when it leaves, and must come out the same.")
			}
			i = slices.IndexFunc(computed, func(y *expr.Expr) bool { return expr.Equal(x, y) })
			if i < 0 {
				i = len(computed)
				computed = append(computed, x)
				sc.cols = append(sc.cols, scopeCol{name: "_t" + strconv.Itoa(i), typ: x.Type, hidden: true})
			}
			i += nread
		}
		for j, ic := range innerCols {
			if ic == i {
				return j, nil
			}
		}
		// Ordered or partitioned by a column the subquery does not
		// select: the operator carries it, the outer query cannot see it.
		innerCols = append(innerCols, i)
		innerNames = append(innerNames, sc.cols[i].name)
		return len(innerCols) - 1, nil
	}
	visible := width // the subquery's columns; carried ones follow
	step := plan.Step{Op: plan.OpTopN, Rank: ranking}
	var partition []int
	for _, p := range over.PartitionBy {
		j, err := pos(p, "PARTITION BY")
		if err != nil {
			return nil, err
		}
		step.PartitionBy = append(step.PartitionBy, expr.Col(j, sc.cols[innerCols[j]].typ, innerNames[j]))
		partition = append(partition, innerCols[j])
	}
	if len(over.OrderBy) == 0 {
		return nil, pgerror.New(pgerror.WindowingError, "%s() in a top-N query needs ORDER BY", strings.ToUpper(ranking))
	}
	for _, o := range over.OrderBy {
		j, err := pos(o.Expr, "ORDER BY")
		if err != nil {
			return nil, err
		}
		step.Keys = append(step.Keys, sortKey(j, o))
	}
	lo, hi, err := rowNumberBounds(outer.Where, rnName)
	if err != nil {
		return nil, err
	}
	step.N = hi
	if lo > 0 && ranking != "row_number" {
		// a position's rank changes as ties come and go: a lower bound
		// would have to take an updated row out of the view by position
		return nil, pgerror.NotSupported("a lower bound on %s() in a top-N view", strings.ToUpper(ranking)).
			WithHint("Use ROW_NUMBER(), whose number is the row's position.")
	}
	width = len(innerCols)
	step.Width = width
	// Outer select over (inner columns…, carried columns…, rn).
	os := &scope{}
	for j, n := range innerNames {
		if j >= visible {
			n = "?" + n + "?" // not a column of the subquery
		}
		os.cols = append(os.cols, scopeCol{table: dt.Alias, name: n, typ: sc.cols[innerCols[j]].typ, hidden: j >= visible})
	}
	os.cols = append(os.cols, scopeCol{table: dt.Alias, name: rnName, typ: types.Int8})
	var skip *expr.Expr // the ranks below the lower bound, which the operator keeps but the view does not
	if lo > 0 {
		if skip, err = b.build(&exprCtx{scope: os, what: "WHERE", noAggs: true},
			&sql.Binary{Op: ">", L: &sql.ColumnRef{Name: rnName}, R: &sql.Literal{Value: types.NewInt8(lo)}}); err != nil {
			return nil, err
		}
	}
	outItems, err := expandStars(os, outer.Items)
	if err != nil {
		return nil, err
	}
	proj := plan.Step{Op: plan.OpProject}
	var cols []catalog.Column
	for _, it := range outItems {
		x, err := b.build(&exprCtx{scope: os, what: "SELECT", noAggs: true}, it.Expr)
		if err != nil {
			return nil, err
		}
		name := outputName(it)
		proj.Exprs = append(proj.Exprs, x)
		proj.Names = append(proj.Names, name)
		cols = append(cols, catalog.Column{Name: name, Type: x.Type})
	}
	// Key: partition columns and the row's position, all of which must be
	// selected. ROW_NUMBER's number is the position; tied RANK and
	// DENSE_RANK rows share a number, so the operator's position column
	// follows it, kept in the view as a hidden column.
	var key []int
	for _, p := range step.PartitionBy {
		key = append(key, keyColumn(&proj, &cols, p.Col, p.Type, len(key)+1))
	}
	if ranking == "row_number" {
		k, err := selected(proj, width, rnName)
		if err != nil {
			// Not selected: the number is still the row's position, kept
			// in the view as its hidden key column.
			k = len(proj.Exprs)
			proj.Exprs = append(proj.Exprs, expr.Col(width, types.Int8, PositionColumn))
			proj.Names = append(proj.Names, PositionColumn)
			cols = append(cols, catalog.Column{Name: PositionColumn, Type: types.Int8, Hidden: true})
		}
		key = append(key, k)
	} else {
		key = append(key, len(proj.Exprs))
		proj.Exprs = append(proj.Exprs, expr.Col(width+1, types.Int8, PositionColumn))
		proj.Names = append(proj.Names, PositionColumn)
		cols = append(cols, catalog.Column{Name: PositionColumn, Type: types.Int8, Hidden: true})
	}
	// Input to the operator: the inner projection (without rn).
	innerProj := plan.Step{Op: plan.OpProject}
	for j, c := range innerCols {
		innerProj.Exprs = append(innerProj.Exprs, sc.ref(c))
		innerProj.Names = append(innerProj.Names, innerNames[j])
	}
	return &statefulQuery{
		filter: filter, partition: partition, computed: computed, out: cols, key: key, changes: true,
		step: step, having: skip, project: proj, pre: &innerProj,
	}, nil
}

func selected(proj plan.Step, col int, name string) (int, error) {
	for i, e := range proj.Exprs {
		if e.Kind == expr.KCol && e.Col == col {
			return i, nil
		}
	}
	return 0, pgerror.New(pgerror.InvalidObjectDefinition, "the select list must include %q: it is part of the view's key", name)
}

// rowNumberBounds reads the ranks a top-N keeps, lo < rn <= hi, from its
// WHERE: a conjunction of rn <= N, rn < N, rn = K, rn > M, rn >= M and
// rn BETWEEN A AND B (either side of each comparison). An upper bound is
// required; lo is 0 when there is no lower one.
func rowNumberBounds(where sql.Expr, rn string) (lo, hi int64, err error) {
	bad := pgerror.New(pgerror.FeatureNotSupported, "a top-N query needs WHERE %s <= N (or %s < N, %s = 1, optionally AND %s > M)", rn, rn, rn, rn)
	hi = -1
	isRN := func(e sql.Expr) bool {
		c, ok := e.(*sql.ColumnRef)
		return ok && c.Name == rn
	}
	num := func(e sql.Expr) (int64, bool) {
		l, ok := e.(*sql.Literal)
		if !ok {
			return 0, false
		}
		return l.Value.I, l.Value.K.IsInteger()
	}
	upper := func(n int64) { // rn <= n
		if hi < 0 || n < hi {
			hi = n
		}
	}
	lower := func(n int64) { lo = max(lo, n) } // rn > n
	for _, c := range conjuncts(where) {
		if b, ok := c.(*sql.Between); ok && !b.Not && isRN(b.X) {
			l, ok1 := num(b.Lo)
			h, ok2 := num(b.Hi)
			if !ok1 || !ok2 {
				return 0, 0, bad
			}
			lower(l - 1)
			upper(h)
			continue
		}
		bin, ok := c.(*sql.Binary)
		if !ok {
			return 0, 0, bad
		}
		op, n, ok := bin.Op, int64(0), false
		if isRN(bin.L) {
			n, ok = num(bin.R)
		} else if isRN(bin.R) {
			n, ok = num(bin.L)
			op = map[string]string{">=": "<=", ">": "<", "<=": ">=", "<": ">", "=": "="}[bin.Op]
		}
		if !ok {
			return 0, 0, bad
		}
		switch op {
		case "<=":
			upper(n)
		case "<":
			upper(n - 1)
		case "=":
			lower(n - 1)
			upper(n)
		case ">":
			lower(n)
		case ">=":
			lower(n - 1)
		default:
			return 0, 0, bad
		}
	}
	if hi < 0 {
		return 0, 0, bad
	}
	if hi < 1 || hi > 10000 {
		return 0, 0, pgerror.New(pgerror.InvalidParameterValue, "top-N bound must be 1..10000, not %d", hi)
	}
	return lo, hi, nil
}
