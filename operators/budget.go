package operators

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Budget is what one bounded query may spend: the bytes of the rows it
// materializes (join build sides, sort buffers, aggregate groups,
// DISTINCT sets, subquery results) and the context that ends it
// (CancelRequest, statement_timeout, a closed socket). Operators that
// hold rows charge them with Grow; loops that run long without emitting
// ask Err. A nil *Budget is unlimited and never cancelled, which is what
// pipelines (whose state lives in Pebble) use.
//
// The accounting is approximate: RowBytes counts a row's values by their
// in-memory size (the Value header plus string and numeric payloads), not
// allocator overhead or map buckets; it errs low by a small factor, never
// by the size of the data.
type Budget struct {
	// Limit is the most bytes the query may hold (0: unlimited).
	Limit int64
	// LimitName names the setting that sets Limit, for the error's DETAIL.
	LimitName string
	Ctx       context.Context
	used      atomic.Int64
}

// NewBudget returns a budget of limit bytes (0: unlimited) ending with ctx.
func NewBudget(ctx context.Context, limit int64, limitName string) *Budget {
	return &Budget{Limit: limit, LimitName: limitName, Ctx: ctx}
}

// Grow charges n bytes. It fails with SQLSTATE 53200 when the total
// passes the limit, or with the context's cause once it has ended.
// It is safe for concurrent use.
func (b *Budget) Grow(n int64) error {
	if b == nil {
		return nil
	}
	used := b.used.Add(n)
	if b.Limit > 0 && used > b.Limit {
		return b.exceeded()
	}
	return nil
}

// Release gives back n bytes charged with Grow (rows handed on or dropped).
func (b *Budget) Release(n int64) {
	if b != nil {
		b.used.Add(-n)
	}
}

// Account is a holder's share of a budget (a bounded query's step that
// keeps rows while it runs): it grows and gives back as the holder's
// rows come and go, and gives back what is left at once when the holder
// is done (Close).
type Account struct {
	b *Budget
	n int64
}

// Account opens a share of b.
func (b *Budget) Account() *Account { return &Account{b: b} }

// Grow charges n bytes to the account and its budget (see Budget.Grow).
func (a *Account) Grow(n int64) error {
	a.n += n
	return a.b.Grow(n)
}

// Release gives back n of the account's bytes.
func (a *Account) Release(n int64) {
	a.n -= n
	a.b.Release(n)
}

// Close gives back every byte the account still holds.
func (a *Account) Close() { a.Release(a.n) }

// Used reports the bytes charged now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Err reports why the query must stop: its context's cause once it has
// ended, else nil. It costs a mutex; loops call it every few thousand
// iterations.
func (b *Budget) Err() error {
	if b == nil || b.Ctx == nil {
		return nil
	}
	if b.Ctx.Err() != nil {
		return context.Cause(b.Ctx)
	}
	return nil
}

func (b *Budget) exceeded() error {
	name := b.LimitName
	if name == "" {
		name = "the per-query memory limit"
	}
	e := pgerror.New(pgerror.OutOfMemory, "out of memory")
	e.Detail = fmt.Sprintf("The query holds more than %s of rows in memory, the limit set by %s.", formatBytes(b.Limit), name)
	e.Hint = "Add a LIMIT or a more selective WHERE clause, or raise the limit."
	return e
}

func formatBytes(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// valueBytes is the in-memory size of a types.Value header.
const valueBytes = 48

// RowBytes estimates the memory a row holds: its slice header, its
// values' headers and their payloads.
func RowBytes(r types.Row) int64 {
	n := int64(24 + len(r)*valueBytes)
	for i := range r {
		n += int64(len(r[i].S))
		if r[i].N != nil {
			n += 32 + int64(cap(r[i].N.Coeff.Bits()))*8
		}
	}
	return n
}

// BatchBytes is RowBytes summed over a batch's rows.
func BatchBytes(rows []types.Row) int64 {
	var n int64
	for _, r := range rows {
		n += RowBytes(r)
	}
	return n
}
