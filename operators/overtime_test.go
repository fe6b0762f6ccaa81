package operators_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// genOverTimeSpec draws a stream's OVER clause that runs in event time:
// PARTITION BY p ORDER BY t (, v) of rows [p, t, v, seq], a frame that
// ends at the current row or before it, and two to four functions.
func genOverTimeSpec(rng *rand.Rand) (*plan.OverSpec, string) {
	v := expr.Col(2, types.Int8, "v")
	c := func(n int64) *expr.Expr { return expr.Const(types.NewInt8(n)) }
	funcs := []plan.WindowFunc{
		{Name: "row_number"}, {Name: "rank"}, {Name: "dense_rank"},
		{Name: "lag", Args: []*expr.Expr{v}},
		{Name: "lag", Args: []*expr.Expr{v, c(2), c(-7)}},
		{Name: "lag", Args: []*expr.Expr{v, c(0)}},
		{Name: "first_value", Args: []*expr.Expr{v}}, {Name: "last_value", Args: []*expr.Expr{v}},
		{Name: "nth_value", Args: []*expr.Expr{v, c(2)}},
		{Name: "count", Star: true}, {Name: "count", Args: []*expr.Expr{v}},
		{Name: "sum", Args: []*expr.Expr{v}}, {Name: "min", Args: []*expr.Expr{v}},
		{Name: "max", Args: []*expr.Expr{v}}, {Name: "avg", Args: []*expr.Expr{v}},
	}
	rows := func(k plan.BoundKind, n int64) plan.FrameBound { return plan.FrameBound{Kind: k, Offset: n} }
	span := func(k plan.BoundKind, us int64) plan.FrameBound {
		return plan.FrameBound{Kind: k, Value: expr.Const(types.NewInterval(types.IntervalValue{Micros: us}))}
	}
	frames := []plan.Frame{
		plan.DefaultFrame,
		{Mode: plan.FrameRows, Start: rows(plan.BoundUnboundedPreceding, 0), End: rows(plan.BoundCurrentRow, 0)},
		{Mode: plan.FrameRows, Start: rows(plan.BoundPreceding, int64(rng.IntN(4))), End: rows(plan.BoundCurrentRow, 0)},
		{Mode: plan.FrameRows, Start: rows(plan.BoundPreceding, 3), End: rows(plan.BoundPreceding, 1)},
		{Mode: plan.FrameRows, Start: rows(plan.BoundUnboundedPreceding, 0), End: rows(plan.BoundPreceding, int64(1+rng.IntN(2)))},
		{Mode: plan.FrameRange, Start: rows(plan.BoundCurrentRow, 0), End: rows(plan.BoundCurrentRow, 0)},
		{Mode: plan.FrameGroups, Start: rows(plan.BoundUnboundedPreceding, 0), End: rows(plan.BoundCurrentRow, 0)},
		// RANGE frames with offsets on the time (microseconds)
		{Mode: plan.FrameRange, Start: span(plan.BoundPreceding, rng.Int64N(6)), End: rows(plan.BoundCurrentRow, 0)},
		{Mode: plan.FrameRange, Start: span(plan.BoundPreceding, 2+rng.Int64N(5)), End: span(plan.BoundPreceding, rng.Int64N(4))},
		{Mode: plan.FrameRange, Start: rows(plan.BoundUnboundedPreceding, 0), End: span(plan.BoundPreceding, rng.Int64N(4))},
	}
	spec := &plan.OverSpec{
		PartitionBy: []*expr.Expr{expr.Col(0, types.Int8, "p")},
		OrderBy:     []*expr.Expr{expr.Col(1, types.Timestamp, "t")},
		Order:       []plan.SortKey{{Col: 0}},
		Frame:       frames[rng.IntN(len(frames))],
	}
	rangeOffset := spec.Frame.Start.RangeOffset() || spec.Frame.End.RangeOffset()
	if rangeOffset && spec.Frame.Start.Kind == plan.BoundUnboundedPreceding {
		// aggregates over it are refused: the rest
		funcs = slices.DeleteFunc(funcs, func(f plan.WindowFunc) bool { return operators.IsAggregate(f.Name) })
	}
	if !rangeOffset && rng.IntN(2) == 0 {
		spec.OrderBy = append(spec.OrderBy, v)
		spec.Order = append(spec.Order, plan.SortKey{Col: 1, Desc: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0})
	}
	for n := 2 + rng.IntN(3); n > 0; n-- {
		spec.Funcs = append(spec.Funcs, funcs[rng.IntN(len(funcs))])
	}
	return spec, spec.String()
}

