package expr

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Any is the pseudo-type of a polymorphic parameter: it accepts every type
// and, for functions whose Ret is Any, the result takes the arguments'
// common type. It reuses the otherwise unused Null type code.
const Any = types.Null

// AnyArray and AnyElement are PostgreSQL's polymorphic pseudo-types: in
// one call, every AnyArray parameter takes the same array type and every
// AnyElement parameter its element type (the common type of the
// arguments that decide it); a Ret of either follows.
const (
	AnyArray   = types.AnyArray
	AnyElement = types.AnyElement
)

// Func is one overload of a function or operator.
type Func struct {
	Name     string
	Args     []types.Type
	Variadic bool       // the last parameter repeats
	Ret      types.Type // Any: the common type of the arguments
	Infix    bool       // printed as an operator
	// NonStrict functions are called with NULL arguments; strict ones
	// (the default) return NULL when any argument is NULL.
	NonStrict bool
	// Volatile functions (now(), random()) are never constant-folded.
	Volatile bool
	Eval     func(args []types.Value) (types.Value, error)
	// EvalSession, when set, replaces Eval for functions that act on the
	// session running the query (pg_cancel_backend): it is given
	// Env.Session, nil outside a session (in a pipeline). Such functions
	// must be Volatile.
	EvalSession func(session any, args []types.Value) (types.Value, error)
	// EvalContext, when set, replaces Eval for functions that wait: it is
	// given Env.Ctx, which ends with the query. Such functions must be
	// Volatile.
	EvalContext func(ctx context.Context, args []types.Value) (types.Value, error)
	// EvalAt, when set, is the value of a clock function without
	// arguments at a statement's time (Env.Now), which replaces Eval's
	// reading of the wall clock when the Env has one.
	EvalAt func(now int64) types.Value
	// Eval1 and Eval2, when set, replace Eval for one and two arguments
	// on the hot path (no argument slice).
	Eval1 func(a types.Value) (types.Value, error)
	Eval2 func(a, b types.Value) (types.Value, error)
	key   string
}

// Key identifies the overload in serialised plans: name(type,…).
func (f *Func) Key() string {
	if f.key == "" {
		parts := make([]string, len(f.Args))
		for i, a := range f.Args {
			parts[i] = fmt.Sprint(uint8(a))
		}
		v := ""
		if f.Variadic {
			v = "..."
		}
		f.key = f.Name + "(" + strings.Join(parts, ",") + v + ")"
	}
	return f.key
}

var registry = struct {
	sync.RWMutex
	byName map[string][]*Func
	byKey  map[string]*Func
}{byName: map[string][]*Func{}, byKey: map[string]*Func{}}

// Register adds overloads to the registry. Earlier registrations win ties
// in overload resolution, so register the preferred overload first; an
// overload whose Key is already registered is ignored (the first one is
// the one plans name), so that overload resolution and plan lookup agree.
func Register(fs ...*Func) {
	registry.Lock()
	defer registry.Unlock()
	for _, f := range fs {
		switch {
		case f.Eval != nil:
		case f.Eval1 != nil:
			f1 := f.Eval1
			f.Eval = func(a []types.Value) (types.Value, error) { return f1(a[0]) }
		case f.Eval2 != nil:
			f2 := f.Eval2
			f.Eval = func(a []types.Value) (types.Value, error) { return f2(a[0], a[1]) }
		}
		if registry.byKey[f.Key()] != nil {
			continue
		}
		registry.byName[f.Name] = append(registry.byName[f.Name], f)
		registry.byKey[f.Key()] = f
	}
}

func lookupKey(key string) *Func {
	registry.RLock()
	defer registry.RUnlock()
	return registry.byKey[key]
}

// Exists reports whether any overload of name is registered.
func Exists(name string) bool {
	registry.RLock()
	defer registry.RUnlock()
	return len(registry.byName[name]) > 0
}

