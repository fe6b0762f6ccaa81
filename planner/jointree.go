package planner

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// joinTree is a regular join of two or more streams for a materialized
// view, as the bounded planner planned it (a tree of plan.Join nodes
// over stream scans), laid out as stages. Each join of the tree is a hash
// join reading one internal topic, keyed by its join key, that its two
// inputs write: a stream's rows through a side stage, another join's
// signed rows straight from that join's stage (its hash join, then the
// projection into this join's layout). The top join's stage is the
// caller's: it runs top, then whatever the view does with joined rows.
//
// For a join of two streams the stages are named left, right and join,
// as they always were; deeper joins' stages are named by their path from
// the top (left_right, join_left, …).
type joinTree struct {
	name     string
	leaves   []*catalog.Relation // the streams, in the joined row's column order
	bases    []int               // each leaf's first column in the joined row
	probes   []*catalog.Relation // the inputs of semi and anti joins' right sides, whose columns are not in the joined row
	cols     []scopeCol          // the joined row's columns
	outer    string              // why joined rows can be taken back ("a LEFT JOIN", "a join with a view"; "" they cannot)
	stages   []plan.Stage        // every stage but the top join's
	internal []plan.Stream
	top      joinInput // the top join: read its internal topic with its steps
	// sides are the side stages' projections of streams' rows, whose
	// columns prune may replace by NULLs.
	sides []sideColumns
}

// sideColumns is where a stream's columns are in its side stage's
// projection: stage t.stages[stage], expressions from on, the columns
// of leaf t.leaves[leaf].
type sideColumns struct {
	stage, from, leaf int
}

// joinInput is one input of a join in the tree: a stream, or a join's
// output ([its left columns…, right columns…, sign]) as its stage makes
// it from its own internal topic.
type joinInput struct {
	read       string            // the stream its stage reads
	stage      string            // that stage's name
	cols       []scopeCol        // its columns (without the sign)
	steps      []plan.Step       // a join's hash join; none for a stream
	leaf       *catalog.Relation // the stream, or nil for a join
	leafIndex  int               // its index in the tree's leaves; -1 for a semi or anti join's right side
	partitions int
}

// planJoinTree lays out the join j (bj as the bounded planner planned
// it) for the pipeline name.
func planJoinTree(cat Catalog, name string, j *sql.Join, bj *plan.Join) (*joinTree, error) {
	t := &joinTree{name: name}
	top, err := t.join(cat, j, bj, "")
	if err != nil {
		return nil, err
	}
	t.top = top
	return t, nil
}