// TestOverTime: random rows (partition key, time, a value with NULLs and
// ties) in random batches, some behind the watermark, with watermarks
// between them, and the operator rebuilt on its KV now and then (a
// restart): every row not late comes out once, with the values the
// bounded window step gives it over all rows not late, in arrival order.
// A partition's rows pass over several watermarks, so its functions go
// on from what it kept: its counts, last rows, first rows and
// accumulators.
func TestOverTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 3))
	for c := 0; c < 1500; c++ {
		spec, desc := genOverTimeSpec(rng)
		// half the cases slide their aggregates over every frame, the
		// other half only over frames of 32 rows or more (none here)
		restore := operators.SetMinSlideRows(int64(32 * (c % 2)))
		kv := operators.NewMemKV()
		late := 0
		onErr := func(_ *operators.Batch, _ int, err error) error {
			if !errors.Is(err, operators.ErrLate) {
				return err
			}
			late++
			return nil
		}
		build := func() *operators.OverTime {
			op, err := operators.NewOverTime(spec, 4, 1, types.Timestamp, &expr.Env{}, onErr)
			if err != nil {
				t.Fatalf("case %d %s: %v", c, desc, err)
			}
			op.Bind(kv)
			return op
		}
		op := build()
		var got []string
		emit := func(b *operators.Batch) error {
			for _, r := range b.Rows {
				got = append(got, fmt.Sprint(r))
			}
			return nil
		}
		var kept []types.Row // not late, in arrival order
		wm, seq, wantLate := int64(-1), int64(0), 0
		if err := op.OnWatermark(wm, emit); err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 12; step++ {
			var b operators.Batch
			for i := rng.IntN(12); i > 0; i-- {
				ts := wm - 2 + rng.Int64N(8) // some at or behind the watermark
				v := types.NewInt8(rng.Int64N(4))
				if rng.IntN(6) == 0 {
					v = types.NullValue
				}
				row := types.Row{types.NewInt8(rng.Int64N(3)), types.NewTimestamp(types.Timestamp, ts), v, types.NewInt8(seq)}
				seq++
				b.Rows = append(b.Rows, row)
				if ts <= wm {
					wantLate++
				} else {
					kept = append(kept, row)
				}
			}
			if err := op.Process(&b, emit); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 { // a checkpoint, and a restart from it or not
				if err := op.OnCheckpoint(); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(2) == 0 {
					op = build()
				}
			}
			wm += rng.Int64N(4)
			if err := op.OnWatermark(wm, emit); err != nil {
				t.Fatal(err)
			}
		}
		if err := op.Finish(emit); err != nil {
			t.Fatal(err)
		}
		if late != wantLate {
			t.Fatalf("case %d %s: %d rows late, want %d", c, desc, late, wantLate)
		}
		want := boundedWindow(t, spec, kept)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d %s (%d rows):\ngot  %s\nwant %s", c, desc, len(kept), strings.Join(got, " "), strings.Join(want, " "))
		}
		restore()
	}
}

