package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// lookupDataset scans by key.
type lookupDataset struct {
	kd  KeyedDataset
	key types.Row
}

func (l lookupDataset) Scan(ctx context.Context, fn func(int32, *operators.Batch) error) error {
	return l.kd.Lookup(ctx, l.key, fn)
}

// Dataset is a bounded input.
type Dataset interface {
	// Scan calls fn with batches of rows. Calls for different shards may
	// run concurrently; within a shard they are in order. Scan returns when
	// the data present at its start has been read, or fn failed.
	Scan(ctx context.Context, fn func(shard int32, b *operators.Batch) error) error
}

// ColumnPruner is an optional ability of a Dataset: it need only fill the
// columns marked (others may be left NULL), set before Scan.
type ColumnPruner interface {
	Prune(need []bool)
}

// KeyedDataset is a Dataset that can find rows by key without a scan.
type KeyedDataset interface {
	Dataset
	Lookup(ctx context.Context, key types.Row, fn func(shard int32, b *operators.Batch) error) error
}

// Resolver finds datasets by name (the host's side of bounded queries).
type Resolver interface {
	Dataset(ctx context.Context, name string) (Dataset, error)
}

// Limits are what one bounded query may spend, and whose it is.
type Limits struct {
	// MemoryBytes bounds the bytes of the rows the query materializes
	// (join build sides, sorts, aggregates, DISTINCT, subquery results);
	// 0 is unlimited. Going over fails the query with SQLSTATE 53200.
	MemoryBytes int64
	// MemoryName names the setting of MemoryBytes, for the error's DETAIL.
	MemoryName string
	// Session is the host's session, given to functions that act on it
	// (expr.Env.Session).
	Session any
	// Funcs resolves the user functions the query calls (expr.Env.Funcs).
	Funcs expr.UserFuncs
}

// RunBounded runs a bounded plan, sending result batches to sink from one
// goroutine. params are the bound values of $1…$n; onErr is the policy for
// per-row errors. It is RunBoundedLimits without a memory limit.
func RunBounded(ctx context.Context, n plan.Node, r Resolver, params []types.Value, onErr operators.RowError, sink operators.Emit) error {
	return RunBoundedLimits(ctx, n, r, params, onErr, Limits{}, sink)
}

// RunBoundedLimits is RunBounded within limits. Rows reach sink as they
// are produced: only the operators that must see all their input first
// (sorts, aggregates, a join's right side) hold rows, charged to the
// query's memory account. Every loop watches ctx: once it ends (a
// CancelRequest, statement_timeout, a closed connection) the query stops
// within a batch and returns context.Cause(ctx).
func RunBoundedLimits(ctx context.Context, n plan.Node, r Resolver, params []types.Value, onErr operators.RowError, lim Limits, sink operators.Emit) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := &query{r: r, onErr: onErr, budget: operators.NewBudget(ctx, lim.MemoryBytes, lim.MemoryName)}
	// now() and its kin return the statement's start for every row
	err := q.run(ctx, n, &expr.Env{Params: params, Session: lim.Session, Ctx: ctx, Funcs: lim.Funcs, Now: time.Now().UnixMicro()}, sink)
	if errors.Is(err, operators.ErrDone) {
		return nil
	}
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return err
}

// query is one bounded execution: its resolver, row-error policy and
// budget (memory account and cancellation).
type query struct {
	r      Resolver
	onErr  operators.RowError
	budget *operators.Budget
	memo   subqueryMemo
	// work holds the work tables of the recursive queries running, by
	// their plan.Recursive's ID.
	work map[int64][]types.Row
}

// valuesBatch is how many constant rows go downstream at once.
const valuesBatch = 1024