// join lays out the join at path ("" the top) and returns it as an input.
func (t *joinTree) join(cat Catalog, j *sql.Join, bj *plan.Join, path string) (joinInput, error) {
	if bj.Kind == "cross" {
		bj.Kind = "inner"
	}
	if len(bj.LeftKeys) == 0 && (bj.Kind == "semi" || bj.Kind == "anti") {
		return joinInput{}, pgerror.NotSupported("EXISTS or IN (SELECT …) in a materialized view without an equality between the subquery's row and the outer one").
			WithHint("Correlate it on a key: WHERE r.k = outer.k.")
	}
	if len(bj.LeftKeys) == 0 {
		// A join without an equality (a cross join, ON with no equality
		// between the sides: a scalar subquery's row joined to every row)
		// joins every row with every row: one key for all, so that the
		// join runs on one partition and keeps both sides whole.
		one := expr.Const(types.NewBool(true))
		bj.LeftKeys, bj.RightKeys = []*expr.Expr{one}, []*expr.Expr{one}
	}
	probe := bj.Kind == "semi" || bj.Kind == "anti" // EXISTS, NOT EXISTS: a semi join's rows go only when signed rows do
	switch {
	case t.outer != "" || bj.Kind == "inner" || bj.Kind == "semi":
	case bj.Kind == "anti":
		t.outer = "NOT EXISTS"
	default:
		t.outer = "a " + strings.ToUpper(bj.Kind) + " JOIN"
	}
	var ins [2]joinInput
	for side, sub := range [2]sql.TableExpr{j.Left, j.Right} {
		en, width := bj.Left, bj.LeftWidth
		if side == 1 {
			en, width = bj.Right, bj.RightWidth
		}
		leaves := len(t.leaves)
		in, err := t.input(cat, sub, en, childPath(path, side))
		if err != nil {
			return joinInput{}, err
		}
		if probe && side == 1 { // only the left side's columns go on
			t.probes = append(t.probes, t.leaves[leaves:]...)
			t.leaves, t.bases = t.leaves[:leaves], t.bases[:leaves]
			in.leafIndex = -1 // its columns are not the joined row's: kept whole
			for i := range t.sides {
				if t.sides[i].leaf >= leaves {
					t.sides[i].leaf = -1
				}
			}
		}
		if len(in.cols) != width {
			return joinInput{}, pgerror.New(pgerror.Internal, "planner: join input of %d columns, planned %d", len(in.cols), width)
		}
		ins[side] = in
	}
	suffix := ""
	if path != "" {
		suffix = "_" + path
	}
	internal := plan.Stream{Name: t.name + ".join" + suffix, Topic: InternalTopic(t.name, "join"+suffix),
		Partitions: max(ins[0].partitions, ins[1].partitions, 1), Format: types.InternalFormat}
	internal.Columns = append(internal.Columns, "side")
	internal.Types = append(internal.Types, types.Int4)
	for side, in := range ins {
		for i, c := range in.cols {
			internal.Columns = append(internal.Columns, "lr"[side:side+1]+strconv.Itoa(i))
			internal.Types = append(internal.Types, c.typ)
		}
	}
	lw, rw := len(ins[0].cols), len(ins[1].cols)
	var keyCols []int
	for i, k := range bj.LeftKeys {
		keyCols = append(keyCols, 1+lw+rw+i)
		internal.Columns = append(internal.Columns, "k"+strconv.Itoa(i))
		internal.Types = append(internal.Types, k.Type)
	}
	internal.Key = keyCols
	signed := ins[0].signed() || ins[1].signed()
	spec := &plan.JoinSpec{Type: bj.Kind, LeftWidth: lw, RightWidth: rw, LeftKey: keyCols, RightKey: keyCols, Residual: bj.On}
	if signed {
		spec.SignCol = len(internal.Columns)
		internal.Columns = append(internal.Columns, "sign")
		internal.Types = append(internal.Types, types.Int8)
	}
	for side, in := range ins {
		keys := bj.LeftKeys
		if side == 1 {
			keys = bj.RightKeys
		}
		exprs := sideRow(side, ins[0].cols, ins[1].cols, keys)
		if probe && side == 1 {
			probeColumns(exprs, bj.On, lw, rw)
		}
		if in.leaf != nil && in.leaf.Kind == catalog.Stream && in.leafIndex >= 0 {
			t.sides = append(t.sides, sideColumns{stage: len(t.stages), from: 1 + side*lw, leaf: in.leafIndex})
		}
		if signed {
			switch {
			case in.leaf == nil: // a join's rows: [columns…, sign]
				exprs = append(exprs, expr.Col(len(in.cols), types.Int8, "_sign"))
			case in.signed(): // a view's, after its changelog step
				exprs = append(exprs, signColumn(in.leaf))
			default:
				exprs = append(exprs, expr.Const(types.NewInt(types.Int8, 1)))
			}
		}
		t.stages = append(t.stages, plan.Stage{
			Name: in.stage, Inputs: []string{in.read}, Output: internal.Name,
			Steps:      append(in.steps, plan.Step{Op: plan.OpProject, Exprs: exprs, Names: internal.Columns}),
			OutputKey:  keyCols,
			SourceBase: int32(side) << 16,
		})
	}
	t.internal = append(t.internal, internal)
	stage := "join" + suffix
	var cols []scopeCol
	cols = append(append(cols, ins[0].cols...), ins[1].cols...)
	steps := []plan.Step{{Op: plan.OpHashJoin, Join: spec}}
	if probe { // [left columns…, sign]
		cols = ins[0].cols
		var exprs []*expr.Expr
		var names []string
		for i, c := range cols {
			exprs, names = append(exprs, expr.Col(i, c.typ, c.name)), append(names, c.name)
		}
		exprs, names = append(exprs, expr.Col(lw+rw, types.Int8, "_sign")), append(names, "_sign")
		steps = append(steps, plan.Step{Op: plan.OpProject, Exprs: exprs, Names: names})
	}
	if path == "" {
		t.cols = cols
	}
	return joinInput{read: internal.Name, stage: stage, cols: cols, partitions: internal.Partitions, steps: steps}, nil
}