// TestCheckOverTime: what a stream cannot compute in event time is
// refused (0A000), with the reason.
func TestCheckOverTime(t *testing.T) {
	v := expr.Col(2, types.Int8, "v")
	hour := expr.Const(types.NewInterval(types.IntervalValue{Micros: 3600e6}))
	base := func() *plan.OverSpec {
		return &plan.OverSpec{OrderBy: []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}},
			Frame: plan.DefaultFrame, Funcs: []plan.WindowFunc{{Name: "sum", Args: []*expr.Expr{v}}}}
	}
	for _, tc := range []struct {
		want string
		edit func(*plan.OverSpec)
	}{
		{"", func(*plan.OverSpec) {}},
		{"ascending", func(s *plan.OverSpec) { s.Order[0].Desc = true }},
		{"ascending", func(s *plan.OverSpec) { s.Order[0].NullsFirst = true }},
		{"ascending", func(s *plan.OverSpec) { s.OrderBy, s.Order = nil, nil }},
		{"ends after the current row", func(s *plan.OverSpec) { s.Frame.End.Kind = plan.BoundUnboundedFollowing }},
		{"ends after the current row", func(s *plan.OverSpec) { s.Frame.End = plan.FrameBound{Kind: plan.BoundFollowing, Offset: 1} }},
		{"more than 10000", func(s *plan.OverSpec) {
			s.Frame = plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 10001}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}
		}},
		{"groups frame with an offset", func(s *plan.OverSpec) {
			s.Frame = plan.Frame{Mode: plan.FrameGroups, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 1}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}
		}},
		{"lead into a stream", func(s *plan.OverSpec) { s.Funcs[0] = plan.WindowFunc{Name: "lead", Args: []*expr.Expr{v}} }},
		{"ntile into a stream", func(s *plan.OverSpec) { s.Funcs[0] = plan.WindowFunc{Name: "ntile", Args: []*expr.Expr{v}} }},
		{"lag's offset that is not a constant", func(s *plan.OverSpec) { s.Funcs[0] = plan.WindowFunc{Name: "lag", Args: []*expr.Expr{v, v}} }},
		{"lag's offset other than 0 to 10000", func(s *plan.OverSpec) {
			s.Funcs[0] = plan.WindowFunc{Name: "lag", Args: []*expr.Expr{v, expr.Const(types.NewInt8(-1))}}
		}},
		{"nth_value's position other than 1 to 10000", func(s *plan.OverSpec) {
			s.Frame = plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 3}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}
			s.Funcs[0] = plan.WindowFunc{Name: "nth_value", Args: []*expr.Expr{v, expr.Const(types.NewInt8(0))}}
		}},
		{"", func(s *plan.OverSpec) { // NULL: the value is NULL
			s.Funcs[0] = plan.WindowFunc{Name: "lag", Args: []*expr.Expr{v, expr.Const(types.NullValue)}}
		}},
		{"string_agg over a frame from the partition's start", func(s *plan.OverSpec) {
			s.Funcs[0] = plan.WindowFunc{Name: "string_agg", Args: []*expr.Expr{expr.Col(3, types.Text, "s"), expr.Const(types.NewText(","))}}
		}},
		{"", func(s *plan.OverSpec) { // over the last rows, it keeps them only
			s.Frame = plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 3}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}
			s.Funcs[0] = plan.WindowFunc{Name: "array_agg", Args: []*expr.Expr{v}}
		}},
		{"nth_value's position that is not a constant", func(s *plan.OverSpec) {
			s.Funcs[0] = plan.WindowFunc{Name: "nth_value", Args: []*expr.Expr{v, v}}
		}},
		{"", func(s *plan.OverSpec) { // RANGE with an offset on the time: its rows by time
			s.Frame = plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundPreceding, Value: hour}, End: plan.FrameBound{Kind: plan.BoundPreceding, Value: hour}}
		}},
		{"", func(s *plan.OverSpec) { // the rows up to an hour ago: last_value reads one row
			s.Frame = plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundPreceding, Value: hour}}
			s.Funcs[0] = plan.WindowFunc{Name: "last_value", Args: []*expr.Expr{v}}
		}},
		{"aggregates over a frame from the partition's start to an offset", func(s *plan.OverSpec) {
			s.Frame = plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundPreceding, Value: hour}}
		}},
		{"ends after the current row", func(s *plan.OverSpec) {
			s.Frame = plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundPreceding, Value: hour}, End: plan.FrameBound{Kind: plan.BoundFollowing, Value: hour}}
		}},
	} {
		s := base()
		tc.edit(s)
		err := operators.CheckOverTime(s, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", s, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", s, err, tc.want)
		}
	}
}

