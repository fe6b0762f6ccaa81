package expr

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Arrays: the ARRAY[…] constructor, subscripts and slices, quantified
// comparisons (x op ANY|ALL (array)) and the array functions.

// Array builds ARRAY[elems…]: the elements take their common type. An
// empty constructor has no type to take; cast it (ARRAY[]::int[]) with
// EmptyArray.
func Array(elems []*Expr) (*Expr, error) {
	if len(elems) == 0 {
		return nil, pgerror.New(pgerror.IndeterminateDatatype, "cannot determine type of empty array").
			WithHint("Explicitly cast to the desired type, for example ARRAY[]::integer[].")
	}
	out, err := unify(KArray, elems)
	if err != nil {
		return nil, err
	}
	if out.Type.IsArray() {
		return nil, pgerror.NotSupported("multidimensional arrays")
	}
	arr := types.ArrayOf(out.Type)
	if arr == types.Null {
		return nil, pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", out.Type)
	}
	out.Type = arr
	return fold(out)
}

// EmptyArray is ARRAY[] cast to the array type t.
func EmptyArray(t types.Type) (*Expr, error) {
	if !t.IsArray() {
		return nil, pgerror.New(pgerror.DatatypeMismatch, "cannot cast type unknown[] to %s", t)
	}
	c := Const(types.NewArray(t, nil))
	return c, nil
}

