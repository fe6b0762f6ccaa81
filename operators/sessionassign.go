package operators

import (
	"bytes"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// SessionAssign is a bounded query's SESSION window (plan.OpSessionAssign):
// it holds every row until its input ends, then emits each one with the
// start and end of its session appended (of the time column's type).
//
// The rows of one GroupBy value, ordered by time, split into sessions
// wherever two neighbours are more than Gap apart; a session runs from
// its first time to its last plus Gap. These are the sessions a
// continuous query's SessionAggregate ends with once every row has come
// in time: it merges a row into each session it is within Gap of, which
// joins the same runs. It is written apart from SessionAggregate on
// purpose, so that a view of sessions is checked against an answer that
// does not share its code. A row whose time is NULL is in no session.
type SessionAssign struct {
	Gap      int64
	TimeCol  int
	TimeType types.Type
	GroupBy  []expr.Eval
	OnError  RowError
	Budget   *Budget // charged with the rows held; nil: unlimited

	rows    []sessionRow
	charged int64
}

// sessionRow is a held row with its group's key and its time.
type sessionRow struct {
	key []byte
	t   int64
	row types.Row
}

// Process implements Operator.
func (s *SessionAssign) Process(b *Batch, _ Emit) error {
	var n int64
rows:
	for i, row := range b.Rows {
		t := row[s.TimeCol]
		if t.IsNull() {
			continue
		}
		var key []byte
		for _, g := range s.GroupBy {
			v, err := g(row)
			if err != nil {
				if err := s.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			key = types.AppendKey(key, v)
		}
		s.rows = append(s.rows, sessionRow{key: key, t: t.I, row: row})
		n += RowBytes(row) + int64(len(key)) + 48
	}
	if s.Budget == nil {
		return nil
	}
	s.charged += n
	return s.Budget.Grow(n)
}

// Finish implements Operator.
func (s *SessionAssign) Finish(emit Emit) error {
	rows := s.rows
	s.rows = nil
	defer func() {
		s.Budget.Release(s.charged)
		s.charged = 0
	}()
	err := sortStable(s.Budget, rows, func(x, y sessionRow) bool {
		if c := bytes.Compare(x.key, y.key); c != 0 {
			return c < 0
		}
		return x.t < y.t
	})
	if err != nil {
		return err
	}
	out := &Batch{}
	for first := 0; first < len(rows); {
		last := first // the session's last row
		for last+1 < len(rows) && bytes.Equal(rows[last+1].key, rows[first].key) && rows[last+1].t-rows[last].t <= s.Gap {
			last++
		}
		start := types.NewTimestamp(s.TimeType, rows[first].t)
		end := types.NewTimestamp(s.TimeType, rows[last].t+s.Gap)
		for _, r := range rows[first : last+1] {
			row := make(types.Row, len(r.row), len(r.row)+2)
			copy(row, r.row)
			out.Rows = append(out.Rows, append(row, start, end))
			if len(out.Rows) == 1024 {
				if err := emit(out); err != nil {
					return err
				}
				out = &Batch{}
			}
		}
		first = last + 1
	}
	if len(out.Rows) == 0 {
		return nil
	}
	return emit(out)
}