// castCost is the cost of an implicit cast from one type to another, or -1
// when PostgreSQL would not cast implicitly.
func castCost(from, to types.Type) int {
	if from == to || to == Any {
		return 0
	}
	// An unknown literal prefers concrete parameter types, even through
	// another argument's implicit cast, to a polymorphic one ('x' || text
	// and name || 'x' are text concatenations), and between polymorphic
	// ones the first registered overload (anyarray || anyarray before
	// anyarray || anyelement, as PostgreSQL reads '{…}' next to an array).
	const unknownToPolymorphic = 3
	switch {
	case to == AnyElement:
		if from == types.Null || from == types.Unknown {
			return unknownToPolymorphic
		}
		return 0
	case to == AnyArray:
		if from.IsArray() {
			return 0
		}
		if from == types.Null || from == types.Unknown {
			return unknownToPolymorphic
		}
		return -1
	}
	if from == types.Null || from == types.Unknown {
		return 1
	}
	if from.IsArray() || to.IsArray() {
		// int4[] to int8[] as int4 to int8 (PostgreSQL's array coercion)
		if from.IsArray() && to.IsArray() {
			return castCost(from.Elem(), to.Elem())
		}
		return -1
	}
	rank := func(t types.Type) int {
		switch t {
		case types.Int2:
			return 1
		case types.Int4:
			return 2
		case types.Int8:
			return 3
		case types.Numeric:
			return 4
		case types.Float4:
			return 5
		case types.Float8:
			return 6
		}
		return 0
	}
	if rf, rt := rank(from), rank(to); rf > 0 && rt > 0 {
		if rf < rt {
			return 1 + rt - rf
		}
		return -1
	}
	switch {
	case from == types.Regtype && to == types.Oid:
		return 1
	case from == types.Oid && to == types.Regtype:
		return 2
	case from == types.Oid && (to == types.Int8 || to == types.Int4):
		return 1
	case from.IsInteger() && to == types.Oid:
		return 1
	case from.IsString() && to == types.Text:
		return 1
	case from == types.Text && (to == types.Varchar || to == types.Name):
		return 2
	case from == types.Date && to == types.Timestamp:
		return 1
	case from == types.Date && to == types.TimestampTZ:
		return 2
	case from == types.Timestamp && to == types.TimestampTZ:
		return 1
	case from == types.TimestampTZ && to == types.Timestamp:
		return 3
	}
	return -1
}

// CanImplicitCast reports whether from casts to to implicitly.
func CanImplicitCast(from, to types.Type) bool { return castCost(from, to) >= 0 }

// Resolve picks the overload of name for the given argument types and
// returns it with the parameter type each argument must be cast to.
func Resolve(name string, args []types.Type) (*Func, []types.Type, error) {
	registry.RLock()
	cands := registry.byName[name]
	registry.RUnlock()
	if len(cands) == 0 {
		return nil, nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", signature(name, args))
	}
	var best *Func
	if i := cheapest(cands, args); i >= 0 {
		best = cands[i]
	}
	if best == nil {
		what := "function"
		if cands[0].Infix {
			what = "operator"
		}
		return nil, nil, pgerror.New(pgerror.UndefinedFunction, "%s %s does not exist", what, signature(name, args)).
			WithHint("No %s matches the given name and argument types. You might need to add explicit type casts.", what)
	}
	params, _ := expand(best, len(args))
	// A copy: expand may return the registered Args themselves.
	params = append([]types.Type(nil), params...)
	if err := resolvePolymorphic(params, args); err != nil {
		return nil, nil, err
	}
	if best.Ret == Any {
		// Polymorphic result (nullif, greatest…): the Any parameters take
		// the arguments' common type.
		common, err := CommonType(args...)
		if err != nil {
			return nil, nil, err
		}
		for i := range params {
			if params[i] == Any {
				params[i] = common
			}
		}
	} else {
		// Any parameters of a function with a fixed result (concat,
		// pg_typeof) take each argument as it is.
		for i := range params {
			if params[i] == Any {
				params[i] = args[i]
			}
		}
	}
	return best, params, nil
}

// resolvePolymorphic replaces the AnyArray and AnyElement parameters by
// the array type and element type the arguments decide.
func resolvePolymorphic(params, args []types.Type) error {
	var elems []types.Type
	poly := false
	for i, p := range params {
		switch p {
		case AnyArray:
			poly = true
			if args[i].IsArray() {
				elems = append(elems, args[i].Elem())
			}
		case AnyElement:
			poly = true
			elems = append(elems, args[i])
		}
	}
	if !poly {
		return nil
	}
	elem, err := CommonType(elems...)
	if err != nil {
		return err
	}
	if elem == types.Null {
		elem = types.Text // only unknown literals: read them as text
	}
	arr := types.ArrayOf(elem)
	for i, p := range params {
		switch p {
		case AnyArray:
			if arr == types.Null {
				return pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", elem)
			}
			params[i] = arr
			if args[i].IsVector() && args[i].Elem() == elem {
				params[i] = args[i] // keeps counting from 0 (array_lower, generate_subscripts)
			}
		case AnyElement:
			params[i] = elem
		}
	}
	return nil
}

