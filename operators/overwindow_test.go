package operators_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// overCase is a window of the OverWindow oracle: functions over
// (PARTITION BY k ORDER BY o) of rows [id, k, o, x].
type overCase struct {
	desc  string
	funcs []plan.WindowFunc
	frame plan.Frame
	order plan.SortKey
}

func genOverCase(rng *rand.Rand) overCase {
	x := expr.Col(3, types.Int8, "x")
	all := []struct {
		text string
		f    plan.WindowFunc
	}{
		{"lag(x)", plan.WindowFunc{Name: "lag", Args: []*expr.Expr{x}}},
		{"lead(x, 2, 0)", plan.WindowFunc{Name: "lead", Args: []*expr.Expr{x, expr.Const(types.NewInt8(2)), expr.Const(types.NewInt8(0))}}},
		{"lag(x, 3)", plan.WindowFunc{Name: "lag", Args: []*expr.Expr{x, expr.Const(types.NewInt8(3))}}},
		{"first_value(x)", plan.WindowFunc{Name: "first_value", Args: []*expr.Expr{x}}},
		{"last_value(x)", plan.WindowFunc{Name: "last_value", Args: []*expr.Expr{x}}},
		{"nth_value(x, 2)", plan.WindowFunc{Name: "nth_value", Args: []*expr.Expr{x, expr.Const(types.NewInt8(2))}}},
		{"row_number()", plan.WindowFunc{Name: "row_number"}},
		{"rank()", plan.WindowFunc{Name: "rank"}},
		{"dense_rank()", plan.WindowFunc{Name: "dense_rank"}},
		{"ntile(3)", plan.WindowFunc{Name: "ntile", Args: []*expr.Expr{expr.Const(types.NewInt(types.Int4, 3))}}},
		{"cume_dist()", plan.WindowFunc{Name: "cume_dist"}},
		{"sum(x)", plan.WindowFunc{Name: "sum", Args: []*expr.Expr{x}}},
		{"count(*)", plan.WindowFunc{Name: "count", Star: true}},
		{"max(x)", plan.WindowFunc{Name: "max", Args: []*expr.Expr{x}}},
	}
	c := overCase{frame: plan.DefaultFrame, order: plan.SortKey{Col: 0, Desc: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0}}
	// A third of the cases have only functions whose values reach a few
	// rows (lag, lead, ROWS frames with offsets), which the operator
	// computes near what changed only.
	local := rng.IntN(3) == 0
	if local {
		all = append(all[:3], all[3], all[4], all[5], all[11], all[12], all[13])
	}
	var names []string
	for n := 1 + rng.IntN(3); n > 0; n-- {
		f := all[rng.IntN(len(all))]
		c.funcs = append(c.funcs, f.f)
		names = append(names, f.text)
	}
	frames := []struct {
		text string
		f    plan.Frame
	}{
		{"", plan.DefaultFrame},
		{"rows between 1 preceding and 1 following", plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 1}, End: plan.FrameBound{Kind: plan.BoundFollowing, Offset: 1}}},
		{"rows unbounded preceding", plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}},
		{"groups between 1 preceding and current row", plan.Frame{Mode: plan.FrameGroups, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 1}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}},
		{"range between current row and unbounded following", plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundCurrentRow}, End: plan.FrameBound{Kind: plan.BoundUnboundedFollowing}}},
		{"range between 2 preceding and 1 following", plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundPreceding, Value: expr.Const(types.NewInt8(2))},
			End: plan.FrameBound{Kind: plan.BoundFollowing, Value: expr.Const(types.NewInt8(1))}}},
	}
	fr := frames[rng.IntN(len(frames))]
	if local {
		fr = frames[1]
		if rng.IntN(3) == 0 {
			fr.text, fr.f = "rows between current row and 2 following", plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundCurrentRow}, End: plan.FrameBound{Kind: plan.BoundFollowing, Offset: 2}}
		} else if rng.IntN(2) == 0 {
			fr.text, fr.f = "rows between 3 preceding and current row", plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 3}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}
		}
	}
	c.frame = fr.f
	c.desc = fmt.Sprintf("%s over (partition by k order by o desc=%v nulls first=%v %s)", strings.Join(names, ", "), c.order.Desc, c.order.NullsFirst, fr.text)
	return c
}

