package expr

import (
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// User returns a call of user function name (its implementation found
// through Env.Funcs when compiled) of result type ret; the arguments
// must have the function's argument types already.
func User(name string, ret types.Type, args ...*Expr) *Expr {
	return &Expr{Kind: KUser, Type: ret, Name: name, Args: args}
}

// UserFuncNames lists the user functions e calls, each once.
func (e *Expr) UserFuncNames() []string {
	var out []string
	e.Walk(func(n *Expr) {
		if n.Kind == KUser {
			for _, s := range out {
				if s == n.Name {
					return
				}
			}
			out = append(out, n.Name)
		}
	})
	return out
}

// userImpl resolves a user function's implementation for env.
func userImpl(name string, env *Env) (UserFunc, error) {
	if env.Funcs == nil {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", name)
	}
	return env.Funcs.UserFunc(name)
}

// userCall is a compiled call's hold on its implementation: looked up
// again when env.Epoch moves (a pipeline's next epoch), so that a
// replaced function changes between two epochs, never within one.
type userCall struct {
	name  string
	env   *Env
	impl  UserFunc
	epoch uint64
}

func newUserCall(name string, env *Env) (*userCall, error) {
	impl, err := userImpl(name, env)
	if err != nil {
		return nil, err
	}
	c := &userCall{name: name, env: env, impl: impl}
	if env.Epoch != nil {
		c.epoch = *env.Epoch
	}
	return c, nil
}

func (c *userCall) current() (UserFunc, error) {
	if c.env.Epoch != nil && *c.env.Epoch != c.epoch {
		impl, err := userImpl(c.name, c.env)
		if err != nil {
			return nil, err
		}
		c.impl, c.epoch = impl, *c.env.Epoch
	}
	return c.impl, nil
}

func compileUser(e *Expr, env *Env) (Eval, error) {
	if env.Funcs == nil {
		// Built without a catalog (the planner checking that a step
		// builds): the call fails if it ever runs.
		name := e.Name
		return func(types.Row) (types.Value, error) {
			return types.NullValue, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", name)
		}, nil
	}
	c, err := newUserCall(e.Name, env)
	if err != nil {
		return nil, err
	}
	eager := env.lazy == 0
	args := make([]Eval, len(e.Args))
	for i, a := range e.Args {
		if args[i], err = compile(a, env); err != nil {
			return nil, err
		}
	}
	// A compiled expression runs one row at a time (each goroutine
	// compiles its own), and implementations do not keep their
	// arguments: one slice serves every call.
	vals := make([]types.Value, len(args))
	pf := &prefetch{call: c, args: args}
	return func(row types.Row) (types.Value, error) {
		if b := env.Batch; eager && b != nil && len(b.Rows) >= minPrefetch && len(row) > 0 && b.Index < len(b.Rows) &&
			len(b.Rows[b.Index]) > 0 && &b.Rows[b.Index][0] == &row[0] {
			if ok, v, err := pf.get(b); ok {
				return v, err
			}
		}
		for i, a := range args {
			v, err := a(row)
			if err != nil {
				return types.NullValue, err
			}
			vals[i] = v
		}
		impl, err := c.current()
		if err != nil {
			return types.NullValue, err
		}
		return impl.Call(vals)
	}, nil
}

// minPrefetch is the smallest batch a call is prefetched for.
const minPrefetch = 4

// prefetch holds a call's results for its operator's current batch:
// computed at the batch's first row, its arguments evaluated for every
// row and the function called for all of them at once.
type prefetch struct {
	call  *userCall
	args  []Eval
	seq   uint64
	valid bool
	out   []types.Value
	errs  []error
	flat  []types.Value   // the rows' arguments, one after another
	rows  [][]types.Value // slices of flat
	call2 []int           // rows whose arguments evaluated, in order
}

// get returns the result for the batch's current row; ok is false when
// the implementation cannot take batches.
func (p *prefetch) get(b *Batch) (ok bool, v types.Value, err error) {
	if !p.valid || p.seq != b.Seq {
		if !p.fill(b) {
			return false, types.NullValue, nil
		}
	}
	return true, p.out[b.Index], p.errs[b.Index]
}

func (p *prefetch) fill(b *Batch) bool {
	impl, err := p.call.current()
	if err != nil {
		return false
	}
	bi, ok := impl.(BatchUserFunc)
	if !ok {
		return false
	}
	n, w := len(b.Rows), len(p.args)
	p.out, p.errs = resize(p.out, n), resize(p.errs, n)
	p.flat = resize(p.flat, n*w)
	p.rows, p.call2 = p.rows[:0], p.call2[:0]
	// Arguments are evaluated with Index on their row, so that a call
	// among them prefetches for the batch too.
	at := b.Index
	for i, row := range b.Rows {
		b.Index = i
		vals := p.flat[i*w : (i+1)*w : (i+1)*w]
		p.out[i], p.errs[i] = types.NullValue, nil
		for j, a := range p.args {
			v, err := a(row)
			if err != nil {
				p.errs[i] = err
				break
			}
			vals[j] = v
		}
		if p.errs[i] == nil {
			p.rows, p.call2 = append(p.rows, vals), append(p.call2, i)
		}
	}
	b.Index = at
	out, errs := bi.CallBatch(p.rows)
	for k, i := range p.call2 {
		p.out[i], p.errs[i] = out[k], errs[k]
	}
	p.seq, p.valid = b.Seq, true
	return true
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// userSetPrefix marks the key (CompileSet's fn) of a user table
// function: "user:<name>".
const userSetPrefix = "user:"

// UserSetKey is the key CompileSet takes for user table function name.
func UserSetKey(name string) string { return userSetPrefix + name }

// compileUserSet compiles a call of a user table function over args,
// expressions of the input row; like a scalar call, it looks its
// implementation up again when env.Epoch moves.
func compileUserSet(name string, args []*Expr, env *Env) (SetEval, error) {
	if env.Funcs == nil {
		return func(types.Row) ([]types.Row, error) {
			return nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", name)
		}, nil
	}
	c, err := newUserCall(name, env)
	if err != nil {
		return nil, err
	}
	evs := make([]Eval, len(args))
	for i, a := range args {
		if evs[i], err = compile(a, env); err != nil {
			return nil, err
		}
	}
	vals := make([]types.Value, len(evs))
	return func(row types.Row) ([]types.Row, error) {
		for i, ev := range evs {
			v, err := ev(row)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		impl, err := c.current()
		if err != nil {
			return nil, err
		}
		return impl.CallTable(vals)
	}, nil
}
