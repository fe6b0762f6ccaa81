package operators

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// Filter keeps the rows for which a predicate is true.
type Filter struct {
	Pred    expr.Predicate
	OnError RowError
	// Filtered counts rows dropped by the predicate (not by errors).
	Filtered int64
	out      Batch
	batch    *expr.Batch // the rows Pred's user function calls prefetch for; nil: none
}

// Process implements Operator.
func (f *Filter) Process(b *Batch, emit Emit) error {
	f.out.Reset()
	if f.batch != nil {
		f.batch.Next(b.Rows)
	}
	for i, row := range b.Rows {
		if f.batch != nil {
			f.batch.Index = i
		}
		ok, err := f.Pred(row)
		if err != nil {
			if err := f.OnError(b, i, err); err != nil {
				return err
			}
			continue
		}
		if !ok {
			f.Filtered++
			continue
		}
		f.out.Rows = append(f.out.Rows, row)
		if b.Source != nil {
			f.out.Source = append(f.out.Source, b.Source[i])
		}
		if b.Ops != nil {
			f.out.Ops = append(f.out.Ops, b.Ops[i])
		}
	}
	if len(f.out.Rows) == 0 {
		return nil
	}
	if b.Source == nil {
		f.out.Source = nil
	}
	if b.Ops == nil {
		f.out.Ops = nil
	}
	return emit(&f.out)
}

// Finish implements Operator.
func (f *Filter) Finish(Emit) error { return nil }

// Project computes new rows from expressions over each input row (the
// select, rename, drop and applyExpression steps all compile to it).
type Project struct {
	Exprs   []expr.Eval
	OnError RowError
	out     Batch
	batch   *expr.Batch // the rows Exprs' user function calls prefetch for; nil: none
}

// Process implements Operator.
func (p *Project) Process(b *Batch, emit Emit) error {
	w := len(p.Exprs)
	flat := make([]types.Value, len(b.Rows)*w)
	p.out.Reset()
	if p.batch != nil {
		p.batch.Next(b.Rows)
	}
	n := 0
rows:
	for i, row := range b.Rows {
		if p.batch != nil {
			p.batch.Index = i
		}
		dst := flat[n*w : (n+1)*w : (n+1)*w]
		for j, e := range p.Exprs {
			v, err := e(row)
			if err != nil {
				if err := p.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			dst[j] = v
		}
		n++
		p.out.Rows = append(p.out.Rows, types.Row(dst))
		if b.Source != nil {
			p.out.Source = append(p.out.Source, b.Source[i])
		}
		if b.Ops != nil {
			p.out.Ops = append(p.out.Ops, b.Ops[i])
		}
	}
	if len(p.out.Rows) == 0 {
		return nil
	}
	if b.Source == nil {
		p.out.Source = nil
	}
	if b.Ops == nil {
		p.out.Ops = nil
	}
	return emit(&p.out)
}

// Finish implements Operator.
func (p *Project) Finish(Emit) error { return nil }