// TestOverTimePoison: a row whose value a running aggregate refuses
// (bigint out of range) is set aside as poison and left out of the
// partition's aggregates; the rows around it go on. When it is out
// already (a frame that ends before the current row folds it later),
// it is reported then.
// TestOverTimeRangeCap: a RANGE frame keeps at most maxOverRange rows of
// a partition; a row whose frame would reach a row let go past it is a
// poison row (54000), and every row that comes out has its frame's
// value, through restarts.
func TestOverTimeRangeCap(t *testing.T) {
	defer operators.SetMaxOverRange(5)()
	ten := expr.Const(types.NewInterval(types.IntervalValue{Micros: 10}))
	spec := &plan.OverSpec{
		PartitionBy: []*expr.Expr{expr.Col(0, types.Int8, "p")},
		OrderBy:     []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}},
		Frame: plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundPreceding, Value: ten}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}},
		Funcs: []plan.WindowFunc{{Name: "count", Star: true}},
	}
	var poison []int64
	onErr := func(b *operators.Batch, i int, err error) error {
		if !strings.Contains(err.Error(), "RANGE frame reaches more than 5 rows") {
			return err
		}
		poison = append(poison, b.Rows[i][1].I)
		return nil
	}
	kv := operators.NewMemKV()
	build := func() *operators.OverTime {
		op, err := operators.NewOverTime(spec, 2, 1, types.Timestamp, &expr.Env{}, onErr)
		if err != nil {
			t.Fatal(err)
		}
		op.Bind(kv)
		return op
	}
	op := build()
	got := map[int64]int64{}
	emit := func(b *operators.Batch) error {
		for _, r := range b.Rows {
			got[r[1].I] = r[2].I
		}
		return nil
	}
	// one row every 4 µs, then a gap of 40 µs, then one every 3 µs: a
	// frame of 10 µs holds 3 rows, then 1, then 4
	var times []int64
	for ts := int64(1); ts <= 21; ts += 4 {
		times = append(times, ts)
	}
	for ts := int64(61); ts <= 91; ts += 3 {
		times = append(times, ts)
	}
	for k, ts := range times {
		b := &operators.Batch{Rows: []types.Row{{types.NewInt8(0), types.NewTimestamp(types.Timestamp, ts)}}}
		if err := op.Process(b, emit); err != nil {
			t.Fatal(err)
		}
		if err := op.OnWatermark(ts, emit); err != nil {
			t.Fatal(err)
		}
		if k%3 == 0 {
			if err := op.OnCheckpoint(); err != nil {
				t.Fatal(err)
			}
			op = build()
		}
	}
	for _, ts := range times {
		want := int64(0)
		for _, u := range times {
			if u <= ts && u >= ts-10 {
				want++
			}
		}
		if n, ok := got[ts]; ok && n != want {
			t.Errorf("row at %d: count %d, want %d", ts, n, want)
		}
	}
	if len(got)+len(poison) != len(times) || len(poison) != 0 {
		t.Errorf("%d rows out, poison %v; want all %d out", len(got), poison, len(times))
	}
	// a burst: 8 rows at one time, more than the partition keeps; the
	// rows after it whose frames reach past what it kept are poison, the
	// rest are right
	got, poison = map[int64]int64{}, nil
	var burst []types.Row
	for range 8 {
		burst = append(burst, types.Row{types.NewInt8(0), types.NewTimestamp(types.Timestamp, 100)})
	}
	for _, b := range [][]types.Row{burst, {{types.NewInt8(0), types.NewTimestamp(types.Timestamp, 105)}}, {{types.NewInt8(0), types.NewTimestamp(types.Timestamp, 111)}}} {
		if err := op.Process(&operators.Batch{Rows: b}, emit); err != nil {
			t.Fatal(err)
		}
		if err := op.OnWatermark(b[0][1].I, emit); err != nil {
			t.Fatal(err)
		}
		if err := op.OnCheckpoint(); err != nil {
			t.Fatal(err)
		}
		op = build()
	}
	if got[100] != 9 || got[111] != 2 || !slices.Equal(poison, []int64{105}) {
		t.Errorf("after a burst: %v, poison %v; want 100: 9 (and the row at 91), 111: 2, poison [105]", got, poison)
	}
}