// resultType is the type a call of f with the resolved parameter types
// returns.
func resultType(f *Func, params []types.Type) types.Type {
	switch f.Ret {
	case Any:
		t, _ := CommonType(params...)
		return t
	case AnyArray, AnyElement:
		formal, _ := expand(f, len(params))
		for i, p := range formal {
			switch {
			case p == AnyArray && f.Ret == AnyArray, p == AnyElement && f.Ret == AnyElement:
				return params[i]
			case p == AnyArray:
				return params[i].Elem()
			case p == AnyElement:
				return types.ArrayOf(params[i])
			}
		}
	}
	return f.Ret
}

// cheapest returns the index of the candidate whose parameters the
// arguments cast to implicitly at the lowest total cost (the first of
// equals), or -1 when none accepts them.
//
// Between overloads of equal cost, the one taking more of the unknown
// literals as text wins, as in PostgreSQL, where an unknown literal
// prefers the string category: substring(s FROM 'a(b)') is the regular
// expression form, not substring(s FROM int).
func cheapest(cands []*Func, args []types.Type) int {
	best, bestCost, bestText := -1, -1, 0
	for j, f := range cands {
		params, ok := expand(f, len(args))
		if !ok {
			continue
		}
		cost, text := 0, 0
		for i, a := range args {
			c := castCost(a, params[i])
			if c < 0 {
				cost = -1
				break
			}
			cost += c
			if (a == types.Unknown || a == types.Null) && params[i] == types.Text {
				text++
			}
		}
		if cost >= 0 && (bestCost < 0 || cost < bestCost || cost == bestCost && text > bestText) {
			best, bestCost, bestText = j, cost, text
		}
	}
	return best
}

func expand(f *Func, n int) ([]types.Type, bool) {
	if !f.Variadic {
		return f.Args, len(f.Args) == n
	}
	if n < len(f.Args)-1 {
		return nil, false
	}
	out := make([]types.Type, n)
	copy(out, f.Args)
	for i := len(f.Args) - 1; i < n; i++ {
		out[i] = f.Args[len(f.Args)-1]
	}
	return out, true
}

func signature(name string, args []types.Type) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.String()
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// CommonType is the type values of the given types unify to (CASE arms,
// UNION columns, IN lists, comparison operands), following PostgreSQL's
// rules: unknown literals take the others' type, numbers widen, strings
// become text, dates widen to timestamps.
func CommonType(ts ...types.Type) (types.Type, error) {
	var out types.Type = types.Null
	for _, t := range ts {
		if t == types.Null || t == types.Unknown {
			continue
		}
		if out == types.Null {
			out = t
			continue
		}
		if out == t {
			continue
		}
		switch {
		case castCost(t, out) >= 0 && (castCost(out, t) < 0 || castCost(t, out) <= castCost(out, t)):
			// t widens into out
		case castCost(out, t) >= 0:
			out = t
		case out.IsNumeric() && t.IsNumeric():
			out = types.Float8
		case out.IsString() && t.IsString():
			// name = varchar (pgjdbc binds strings as varchar): both cast
			// implicitly to text, as PostgreSQL's name = text does.
			out = types.Text
		default:
			return types.Null, pgerror.New(pgerror.DatatypeMismatch, "types %s and %s cannot be matched", out, t)
		}
	}
	if out == types.Null {
		for _, t := range ts {
			if t == types.Unknown {
				return types.Text, nil
			}
		}
	}
	return out, nil
}

// Funcs lists the registered overloads whose names a client can call
// (operators and fvsql's internal helpers left out), by name and then in
// registration order: pg_proc's rows.
func Funcs() []*Func {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.byName))
	for n, fs := range registry.byName {
		if fs[0].Infix || strings.HasPrefix(n, "__") || strings.Contains(n, ".") || !isIdentifier(n) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*Func
	for _, n := range names {
		out = append(out, registry.byName[n]...)
	}
	return out
}

// SetFuncs lists the set-returning functions, as Funcs does.
func SetFuncs() []*SetFunc {
	setRegistry.RLock()
	defer setRegistry.RUnlock()
	names := make([]string, 0, len(setRegistry.byName))
	for n := range setRegistry.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*SetFunc
	for _, n := range names {
		out = append(out, setRegistry.byName[n]...)
	}
	return out
}

func isIdentifier(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}