func subscriptable(x *Expr) error {
	if !x.Type.IsArray() {
		return pgerror.New(pgerror.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", x.Type)
	}
	return nil
}

func subscriptIndex(i *Expr) (*Expr, error) {
	if i.Type == types.Null || i.Type == types.Unknown || i.Type.IsInteger() && i.Type != types.Oid {
		return Coerce(i, types.Int4, true)
	}
	return nil, pgerror.New(pgerror.DatatypeMismatch, "array subscript must have type integer")
}

// Subscript builds x[i]: the element at 1-based position i, NULL when
// out of range.
func Subscript(x, i *Expr) (*Expr, error) {
	if err := subscriptable(x); err != nil {
		return nil, err
	}
	i, err := subscriptIndex(i)
	if err != nil {
		return nil, err
	}
	return fold(&Expr{Kind: KSubscript, Type: x.Type.Elem(), Args: []*Expr{x, i}})
}

// Slice builds x[lo:hi]; a nil bound is omitted (the array's own).
func Slice(x, lo, hi *Expr) (*Expr, error) {
	if err := subscriptable(x); err != nil {
		return nil, err
	}
	out := &Expr{Kind: KSlice, Type: x.Type, Args: []*Expr{x}}
	for bit, b := range []*Expr{lo, hi} {
		if b == nil {
			out.Col |= 1 << bit
			b = TypedNull(types.Int4)
		}
		b, err := subscriptIndex(b)
		if err != nil {
			return nil, err
		}
		out.Args = append(out.Args, b)
	}
	return fold(out)
}

// Quantified builds x op ANY (arr), or x op ALL (arr) when all is set. op
// is a comparison operator or a boolean function of two arguments (like,
// ilike, regexp_match_bool…). An untyped array (a '{…}' literal, a NULL)
// takes the array type of x.
func Quantified(op string, x, arr *Expr, all bool) (*Expr, error) {
	kind, what := KAny, "ANY"
	if all {
		kind, what = KAll, "ALL"
	}
	if arr.Type == types.Null || arr.Type == types.Unknown {
		t := x.Type
		if t == types.Null || t == types.Unknown {
			t = types.Text
		}
		at := types.ArrayOf(t)
		if at == types.Null {
			return nil, pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", t)
		}
		var err error
		if arr, err = Coerce(arr, at, false); err != nil {
			return nil, err
		}
	}
	if !arr.Type.IsArray() {
		return nil, pgerror.New(pgerror.WrongObjectType, "op %s (array) requires array on right side", what)
	}
	elem := arr.Type.Elem()
	var params []types.Type
	var f *Func
	if compareOps[op] {
		t, err := CommonType(x.Type, elem)
		if err != nil {
			return nil, pgerror.New(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", x.Type, op, elem).
				WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
		}
		if t == types.Null {
			t = types.Text
		}
		f, params = lookupKey(compareKey(op)), []types.Type{t, t}
	} else {
		var err error
		if f, params, err = Resolve(op, []types.Type{x.Type, elem}); err != nil {
			return nil, err
		}
		if resultType(f, params) != types.Bool {
			return nil, pgerror.New(pgerror.WrongObjectType, "op %s (array) requires operator to yield boolean", what)
		}
	}
	x, err := Coerce(x, params[0], false)
	if err != nil {
		return nil, err
	}
	if at := types.ArrayOf(params[1]); at != arr.Type {
		if at == types.Null {
			return nil, pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", params[1])
		}
		if arr, err = Coerce(arr, at, false); err != nil {
			return nil, err
		}
	}
	return fold(&Expr{Kind: kind, Type: types.Bool, Fn: f.Key(), Args: []*Expr{x, arr}})
}

func compileArray(e *Expr, args []Eval) Eval {
	t := e.Type
	return func(row types.Row) (types.Value, error) {
		elems := make([]types.Value, len(args))
		for i, a := range args {
			v, err := a(row)
			if err != nil {
				return v, err
			}
			elems[i] = v
		}
		return newArray(t, elems)
	}
}

func compileSubscript(args []Eval) Eval {
	x, idx := args[0], args[1]
	return func(row types.Row) (types.Value, error) {
		a, err := x(row)
		if err != nil || a.K == types.Null {
			return types.NullValue, err
		}
		i, err := idx(row)
		if err != nil || i.K == types.Null {
			return types.NullValue, err
		}
		elems := a.Elems()
		n := i.I
		if a.K.IsVector() {
			n++ // int2vector and oidvector count from 0, as PostgreSQL's
		}
		if n < 1 || n > int64(len(elems)) {
			return types.NullValue, nil
		}
		return elems[n-1], nil
	}
}

func compileSlice(e *Expr, args []Eval) Eval {
	x, lo, hi := args[0], args[1], args[2]
	noLo, noHi := e.Col&1 != 0, e.Col&2 != 0
	t := e.Type
	return func(row types.Row) (types.Value, error) {
		a, err := x(row)
		if err != nil || a.K == types.Null {
			return types.NullValue, err
		}
		elems := a.Elems()
		from, to := int64(1), int64(len(elems))
		if !noLo {
			v, err := lo(row)
			if err != nil || v.K == types.Null {
				return types.NullValue, err
			}
			from = max(from, v.I)
		}
		if !noHi {
			v, err := hi(row)
			if err != nil || v.K == types.Null {
				return types.NullValue, err
			}
			to = min(to, v.I)
		}
		if from > to {
			return types.NewArray(t, nil), nil
		}
		return types.NewArray(t, elems[from-1:to]), nil
	}
}

// compileQuantified evaluates x op ANY|ALL (arr) with SQL's three-valued
// logic: ANY is true when some element compares true, else NULL when x
// or some element is NULL, else false (an empty array: false); ALL is
// false when some element compares false, else NULL when there was a
// NULL, else true (an empty array: true). A NULL array gives NULL.
func compileQuantified(e *Expr, args []Eval) (Eval, error) {
	f := lookupKey(e.Fn)
	if f == nil {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s is not known to this server", e.Fn)
	}
	all := e.Kind == KAll
	strict := !f.NonStrict
	var test func(a, b types.Value) (types.Value, error)
	if compareOps[f.Name] {
		ok := compareTest(f.Name)
		test = func(a, b types.Value) (types.Value, error) { return types.NewBool(ok(types.Compare(a, b))), nil }
	} else {
		eval := f.Eval
		test = func(a, b types.Value) (types.Value, error) { return eval([]types.Value{a, b}) }
	}
	x, arr := args[0], args[1]
	return func(row types.Row) (types.Value, error) {
		a, err := arr(row)
		if err != nil || a.K == types.Null {
			return types.NullValue, err
		}
		v, err := x(row)
		if err != nil {
			return v, err
		}
		sawNull := false
		for _, el := range a.Elems() {
			if strict && (v.K == types.Null || el.K == types.Null) {
				sawNull = true
				continue
			}
			r, err := test(v, el)
			if err != nil {
				return r, err
			}
			switch {
			case r.K == types.Null:
				sawNull = true
			case (r.I != 0) != all: // true decides ANY, false decides ALL
				return types.NewBool(!all), nil
			}
		}
		if sawNull {
			return types.NullValue, nil
		}
		return types.NewBool(all), nil
	}, nil
}

// compareTest maps a comparison operator to a test of types.Compare's
// result.
func compareTest(op string) func(c int) bool {
	switch op {
	case "=":
		return func(c int) bool { return c == 0 }
	case "<>":
		return func(c int) bool { return c != 0 }
	case "<":
		return func(c int) bool { return c < 0 }
	case "<=":
		return func(c int) bool { return c <= 0 }
	case ">":
		return func(c int) bool { return c > 0 }
	}
	return func(c int) bool { return c >= 0 }
}

// ---------------------------------------------------------------------------
// Array functions.

func arrayToString(a []types.Value) (types.Value, error) {
	sb := limitedBuilder{what: "array_to_string"}
	first := true
	for _, e := range a[0].Elems() {
		s := ""
		switch {
		case e.K != types.Null:
			s = e.Text()
		case len(a) > 2 && a[2].K != types.Null:
			s = a[2].S
		default:
			continue
		}
		if !first {
			if err := sb.add(a[1].S); err != nil {
				return types.NullValue, err
			}
		}
		first = false
		if err := sb.add(s); err != nil {
			return types.NullValue, err
		}
	}
	return types.NewText(sb.String()), nil
}

func stringToArray(a []types.Value) (types.Value, error) {
	if a[0].K == types.Null {
		return types.NullValue, nil
	}
	s := a[0].S
	// Each element costs a types.Value: count them before splitting.
	var n int64
	switch {
	case s == "":
	case a[1].K == types.Null:
		n = int64(utf8.RuneCountInString(s))
	case a[1].S == "":
		n = 1
	default:
		n = int64(strings.Count(s, a[1].S)) + 1
	}
	if err := checkArray(n, int64(len(s))); err != nil {
		return types.NullValue, err
	}
	var parts []string
	switch {
	case s == "":
		parts = nil
	case a[1].K == types.Null:
		for _, r := range s {
			parts = append(parts, string(r))
		}
	case a[1].S == "":
		parts = []string{s}
	default:
		parts = strings.Split(s, a[1].S)
	}
	elems := make([]types.Value, len(parts))
	for i, p := range parts {
		if len(a) > 2 && a[2].K != types.Null && p == a[2].S {
			elems[i] = types.NullValue
			continue
		}
		elems[i] = types.NewText(p)
	}
	return types.NewArray(types.TextArray, elems), nil
}

// dimFn returns array_length, array_upper and friends: the value for the
// first dimension of a non-empty array, NULL otherwise.
func dimFn(name string, f func(n int) int) *Func {
	return &Func{Name: name, Args: tt(AnyArray, types.Int4), Ret: types.Int4, Eval2: func(a, d types.Value) (types.Value, error) {
		n := a.ArrayLen()
		if d.I != 1 || n == 0 {
			return types.NullValue, nil
		}
		r := int64(f(n))
		if a.K.IsVector() && name != "array_length" {
			r-- // int2vector and oidvector count from 0
		}
		return types.NewInt(types.Int4, r), nil
	}}
}

func init() {
	i4, text := types.Int4, types.Text
	notMatch := func(name string, match func(s, p string) (bool, error)) *Func {
		return &Func{Name: name, Args: tt(text, text), Ret: types.Bool, Infix: true, Eval2: func(a, b types.Value) (types.Value, error) {
			m, err := match(a.S, b.S)
			return types.NewBool(!m), err
		}}
	}
	Register(
		// the negated pattern operators, for x NOT LIKE ANY (…) and friends
		notMatch("!~~", func(s, p string) (bool, error) { return likeMatch(s, p, false) }),
		notMatch("!~~*", func(s, p string) (bool, error) { return likeMatch(s, p, true) }),
		notMatch("!~", func(s, p string) (bool, error) { return regexMatch(s, p, false) }),
	)
	Register(
		&Func{Name: "||", Args: tt(AnyArray, AnyArray), Ret: AnyArray, Infix: true, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			return arrayCat(a[0], a[1])
		}},
		&Func{Name: "||", Args: tt(AnyArray, AnyElement), Ret: AnyArray, Infix: true, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			return appendElem(a[0], a[1], types.ArrayOf(a[1].K), false)
		}},
		&Func{Name: "||", Args: tt(AnyElement, AnyArray), Ret: AnyArray, Infix: true, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			return appendElem(a[1], a[0], types.ArrayOf(a[0].K), true)
		}},
		&Func{Name: "array_cat", Args: tt(AnyArray, AnyArray), Ret: AnyArray, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			return arrayCat(a[0], a[1])
		}},
		&Func{Name: "array_append", Args: tt(AnyArray, AnyElement), Ret: AnyArray, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			return appendElem(a[0], a[1], types.ArrayOf(a[1].K), false)
		}},
		&Func{Name: "array_prepend", Args: tt(AnyElement, AnyArray), Ret: AnyArray, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			return appendElem(a[1], a[0], types.ArrayOf(a[0].K), true)
		}},
		&Func{Name: "array_to_string", Args: tt(AnyArray, text), Ret: text, Eval: arrayToString},
		&Func{Name: "array_to_string", Args: tt(AnyArray, text, text), Ret: text, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].K == types.Null || a[1].K == types.Null {
				return types.NullValue, nil
			}
			return arrayToString(a)
		}},
		&Func{Name: "string_to_array", Args: tt(text, text), Ret: types.TextArray, NonStrict: true, Eval: stringToArray},
		&Func{Name: "string_to_array", Args: tt(text, text, text), Ret: types.TextArray, NonStrict: true, Eval: stringToArray},
		dimFn("array_length", func(n int) int { return n }),
		dimFn("array_upper", func(n int) int { return n }),
		dimFn("array_lower", func(int) int { return 1 }),
		&Func{Name: "cardinality", Args: tt(AnyArray), Ret: i4, Eval1: func(a types.Value) (types.Value, error) {
			return types.NewInt(i4, int64(a.ArrayLen())), nil
		}},
		&Func{Name: "array_ndims", Args: tt(AnyArray), Ret: i4, Eval1: func(a types.Value) (types.Value, error) {
			if a.ArrayLen() == 0 {
				return types.NullValue, nil
			}
			return types.NewInt(i4, 1), nil
		}},
		&Func{Name: "array_dims", Args: tt(AnyArray), Ret: text, Eval1: func(a types.Value) (types.Value, error) {
			n := a.ArrayLen()
			if n == 0 {
				return types.NullValue, nil
			}
			return types.NewText("[1:" + strconv.Itoa(n) + "]"), nil
		}},
		&Func{Name: "array_position", Args: tt(AnyArray, AnyElement), Ret: i4, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].K == types.Null {
				return types.NullValue, nil
			}
			for i, e := range a[0].Elems() {
				if types.Equal(e, a[1]) { // IS NOT DISTINCT FROM, as PostgreSQL
					return types.NewInt(i4, int64(i+1)), nil
				}
			}
			return types.NullValue, nil
		}},
		&Func{Name: "array_positions", Args: tt(AnyArray, AnyElement), Ret: types.Int4Array, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].K == types.Null {
				return types.NullValue, nil
			}
			var out []types.Value
			for i, e := range a[0].Elems() {
				if types.Equal(e, a[1]) {
					out = append(out, types.NewInt(i4, int64(i+1)))
				}
			}
			return newArray(types.Int4Array, out)
		}},
		&Func{Name: "array_remove", Args: tt(AnyArray, AnyElement), Ret: AnyArray, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].K == types.Null {
				return types.NullValue, nil
			}
			var out []types.Value
			for _, e := range a[0].Elems() {
				if !types.Equal(e, a[1]) {
					out = append(out, e)
				}
			}
			return types.NewArray(a[0].K, out), nil
		}},
		&Func{Name: "array_replace", Args: tt(AnyArray, AnyElement, AnyElement), Ret: AnyArray, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].K == types.Null {
				return types.NullValue, nil
			}
			elems := a[0].Elems()
			for i, e := range elems {
				if types.Equal(e, a[1]) {
					elems[i] = a[2]
				}
			}
			return newArray(a[0].K, elems) // a longer replacement grows it
		}},
	)
}

