package operators

import (
	"errors"

	"github.com/fvsql/fvsql/types"
)

// Batch is a group of rows moving between operators.
type Batch struct {
	Rows []types.Row
	// Source holds, for each row, an opaque reference to the input record
	// it came from (for poison-row reports); it may be nil.
	Source []any
	// Ops, when set, makes the batch a changelog: the change each row is.
	Ops []Op
}

// Len returns the number of rows.
func (b *Batch) Len() int { return len(b.Rows) }

// Reset empties a batch an operator reuses for its output, dropping its
// references to the previous rows and records: a reused slice keeps the
// entries past its length, which would otherwise hold a large batch's
// rows alive long after it was emitted.
func (b *Batch) Reset() {
	clear(b.Rows)
	clear(b.Source)
	b.Rows, b.Source, b.Ops = b.Rows[:0], b.Source[:0], b.Ops[:0]
}

// Emit passes a batch downstream. The receiver must not keep b itself
// after returning, but may keep its rows.
type Emit func(b *Batch) error

// RowError decides what a per-row evaluation error does: return nil to
// drop the row and go on (poison row), or an error to stop.
type RowError func(b *Batch, i int, err error) error

// AbortOnError is the RowError of bounded queries.
func AbortOnError(_ *Batch, _ int, err error) error { return err }

// Operator is one step.
type Operator interface {
	// Process consumes a batch, emitting any output.
	Process(b *Batch, emit Emit) error
	// Finish is called once when a bounded input ends; stateful operators
	// emit what they hold.
	Finish(emit Emit) error
}

// ErrDone is returned up the chain by an operator that needs no more
// input (LIMIT reached); sources stop reading when they see it.
var ErrDone = errors.New("operators: done")

// Chain runs operators in sequence into a sink.
type Chain struct {
	ops   []Operator
	emits []Emit
	sink  Emit
}

// NewChain links ops so that each one's output feeds the next and the last
// one's goes to sink.
func NewChain(sink Emit, ops ...Operator) *Chain {
	c := &Chain{ops: ops, emits: make([]Emit, len(ops)), sink: sink}
	for i := len(ops) - 1; i >= 0; i-- {
		if i == len(ops)-1 {
			c.emits[i] = sink
			continue
		}
		next, nextEmit := ops[i+1], c.emits[i+1]
		c.emits[i] = func(b *Batch) error { return next.Process(b, nextEmit) }
	}
	return c
}

// EmitOf is where operator i of the chain emits: the rest of the chain.
// A stateful operator emitting outside Process (on a watermark) must emit
// there, so that the steps after it still apply.
func (c *Chain) EmitOf(i int) Emit { return c.emits[i] }

// Push feeds a batch into the chain.
func (c *Chain) Push(b *Batch) error {
	if len(c.ops) == 0 {
		return c.sink(b)
	}
	return c.ops[0].Process(b, c.emits[0])
}

// Finish ends the input: each operator in turn flushes into the rest of
// the chain. An ErrDone from below (a limit reached) ends one operator's
// flush, not the others': the operators after the limit (an aggregate
// over a LIMIT subquery) still flush what they hold. It is returned at
// the end.
func (c *Chain) Finish() error {
	var done error
	for i, op := range c.ops {
		if err := op.Finish(c.emits[i]); errors.Is(err, ErrDone) {
			done = err
		} else if err != nil {
			return err
		}
	}
	return done
}
