package expr

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// SetFunc is a set-returning function, called in FROM (unnest,
// generate_series, pg_options_to_table): it returns rows rather than a
// value. Overloads resolve like Func's, polymorphic types included.
type SetFunc struct {
	Name     string
	Args     []types.Type
	Variadic bool
	// Cols gives the output columns for the resolved argument types;
	// a single column takes the function's name unless named.
	Cols func(args []types.Type) (names []string, ts []types.Type)
	// Rows returns the rows for the argument values; a strict function
	// (NonStrict false) returns none when an argument is NULL.
	Rows      func(args []types.Value) ([]types.Row, error)
	NonStrict bool
	// PerArgument resolves each polymorphic argument on its own (unnest
	// of several arrays of different types), not to one common type.
	PerArgument bool
	key         string
}

// Key identifies the overload in serialised plans.
func (f *SetFunc) Key() string {
	if f.key == "" {
		f.key = (&Func{Name: f.Name, Args: f.Args, Variadic: f.Variadic}).Key()
	}
	return f.key
}

func (f *SetFunc) asFunc() *Func { return &Func{Name: f.Name, Args: f.Args, Variadic: f.Variadic} }

var setRegistry = struct {
	sync.RWMutex
	byName map[string][]*SetFunc
	byKey  map[string]*SetFunc
}{byName: map[string][]*SetFunc{}, byKey: map[string]*SetFunc{}}

// RegisterSet adds set-returning overloads; as with Register, the first
// registration of a key wins.
func RegisterSet(fs ...*SetFunc) {
	setRegistry.Lock()
	defer setRegistry.Unlock()
	for _, f := range fs {
		if setRegistry.byKey[f.Key()] != nil {
			continue
		}
		setRegistry.byName[f.Name] = append(setRegistry.byName[f.Name], f)
		setRegistry.byKey[f.Key()] = f
	}
}

// IsSetFunc reports whether name is a set-returning function.
func IsSetFunc(name string) bool {
	setRegistry.RLock()
	defer setRegistry.RUnlock()
	return len(setRegistry.byName[name]) > 0
}

func lookupSetKey(key string) *SetFunc {
	setRegistry.RLock()
	defer setRegistry.RUnlock()
	return setRegistry.byKey[key]
}

// SetCall is a resolved call of a set-returning function: its arguments
// coerced to the parameter types, and the output columns.
type SetCall struct {
	Fn    *SetFunc
	Args  []*Expr
	Names []string
	Types []types.Type
}