// inputs are every relation the tree reads.
func (t *joinTree) inputs() []*catalog.Relation {
	return append(append([]*catalog.Relation(nil), t.leaves...), t.probes...)
}

// signed says whether the input's rows can go as well as come: a join's
// (its rows carry their sign) or a view's (its changelog step signs them).
func (in joinInput) signed() bool {
	return in.leaf == nil || in.leaf.Kind == catalog.MaterializedView
}

// input lays out one input of a join: a stream or a view, or a join below
// it.
func (t *joinTree) input(cat Catalog, te sql.TableExpr, en plan.Node, path string) (joinInput, error) {
	switch te := te.(type) {
	case *sql.TableName:
		rel, sc, err := changelogInput(cat, te)
		if err != nil {
			return joinInput{}, joinInputError(err)
		}
		base := 0
		if n := len(t.leaves); n > 0 {
			base = t.bases[n-1] + len(t.leaves[n-1].ReadColumns())
		}
		t.leaves, t.bases = append(t.leaves, rel), append(t.bases, base)
		in := joinInput{read: rel.Name, stage: path, cols: sc.cols, leaf: rel, leafIndex: len(t.leaves) - 1, partitions: rel.Partitions}
		if rel.Kind == catalog.MaterializedView {
			// its table's changes, as signed rows [columns…, metadata…, sign]
			in.steps = []plan.Step{changelogStep(rel)}
			if t.outer == "" {
				t.outer = "a join with a view"
			}
		}
		return in, nil
	case *sql.Join:
		bj, ok := en.(*plan.Join)
		if !ok {
			return joinInput{}, pgerror.NotSupported("this join in a materialized view")
		}
		return t.join(cat, te, bj, path)
	}
	return joinInput{}, pgerror.NotSupported("joins of subqueries or windows in a materialized view").
		WithHint("Join streams; a view can read another view's rows, not join them yet.")
}

// childPath names the input side (0 left, 1 right) of the join at path.
func childPath(path string, side int) string {
	s := "left"
	if side == 1 {
		s = "right"
	}
	if path == "" {
		return s
	}
	return path + "_" + s
}

// sideRow is the projection of one side's row (side 0 left, 1 right) into
// a join's internal topic: [side, left columns…, right columns…, key
// columns…], the other side's columns NULL.
func sideRow(side int, lcols, rcols []scopeCol, keys []*expr.Expr) []*expr.Expr {
	exprs := []*expr.Expr{expr.Const(types.NewInt(types.Int4, int64(side)))}
	for s, cols := range [2][]scopeCol{lcols, rcols} {
		for i, c := range cols {
			if s == side {
				exprs = append(exprs, expr.Col(i, c.typ, c.name))
			} else {
				exprs = append(exprs, expr.TypedNull(c.typ))
			}
		}
	}
	return append(exprs, keys...)
}

// probeColumns empties (NULL) the columns a semi or anti join's right
// side writes that the join does not read: its rows only say whether a
// left row has a partner, by the key and the rest of ON (residual, over
// [left columns…, right columns…]), so the other columns would only
// fill the join topic and the join's state. exprs is the side's row
// (sideRow: [side, left columns…, right columns…, keys…]).
func probeColumns(exprs []*expr.Expr, residual *expr.Expr, lw, rw int) {
	read := map[int]bool{}
	if residual != nil {
		for _, c := range residual.Columns() {
			read[c-lw] = true
		}
	}
	for i := range rw {
		if !read[i] {
			exprs[1+lw+i] = expr.TypedNull(exprs[1+lw+i].Type)
		}
	}
}