// TestOverTimeRangeCapEnd: a frame that ends at an offset before the
// current row, over more rows of that offset than a partition keeps:
// rows whose frame end cannot be found among the rows kept are poison
// (54000), the pipeline goes on, and every row that comes out has the
// values its frame gives.
func TestOverTimeRangeCapEnd(t *testing.T) {
	defer operators.SetMaxOverRange(5)()
	ten := expr.Const(types.NewInterval(types.IntervalValue{Micros: 10}))
	v := expr.Col(2, types.Int8, "v")
	spec := &plan.OverSpec{
		OrderBy: []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}},
		Frame: plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundPreceding, Value: ten}},
		Funcs: []plan.WindowFunc{{Name: "row_number"}, {Name: "last_value", Args: []*expr.Expr{v}}, {Name: "nth_value", Args: []*expr.Expr{v, expr.Const(types.NewInt8(2))}}},
	}
	poison := 0
	op, err := operators.NewOverTime(spec, 3, 1, types.Timestamp, &expr.Env{}, func(_ *operators.Batch, _ int, err error) error {
		if !strings.Contains(err.Error(), "RANGE frame reaches more than 5 rows") {
			return err
		}
		poison++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	op.Bind(operators.NewMemKV())
	var got []string
	emit := func(b *operators.Batch) error {
		for _, r := range b.Rows {
			got = append(got, fmt.Sprint(r[1].I, r[3], r[4], r[5]))
		}
		return nil
	}
	for ts := int64(1); ts <= 30; ts++ {
		b := &operators.Batch{Rows: []types.Row{{types.NewInt8(0), types.NewTimestamp(types.Timestamp, ts), types.NewInt8(ts * 10)}}}
		if err := op.Process(b, emit); err != nil {
			t.Fatal(err)
		}
		if err := op.OnWatermark(ts, emit); err != nil {
			t.Fatalf("at %d: %v", ts, err)
		}
	}
	var want []string
	for ts := int64(1); ts <= 30; ts++ {
		last, second := types.NullValue, types.NullValue
		if ts > 10 {
			last = types.NewInt8((ts - 10) * 10)
		}
		if ts > 11 {
			second = types.NewInt8(20)
		}
		want = append(want, fmt.Sprint(ts, types.NewInt8(ts), last, second))
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("row %s: want one of %v", g, want)
		}
	}
	if poison == 0 || len(got)+poison != 30 {
		t.Errorf("%d rows out, %d poison: want 30 in all, some poison", len(got), poison)
	}
}

func TestOverTimePoison(t *testing.T) {
	defer operators.SetMinSlideRows(0)() // the sliding frame slides, and falls back
	big := types.NewInt8(math.MaxInt64)  // sum(int4) is a bigint: 1 + big is out of range
	for _, tc := range []struct {
		frame  plan.Frame
		want   string
		poison []int64 // the poison rows' values; nil: big's
	}{
		{plan.DefaultFrame, "[0 1 1 1] [0 3 5 6]", nil},
		{plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 1}},
			"[0 1 1 NULL] [0 2 " + fmt.Sprint(big.I) + " 1] [0 3 5 1]", nil},
		// a sliding frame: the frames that hold big and another value
		// overflow, and their rows are poison, as folding afresh says
		{plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 1}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}},
			"[0 1 1 1]", []int64{big.I, 5}},
	} {
		spec := &plan.OverSpec{
			OrderBy: []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}}, Frame: tc.frame,
			Funcs: []plan.WindowFunc{{Name: "sum", Args: []*expr.Expr{expr.Col(2, types.Int4, "v")}}},
		}
		var poison []string
		op, err := operators.NewOverTime(spec, 3, 1, types.Timestamp, &expr.Env{}, func(b *operators.Batch, i int, err error) error {
			poison = append(poison, fmt.Sprint(b.Rows[i][2].I, ": ", err))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		op.Bind(operators.NewMemKV())
		var got []string
		emit := func(b *operators.Batch) error {
			for _, r := range b.Rows {
				got = append(got, fmt.Sprint([]any{r[0].I, r[1].I, r[2].I, r[3]}))
			}
			return nil
		}
		row := func(ts int64, v types.Value) types.Row {
			return types.Row{types.NewInt8(0), types.NewTimestamp(types.Timestamp, ts), v}
		}
		if err := op.Process(&operators.Batch{Rows: []types.Row{row(1, types.NewInt8(1)), row(2, big), row(3, types.NewInt8(5))}}, emit); err != nil {
			t.Fatal(err)
		}
		if err := op.Finish(emit); err != nil {
			t.Fatal(err)
		}
		if tc.poison == nil {
			tc.poison = []int64{big.I}
		}
		var want []string
		for _, v := range tc.poison {
			want = append(want, fmt.Sprint(v, ": bigint out of range"))
		}
		if strings.Join(got, " ") != tc.want || !slices.Equal(poison, want) {
			t.Errorf("%s: got %v, poison %q; want %s, poison %q", spec, got, poison, tc.want, want)
		}
	}
}

