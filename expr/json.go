package expr

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// The jsonb functions: a jsonb value is held as PostgreSQL prints it
// (types.NormalizeJSON), which every result goes through again; json is
// the same type here. Documents are read with encoding/json, numbers kept
// as their text.

// jsonDoc reads a jsonb value.
func jsonDoc(v types.Value) (any, error) {
	d := json.NewDecoder(strings.NewReader(v.S))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, pgerror.New(pgerror.InvalidTextRepresentation, "invalid input syntax for type json")
	}
	return x, nil
}

// jsonValue makes a jsonb value of a document.
func jsonValue(x any) (types.Value, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(x); err != nil {
		return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "%v", err)
	}
	return normalized(bytes.TrimRight(buf.Bytes(), "\n"))
}

// normalized is a jsonb value of JSON text.
func normalized(b []byte) (types.Value, error) {
	if err := checkSize("jsonb", int64(len(b))); err != nil {
		return types.NullValue, err
	}
	s, err := types.NormalizeJSON(b)
	if err != nil {
		return types.NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "invalid input syntax for type json").WithDetail("%v", err)
	}
	return types.NewJSONB(s), nil
}

// jsonTypeof is jsonb_typeof's name for a document.
func jsonTypeof(x any) string {
	switch x.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// jsonText is a document as ->> and the _text functions give it: a
// string's contents, NULL for null, other values as jsonb prints them.
func jsonText(x any) (types.Value, error) {
	switch x := x.(type) {
	case nil:
		return types.NullValue, nil
	case string:
		return types.NewText(x), nil
	}
	v, err := jsonValue(x)
	if err != nil {
		return types.NullValue, err
	}
	return types.NewText(v.S), nil
}

// jsonKeys are an object's keys in jsonb's order: by length, then bytes.
func jsonKeys(o map[string]any) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return keys
}

// jsonPath follows path (keys, or array positions, negative ones from the
// end) into x: nil and false when it leads nowhere.
func jsonPath(x any, path []types.Value) (any, bool) {
	for _, p := range path {
		if p.K == types.Null {
			return nil, false
		}
		switch o := x.(type) {
		case map[string]any:
			v, ok := o[p.S]
			if !ok {
				return nil, false
			}
			x = v
		case []any:
			i, ok, err := arrayIndex(p, 0, len(o)) // a step that is no position leads nowhere here
			if err != nil || !ok {
				return nil, false
			}
			x = o[i]
		default:
			return nil, false
		}
	}
	return x, true
}

// toJSON is to_jsonb's value of v: numbers and booleans as themselves,
// arrays as arrays, times in ISO 8601 as PostgreSQL writes them, the rest
// as strings of their text.
func toJSON(buf []byte, v types.Value) []byte {
	switch {
	case v.K == types.Null:
		return append(buf, "null"...)
	case v.K == types.TimestampTZ:
		s := string(types.AppendJSONValue(nil, v)) // "…Z"
		return append(append(buf, s[:len(s)-2]...), `+00:00"`...)
	case v.K == types.Bytea, v.K == types.Text, v.K == types.Varchar, v.K == types.Name, v.K == types.Char:
		b, _ := json.Marshal(v.Text())
		return append(buf, b...)
	case v.K == types.Float4 || v.K == types.Float8:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			b, _ := json.Marshal(v.Text())
			return append(buf, b...)
		}
		return append(buf, v.Text()...)
	case v.K.IsArray() && !v.K.IsVector():
		buf = append(buf, '[')
		for i, e := range v.Elems() {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = toJSON(buf, e)
		}
		return append(buf, ']')
	}
	return types.AppendJSONValue(buf, v)
}

func toJSONB(a []types.Value) (types.Value, error) {
	return normalized(toJSON(nil, a[0]))
}

var errArrayLength = func(x any) error {
	if _, ok := x.(map[string]any); ok {
		return pgerror.New(pgerror.InvalidParameterValue, "cannot get array length of a non-array")
	}
	return pgerror.New(pgerror.InvalidParameterValue, "cannot get array length of a scalar")
}