// viewKey is the hidden key of a view over the tree: where each input's
// row came from (NULL where an outer join pads). A stream's row is its
// record, by _partition and _offset, named _left_partition, _left_offset,
// _right_partition, _right_offset for a join of two inputs and
// _partition_<n>, _offset_<n> (n = 1 for the first input in the FROM
// clause) for more. A view's row is all of its columns, named
// _left_<column> or _<column>_<n> alike: not its key, which the two
// versions of an updated row share, since each version goes its own way
// through the joins (its join key may differ) and the one leaving may
// reach the view after the one coming.
func (t *joinTree) viewKey() (cols []catalog.Column, exprs []*expr.Expr) {
	add := func(n int, src string, col int, typ types.Type) {
		name := "_" + strings.TrimLeft(src, "_")
		if len(t.leaves) == 2 {
			name = "_" + [2]string{"left", "right"}[n] + name
		} else {
			name += "_" + strconv.Itoa(n+1)
		}
		exprs = append(exprs, expr.Col(t.bases[n]+col, typ, src))
		cols = append(cols, catalog.Column{Name: name, Type: typ, Hidden: true})
	}
	for n, leaf := range t.leaves {
		if leaf.Kind == catalog.MaterializedView {
			for i, c := range leaf.Columns {
				add(n, c.Name, i, c.Type)
			}
			continue
		}
		add(n, "_partition", len(leaf.Columns)+1, types.Int4)
		add(n, "_offset", len(leaf.Columns)+2, types.Int8)
	}
	return cols, exprs
}

// prune replaces the columns of streams' rows that nothing above the
// side stages reads (needed, by position in the joined row) by NULLs of
// their types, in the side stages' projections: the joins' state and
// internal topics then carry only what the query reads. The layout stays
// the same, so nothing above changes. A view's rows are kept whole (their
// columns are their identity), and so are a semi or anti join's right
// side's (needed does not cover them).
func (t *joinTree) prune(needed []bool) {
	for _, sd := range t.sides {
		if sd.leaf < 0 {
			continue
		}
		proj := &t.stages[sd.stage].Steps[len(t.stages[sd.stage].Steps)-1]
		exprs := append([]*expr.Expr(nil), proj.Exprs...)
		for i := range t.leaves[sd.leaf].ReadColumns() {
			if g := t.bases[sd.leaf] + i; g < len(needed) && !needed[g] {
				exprs[sd.from+i] = expr.TypedNull(exprs[sd.from+i].Type)
			}
		}
		proj.Exprs = exprs
	}
}

// neededColumns says which columns of a join's rows (cols) a query over
// it reads: the columns its select list, WHERE, GROUP BY, HAVING, ORDER
// BY and every ON and USING of the join name, and those the extra
// expressions read (a view's key). When it cannot tell (a subquery, an
// ambiguous name), every column is needed.
func neededColumns(sel *sql.Select, j *sql.Join, cols []scopeCol, extra []*expr.Expr) []bool {
	needed := make([]bool, len(cols))
	all := func() []bool {
		for i := range needed {
			needed[i] = true
		}
		return needed
	}
	if hasSubqueryExpr(sel) {
		return all()
	}
	sc := &scope{cols: cols}
	unsure := false
	mark := func(e sql.Expr) {
		walkExpr(e, func(n sql.Expr) bool {
			switch x := n.(type) {
			case *sql.ColumnRef:
				i, err := sc.resolve(x.Table, x.Name)
				if err == nil {
					needed[i] = true
				} else if pgerror.CodeOf(err) == pgerror.AmbiguousColumn {
					unsure = true
				}
			case *sql.Star:
				for i, c := range cols {
					if !c.hidden && (x.Table == "" || c.qualifiedBy(x.Table)) {
						needed[i] = true
					}
				}
			case *sql.Subquery:
				unsure = true
			}
			return true
		})
	}
	for _, it := range sel.Items {
		mark(it.Expr)
	}
	mark(sel.Where)
	mark(sel.Having)
	for _, e := range append(append([]sql.Expr(nil), sel.GroupBy...), sel.DistinctOn...) {
		mark(e)
	}
	for _, o := range sel.OrderBy {
		mark(o.Expr)
	}
	var joins func(te sql.TableExpr)
	joins = func(te sql.TableExpr) {
		jn, ok := te.(*sql.Join)
		if !ok {
			return
		}
		mark(jn.On)
		for _, name := range jn.Using {
			for i, c := range cols {
				if c.name == name {
					needed[i] = true
				}
			}
		}
		joins(jn.Left)
		joins(jn.Right)
	}
	joins(j)
	for _, e := range extra {
		e.Walk(func(x *expr.Expr) {
			if x.Kind == expr.KCol && x.Col < len(needed) {
				needed[x.Col] = true
			}
		})
	}
	if unsure {
		return all()
	}
	return needed
}
