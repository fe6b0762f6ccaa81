package join

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// batchRows is how many joined rows go downstream at once: a left row may
// match every right row (a cross join), and the output must flow in
// pieces rather than as one batch of len(left batch) × len(right) rows.
const batchRows = 1024

// checkEvery is how many candidate pairs the join tries between two looks
// at the query's end, so that a join whose ON rejects every pair still
// stops promptly when cancelled.
const checkEvery = 1 << 14

// Bounded is the join of a bounded query (plan.Join): the right input is
// held (charged to the query's budget) and hashed by its key, then the
// left input streams through it. Rows of NULL key never match. Its rows
// are laid out as the continuous joins' are (padded).
type Bounded struct {
	spec         *plan.Join
	lkeys, rkeys []expr.Eval
	on           expr.Predicate
	budget       *operators.Budget
	charged      int64

	right   []types.Row
	table   map[string][]int // right rows by key; nil without keys (every row a candidate)
	all     []int
	hashed  bool
	matched []bool // right rows that found a partner (RIGHT and FULL joins)
	out     *operators.Batch
	kb      []byte
	tried   int
	// pair holds a candidate pair while ON is tested: only a match is
	// copied out (a key shared by many rows on both sides, as an
	// interval join's, tried millions of pairs, each allocated)
	pair types.Row
}

// NewBounded compiles a bounded join's keys and ON against env; the rows
// it holds are charged to budget until Release.
func NewBounded(spec *plan.Join, env *expr.Env, budget *operators.Budget) (*Bounded, error) {
	j := &Bounded{spec: spec, budget: budget, out: &operators.Batch{}}
	var err error
	if j.lkeys, err = operators.CompileAll(spec.LeftKeys, env); err != nil {
		return nil, err
	}
	if j.rkeys, err = operators.CompileAll(spec.RightKeys, env); err != nil {
		return nil, err
	}
	if spec.On != nil {
		if j.on, err = expr.CompilePredicateEnv(spec.On, env); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// Release gives back what the join charged to the budget.
func (j *Bounded) Release() { j.budget.Release(j.charged) }

func (j *Bounded) charge(n int64) error {
	j.charged += n
	return j.budget.Grow(n)
}

// AddRight holds a batch of the right input's rows.
func (j *Bounded) AddRight(rows []types.Row) error {
	// the row itself, its index entry and the slice header that keeps it
	if err := j.charge(operators.BatchBytes(rows) + 32*int64(len(rows))); err != nil {
		return err
	}
	j.right = append(j.right, rows...)
	return nil
}

// hash indexes the right rows by key, once, before the first probe.
func (j *Bounded) hash() error {
	if j.hashed {
		return nil
	}
	j.hashed = true
	j.matched = make([]bool, len(j.right))
	if len(j.rkeys) == 0 {
		j.all = make([]int, len(j.right))
		for i := range j.all {
			j.all[i] = i
		}
		return nil
	}
	j.table = make(map[string][]int, len(j.right))
	var kb []byte
	for i, row := range j.right {
		var null bool
		var err error
		if kb, null, err = keyOf(j.rkeys, row, kb[:0]); err != nil {
			return err
		}
		if !null {
			if _, ok := j.table[string(kb)]; !ok {
				if err := j.charge(int64(len(kb)) + 48); err != nil {
					return err
				}
			}
			j.table[string(kb)] = append(j.table[string(kb)], i)
		}
		if i%checkEvery == checkEvery-1 {
			if err := j.budget.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Probe joins a batch of the left input's rows with the right rows and
// emits what they make.
func (j *Bounded) Probe(rows []types.Row, emit operators.Emit) error {
	if err := j.hash(); err != nil {
		return err
	}
	kind := j.spec.Kind
	for _, l := range rows {
		cands := j.all
		if j.table != nil {
			var null bool
			var err error
			if j.kb, null, err = keyOf(j.lkeys, l, j.kb[:0]); err != nil {
				return err
			}
			cands = nil
			if !null {
				cands = j.table[string(j.kb)]
			}
		}
		matched := false
		for _, ri := range cands {
			if j.tried++; j.tried == checkEvery {
				j.tried = 0
				if err := j.budget.Err(); err != nil {
					return err
				}
			}
			if j.on != nil {
				j.pair = fill(j.pair, j.spec.LeftWidth, j.spec.RightWidth, l, j.right[ri])
				ok, err := j.on(j.pair)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			row := padded(j.spec.LeftWidth, j.spec.RightWidth, l, j.right[ri], 0)
			matched = true
			if kind == "semi" || kind == "anti" {
				break // the left row alone, or not at all
			}
			j.matched[ri] = true
			if err := j.put(row, emit); err != nil {
				return err
			}
		}
		var alone types.Row
		switch {
		case (kind == "semi" && matched) || (kind == "anti" && !matched):
			alone = append(types.Row(nil), l...)
		case !matched && (kind == "left" || kind == "full"):
			alone = padded(j.spec.LeftWidth, j.spec.RightWidth, l, nil, 0)
		}
		if alone != nil {
			if err := j.put(alone, emit); err != nil {
				return err
			}
		}
	}
	// what a left batch produced goes on now, so rows keep flowing
	return j.flush(emit)
}

// Finish emits what the join holds back to the end: the right rows that
// never found a partner, NULL-padded, in a RIGHT or FULL join.
func (j *Bounded) Finish(emit operators.Emit) error {
	if j.spec.Kind != "right" && j.spec.Kind != "full" {
		return nil
	}
	if err := j.hash(); err != nil {
		return err
	}
	for i, m := range j.matched {
		if !m {
			if err := j.put(padded(j.spec.LeftWidth, j.spec.RightWidth, nil, j.right[i], 0), emit); err != nil {
				return err
			}
		}
	}
	return j.flush(emit)
}

func (j *Bounded) put(row types.Row, emit operators.Emit) error {
	j.out.Rows = append(j.out.Rows, row)
	if len(j.out.Rows) >= batchRows {
		return j.flush(emit)
	}
	return nil
}

func (j *Bounded) flush(emit operators.Emit) error {
	if len(j.out.Rows) == 0 {
		return nil
	}
	if err := j.budget.Err(); err != nil {
		return err
	}
	err := emit(j.out)
	j.out = &operators.Batch{Rows: make([]types.Row, 0, batchRows)} // the receiver may keep the rows
	return err
}

// keyOf encodes a row's join key; null reports a NULL in it.
func keyOf(keys []expr.Eval, row types.Row, buf []byte) ([]byte, bool, error) {
	for _, k := range keys {
		v, err := k(row)
		if err != nil {
			return buf, false, err
		}
		if v.IsNull() {
			return buf, true, nil
		}
		buf = types.AppendKey(buf, v)
	}
	return buf, false, nil
}

// padded is every join's output row: the left side's lw columns, the
// right side's rw (NULLs for a side that is nil), then extra more (the
// sign of a continuous join's rows), left NULL for the caller to set.
// fill is padded into buf, reused: left in the first lw columns, right
// in the rw after them, NULL where either is short or nil.
func fill(buf types.Row, lw, rw int, left, right types.Row) types.Row {
	if cap(buf) < lw+rw {
		buf = make(types.Row, lw+rw)
	}
	buf = buf[:lw+rw]
	clear(buf[copy(buf[:lw], left):lw])
	clear(buf[lw+copy(buf[lw:], right):])
	return buf
}

func padded(lw, rw int, left, right types.Row, extra int) types.Row {
	out := make(types.Row, lw+rw+extra)
	copy(out, left)
	copy(out[lw:], right)
	return out
}