func init() {
	j, text, i4 := types.JSONB, types.Text, types.Int4
	var fs []*Func
	for _, p := range []string{"jsonb", "json"} {
		fs = append(fs,
			fn(p+"_typeof", tt(j), text, func(a []types.Value) (types.Value, error) {
				x, err := jsonDoc(a[0])
				if err != nil {
					return types.NullValue, err
				}
				return types.NewText(jsonTypeof(x)), nil
			}),
			fn(p+"_array_length", tt(j), i4, func(a []types.Value) (types.Value, error) {
				x, err := jsonDoc(a[0])
				if err != nil {
					return types.NullValue, err
				}
				arr, ok := x.([]any)
				if !ok {
					return types.NullValue, errArrayLength(x)
				}
				return types.NewInt(i4, int64(len(arr))), nil
			}),
			&Func{Name: p + "_extract_path", Args: tt(j, text), Variadic: true, Ret: j, Eval: func(a []types.Value) (types.Value, error) {
				return pathValue(a[0], a[1:], false)
			}},
			&Func{Name: p + "_extract_path_text", Args: tt(j, text), Variadic: true, Ret: text, Eval: func(a []types.Value) (types.Value, error) {
				return pathValue(a[0], a[1:], true)
			}},
			fn("to_"+p, tt(Any), j, toJSONB),
			&Func{Name: p + "_build_array", Args: tt(Any), Variadic: true, Ret: j, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
				buf := []byte{'['}
				for i, v := range a {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = toJSON(buf, v)
				}
				return normalized(append(buf, ']'))
			}},
			fn(p+"_strip_nulls", tt(j), j, func(a []types.Value) (types.Value, error) {
				x, err := jsonDoc(a[0])
				if err != nil {
					return types.NullValue, err
				}
				return jsonValue(stripNulls(x))
			}),
			// the final steps of jsonb_agg and jsonb_object_agg (see
			// planner's jsonAggregates): an array of the aggregated
			// values, and an object of the aggregated [key, value] pairs
			fn("_fvsql_"+p+"_array_of", tt(types.JSONBArray), j, func(a []types.Value) (types.Value, error) {
				buf := []byte{'['}
				for i, e := range a[0].Elems() {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = toJSON(buf, e)
				}
				return normalized(append(buf, ']'))
			}),
			fn("_fvsql_"+p+"_object_of", tt(types.JSONBArray), j, func(a []types.Value) (types.Value, error) {
				buf := []byte{'{'}
				for i, e := range a[0].Elems() {
					x, err := jsonDoc(e)
					if err != nil {
						return types.NullValue, err
					}
					pair, ok := x.([]any)
					if !ok || len(pair) != 2 {
						return types.NullValue, pgerror.New(pgerror.Internal, "jsonb_object_agg: not a pair")
					}
					k, ok := pair[0].(string)
					if !ok {
						return types.NullValue, pgerror.New(pgerror.NullValueNotAllowed, "field name must not be null")
					}
					if i > 0 {
						buf = append(buf, ',')
					}
					kb, _ := json.Marshal(k)
					buf = append(append(buf, kb...), ':')
					vb, err := jsonValue(pair[1])
					if err != nil {
						return types.NullValue, err
					}
					buf = append(buf, vb.S...)
				}
				return normalized(append(buf, '}'))
			}),
		)
	}
	Register(fs...)

	var sets []*SetFunc
	for _, p := range []string{"jsonb", "json"} {
		elements := func(asText bool) func(a []types.Value) ([]types.Row, error) {
			return func(a []types.Value) ([]types.Row, error) {
				x, err := jsonDoc(a[0])
				if err != nil {
					return nil, err
				}
				arr, ok := x.([]any)
				if !ok {
					if _, obj := x.(map[string]any); obj {
						return nil, pgerror.New(pgerror.InvalidParameterValue, "cannot extract elements from an object")
					}
					return nil, pgerror.New(pgerror.InvalidParameterValue, "cannot extract elements from a scalar")
				}
				rows := make([]types.Row, len(arr))
				for i, e := range arr {
					var v types.Value
					if asText {
						v, err = jsonText(e)
					} else {
						v, err = jsonValue(e)
					}
					if err != nil {
						return nil, err
					}
					rows[i] = types.Row{v}
				}
				return rows, nil
			}
		}
		each := func(name string, asText bool) func(a []types.Value) ([]types.Row, error) {
			return func(a []types.Value) ([]types.Row, error) {
				x, err := jsonDoc(a[0])
				if err != nil {
					return nil, err
				}
				o, ok := x.(map[string]any)
				if !ok {
					if _, arr := x.([]any); arr {
						return nil, pgerror.New(pgerror.InvalidParameterValue, "cannot call %s on an array", name)
					}
					return nil, pgerror.New(pgerror.InvalidParameterValue, "cannot call %s on a scalar", name)
				}
				var rows []types.Row
				for _, k := range jsonKeys(o) {
					row := types.Row{types.NewText(k)}
					if name != p+"_object_keys" {
						var v types.Value
						if asText {
							v, err = jsonText(o[k])
						} else {
							v, err = jsonValue(o[k])
						}
						if err != nil {
							return nil, err
						}
						row = append(row, v)
					}
					rows = append(rows, row)
				}
				return rows, nil
			}
		}
		valueCols := func(t types.Type) func([]types.Type) ([]string, []types.Type) {
			return func([]types.Type) ([]string, []types.Type) { return []string{"value"}, []types.Type{t} }
		}
		pairCols := func(t types.Type) func([]types.Type) ([]string, []types.Type) {
			return func([]types.Type) ([]string, []types.Type) {
				return []string{"key", "value"}, []types.Type{text, t}
			}
		}
		sets = append(sets,
			&SetFunc{Name: p + "_array_elements", Args: tt(j), Cols: valueCols(j), Rows: elements(false)},
			&SetFunc{Name: p + "_array_elements_text", Args: tt(j), Cols: valueCols(text), Rows: elements(true)},
			&SetFunc{Name: p + "_object_keys", Args: tt(j), Cols: oneCol(text), Rows: each(p+"_object_keys", false)},
			&SetFunc{Name: p + "_each", Args: tt(j), Cols: pairCols(j), Rows: each(p+"_each", false)},
			&SetFunc{Name: p + "_each_text", Args: tt(j), Cols: pairCols(text), Rows: each(p+"_each_text", true)},
		)
	}
	RegisterSet(sets...)
}

