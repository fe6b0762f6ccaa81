package operators

import (
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// WindowAssign is a bounded query's TUMBLE or HOP: each input row comes
// out once per window holding its time, with the window's start and end
// appended (of the time column's type). The windows are the ones a
// continuous query's windowed aggregation puts the row in
// (plan.WindowSpec.Windows), so a bounded query answers what the view or
// stream holds once every window has closed. A row whose time is NULL is
// in no window.
type WindowAssign struct {
	Spec     plan.WindowSpec
	TimeCol  int
	TimeType types.Type

	wins [][2]int64
	out  Batch
}

// Process implements Operator.
func (w *WindowAssign) Process(b *Batch, emit Emit) error {
	w.out.Reset()
	for _, row := range b.Rows {
		t := row[w.TimeCol]
		if t.IsNull() {
			continue
		}
		w.wins = w.Spec.Windows(t.I, w.wins)
		for _, win := range w.wins {
			out := make(types.Row, len(row), len(row)+2)
			copy(out, row)
			out = append(out, types.NewTimestamp(w.TimeType, win[0]), types.NewTimestamp(w.TimeType, win[1]))
			w.out.Rows = append(w.out.Rows, out)
		}
	}
	if len(w.out.Rows) == 0 {
		return nil
	}
	return emit(&w.out)
}

// Finish implements Operator.
func (w *WindowAssign) Finish(Emit) error { return nil }