// runOverTime feeds batches to a new OverTime over spec, a watermark at
// each batch's first time after it, and returns what came out.
func runOverTime(t *testing.T, spec *plan.OverSpec, batches [][]types.Row, width int) ([]string, error) {
	op, err := operators.NewOverTime(spec, width, 1, types.Timestamp, &expr.Env{}, func(b *operators.Batch, i int, err error) error {
		if !strings.Contains(err.Error(), "RANGE frame reaches more than") {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	op.Bind(operators.NewMemKV())
	var got []string
	emit := func(b *operators.Batch) error {
		for _, r := range b.Rows {
			got = append(got, fmt.Sprint(r))
		}
		return nil
	}
	for _, b := range batches {
		if err := op.Process(&operators.Batch{Rows: b}, emit); err != nil {
			return got, err
		}
		if err := op.OnWatermark(b[0][1].I, emit); err != nil {
			return got, err
		}
	}
	return got, op.Finish(emit)
}

// TestOverTimeSliderTies: min and max over values that compare equal but
// differ (numeric 1.0 and 1.00) give the first of them over a frame that
// slides, as folding afresh (and the bounded query) does.
func TestOverTimeSliderTies(t *testing.T) {
	v := expr.Col(2, types.Numeric, "v")
	spec := &plan.OverSpec{
		OrderBy: []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}},
		Frame: plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 40}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}},
		Funcs: []plan.WindowFunc{{Name: "min", Args: []*expr.Expr{v}}, {Name: "max", Args: []*expr.Expr{v}}},
	}
	var batches [][]types.Row
	for i := int64(1); i <= 100; i++ {
		s := "1.0"
		if i%2 == 0 {
			s = "1.00"
		}
		d, _, _ := apd.NewFromString(s)
		batches = append(batches, []types.Row{{types.NewInt8(0), types.NewTimestamp(types.Timestamp, i), types.NewNumeric(d)}})
	}
	defer operators.SetMinSlideRows(32)()
	slid, err := runOverTime(t, spec, batches, 3)
	if err != nil {
		t.Fatal(err)
	}
	restore := operators.SetSlideAggregates(false)
	fresh, err := runOverTime(t, spec, batches, 3)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range slid {
		if slid[i] != fresh[i] {
			if bad < 5 {
				t.Errorf("row %d: slider %s, afresh %s", i, slid[i], fresh[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d rows differ", bad, len(slid))
	}
}

// TestOverTimeRangeCapEndGap: last_value over RANGE BETWEEN UNBOUNDED
// PRECEDING AND 10 PRECEDING, when the partition let rows go past
// maxOverRange and the frame's end lands on the first row kept (a gap in
// time before a burst): its last row was let go, so the row is poison,
// not an internal error.
func TestOverTimeRangeCapEndGap(t *testing.T) {
	defer operators.SetMaxOverRange(5)()
	ten := expr.Const(types.NewInterval(types.IntervalValue{Micros: 10}))
	v := expr.Col(2, types.Int8, "v")
	spec := &plan.OverSpec{
		OrderBy: []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}},
		Frame: plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundPreceding, Value: ten}},
		Funcs: []plan.WindowFunc{{Name: "last_value", Args: []*expr.Expr{v}}},
	}
	row := func(ts, x int64) types.Row {
		return types.Row{types.NewInt8(0), types.NewTimestamp(types.Timestamp, ts), types.NewInt8(x)}
	}
	var burst []types.Row
	for k := int64(0); k < 5; k++ {
		burst = append(burst, row(50, 500+k))
	}
	got, err := runOverTime(t, spec, [][]types.Row{{row(1, 10)}, {row(2, 20)}, burst, {row(55, 550)}}, 3)
	if err != nil {
		t.Fatalf("pipeline error: %v", err)
	}
	if len(got) != 7 { // the row at 55 is poison
		t.Errorf("%d rows out, want 7: %v", len(got), got)
	}
}

// TestOverTimeRangeCapUnframed: row_number alone over a RANGE offset
// frame reads no frame, so no row is poison when the partition lets rows
// go.
func TestOverTimeRangeCapUnframed(t *testing.T) {
	defer operators.SetMaxOverRange(5)()
	ten := expr.Const(types.NewInterval(types.IntervalValue{Micros: 10}))
	spec := &plan.OverSpec{
		OrderBy: []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}},
		Frame: plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundPreceding, Value: ten}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}},
		Funcs: []plan.WindowFunc{{Name: "row_number"}},
	}
	row := func(ts int64) types.Row { return types.Row{types.NewInt8(0), types.NewTimestamp(types.Timestamp, ts)} }
	var burst []types.Row
	for range 8 {
		burst = append(burst, row(100))
	}
	got, err := runOverTime(t, spec, [][]types.Row{burst, {row(105)}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 {
		t.Errorf("%d rows out, want 9: %v", len(got), got)
	}
}