// appendElem adds e at the end (or the front) of arr; a NULL array is an
// empty one, as array_append and array_prepend treat it.
func appendElem(arr, e types.Value, t types.Type, front bool) (types.Value, error) {
	if arr.K != types.Null {
		t = arr.K
	}
	if t == types.Null {
		return types.NullValue, nil // both NULL: the type is the plan's, not known here
	}
	n, payload := arrayBytes(arr)
	if err := checkArray(n+1, payload+elemPayload(e)); err != nil {
		return types.NullValue, err
	}
	elems := arr.Elems()
	if front {
		elems = append([]types.Value{e}, elems...)
	} else {
		elems = append(elems, e)
	}
	return types.NewArray(t, elems), nil
}

// arrayCat is a || b for two arrays (array_cat), checked before either
// is decoded; a NULL array is an empty one.
func arrayCat(a, b types.Value) (types.Value, error) {
	switch {
	case a.K == types.Null:
		return b, nil
	case b.K == types.Null:
		return a, nil
	}
	n1, p1 := arrayBytes(a)
	n2, p2 := arrayBytes(b)
	if err := checkArray(n1+n2, p1+p2); err != nil {
		return types.NullValue, err
	}
	return types.NewArray(a.K, append(a.Elems(), b.Elems()...)), nil
}