// stripNulls drops the null members of x's objects, at every depth.
func stripNulls(x any) any {
	switch o := x.(type) {
	case map[string]any:
		out := make(map[string]any, len(o))
		for k, v := range o {
			if v != nil {
				out[k] = stripNulls(v)
			}
		}
		return out
	case []any:
		out := make([]any, len(o))
		for i, v := range o {
			out[i] = stripNulls(v)
		}
		return out
	}
	return x
}

// jsonElement is x -> i and x ->> i: an array's element i (negative from
// the end), NULL for anything else.
func jsonElement(doc types.Value, i int64, asText bool) (types.Value, error) {
	x, err := jsonDoc(doc)
	if err != nil {
		return types.NullValue, err
	}
	arr, ok := x.([]any)
	switch {
	case ok:
	case x == nil || jsonTypeof(x) == "object":
		return types.NullValue, nil
	default: // a scalar is an array of itself to ->, as in PostgreSQL
		arr = []any{x}
	}
	if i < 0 {
		i += int64(len(arr))
	}
	if i < 0 || i >= int64(len(arr)) {
		return types.NullValue, nil
	}
	if asText {
		return jsonText(arr[i])
	}
	return jsonValue(arr[i])
}

// jsonPathOp is x #> path and x #>> path.
func jsonPathOp(doc, path types.Value, asText bool) (types.Value, error) {
	return pathValue(doc, path.Elems(), asText)
}

// pathValue is what path leads to in doc (jsonPath), as jsonb or as text
// (jsonText); NULL when it leads nowhere.
func pathValue(doc types.Value, path []types.Value, asText bool) (types.Value, error) {
	x, err := jsonDoc(doc)
	if err != nil {
		return types.NullValue, err
	}
	y, ok := jsonPath(x, path)
	switch {
	case !ok:
		return types.NullValue, nil
	case asText:
		return jsonText(y)
	}
	return jsonValue(y)
}
