package operators

import (
	"container/heap"
	"sort"

	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// CompareRows orders two rows by keys.
func CompareRows(keys []plan.SortKey, a, b types.Row) int {
	for _, k := range keys {
		x, y := a[k.Col], b[k.Col]
		var c int
		switch {
		case x.K == types.Null && y.K == types.Null:
			c = 0
		case x.K == types.Null:
			c = 1
			if k.NullsFirst {
				c = -1
			}
			if c != 0 {
				return c
			}
		case y.K == types.Null:
			c = -1
			if k.NullsFirst {
				c = 1
			}
			return c
		default:
			c = types.Compare(x, y)
			if k.Desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// Sort buffers its input and emits it ordered at Finish. With Limit >= 0
// it keeps only the first Limit rows in a heap (top-N), so memory stays
// bounded by the limit rather than the input.
type Sort struct {
	Keys   []plan.SortKey
	Limit  int64   // -1: no limit
	Budget *Budget // charged with the rows held; nil: unlimited

	rows    []types.Row
	h       *rowHeap
	charged int64
}

func (s *Sort) charge(rows []types.Row) error {
	if s.Budget == nil {
		return nil
	}
	n := BatchBytes(rows)
	s.charged += n
	return s.Budget.Grow(n)
}

// Process implements Operator.
func (s *Sort) Process(b *Batch, _ Emit) error {
	if s.Limit < 0 {
		if err := s.charge(b.Rows); err != nil {
			return err
		}
		s.rows = append(s.rows, b.Rows...)
		return nil
	}
	if s.Limit == 0 {
		return nil
	}
	if s.h == nil {
		s.h = &rowHeap{keys: s.Keys}
	}
	for i, r := range b.Rows {
		if int64(s.h.Len()) < s.Limit {
			if err := s.charge(b.Rows[i : i+1]); err != nil {
				return err
			}
			heap.Push(s.h, r)
			continue
		}
		// the heap's root is the largest kept row
		if CompareRows(s.Keys, r, s.h.rows[0]) < 0 {
			s.h.rows[0] = r
			heap.Fix(s.h, 0)
		}
	}
	return nil
}

// Finish implements Operator.
func (s *Sort) Finish(emit Emit) error {
	rows := s.rows
	if s.h != nil {
		rows = s.h.rows
	}
	defer func() {
		s.Budget.Release(s.charged)
		s.charged = 0
	}()
	stopped := sortStable(s.Budget, rows, func(x, y types.Row) bool { return CompareRows(s.Keys, x, y) < 0 })
	s.rows, s.h = nil, nil
	if stopped != nil {
		return stopped
	}
	for len(rows) > 0 {
		n := min(len(rows), 1024)
		if err := emit(&Batch{Rows: rows[:n]}); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// sortStable sorts xs stably by less, unless the query of budget b ends
// first: a sort cannot be interrupted, so once the query has ended every
// comparison says "equal", which ends the sort in a fast pass, and the
// query's error comes back.
func sortStable[T any](b *Budget, xs []T, less func(x, y T) bool) error {
	var cmps int
	var stopped error
	sort.SliceStable(xs, func(i, j int) bool {
		if cmps++; cmps&(1<<14-1) == 0 && stopped == nil {
			stopped = b.Err()
		}
		return stopped == nil && less(xs[i], xs[j])
	})
	return stopped
}

// rowHeap is a max-heap by the sort keys.
type rowHeap struct {
	keys []plan.SortKey
	rows []types.Row
}

func (h *rowHeap) Len() int           { return len(h.rows) }
func (h *rowHeap) Less(i, j int) bool { return CompareRows(h.keys, h.rows[i], h.rows[j]) > 0 }
func (h *rowHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *rowHeap) Push(x any)         { h.rows = append(h.rows, x.(types.Row)) }
func (h *rowHeap) Pop() any {
	r := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return r
}

// Limit passes through rows after skipping Offset, up to Count (-1: all),
// and then reports ErrDone so the source stops.
type Limit struct {
	Offset int64
	Count  int64
	seen   int64
	out    Batch
}

// Process implements Operator.
func (l *Limit) Process(b *Batch, emit Emit) error {
	l.out.Reset()
	for _, r := range b.Rows {
		if l.Count >= 0 && l.seen >= l.Offset+l.Count {
			break
		}
		if l.seen >= l.Offset {
			l.out.Rows = append(l.out.Rows, r)
		}
		l.seen++
	}
	if len(l.out.Rows) > 0 {
		if err := emit(&l.out); err != nil {
			return err
		}
	}
	if l.Count >= 0 && l.seen >= l.Offset+l.Count {
		return ErrDone
	}
	return nil
}

// Finish implements Operator.
func (l *Limit) Finish(Emit) error { return nil }

// Distinct drops rows equal to one already emitted.
type Distinct struct {
	Budget *Budget // charged with the keys seen; nil: unlimited

	seen map[string]struct{}
	key  []byte
	out  Batch
}

// Process implements Operator.
func (d *Distinct) Process(b *Batch, emit Emit) error {
	if d.seen == nil {
		d.seen = map[string]struct{}{}
	}
	d.out.Reset()
	for _, r := range b.Rows {
		d.key = types.AppendKeyRow(d.key[:0], r)
		if _, ok := d.seen[string(d.key)]; ok {
			continue
		}
		if err := d.Budget.Grow(int64(len(d.key)) + 48); err != nil {
			return err
		}
		d.seen[string(d.key)] = struct{}{}
		d.out.Rows = append(d.out.Rows, r)
	}
	if len(d.out.Rows) == 0 {
		return nil
	}
	return emit(&d.out)
}

// Finish implements Operator.
func (d *Distinct) Finish(Emit) error { return nil }
