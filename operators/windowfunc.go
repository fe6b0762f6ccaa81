package operators

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// windowFuncs are the functions that only exist as window functions.
var windowFuncs = map[string]bool{
	"row_number": true, "rank": true, "dense_rank": true, "percent_rank": true, "cume_dist": true,
	"ntile": true, "lag": true, "lead": true, "first_value": true, "last_value": true, "nth_value": true,
}

// IsWindowFunc reports whether name is a window function that is not an
// aggregate.
func IsWindowFunc(name string) bool { return windowFuncs[name] }

// WindowResult types the window function call: bigint for the row numbers,
// integer for ntile, double precision for percent_rank and cume_dist, the
// value's type for the offset and value functions, the aggregate's type
// for an aggregate.
func WindowResult(f *plan.WindowFunc) (types.Type, error) {
	switch f.Name {
	case "row_number", "rank", "dense_rank":
		return types.Int8, nil
	case "ntile":
		return types.Int4, nil
	case "percent_rank", "cume_dist":
		return types.Float8, nil
	case "lag", "lead", "first_value", "last_value", "nth_value":
		if len(f.Args) == 0 {
			return types.Null, pgerror.New(pgerror.Internal, "operators: %s without arguments", f.Name)
		}
		return f.Args[0].Type, nil
	}
	if IsAggregate(f.Name) {
		agg, err := windowAgg(f)
		if err != nil {
			return types.Null, err
		}
		return agg.Ret, nil
	}
	return types.Null, pgerror.New(pgerror.UndefinedFunction, "window function %s does not exist", f.Name)
}

// windowAgg resolves an aggregate called as a window function; env, when
// set, evaluates string_agg's delimiter (its second argument, a constant
// of the query).
func windowAgg(f *plan.WindowFunc, env ...*expr.Env) (*AggFunc, error) {
	arg := types.Null
	if len(f.Args) > 0 {
		arg = f.Args[0].Type
	}
	agg, err := ResolveAgg(f.Name, arg, f.Star)
	if err != nil || f.Name != "string_agg" || len(f.Args) != 2 || len(env) == 0 {
		return agg, err
	}
	d, err := constantArg(f.Args[1], env[0])
	if err != nil {
		return nil, err
	}
	if !d.IsNull() {
		agg.Delim = &d.S // its accumulators read it when made
	}
	return agg, nil
}

// ordered says whether an aggregate's result depends on the order of
// its rows (it must fold a frame's rows in order).
func ordered(name string) bool { return name == "string_agg" || name == "array_agg" }

// usesFrame reports whether the function's value depends on the frame
// (PostgreSQL's ranking and offset functions ignore it).
func usesFrame(f *plan.WindowFunc) bool {
	switch f.Name {
	case "first_value", "last_value", "nth_value":
		return true
	}
	return IsAggregate(f.Name)
}

// WindowFuncs is the bounded window operator: it holds every input row
// (charged to Budget) and at Finish sorts them by partition and order,
// computes each function per partition and emits the rows with the
// results appended, partition by partition. It is a bounded-query
// operator: continuous queries rank only through TopN.
type WindowFuncs struct {
	Spec    *plan.OverSpec
	Budget  *Budget // charged with the rows held; nil: unlimited
	OnError RowError

	part, ord []expr.Eval
	args      [][]expr.Eval
	aggs      []*AggFunc // per function, nil unless an aggregate
	rng       *rangeFrame
	rows      []winRow
	charged   int64
	partKeys  []plan.SortKey
}

// winRow is an input row with the values the window needs, evaluated once.
type winRow struct {
	row  types.Row
	part types.Row
	ord  types.Row
	args []types.Row // per function
	seq  uint64      // OverWindow's identity of the row (unused in bounded queries)
}

