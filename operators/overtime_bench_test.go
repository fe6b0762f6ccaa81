package operators_test

import (
	"fmt"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// BenchmarkOverTimeRange: a stream's count and sum over a RANGE span of
// about width rows (one partition, a row every µs, the watermark after
// every 100 rows), with the aggregates sliding and folded afresh per row:
// `go test ./operators -run - -bench OverTimeRange`.
func BenchmarkOverTimeRange(b *testing.B) {
	v := expr.Col(2, types.Int8, "v")
	for _, width := range []int64{10, 100, 1000} {
		for _, slide := range []bool{true, false} {
			b.Run(fmt.Sprintf("width=%d/slide=%v", width, slide), func(b *testing.B) {
				defer operators.SetSlideAggregates(slide)()
				span := expr.Const(types.NewInterval(types.IntervalValue{Micros: width - 1}))
				spec := &plan.OverSpec{
					OrderBy: []*expr.Expr{expr.Col(1, types.Timestamp, "t")}, Order: []plan.SortKey{{Col: 0}},
					Frame: plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.BoundPreceding, Value: span}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}},
					Funcs: []plan.WindowFunc{{Name: "count", Star: true}, {Name: "sum", Args: []*expr.Expr{v}}},
				}
				op, err := operators.NewOverTime(spec, 3, 1, types.Timestamp, &expr.Env{}, func(_ *operators.Batch, _ int, err error) error { return err })
				if err != nil {
					b.Fatal(err)
				}
				op.Bind(operators.NewMemKV())
				emit := func(*operators.Batch) error { return nil }
				ts := int64(0)
				b.ResetTimer()
				for i := 0; i < b.N; i += 100 {
					var batch operators.Batch
					for range 100 {
						ts++
						batch.Rows = append(batch.Rows, types.Row{types.NewInt8(0), types.NewTimestamp(types.Timestamp, ts), types.NewInt8(ts % 97)})
					}
					if err := op.Process(&batch, emit); err != nil {
						b.Fatal(err)
					}
					if err := op.OnWatermark(ts, emit); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