func (q *query) run(ctx context.Context, n plan.Node, env *expr.Env, emit operators.Emit) error {
	if err := q.budget.Err(); err != nil {
		return err
	}
	switch n := n.(type) {
	case *plan.Values:
		return q.emitRows(n.Rows, emit)
	case *plan.Source:
		return q.runSource(ctx, n, nil, nil, env, emit)
	case *plan.FuncRows:
		return q.runFuncRows(ctx, n, env, emit)
	case *plan.Join:
		return q.runJoin(ctx, n, env, emit)
	case *plan.Apply:
		return q.runApply(ctx, n, env, emit)
	case *plan.SetOp:
		return q.runSetOp(ctx, n, env, emit)
	case *plan.Recursive:
		return q.runRecursive(ctx, n, env, emit)
	case *plan.WorkTable:
		return q.emitRows(q.work[n.ID], emit)
	case *plan.UnionAll:
		for _, in := range n.Inputs {
			if err := q.run(ctx, in, env, emit); err != nil {
				return err
			}
		}
		return nil
	case *plan.Chain:
		if len(n.Subqueries) > 0 {
			env = q.subqueryEnv(ctx, n, env)
		}
		// The stateless steps right above a source run per shard in parallel.
		prefix := 0
		if _, ok := n.Input.(*plan.Source); ok {
			for prefix < len(n.Steps) && n.Steps[prefix].Stateless() {
				prefix++
			}
		}
		ops := make([]operators.Operator, 0, len(n.Steps)-prefix)
		res := &operators.Resources{Ctx: ctx, Budget: q.budget}
		for i := prefix; i < len(n.Steps); i++ {
			op, err := BuildStep(&n.Steps[i], env, q.onErr, res)
			if err != nil {
				return err
			}
			ops = append(ops, watched{op, q.budget})
		}
		// A LIMIT reached (ErrDone) ends the input of the chain it is in,
		// and nothing else: the chain still flushes (an aggregate over
		// a LIMIT emits its rows), and the query around it (a join's
		// other side, the next UNION ALL branch, the outer query of a
		// subquery) goes on. Only an ErrDone from above, the sink's,
		// goes further up.
		sinkDone := false
		sink := func(b *operators.Batch) error {
			err := emit(b)
			if errors.Is(err, operators.ErrDone) {
				sinkDone = true
			}
			return err
		}
		chain := operators.NewChain(sink, ops...)
		push := sink
		if len(ops) > 0 {
			push = chain.Push
		}
		var err error
		if src, ok := n.Input.(*plan.Source); ok {
			var need []bool
			if len(n.Subqueries) == 0 { // outer references would read columns too
				need = InputColumns(n.Steps, nil)
			}
			err = q.runSource(ctx, src, n.Steps[:prefix], need, env, push)
		} else {
			err = q.run(ctx, n.Input, env, push)
		}
		if err != nil && !errors.Is(err, operators.ErrDone) {
			return err
		}
		if len(ops) > 0 {
			if ferr := chain.Finish(); ferr != nil && !errors.Is(ferr, operators.ErrDone) {
				return ferr
			}
		}
		if sinkDone {
			return operators.ErrDone
		}
		return nil
	}
	return errors.New("engine: unknown plan node")
}

// watched is an operator of a bounded chain that stops at its next batch
// once the query has ended.
type watched struct {
	operators.Operator
	b *operators.Budget
}

func (w watched) Process(b *operators.Batch, emit operators.Emit) error {
	if err := w.b.Err(); err != nil {
		return err
	}
	return w.Operator.Process(b, emit)
}

func (w watched) Finish(emit operators.Emit) error {
	if err := w.b.Err(); err != nil {
		return err
	}
	return w.Operator.Finish(emit)
}

