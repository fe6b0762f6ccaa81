package operators_test

import (
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// BenchmarkOverWindow: rows appended in order to 1000 partitions in
// batches of 10,000 (a catch-up), through lag, a moving average over
// ROWS 4 PRECEDING, and rank (which computes each touched partition
// whole), with a checkpoint every 5 batches. b.N counts rows.
func BenchmarkOverWindow(b *testing.B) {
	amount := expr.Col(2, types.Int4, "amount")
	for _, c := range []struct {
		name  string
		f     plan.WindowFunc
		frame plan.Frame
		order *expr.Expr
	}{
		{"lag", plan.WindowFunc{Name: "lag", Args: []*expr.Expr{amount}}, plan.DefaultFrame, expr.Col(3, types.Int8, "ts")},
		{"moving-avg", plan.WindowFunc{Name: "avg", Args: []*expr.Expr{amount}},
			plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.BoundPreceding, Offset: 4}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}, expr.Col(3, types.Int8, "ts")},
		{"rank", plan.WindowFunc{Name: "rank"}, plan.DefaultFrame, amount},
	} {
		b.Run(c.name, func(b *testing.B) {
			spec := &plan.OverSpec{PartitionBy: []*expr.Expr{expr.Col(1, types.Int4, "cust")}, OrderBy: []*expr.Expr{c.order},
				Order: []plan.SortKey{{Col: 0}}, Frame: c.frame, Funcs: []plan.WindowFunc{c.f}}
			op, err := operators.NewOverWindow(spec, 4, 0, &expr.Env{}, operators.AbortOnError)
			if err != nil {
				b.Fatal(err)
			}
			op.Bind(operators.NewMemKV())
			emit := func(*operators.Batch) error { return nil }
			b.ResetTimer()
			for i, batches := 0, 0; i < b.N; batches++ {
				batch := &operators.Batch{}
				for k := 0; k < 10_000 && i < b.N; k, i = k+1, i+1 {
					batch.Rows = append(batch.Rows, types.Row{types.NewInt8(int64(i)), types.NewInt(types.Int4, int64(i%1000)),
						types.NewInt(types.Int4, int64(i*7919%1000)), types.NewInt8(int64(i))})
				}
				if err := op.Process(batch, emit); err != nil {
					b.Fatal(err)
				}
				if batches%5 == 4 {
					if err := op.OnCheckpoint(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
