package operators

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// ProjectSet runs the set-returning functions of a select list, as
// PostgreSQL's ProjectSet does: for each input row every function is
// called, the row is repeated as many times as the longest result, and
// each repeat carries the input's columns followed by each function's
// columns for that position (NULLs once a shorter result has ended). A
// row for which every function returns nothing produces no rows.
type ProjectSet struct {
	Sets   []expr.SetEval
	Widths []int
	// Outer puts out a row for which every function returns nothing,
	// its functions' columns NULL (LEFT JOIN LATERAL … ON true).
	Outer bool
	// Ordinal appends each output row's position among its input row's
	// (1-based, an int8; NULL for a padded row) after the functions'
	// columns.
	Ordinal bool
	OnError RowError
	out     Batch
}

// Process implements Operator.
func (p *ProjectSet) Process(b *Batch, emit Emit) error {
	p.out.Reset()
	results := make([][]types.Row, len(p.Sets))
	extra := 0
	for _, w := range p.Widths {
		extra += w
	}
	if p.Ordinal {
		extra++
	}
rows:
	for i, row := range b.Rows {
		n := 0
		for j, set := range p.Sets {
			rs, err := set(row)
			if err != nil {
				if err := p.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			results[j] = rs
			n = max(n, len(rs))
		}
		n0 := n
		if n == 0 && p.Outer {
			n = 1 // the row alone, padded: every result is shorter
		}
		for r := range n {
			out := make(types.Row, len(row), len(row)+extra)
			copy(out, row)
			for j, rs := range results {
				if r < len(rs) {
					out = append(out, rs[r]...)
				} else {
					out = append(out, make(types.Row, p.Widths[j])...)
				}
			}
			if p.Ordinal {
				if r < n0 {
					out = append(out, types.NewInt8(int64(r+1)))
				} else {
					out = append(out, types.NullValue) // the padded row
				}
			}
			p.out.Rows = append(p.out.Rows, out)
			if b.Source != nil {
				p.out.Source = append(p.out.Source, b.Source[i])
			}
			if b.Ops != nil {
				p.out.Ops = append(p.out.Ops, b.Ops[i])
			}
		}
		if len(p.out.Rows) >= 1024 {
			if err := p.flush(b, emit); err != nil {
				return err
			}
		}
	}
	if len(p.out.Rows) == 0 {
		return nil
	}
	return p.flush(b, emit)
}

func (p *ProjectSet) flush(in *Batch, emit Emit) error {
	if in.Source == nil {
		p.out.Source = nil
	}
	if in.Ops == nil {
		p.out.Ops = nil
	}
	err := emit(&p.out)
	p.out.Reset()
	return err
}

// Finish implements Operator.
func (p *ProjectSet) Finish(Emit) error { return nil }