// ResolveSet resolves a call of a set-returning function.
func ResolveSet(name string, args []*Expr) (*SetCall, error) {
	setRegistry.RLock()
	cands := setRegistry.byName[name]
	setRegistry.RUnlock()
	argTypes := make([]types.Type, len(args))
	for i, a := range args {
		argTypes[i] = a.Type
	}
	if len(cands) == 0 {
		if Exists(name) {
			return nil, pgerror.NotSupported("%s in FROM (only set-returning functions such as unnest and generate_series are)", name)
		}
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", signature(name, argTypes))
	}
	fs := make([]*Func, len(cands))
	for i, f := range cands {
		fs[i] = f.asFunc()
	}
	var best *SetFunc
	if i := cheapest(fs, argTypes); i >= 0 {
		best = cands[i]
	}
	if best == nil {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", signature(name, argTypes)).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	formal, _ := expand(best.asFunc(), len(args))
	params := append([]types.Type(nil), formal...)
	if best.PerArgument {
		for i := range params {
			if err := resolvePolymorphic(params[i:i+1], argTypes[i:i+1]); err != nil {
				return nil, err
			}
		}
	} else if err := resolvePolymorphic(params, argTypes); err != nil {
		return nil, err
	}
	for i := range params {
		if params[i] == Any {
			params[i] = argTypes[i]
		}
	}
	call := &SetCall{Fn: best, Args: make([]*Expr, len(args))}
	for i, a := range args {
		c, err := Coerce(a, params[i], false)
		if err != nil {
			return nil, err
		}
		call.Args[i] = c
	}
	call.Names, call.Types = best.Cols(params)
	for i, n := range call.Names {
		if n == "" {
			call.Names[i] = name
		}
	}
	return call, nil
}

// Rows evaluates a call whose arguments are constants (the planner's
// FROM f(constants)). ordinality adds the 1-based row number.
func (c *SetCall) Rows(ordinality bool) ([]types.Row, error) {
	vals := make([]types.Value, len(c.Args))
	for i, a := range c.Args {
		ev, err := Compile(a, nil)
		if err != nil {
			return nil, err
		}
		if vals[i], err = ev(nil); err != nil {
			return nil, err
		}
	}
	return callSet(c.Fn, vals, ordinality)
}

func callSet(f *SetFunc, vals []types.Value, ordinality bool) ([]types.Row, error) {
	if !f.NonStrict {
		for _, v := range vals {
			if v.K == types.Null {
				return nil, nil
			}
		}
	}
	rows, err := f.Rows(vals)
	if err != nil || !ordinality {
		return rows, err
	}
	for i := range rows {
		rows[i] = append(rows[i], types.NewInt8(int64(i+1)))
	}
	return rows, nil
}

// FuncScan builds a subquery over a set-returning function of the
// current row, evaluated in place: for each row the function returns
// (with its ordinality when ord is set), followed by the current row's
// columns, where decides whether item's value is part of the result; mode
// is that of Subquery ("scalar", "exists", "in" with x, or "array"), and
// t the result's type. where and item read the function's columns first,
// then the current row's (shifted by the function's width).
func FuncScan(call *SetCall, ord bool, where, item *Expr, mode string, t types.Type, x *Expr) *Expr {
	e := &Expr{Kind: KFuncScan, Type: t, Fn: call.Fn.Key(), Col: len(call.Args), Name: mode, HasElse: ord}
	e.Args = append(append([]*Expr(nil), call.Args...), where, item)
	if x != nil {
		e.Args = append(e.Args, x)
	}
	return e
}

func compileFuncScan(e *Expr, env *Env) (Eval, error) {
	f := lookupSetKey(e.Fn)
	if f == nil {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s is not known to this server", e.Fn)
	}
	n, ord, mode, t := e.Col, e.HasElse, e.Name, e.Type
	evs := make([]Eval, len(e.Args))
	for i, a := range e.Args {
		ev, err := compile(a, env)
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	args, where, item := evs[:n], evs[n], evs[n+1]
	return func(row types.Row) (types.Value, error) {
		vals := make([]types.Value, n)
		for i, a := range args {
			v, err := a(row)
			if err != nil {
				return v, err
			}
			vals[i] = v
		}
		rows, err := callSet(f, vals, ord)
		if err != nil {
			return types.NullValue, err
		}
		var out []types.Value
		for _, r := range rows {
			in := append(r, row...)
			ok, err := where(in)
			if err != nil {
				return types.NullValue, err
			}
			if ok.K != types.Bool || ok.I == 0 {
				continue
			}
			if mode == "exists" {
				return types.NewBool(true), nil
			}
			v, err := item(in)
			if err != nil {
				return v, err
			}
			out = append(out, v)
		}
		return foldSubquery(mode, t, out, func() (types.Value, error) { return evs[n+2](row) })
	}, nil
}

// ---------------------------------------------------------------------------
// The set-returning functions.

func oneCol(t types.Type) func([]types.Type) ([]string, []types.Type) {
	return func([]types.Type) ([]string, []types.Type) { return []string{""}, []types.Type{t} }
}

// seriesStep checks generate_series' step.
var errZeroStep = pgerror.New(pgerror.InvalidParameterValue, "step size cannot equal zero")

// rowHeader is what a materialised row costs besides its values.
const rowHeader = int64(unsafe.Sizeof(types.Row(nil)))

// maxSetRows bounds the rows of cols columns one call may produce, extra
// being what each row holds besides its types.Values (a numeric's
// decimal). A call's rows are materialised at once (the planner holds a
// constant call's rows as a relation, FuncScan a call's rows for each
// input row), so they count against the limit on one value, MaxValueBytes:
// about 3.7 million rows of one integer column, where ten million took
// 690 MiB (and of numerics a GiB).
func maxSetRows(cols, extra int64) int64 {
	return maxValueBytes / (rowHeader + cols*valueBytes + extra)
}

func tooManyRows(name string, max int64) error {
	return pgerror.New(pgerror.ProgramLimitExceeded, "%s would return more than %d rows", name, max)
}

func intSeries(t types.Type) func(a []types.Value) ([]types.Row, error) {
	return func(a []types.Value) ([]types.Row, error) {
		start, stop, step := a[0].I, a[1].I, int64(1)
		if len(a) > 2 {
			step = a[2].I
		}
		if step == 0 {
			return nil, errZeroStep
		}
		var n uint64 // how many rows, computed in uint64 so it cannot overflow
		switch {
		case step > 0 && stop >= start:
			n = (uint64(stop)-uint64(start))/uint64(step) + 1
		case step < 0 && stop <= start:
			n = (uint64(start)-uint64(stop))/(uint64(-(step+1))+1) + 1
		}
		if max := maxSetRows(1, 0); n > uint64(max) {
			return nil, tooManyRows("generate_series", max)
		}
		rows := make([]types.Row, 0, n)
		for v := start; step > 0 && v <= stop || step < 0 && v >= stop; {
			rows = append(rows, types.Row{types.NewInt(t, v)})
			next := v + step
			if next > v != (step > 0) {
				break // overflow: v was the last value in range
			}
			v = next
		}
		return rows, nil
	}
}

func numericSeries(a []types.Value) ([]types.Row, error) {
	step := apd.New(1, 0)
	if len(a) > 2 {
		step = a[2].N
	}
	if step.IsZero() {
		return nil, errZeroStep
	}
	for _, v := range a {
		if v.N.Form != apd.Finite {
			return nil, pgerror.New(pgerror.InvalidParameterValue, "start, stop and step values cannot be NaN")
		}
	}
	var rows []types.Row
	max := maxSetRows(1, int64(unsafe.Sizeof(apd.Decimal{})))
	// count first: a range of 1e309 took seconds to reach the limit
	diff, count := new(apd.Decimal), new(apd.Decimal)
	if _, err := types.DecimalContext.Sub(diff, a[1].N, a[0].N); err == nil {
		if _, err := types.DecimalContext.Quo(count, diff, step); err == nil && count.Cmp(apd.New(max, 0)) >= 0 {
			return nil, tooManyRows("generate_series", max)
		}
	}
	cur := new(apd.Decimal).Set(a[0].N)
	for {
		c := cur.Cmp(a[1].N)
		if step.Sign() > 0 && c > 0 || step.Sign() < 0 && c < 0 {
			return rows, nil
		}
		if int64(len(rows)) >= max {
			return nil, tooManyRows("generate_series", max)
		}
		rows = append(rows, types.Row{types.NewNumeric(new(apd.Decimal).Set(cur))})
		next := new(apd.Decimal)
		if _, err := types.DecimalContext.Add(next, cur, step); err != nil {
			return nil, pgerror.New(pgerror.NumericValueOutOfRange, "numeric value out of range")
		}
		cur = next
	}
}

func timeSeries(t types.Type) func(a []types.Value) ([]types.Row, error) {
	return func(a []types.Value) ([]types.Row, error) {
		step := a[2]
		if step.Interval().Duration() == 0 {
			return nil, errZeroStep
		}
		up := step.Interval().Duration() > 0
		add := tsPlusIv(t)
		var rows []types.Row
		max := maxSetRows(1, 0)
		cur := types.NewTimestamp(t, a[0].I)
		for up && cur.I <= a[1].I || !up && cur.I >= a[1].I {
			if int64(len(rows)) >= max {
				return nil, tooManyRows("generate_series", max)
			}
			rows = append(rows, types.Row{cur})
			next, err := add(cur, step)
			if err != nil {
				return nil, err
			}
			cur = next
		}
		return rows, nil
	}
}

// optionsToTable splits name=value options (reloptions, ftoptions) into
// rows of (option_name, option_value), as pg_options_to_table does.
func optionsToTable(a []types.Value) ([]types.Row, error) {
	var rows []types.Row
	for _, e := range a[0].Elems() {
		if e.K == types.Null {
			continue
		}
		name, value, ok := strings.Cut(e.S, "=")
		v := types.NewText(value)
		if !ok {
			v = types.NullValue
		}
		rows = append(rows, types.Row{types.NewText(name), v})
	}
	return rows, nil
}

func init() {
	i4, i8, num, text := types.Int4, types.Int8, types.Numeric, types.Text
	ts, tz, iv := types.Timestamp, types.TimestampTZ, types.Interval
	RegisterSet(
		&SetFunc{Name: "unnest", Args: tt(AnyArray), Variadic: true, NonStrict: true, PerArgument: true,
			Cols: func(args []types.Type) ([]string, []types.Type) {
				names := make([]string, len(args))
				cols := make([]types.Type, len(args))
				for i, a := range args {
					cols[i] = a.Elem()
				}
				return names, cols
			},
			Rows: func(a []types.Value) ([]types.Row, error) {
				// Several arrays zip, the shorter ones padded with NULLs.
				n := 0
				for _, v := range a {
					n = max(n, v.ArrayLen())
				}
				if limit := maxSetRows(int64(len(a)), 0); int64(n) > limit {
					return nil, tooManyRows("unnest", limit)
				}
				elems := make([][]types.Value, len(a))
				for i, v := range a {
					elems[i] = v.Elems()
				}
				rows := make([]types.Row, n)
				for r := range rows {
					rows[r] = make(types.Row, len(a))
					for i := range a {
						if r < len(elems[i]) {
							rows[r][i] = elems[i][r]
						}
					}
				}
				return rows, nil
			}},
		&SetFunc{Name: "generate_series", Args: tt(i4, i4), Cols: oneCol(i4), Rows: intSeries(i4)},
		&SetFunc{Name: "generate_series", Args: tt(i4, i4, i4), Cols: oneCol(i4), Rows: intSeries(i4)},
		&SetFunc{Name: "generate_series", Args: tt(i8, i8), Cols: oneCol(i8), Rows: intSeries(i8)},
		&SetFunc{Name: "generate_series", Args: tt(i8, i8, i8), Cols: oneCol(i8), Rows: intSeries(i8)},
		&SetFunc{Name: "generate_series", Args: tt(num, num), Cols: oneCol(num), Rows: numericSeries},
		&SetFunc{Name: "generate_series", Args: tt(num, num, num), Cols: oneCol(num), Rows: numericSeries},
		&SetFunc{Name: "generate_series", Args: tt(ts, ts, iv), Cols: oneCol(ts), Rows: timeSeries(ts)},
		&SetFunc{Name: "generate_series", Args: tt(tz, tz, iv), Cols: oneCol(tz), Rows: timeSeries(tz)},
		&SetFunc{Name: "generate_subscripts", Args: tt(AnyArray, i4), Cols: oneCol(i4), Rows: func(a []types.Value) ([]types.Row, error) {
			var rows []types.Row
			if a[1].I == 1 {
				base := int64(1)
				if a[0].K.IsVector() {
					base = 0 // int2vector and oidvector count from 0
				}
				for i := range a[0].ArrayLen() {
					rows = append(rows, types.Row{types.NewInt(i4, int64(i)+base)})
				}
			}
			return rows, nil
		}},
		// information_schema._pg_expandarray: each element with its
		// 1-based position (pgjdbc's getPrimaryKeys, DBeaver).
		&SetFunc{Name: "information_schema._pg_expandarray", Args: tt(AnyArray),
			Cols: func(args []types.Type) ([]string, []types.Type) {
				return []string{"x", "n"}, []types.Type{args[0].Elem(), i4}
			},
			Rows: func(a []types.Value) ([]types.Row, error) {
				elems := a[0].Elems()
				rows := make([]types.Row, len(elems))
				for i, e := range elems {
					rows[i] = types.Row{e, types.NewInt(i4, int64(i+1))}
				}
				return rows, nil
			}},
		&SetFunc{Name: "pg_options_to_table", Args: tt(types.TextArray), Rows: optionsToTable,
			Cols: func([]types.Type) ([]string, []types.Type) {
				return []string{"option_name", "option_value"}, []types.Type{text, text}
			}},
	)
}

// String of a set function call, for messages.
func (c *SetCall) String() string {
	parts := make([]string, len(c.Args))
	for i, a := range c.Args {
		parts[i] = a.String()
	}
	return fmt.Sprintf("%s(%s)", c.Fn.Name, strings.Join(parts, ", "))
}

// SetEval evaluates a set-returning call over one input row: the
// function's rows for that row's argument values.
type SetEval func(row types.Row) ([]types.Row, error)

// CompileSet compiles a call of the set function with overload key fn
// (SetFunc.Key) over args, expressions of the input row: the select
// list's set-returning functions, run per row by a projectSet step.
func CompileSet(fn string, args []*Expr, env *Env) (SetEval, error) {
	if name, ok := strings.CutPrefix(fn, userSetPrefix); ok {
		return compileUserSet(name, args, env)
	}
	f := lookupSetKey(fn)
	if f == nil {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s is not known to this server", fn)
	}
	evs := make([]Eval, len(args))
	for i, a := range args {
		ev, err := CompileEnv(a, env)
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	return func(row types.Row) ([]types.Row, error) {
		vals := make([]types.Value, len(evs))
		for i, ev := range evs {
			v, err := ev(row)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		return callSet(f, vals, false)
	}, nil
}
