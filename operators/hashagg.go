package operators

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// AggCall is one aggregate of a GROUP BY: the function and its argument
// (nil for count(*)).
type AggCall struct {
	Func     *AggFunc
	Arg      expr.Eval
	Distinct bool
	// Order, when set, is agg(x ORDER BY …): Arg gives a record of x and
	// the sort keys, whose fields 1… Order's keys name.
	Order []plan.SortKey
}

func (c *AggCall) newAcc() Accumulator {
	if c.Order != nil {
		inner := c.Func.New
		if c.Distinct { // the keys are the value: sorted, then deduplicated
			inner = func() Accumulator {
				return newDistinctAcc(c.Func)
			}
		}
		return &orderedAcc{keys: c.Order, inner: inner}
	}
	if c.Distinct {
		return newDistinctAcc(c.Func)
	}
	return c.Func.New()
}

// stateAcc is newAcc for an aggregate of a continuous query, whose
// accumulators live in operator state: one that keeps its rows
// (string_agg, array_agg, any ORDER BY aggregate) is a listAcc.
func (c *AggCall) stateAcc() Accumulator {
	if c.Order == nil && !c.Func.Grows {
		return c.newAcc()
	}
	inner := c.Func.New
	if c.Distinct {
		inner = func() Accumulator { return newDistinctAcc(c.Func) }
	}
	return &listAcc{keys: c.Order, inner: inner}
}

// aggAccBytes is what an accumulator costs, roughly (an interface, its
// struct, a numeric sum's decimal).
const aggAccBytes = 64

// HashAggregate groups rows by the GroupBy expressions and folds the
// aggregates per group; at Finish it emits one row per group: the group
// values followed by the aggregate results. Without GROUP BY it emits one
// row even for empty input, as SQL requires.
type HashAggregate struct {
	GroupBy []expr.Eval
	Aggs    []AggCall
	OnError RowError
	Budget  *Budget // charged with the groups held; nil: unlimited

	charged int64
	groups  map[string]*aggGroup
	order   []*aggGroup
	key     []byte
	vals    types.Row
	args    []types.Value
}

type aggGroup struct {
	vals types.Row
	accs []Accumulator
}

// Groups returns how many groups the operator holds.
func (h *HashAggregate) Groups() int { return len(h.order) }

// Process implements Operator.
func (h *HashAggregate) Process(b *Batch, _ Emit) error {
	if h.groups == nil {
		h.groups = map[string]*aggGroup{}
		h.vals = make(types.Row, len(h.GroupBy))
	}
rows:
	for i, row := range b.Rows {
		h.key = h.key[:0]
		for j, g := range h.GroupBy {
			v, err := g(row)
			if err != nil {
				if err := h.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			h.vals[j] = v
			h.key = types.AppendKey(h.key, v)
		}
		// Arguments first: a poison row must not create a group or count.
		if cap(h.args) < len(h.Aggs) {
			h.args = make([]types.Value, len(h.Aggs))
		}
		args := h.args[:len(h.Aggs)]
		for j := range h.Aggs {
			args[j] = types.NullValue
			if a := h.Aggs[j].Arg; a != nil {
				var err error
				if args[j], err = a(row); err != nil {
					if err := h.OnError(b, i, err); err != nil {
						return err
					}
					continue rows
				}
			}
		}
		if i&1023 == 1023 {
			if err := h.Budget.Err(); err != nil {
				return err
			}
		}
		grp, ok := h.groups[string(h.key)]
		if !ok {
			if h.Budget != nil {
				n := 2*int64(len(h.key)) + RowBytes(h.vals) + int64(len(h.Aggs))*aggAccBytes + 64
				h.charged += n
				if err := h.Budget.Grow(n); err != nil {
					return err
				}
			}
			grp = &aggGroup{vals: append(types.Row(nil), h.vals...), accs: make([]Accumulator, len(h.Aggs))}
			for j := range h.Aggs {
				grp.accs[j] = h.Aggs[j].newAcc()
			}
			h.groups[string(h.key)] = grp
			h.order = append(h.order, grp)
		}
		for j, v := range args {
			if h.Aggs[j].Distinct && h.Budget != nil { // its set of values seen
				n := 2*int64(len(v.S)) + 2*valueBytes
				h.charged += n
				if err := h.Budget.Grow(n); err != nil {
					return err
				}
			}
			var before int64
			grows := (h.Aggs[j].Func.Grows || h.Aggs[j].Order != nil) && h.Budget != nil
			if grows {
				before = grp.accs[j].(sizedAcc).Size()
			}
			if err := grp.accs[j].Add(v); err != nil {
				if err := h.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			if grows { // string_agg, array_agg: charge what the value added
				if n := grp.accs[j].(sizedAcc).Size() - before; n != 0 {
					h.charged += n
					if err := h.Budget.Grow(n); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// Finish implements Operator.
func (h *HashAggregate) Finish(emit Emit) error {
	if len(h.order) == 0 && len(h.GroupBy) == 0 {
		grp := &aggGroup{accs: make([]Accumulator, len(h.Aggs))}
		for j := range h.Aggs {
			grp.accs[j] = h.Aggs[j].newAcc()
		}
		h.order = append(h.order, grp)
	}
	const batchSize = 1024
	out := &Batch{}
	for _, g := range h.order {
		row := make(types.Row, 0, len(g.vals)+len(g.accs))
		row = append(row, g.vals...)
		for _, a := range g.accs {
			row = append(row, a.Result())
		}
		out.Rows = append(out.Rows, row)
		if len(out.Rows) == batchSize {
			if err := emit(out); err != nil {
				return err
			}
			out = &Batch{}
		}
	}
	h.groups, h.order = nil, nil
	h.Budget.Release(h.charged)
	h.charged = 0
	if len(out.Rows) > 0 {
		return emit(out)
	}
	return nil
}
