package expr

import (
	"encoding/json"
	"maps"
	"math/big"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// The jsonb operators that test and change documents: containment (@>,
// <@), key existence (?, ?|, ?&), concatenation (||), deletion (-, #-),
// and jsonb_set and jsonb_insert, with PostgreSQL's rules.

func init() {
	j, text, i4, b := types.JSONB, types.Text, types.Int4, types.Bool
	arr := types.TextArray
	docs := func(f func(x, y any) (types.Value, error)) func(a []types.Value) (types.Value, error) {
		return func(a []types.Value) (types.Value, error) {
			x, err := jsonDoc(a[0])
			if err != nil {
				return types.NullValue, err
			}
			y, err := jsonDoc(a[1])
			if err != nil {
				return types.NullValue, err
			}
			return f(x, y)
		}
	}
	doc := func(f func(x any, a []types.Value) (types.Value, error)) func(a []types.Value) (types.Value, error) {
		return func(a []types.Value) (types.Value, error) {
			x, err := jsonDoc(a[0])
			if err != nil {
				return types.NullValue, err
			}
			return f(x, a)
		}
	}
	fs := []*Func{
		fn("@>", tt(j, j), b, docs(func(x, y any) (types.Value, error) { return types.NewBool(jsonContains(x, y, true)), nil })),
		fn("<@", tt(j, j), b, docs(func(x, y any) (types.Value, error) { return types.NewBool(jsonContains(y, x, true)), nil })),
		fn("?", tt(j, text), b, doc(func(x any, a []types.Value) (types.Value, error) {
			return types.NewBool(jsonHasKey(x, a[1].S)), nil
		})),
		fn("?|", tt(j, arr), b, doc(func(x any, a []types.Value) (types.Value, error) {
			return types.NewBool(jsonHasKeys(x, a[1].Elems(), false)), nil
		})),
		fn("?&", tt(j, arr), b, doc(func(x any, a []types.Value) (types.Value, error) {
			return types.NewBool(jsonHasKeys(x, a[1].Elems(), true)), nil
		})),
		fn("||", tt(j, j), j, docs(func(x, y any) (types.Value, error) { return jsonValue(jsonConcat(x, y)) })),
		fn("-", tt(j, text), j, doc(func(x any, a []types.Value) (types.Value, error) {
			return jsonDeleteKeys(x, []types.Value{a[1]})
		})),
		fn("-", tt(j, arr), j, doc(func(x any, a []types.Value) (types.Value, error) {
			return jsonDeleteKeys(x, a[1].Elems())
		})),
		fn("-", tt(j, i4), j, doc(func(x any, a []types.Value) (types.Value, error) {
			return jsonDeleteIndex(x, a[1].I)
		})),
		fn("#-", tt(j, arr), j, doc(func(x any, a []types.Value) (types.Value, error) {
			y, err := jsonDeletePath(x, a[1].Elems(), 0)
			if err != nil {
				return types.NullValue, err
			}
			return jsonValue(y)
		})),
	}
	for _, f := range fs {
		f.Infix = true
	}
	set := func(insert bool) func(a []types.Value) (types.Value, error) {
		return func(a []types.Value) (types.Value, error) {
			x, err := jsonDoc(a[0])
			if err != nil {
				return types.NullValue, err
			}
			v, err := jsonDoc(a[2])
			if err != nil {
				return types.NullValue, err
			}
			flag := !insert // jsonb_set's create_if_missing, jsonb_insert's insert_after
			if len(a) > 3 {
				flag = a[3].I != 0
			}
			y, err := jsonSetPath(x, a[1].Elems(), 0, v, insert, flag)
			if err != nil {
				return types.NullValue, err
			}
			return jsonValue(y)
		}
	}
	for _, name := range []string{"jsonb_set", "jsonb_insert"} {
		insert := name == "jsonb_insert"
		fs = append(fs,
			fn(name, tt(j, arr, j), j, set(insert)),
			fn(name, tt(j, arr, j, b), j, set(insert)))
	}
	for _, p := range []string{"jsonb", "json"} {
		fs = append(fs, fn(p+"_pretty", tt(j), text, func(a []types.Value) (types.Value, error) {
			x, err := jsonDoc(a[0])
			if err != nil {
				return types.NullValue, err
			}
			return types.NewText(string(appendPretty(nil, x, 0))), nil
		}))
	}
	Register(fs...)
}

// jsonContains is x @> y: every member of an object y is in x and holds
// what y's holds there, every element of an array y is held by some
// element of x, scalars are equal; and at the top level (top) an array
// holds a scalar that is one of its elements.
func jsonContains(x, y any, top bool) bool {
	switch y := y.(type) {
	case map[string]any:
		o, ok := x.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range y {
			w, ok := o[k]
			if !ok || !jsonContains(w, v, false) {
				return false
			}
		}
		return true
	case []any:
		a, ok := x.([]any)
		if !ok {
			return false
		}
		for _, v := range y {
			found := false
			for _, w := range a {
				if jsonContains(w, v, false) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	if a, ok := x.([]any); ok && top {
		for _, w := range a {
			if jsonScalarEqual(w, y) {
				return true
			}
		}
		return false
	}
	return jsonScalarEqual(x, y)
}

// jsonScalarEqual compares two scalars as jsonb does: numbers by value.
func jsonScalarEqual(x, y any) bool {
	switch x := x.(type) {
	case json.Number:
		n, ok := y.(json.Number)
		if !ok {
			return false
		}
		a, okA := new(big.Rat).SetString(string(x))
		b, okB := new(big.Rat).SetString(string(n))
		if !okA || !okB {
			return string(x) == string(n)
		}
		return a.Cmp(b) == 0
	case string:
		s, ok := y.(string)
		return ok && s == x
	case bool:
		v, ok := y.(bool)
		return ok && v == x
	case nil:
		return y == nil
	}
	return false
}

// jsonHasKey is x ? k: k is a key of the object x, a string element of
// the array x, or the string x itself.
func jsonHasKey(x any, k string) bool {
	switch x := x.(type) {
	case map[string]any:
		_, ok := x[k]
		return ok
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && s == k {
				return true
			}
		}
	case string:
		return x == k
	}
	return false
}

// jsonHasKeys is x ?| keys (any of them) and x ?& keys (all); NULL keys
// are left out.
func jsonHasKeys(x any, keys []types.Value, all bool) bool {
	for _, k := range keys {
		if k.K == types.Null {
			continue
		}
		if jsonHasKey(x, k.S) != all {
			return !all
		}
	}
	return all
}

// jsonConcat is x || y: objects merged (y's members win), arrays joined,
// and anything else taken as an array of itself.
func jsonConcat(x, y any) any {
	xo, xObj := x.(map[string]any)
	yo, yObj := y.(map[string]any)
	if xObj && yObj {
		out := maps.Clone(xo)
		maps.Copy(out, yo)
		return out
	}
	asArray := func(v any) []any {
		if a, ok := v.([]any); ok {
			return a
		}
		return []any{v}
	}
	xa, ya := asArray(x), asArray(y)
	return append(append(make([]any, 0, len(xa)+len(ya)), xa...), ya...)
}

// jsonDeleteKeys is x - key and x - keys: the members of an object, or
// the string elements of an array, that are one of keys.
func jsonDeleteKeys(x any, keys []types.Value) (types.Value, error) {
	drop := func(s string) bool {
		for _, k := range keys {
			if k.K != types.Null && k.S == s {
				return true
			}
		}
		return false
	}
	switch x := x.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			if !drop(k) {
				out[k] = v
			}
		}
		return jsonValue(out)
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); !ok || !drop(s) {
				out = append(out, e)
			}
		}
		return jsonValue(out)
	}
	return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "cannot delete from scalar")
}