// NewWindowFuncs compiles a window step.
func NewWindowFuncs(spec *plan.OverSpec, env *expr.Env, onErr RowError, budget *Budget) (*WindowFuncs, error) {
	w := &WindowFuncs{Spec: spec, Budget: budget, OnError: onErr}
	var err error
	if w.part, err = CompileAll(spec.PartitionBy, env); err != nil {
		return nil, err
	}
	if w.ord, err = CompileAll(spec.OrderBy, env); err != nil {
		return nil, err
	}
	for i := range spec.Funcs {
		f := &spec.Funcs[i]
		evs, err := CompileAll(f.Args, env)
		if err != nil {
			return nil, err
		}
		w.args = append(w.args, evs)
		var agg *AggFunc
		if IsAggregate(f.Name) {
			if agg, err = windowAgg(f, env); err != nil {
				return nil, err
			}
		} else if !windowFuncs[f.Name] {
			return nil, pgerror.New(pgerror.UndefinedFunction, "window function %s does not exist", f.Name)
		}
		w.aggs = append(w.aggs, agg)
	}
	if w.rng, err = newRangeFrame(spec, env); err != nil {
		return nil, err
	}
	w.partKeys = make([]plan.SortKey, len(spec.PartitionBy))
	for i := range w.partKeys {
		w.partKeys[i] = plan.SortKey{Col: i}
	}
	return w, nil
}