// runSource scans a dataset, running the stateless prefix steps on each
// shard's goroutine, and hands the results to emit on this goroutine.
func (q *query) runSource(ctx context.Context, src *plan.Source, prefix []plan.Step, need []bool, env *expr.Env, emit operators.Emit) error {
	onErr := q.onErr
	ds, err := q.r.Dataset(ctx, src.Dataset)
	if err != nil {
		return err
	}
	if p, ok := ds.(ColumnPruner); ok && need != nil {
		p.Prune(need)
	}
	if kd, ok := ds.(KeyedDataset); ok && len(src.Lookup) > 0 {
		key := make(types.Row, len(src.Lookup))
		for i, e := range src.Lookup {
			ev, err := expr.CompileEnv(e, env)
			if err != nil {
				return err
			}
			if key[i], err = ev(nil); err != nil {
				return err
			}
			if key[i].IsNull() {
				return nil // = NULL matches nothing
			}
		}
		ds = lookupDataset{kd, key}
	}
	// Compile once up front so plan errors surface before any data moves.
	for i := range prefix {
		if _, err := BuildStep(&prefix[i], env, onErr, nil); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan *operators.Batch, 4)
	var (
		mu     sync.Mutex
		chains = map[int32]*operators.Chain{}
	)
	shardChain := func(shard int32) (*operators.Chain, error) {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := chains[shard]; ok {
			return c, nil
		}
		ops := make([]operators.Operator, len(prefix))
		for i := range prefix {
			op, err := BuildStep(&prefix[i], env, onErr, nil)
			if err != nil {
				return nil, err
			}
			ops[i] = op
		}
		c := operators.NewChain(func(b *operators.Batch) error {
			// Operators reuse their output batch: hand over a copy of the row headers.
			cp := &operators.Batch{Rows: append([]types.Row(nil), b.Rows...)}
			select {
			case out <- cp:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, ops...)
		chains[shard] = c
		return c, nil
	}
	scanErr := make(chan error, 1)
	go func() {
		defer close(out)
		scanErr <- ds.Scan(ctx, func(shard int32, b *operators.Batch) error {
			if len(prefix) == 0 {
				select {
				case out <- b:
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
			c, err := shardChain(shard)
			if err != nil {
				return err
			}
			return c.Push(b)
		})
	}()
	var emitErr error
	for b := range out {
		if emitErr != nil {
			continue // drain so the scan can finish
		}
		if err := emit(b); err != nil {
			emitErr = err
			cancel()
		}
	}
	err = <-scanErr
	if emitErr != nil {
		return emitErr
	}
	if err != nil && ctx.Err() != nil && context.Cause(ctx) == context.Canceled {
		return err
	}
	return err
}

// subqueryEnv gives a chain's expressions their subqueries: each runs as
// a bounded plan (with the outer row for correlated ones) and yields its
// first column. Results are kept for the whole query (subqueryMemo): an
// uncorrelated subquery runs once, even inside a correlated one; a
// correlated one whose outer columns the planner listed runs once per
// distinct combination of their values.
func (q *query) subqueryEnv(ctx context.Context, c *plan.Chain, env *expr.Env) *expr.Env {
	out := &expr.Env{Params: env.Params, Outer: env.Outer, Session: env.Session, Funcs: env.Funcs, Now: env.Now}
	// A subquery reading a recursive query's work table, which changes
	// from one run of the recursive step to the next, is never kept.
	work := make([]bool, len(c.Subqueries))
	for i := range c.Subqueries {
		work[i] = readsWorkTable(c.Subqueries[i].Plan)
	}
	out.Subquery = func(i int, outer types.Row) ([]types.Value, error) {
		return runKept(ctx, q, &c.Subqueries[i], work[i], env, outer,
			func(b *operators.Batch) int64 {
				n := int64(len(b.Rows)) * 48
				for _, row := range b.Rows {
					if len(row) > 0 {
						n += int64(len(row[0].S))
					}
				}
				return n
			},
			func(vals []types.Value, b *operators.Batch) []types.Value {
				for _, row := range b.Rows {
					if len(row) > 0 {
						vals = append(vals, row[0])
					} else {
						vals = append(vals, types.NullValue)
					}
				}
				return vals
			})
	}
	return out
}

// runKept runs subquery sq for the outer row and returns its result, or
// the result the memo kept of a run for the same outer values: add
// gathers it batch by batch, each batch's size charged to the query's
// budget first, and kept charged while the memo keeps the result. work:
// sq reads a recursive query's work table, which changes from one run
// of the recursive step to the next, so its result is never kept.
func runKept[T any](ctx context.Context, q *query, sq *plan.Subquery, work bool, env *expr.Env, outer types.Row,
	size func(*operators.Batch) int64, add func(T, *operators.Batch) T) (T, error) {
	key, memo := q.memo.key(sq, outer)
	memo = memo && !work
	if memo {
		if kept, ok := q.memo.get(key); ok {
			return kept.(T), nil
		}
	}
	sub := &expr.Env{Params: env.Params, Outer: outer, Session: env.Session, Funcs: env.Funcs, Now: env.Now}
	var res T
	var charged int64
	err := q.run(ctx, sq.Plan, sub, func(b *operators.Batch) error {
		n := size(b)
		charged += n
		if err := q.budget.Grow(n); err != nil {
			return err
		}
		res = add(res, b)
		return nil
	})
	if err != nil || !memo || !q.memo.put(key, res, charged, !sq.Correlated) {
		q.budget.Release(charged) // dropped when the row is done
	}
	return res, err
}

// subqueryMemo keeps subquery results for the rest of a bounded query,
// by subquery and the outer values it reads. Results stay charged to
// the query's budget; correlated ones only while they take up less than
// memoBytes (past that a correlated subquery runs again per row, as
// without the memo), uncorrelated ones always (they run once anyway).
type subqueryMemo struct {
	mu    sync.Mutex
	vals  map[memoKey]any // a subquery's first column ([]types.Value), a LATERAL one's rows ([]types.Row)
	bytes int64
}

// memoKey is a subquery and the encoded values of the outer columns it
// reads.
type memoKey struct {
	sq    *plan.Subquery
	outer string
}

// memoBytes bounds the bytes of the correlated results a query keeps.
const memoBytes = 32 << 20

// key returns the memo key of sq's run for the outer row, and whether
// its result may be kept: a correlated subquery's whose outer columns are
// unknown may not.
func (m *subqueryMemo) key(sq *plan.Subquery, outer types.Row) (memoKey, bool) {
	if sq.Correlated && len(sq.Outer) == 0 {
		return memoKey{}, false
	}
	if !sq.Correlated {
		return memoKey{sq: sq}, true
	}
	var buf []byte
	for _, c := range sq.Outer {
		if c >= len(outer) {
			return memoKey{}, false
		}
		v := outer[c]
		buf = types.AppendValue(buf, v) // lossless: 1.0 and 1.00 differ
		if v.K == types.Numeric {       // as do NaN and the infinities, which it writes alike
			buf = append(buf, byte(v.N.Form))
			if v.N.Negative {
				buf = append(buf, '-')
			}
		}
	}
	return memoKey{sq: sq, outer: string(buf)}, true
}

func (m *subqueryMemo) get(k memoKey) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vals[k]
	return v, ok
}

// put keeps vals (charged bytes of the budget) under k and says whether
// it did; always, when always is set.
func (m *subqueryMemo) put(k memoKey, vals any, charged int64, always bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.vals[k]; dup || (!always && m.bytes+charged > memoBytes) {
		return false
	}
	if m.vals == nil {
		m.vals = map[memoKey]any{}
	}
	m.vals[k] = vals
	if !always {
		m.bytes += charged
	}
	return true
}

// readsWorkTable says whether n reads a recursive query's work table.
func readsWorkTable(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.WorkTable:
		return true
	case *plan.Chain:
		for i := range n.Subqueries {
			if readsWorkTable(n.Subqueries[i].Plan) {
				return true
			}
		}
		return readsWorkTable(n.Input)
	case *plan.UnionAll:
		return slices.ContainsFunc(n.Inputs, readsWorkTable)
	case *plan.SetOp:
		return readsWorkTable(n.Left) || readsWorkTable(n.Right)
	case *plan.Join:
		return readsWorkTable(n.Left) || readsWorkTable(n.Right)
	case *plan.Apply:
		return readsWorkTable(n.Left) || readsWorkTable(n.Right.Plan)
	case *plan.Recursive:
		return readsWorkTable(n.Anchor) || readsWorkTable(n.Step)
	}
	return false
}

// InputColumns reports which columns of their input rows a stage's steps
// read, so decoding can skip the rest; nil means all. Steps read the
// input layout until the first one that produces rows of another shape
// (a projection or an aggregation); extra columns (a watermark's) are
// always read.
func InputColumns(steps []plan.Step, extra []int) []bool {
	var cols []int
	add := func(es ...*expr.Expr) {
		for _, e := range es {
			if e != nil {
				cols = append(cols, e.Columns()...)
			}
		}
	}
	layoutChanged := false
steps:
	for i := range steps {
		s := &steps[i]
		switch s.Op {
		case plan.OpFilter:
			add(s.Pred)
			continue
		case plan.OpProject:
			add(s.Exprs...)
		case plan.OpAggregate, plan.OpWindowAggregate, plan.OpGroupAggregate, plan.OpSession:
			add(s.GroupBy...)
			for _, a := range s.Aggs {
				add(a.Arg, a.Filter)
				add(a.OrderBy...)
			}
			if s.Window != nil {
				cols = append(cols, s.TimeCol)
			}
		default:
			return nil // sort, distinct, top-N… keep whole rows
		}
		layoutChanged = true
		break steps
	}
	if !layoutChanged {
		return nil // the input rows themselves are the output
	}
	cols = append(cols, extra...)
	width := 0
	for _, c := range cols {
		width = max(width, c+1)
	}
	need := make([]bool, width)
	for _, c := range cols {
		need[c] = true
	}
	return need
}