// jsonDeleteIndex is x - i: an array without its element i (negative
// from the end; none when out of range).
func jsonDeleteIndex(x any, i int64) (types.Value, error) {
	switch a := x.(type) {
	case []any:
		if i < 0 {
			i += int64(len(a))
		}
		if i < 0 || i >= int64(len(a)) {
			return jsonValue(a)
		}
		return jsonValue(append(append(make([]any, 0, len(a)-1), a[:i]...), a[i+1:]...))
	case map[string]any:
		return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "cannot delete from object using integer index")
	}
	return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "cannot delete from scalar")
}

// arrayIndex reads path element at (of position pos in the path) as an
// array index into an array of n elements: negative ones count from the
// end. ok is false for one past either end.
func arrayIndex(step types.Value, pos, n int) (int, bool, error) {
	i, err := strconv.Atoi(strings.TrimSpace(step.S))
	if err != nil {
		return 0, false, pgerror.New(pgerror.InvalidTextRepresentation,
			"path element at position %d is not an integer: \"%s\"", pos+1, step.S)
	}
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n, nil
}

// pathStep is path's element at pos, the step #-, jsonb_set and
// jsonb_insert take there, and whether it is the last; a NULL one is an
// error.
func pathStep(path []types.Value, pos int) (step types.Value, last bool, err error) {
	if path[pos].K == types.Null {
		return types.Value{}, false, pgerror.New(pgerror.NullValueNotAllowed, "path element at position %d is null", pos+1)
	}
	return path[pos], pos == len(path)-1, nil
}