func evalAll(evs []expr.Eval, row types.Row) (types.Row, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	out := make(types.Row, len(evs))
	for i, ev := range evs {
		v, err := ev(row)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// rowOf evaluates what the window needs of an input row: its PARTITION
// BY values (when part), its ORDER BY values, each function's arguments.
func (w *WindowFuncs) rowOf(row types.Row, part bool) (winRow, error) {
	r := winRow{row: row}
	var err error
	if part {
		if r.part, err = evalAll(w.part, row); err != nil {
			return r, err
		}
	}
	if r.ord, err = evalAll(w.ord, row); err != nil {
		return r, err
	}
	r.args = make([]types.Row, len(w.args))
	for j, evs := range w.args {
		if r.args[j], err = evalAll(evs, row); err != nil {
			return r, err
		}
	}
	return r, nil
}

// Process implements Operator.
func (w *WindowFuncs) Process(b *Batch, _ Emit) error {
	for i, row := range b.Rows {
		r, err := w.rowOf(row, true)
		if err != nil {
			if err := w.OnError(b, i, err); err != nil {
				return err
			}
			continue
		}
		n := RowBytes(row) + RowBytes(r.part) + RowBytes(r.ord) + 64
		for _, a := range r.args {
			n += RowBytes(a)
		}
		w.charged += n
		if err := w.Budget.Grow(n); err != nil {
			return err
		}
		w.rows = append(w.rows, r)
	}
	return nil
}

// Finish implements Operator.
func (w *WindowFuncs) Finish(emit Emit) error {
	rows := w.rows
	w.rows = nil
	defer func() {
		w.Budget.Release(w.charged)
		w.charged = 0
	}()
	// Sort by partition, then order; stable, so that rows without ORDER BY
	// keep their arrival order.
	err := sortStable(w.Budget, rows, func(x, y winRow) bool {
		if c := CompareRows(w.partKeys, x.part, y.part); c != 0 {
			return c < 0
		}
		return CompareRows(w.Spec.Order, x.ord, y.ord) < 0
	})
	if err != nil {
		return err
	}
	var out []types.Row
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && CompareRows(w.partKeys, rows[lo].part, rows[hi].part) == 0 {
			hi++
		}
		res, err := w.partition(rows[lo:hi])
		if err != nil {
			return err
		}
		for i := lo; i < hi; i++ {
			r := rows[i].row
			o := make(types.Row, len(r), len(r)+len(w.Spec.Funcs))
			copy(o, r)
			for j := range w.Spec.Funcs {
				o = append(o, res[j][i-lo])
			}
			out = append(out, o)
			rows[i] = winRow{} // let the input go as the output grows
			if len(out) == 1024 {
				if err := emit(&Batch{Rows: out}); err != nil {
					return err
				}
				out = nil
			}
		}
		lo = hi
	}
	if len(out) > 0 {
		return emit(&Batch{Rows: out})
	}
	return nil
}

// peers describes a sorted partition's peer groups (rows equal in the
// ORDER BY; all rows are peers without one).
type peers struct {
	group      []int // each row's peer group, from 0
	groupStart []int // each group's first row
	groupEnd   []int // each group's end (exclusive)
}

func (w *WindowFuncs) peersOf(rows []winRow) *peers {
	p := &peers{group: make([]int, len(rows))}
	for i := range rows {
		if i == 0 || CompareRows(w.Spec.Order, rows[i-1].ord, rows[i].ord) != 0 {
			p.groupStart = append(p.groupStart, i)
			if i > 0 {
				p.groupEnd = append(p.groupEnd, i)
			}
		}
		p.group[i] = len(p.groupStart) - 1
	}
	p.groupEnd = append(p.groupEnd, len(rows))
	return p
}

// frameOf is row i's frame [start, end) in the partition of n rows.
func frameOf(fr *plan.Frame, p *peers, i, n int) (int, int) {
	clamp := func(x int64) int {
		return int(max(0, min(x, int64(n))))
	}
	// Offsets past the partition's size mean the same as its size; capping
	// them first keeps i±offset from overflowing.
	off := func(b plan.FrameBound) int64 { return min(b.Offset, int64(n)+1) }
	g := p.group[i]
	ng := len(p.groupStart)
	groupStart := func(k int64) int {
		switch {
		case k < 0:
			return 0
		case k >= int64(ng):
			return n
		}
		return p.groupStart[k]
	}
	groupEnd := func(k int64) int {
		switch {
		case k < 0:
			return 0
		case k >= int64(ng):
			return n
		}
		return p.groupEnd[k]
	}
	var s, e int
	switch fr.Start.Kind {
	case plan.BoundUnboundedPreceding:
		s = 0
	case plan.BoundCurrentRow:
		s = i
		if fr.Mode != plan.FrameRows {
			s = p.groupStart[g]
		}
	case plan.BoundPreceding:
		if fr.Mode == plan.FrameGroups {
			s = groupStart(int64(g) - off(fr.Start))
		} else {
			s = clamp(int64(i) - off(fr.Start))
		}
	case plan.BoundFollowing:
		if fr.Mode == plan.FrameGroups {
			s = groupStart(int64(g) + off(fr.Start))
		} else {
			s = clamp(int64(i) + off(fr.Start))
		}
	default:
		s = n
	}
	switch fr.End.Kind {
	case plan.BoundUnboundedFollowing:
		e = n
	case plan.BoundCurrentRow:
		e = i + 1
		if fr.Mode != plan.FrameRows {
			e = p.groupEnd[g]
		}
	case plan.BoundPreceding:
		if fr.Mode == plan.FrameGroups {
			e = groupEnd(int64(g) - off(fr.End))
		} else {
			e = clamp(int64(i) - off(fr.End) + 1)
		}
	case plan.BoundFollowing:
		if fr.Mode == plan.FrameGroups {
			e = groupEnd(int64(g) + off(fr.End))
		} else {
			e = clamp(int64(i) + off(fr.End) + 1)
		}
	default:
		e = 0
	}
	if e < s {
		e = s
	}
	return s, e
}

// partition computes every function over one sorted partition: res[f][i]
// is function f's value for row i.
func (w *WindowFuncs) partition(rows []winRow) ([][]types.Value, error) {
	n := len(rows)
	p := w.peersOf(rows)
	fr := &w.Spec.Frame
	res := make([][]types.Value, len(w.Spec.Funcs))
	var frames [][2]int
	for j := range w.Spec.Funcs {
		f := &w.Spec.Funcs[j]
		if usesFrame(f) && frames == nil {
			frames = make([][2]int, n)
			for i := range rows {
				s, e := frameOf(fr, p, i, n)
				frames[i] = [2]int{s, e}
			}
			if w.rng != nil {
				if err := w.rng.bounds(n, func(k int) types.Value { return rows[k].ord[0] }, p, frames); err != nil {
					return nil, err
				}
			}
		}
		out := make([]types.Value, n)
		arg := func(i, k int) types.Value { return rows[i].args[j][k] }
		switch f.Name {
		case "row_number":
			for i := range out {
				out[i] = types.NewInt8(int64(i + 1))
			}
		case "rank":
			for i := range out {
				out[i] = types.NewInt8(int64(p.groupStart[p.group[i]] + 1))
			}
		case "dense_rank":
			for i := range out {
				out[i] = types.NewInt8(int64(p.group[i] + 1))
			}
		case "percent_rank":
			for i := range out {
				v := 0.0
				if n > 1 {
					v = float64(p.groupStart[p.group[i]]) / float64(n-1)
				}
				out[i] = types.NewFloat8(v)
			}
		case "cume_dist":
			for i := range out {
				out[i] = types.NewFloat8(float64(p.groupEnd[p.group[i]]) / float64(n))
			}
		case "ntile":
			if err := ntile(out, arg(0, 0)); err != nil {
				return nil, err
			}
		case "lag", "lead":
			for i := range out {
				off := int64(1)
				if len(f.Args) > 1 {
					v := arg(i, 1)
					if v.K == types.Null {
						out[i] = types.NullValue
						continue
					}
					off = v.I
				}
				if f.Name == "lag" {
					off = -off
				}
				if t := int64(i) + off; t >= 0 && t < int64(n) {
					out[i] = arg(int(t), 0)
				} else if len(f.Args) > 2 {
					out[i] = arg(i, 2)
				} else {
					out[i] = types.NullValue
				}
			}
		case "first_value", "last_value", "nth_value":
			for i := range out {
				s, e := frames[i][0], frames[i][1]
				t := -1
				switch f.Name {
				case "first_value":
					t = s
				case "last_value":
					t = e - 1
				default:
					k := arg(i, 1)
					if k.K == types.Null {
						break
					}
					if k.I <= 0 {
						return nil, pgerror.New(pgerror.InvalidArgumentForNthValue, "argument of nth_value must be greater than zero")
					}
					if k.I <= int64(e-s) {
						t = s + int(k.I) - 1
					}
				}
				if t >= s && t < e {
					out[i] = arg(t, 0)
				} else {
					out[i] = types.NullValue
				}
			}
		default:
			if err := w.aggregate(out, rows, j, frames); err != nil {
				return nil, err
			}
		}
		res[j] = out
	}
	return res, nil
}

// ntile deals the partition's rows into k buckets as PostgreSQL does: the
// first n mod k buckets get one row more. k is the first row's argument.
func ntile(out []types.Value, k types.Value) error {
	if k.K == types.Null {
		for i := range out {
			out[i] = types.NullValue
		}
		return nil
	}
	if k.I <= 0 {
		return pgerror.New(pgerror.InvalidArgumentForNtile, "argument of ntile must be greater than zero")
	}
	n := int64(len(out))
	per, extra := n/k.I, n%k.I
	bucket, left := int64(1), per
	if extra > 0 {
		left++
	}
	for i := range out {
		if left == 0 {
			bucket++
			left = per
			if bucket <= extra {
				left++
			}
		}
		out[i] = types.NewInt(types.Int4, bucket)
		left--
	}
	return nil
}

// aggregate computes aggregate function j over each row's frame. A frame
// anchored at the partition's start grows row by row, and one anchored at
// its end shrinks, so both fold each row once; other frames are folded
// afresh per row (reusing the previous row's value when its frame is the
// same), which costs the frame's width per row.
func (w *WindowFuncs) aggregate(out []types.Value, rows []winRow, j int, frames [][2]int) error {
	agg := w.aggs[j]
	star := w.Spec.Funcs[j].Star
	add := func(acc Accumulator, i int) error {
		if star {
			return acc.Add(types.NullValue)
		}
		return acc.Add(rows[i].args[j][0])
	}
	n := len(rows)
	work := 0
	tick := func() error {
		if work++; work&(1<<12-1) == 0 {
			return w.Budget.Err()
		}
		return nil
	}
	switch {
	case w.Spec.Frame.Start.Kind == plan.BoundUnboundedPreceding:
		acc, next := agg.New(), 0
		for i := 0; i < n; i++ {
			for ; next < frames[i][1]; next++ {
				if err := add(acc, next); err != nil {
					return err
				}
			}
			out[i] = acc.Result()
			if err := tick(); err != nil {
				return err
			}
		}
	case w.Spec.Frame.End.Kind == plan.BoundUnboundedFollowing && !ordered(w.Spec.Funcs[j].Name):
		acc, next := agg.New(), n-1
		for i := n - 1; i >= 0; i-- {
			for ; next >= frames[i][0]; next-- {
				if err := add(acc, next); err != nil {
					return err
				}
			}
			out[i] = acc.Result()
			if err := tick(); err != nil {
				return err
			}
		}
	default:
		for i := 0; i < n; i++ {
			if i > 0 && frames[i] == frames[i-1] {
				out[i] = out[i-1]
				continue
			}
			acc := agg.New()
			for k := frames[i][0]; k < frames[i][1]; k++ {
				if err := add(acc, k); err != nil {
					return err
				}
				if err := tick(); err != nil {
					return err
				}
			}
			out[i] = acc.Result()
		}
	}
	return nil
}