func (c overCase) spec() *plan.OverSpec {
	return &plan.OverSpec{
		PartitionBy: []*expr.Expr{expr.Col(1, types.Int8, "k")},
		OrderBy:     []*expr.Expr{expr.Col(2, types.Int8, "o")},
		Order:       []plan.SortKey{c.order},
		Frame:       c.frame,
		Funcs:       c.funcs,
	}
}

// TestOverWindowOracle feeds random rows (NULL partition and order keys,
// ties in the order), some of which go again (sign -1), in random
// batches, rebinding the operator to its state at random as a restart
// does, and checks after every batch that its signed output, summed per
// row and values, is exactly what the bounded window step computes over
// the rows live so far, taken in arrival order: each row once, with its
// current values, and nothing counted below 0 or above 1.
func TestOverWindowOracle(t *testing.T) {
	cases := 400
	if testing.Short() {
		cases = 60
	}
	for c := 0; c < cases; c++ {
		seed := uint64(20261205 + c)
		rng := rand.New(rand.NewPCG(seed, 17))
		oc := genOverCase(rng)
		n := 5 + rng.IntN(80)
		desc := fmt.Sprintf("seed %d: %s, %d rows", seed, oc.desc, n)
		onErr := func(b *operators.Batch, i int, err error) error {
			return fmt.Errorf("row %d: unexpected error %v", i, err)
		}
		kv := operators.NewMemKV()
		newOp := func() *operators.OverWindow {
			op, err := operators.NewOverWindow(oc.spec(), 4, 4, &expr.Env{}, onErr)
			if err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			op.Bind(kv)
			return op
		}
		op := newOp()
		net := map[string]int{}
		text := map[string]string{}
		emit := func(b *operators.Batch) error {
			for _, r := range b.Rows {
				if len(r) != 4+len(oc.funcs)+1 {
					return fmt.Errorf("output row of %d columns", len(r))
				}
				k := string(types.AppendValues(nil, r[:len(r)-1]))
				net[k] += int(r[len(r)-1].I)
				text[k] = fmt.Sprint(r[:len(r)-1])
				if net[k] < 0 || net[k] > 1 {
					return fmt.Errorf("row %s counted %d times", text[k], net[k])
				}
			}
			return nil
		}
		var live []types.Row
		val := func(max int) types.Value {
			if rng.IntN(8) == 0 {
				return types.NullValue
			}
			return types.NewInt8(int64(rng.IntN(max)))
		}
		for i := 0; i < n; {
			batch := &operators.Batch{}
			for k := 1 + rng.IntN(6); k > 0 && i < n; k-- {
				if len(live) > 0 && rng.IntN(4) == 0 { // a live row goes
					g := rng.IntN(len(live))
					batch.Rows = append(batch.Rows, append(slices.Clone(live[g]), types.NewInt(types.Int8, -1)))
					live = slices.Delete(live, g, g+1)
					i++
					continue
				}
				row := types.Row{types.NewInt8(int64(i)), val(3), val(5), val(100)}
				live = append(live, row)
				batch.Rows = append(batch.Rows, append(slices.Clone(row), types.NewInt(types.Int8, 1)))
				i++
			}
			if err := op.Process(batch, emit); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			want := boundedWindow(t, oc.spec(), live)
			var got []string
			for k, c := range net {
				if c == 1 {
					got = append(got, text[k])
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, after %d rows (%d live):\ngot  %s\nwant %s", desc, i, len(live), strings.Join(got, " "), strings.Join(want, " "))
			}
			// several batches per epoch; a restart resumes from the
			// state of a checkpoint
			if rng.IntN(2) == 0 {
				if err := op.OnCheckpoint(); err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				if rng.IntN(3) == 0 {
					op = newOp()
				}
			}
		}
	}
}

// boundedWindow is the bounded window step's rows over rows, in order.
func boundedWindow(t *testing.T, spec *plan.OverSpec, rows []types.Row) []string {
	t.Helper()
	w, err := operators.NewWindowFuncs(spec, &expr.Env{}, operators.AbortOnError, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Process(&operators.Batch{Rows: slices.Clone(rows)}, nil); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := w.Finish(func(b *operators.Batch) error {
		for _, r := range b.Rows {
			out = append(out, fmt.Sprint(r))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOverWindowPoison: a row that makes its partition's computation
// fail (nth_value's n below 1) is set aside as poison, the rows of its
// batch around it go on, and a row that came and went in the same batch
// stays gone (it is not put back while the poison row is looked for).
// A partition that cannot be computed even without the batch's rows (a
// row that went made ntile's count, read from the first row, invalid)
// has NULL values, and the error is reported once.
func TestOverWindowPoison(t *testing.T) {
	x := expr.Col(3, types.Int8, "x")
	spec := &plan.OverSpec{
		PartitionBy: []*expr.Expr{expr.Col(1, types.Int8, "k")},
		OrderBy:     []*expr.Expr{expr.Col(2, types.Int8, "o")},
		Order:       []plan.SortKey{{Col: 0}},
		Frame:       plan.DefaultFrame,
		Funcs:       []plan.WindowFunc{{Name: "nth_value", Args: []*expr.Expr{expr.Col(0, types.Int8, "id"), x}}},
	}
	var poison []int64
	onErr := func(b *operators.Batch, i int, err error) error {
		poison = append(poison, b.Rows[i][0].I)
		return nil
	}
	op, err := operators.NewOverWindow(spec, 4, 4, &expr.Env{}, onErr)
	if err != nil {
		t.Fatal(err)
	}
	op.Bind(operators.NewMemKV())
	net := map[string]int{}
	emit := func(b *operators.Batch) error {
		for _, r := range b.Rows {
			net[fmt.Sprint(r[:len(r)-1])] += int(r[len(r)-1].I)
		}
		return nil
	}
	row := func(id, o, n, sign int64) types.Row {
		return types.Row{types.NewInt8(id), types.NewInt8(1), types.NewInt8(o), types.NewInt8(n), types.NewInt(types.Int8, sign)}
	}
	live := func() []string {
		var out []string
		for k, c := range net {
			if c != 0 {
				out = append(out, fmt.Sprintf("%s×%d", k, c))
			}
		}
		slices.Sort(out)
		return out
	}
	// id 2 asks for the 0th value: poison; 4 comes and goes; 1 and 3 stay
	if err := op.Process(&operators.Batch{Rows: []types.Row{row(1, 1, 1, 1), row(4, 4, 1, 1), row(2, 2, 0, 1), row(4, 4, 1, -1), row(3, 3, 2, 1)}}, emit); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(poison, []int64{2}) {
		t.Fatalf("poison rows %v, want [2]", poison)
	}
	want := []string{"[1 1 1 1 1]×1", "[3 1 3 2 3]×1"}
	if got := live(); !slices.Equal(got, want) {
		t.Fatalf("after the first batch: %v, want %v", got, want)
	}

	// ntile's count comes from the partition's first row: when that row
	// goes, the next one's 0 is the count, and no new row is to blame
	spec.Funcs = []plan.WindowFunc{{Name: "ntile", Args: []*expr.Expr{x}}}
	op, err = operators.NewOverWindow(spec, 4, 4, &expr.Env{}, onErr)
	if err != nil {
		t.Fatal(err)
	}
	op.Bind(operators.NewMemKV())
	poison, net = nil, map[string]int{}
	if err := op.Process(&operators.Batch{Rows: []types.Row{row(1, 1, 2, 1), row(2, 2, 0, 1)}}, emit); err != nil {
		t.Fatal(err)
	}
	if err := op.Process(&operators.Batch{Rows: []types.Row{row(1, 1, 2, -1), row(3, 3, 5, 1)}}, emit); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(poison, []int64{1}) {
		t.Fatalf("errors reported against %v, want [1] (the batch's first row)", poison)
	}
	want = []string{"[2 1 2 0 NULL]×1", "[3 1 3 5 NULL]×1"}
	if got := live(); !slices.Equal(got, want) {
		t.Fatalf("after the first row went: %v, want %v", got, want)
	}
}