// jsonDeletePath is x #- path: x without what path leads to (x as it is
// when path leads nowhere).
func jsonDeletePath(x any, path []types.Value, pos int) (any, error) {
	if len(path) == 0 {
		return x, nil
	}
	step, last, err := pathStep(path, pos)
	if err != nil {
		return nil, err
	}
	switch o := x.(type) {
	case map[string]any:
		v, ok := o[step.S]
		if !ok {
			return x, nil
		}
		out := maps.Clone(o)
		if last {
			delete(out, step.S)
			return out, nil
		}
		inner, err := jsonDeletePath(v, path, pos+1)
		if err != nil {
			return nil, err
		}
		out[step.S] = inner
		return out, nil
	case []any:
		i, ok, err := arrayIndex(step, pos, len(o))
		if err != nil || !ok {
			return x, err
		}
		out := append([]any(nil), o...)
		if last {
			return append(out[:i], out[i+1:]...), nil
		}
		inner, err := jsonDeletePath(o[i], path, pos+1)
		if err != nil {
			return nil, err
		}
		out[i] = inner
		return out, nil
	}
	if pos == 0 {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "cannot delete path in scalar")
	}
	return x, nil
}

// jsonSetPath is jsonb_set(x, path, v, create) and, with insert,
// jsonb_insert(x, path, v, after): the value path leads to replaced by v
// (or v added as the last step's key or position when create), or v put
// into an array before (after) the position path names.
func jsonSetPath(x any, path []types.Value, pos int, v any, insert, flag bool) (any, error) {
	if len(path) == 0 {
		return x, nil
	}
	step, last, err := pathStep(path, pos)
	if err != nil {
		return nil, err
	}
	switch o := x.(type) {
	case map[string]any:
		w, ok := o[step.S]
		out := maps.Clone(o)
		switch {
		case last && insert && ok:
			return nil, pgerror.New(pgerror.InvalidParameterValue, "cannot replace existing key").
				WithHint("Try using the function jsonb_set to replace key value.")
		case last && (ok || insert || flag):
			out[step.S] = v
		case last || !ok:
			return x, nil
		default:
			inner, err := jsonSetPath(w, path, pos+1, v, insert, flag)
			if err != nil {
				return nil, err
			}
			out[step.S] = inner
		}
		return out, nil
	case []any:
		i, ok, err := arrayIndex(step, pos, len(o))
		if err != nil {
			return nil, err
		}
		if !last {
			if !ok {
				return x, nil
			}
			inner, err := jsonSetPath(o[i], path, pos+1, v, insert, flag)
			if err != nil {
				return nil, err
			}
			out := append([]any(nil), o...)
			out[i] = inner
			return out, nil
		}
		switch {
		case insert:
			// a position before the start goes first, past the end last
			at := min(max(i, 0), len(o))
			if ok && flag {
				at = i + 1
			}
			return append(append(append(make([]any, 0, len(o)+1), o[:at]...), v), o[at:]...), nil
		case ok:
			out := append([]any(nil), o...)
			out[i] = v
			return out, nil
		case !flag:
			return x, nil
		case i < 0:
			return append([]any{v}, o...), nil
		}
		return append(append([]any(nil), o...), v), nil
	}
	if pos == 0 {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "cannot set path in scalar")
	}
	return x, nil
}

// appendPretty is jsonb_pretty's form of x: one member or element per
// line, indented by four spaces a level (an empty one's brackets on two
// lines, as PostgreSQL prints them).
func appendPretty(buf []byte, x any, depth int) []byte {
	indent := func(d int) {
		buf = append(buf, '\n')
		for range d {
			buf = append(buf, "    "...)
		}
	}
	switch o := x.(type) {
	case map[string]any:
		buf = append(buf, '{')
		for i, k := range jsonKeys(o) {
			if i > 0 {
				buf = append(buf, ',')
			}
			indent(depth + 1)
			buf = append(types.AppendJSONValue(buf, types.NewText(k)), ": "...)
			buf = appendPretty(buf, o[k], depth+1)
		}
		indent(depth)
		return append(buf, '}')
	case []any:
		buf = append(buf, '[')
		for i, e := range o {
			if i > 0 {
				buf = append(buf, ',')
			}
			indent(depth + 1)
			buf = appendPretty(buf, e, depth+1)
		}
		indent(depth)
		return append(buf, ']')
	}
	v, err := jsonValue(x)
	if err != nil {
		return append(buf, "null"...)
	}
	return append(buf, v.S...)
}
