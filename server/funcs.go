package server

import (
	"runtime"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// System functions clients call on connect and for introspection.
func init() {
	constText := func(name, v string) *expr.Func {
		return &expr.Func{Name: name, Ret: types.Text, Eval: func([]types.Value) (types.Value, error) { return types.NewText(v), nil }}
	}
	constName := func(name, v string) *expr.Func {
		return &expr.Func{Name: name, Ret: types.Name, Eval: func([]types.Value) (types.Value, error) { return types.NewString(types.Name, v), nil }}
	}
	expr.Register(
		constText("version", "PostgreSQL "+ServerVersion+" on "+runtime.GOARCH+"-"+runtime.GOOS+", compiled by "+runtime.Version()),
		constName("current_database", catalog.Database),
		constName("current_catalog", catalog.Database),
		constName("current_schema", "public"),
		&expr.Func{Name: "pg_get_userbyid", Args: []types.Type{types.Oid}, Ret: types.Name, Eval1: func(types.Value) (types.Value, error) {
			return types.NewString(types.Name, "fvsql"), nil
		}},
		&expr.Func{Name: "format_type", Args: []types.Type{types.Oid, types.Int4}, Ret: types.Text, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].IsNull() {
				return types.NullValue, nil
			}
			t, ok := types.ByOID(uint32(a[0].I))
			if !ok {
				return types.NewText("???"), nil
			}
			return types.NewText(t.String()), nil
		}},
		&expr.Func{Name: "obj_description", Args: []types.Type{types.Oid, types.Text}, Ret: types.Text, NonStrict: true, Eval: func([]types.Value) (types.Value, error) {
			return types.NullValue, nil
		}},
		&expr.Func{Name: "col_description", Args: []types.Type{types.Oid, types.Int4}, Ret: types.Text, NonStrict: true, Eval: func([]types.Value) (types.Value, error) {
			return types.NullValue, nil
		}},
		&expr.Func{Name: "pg_encoding_to_char", Args: []types.Type{types.Int4}, Ret: types.Name, Eval1: func(types.Value) (types.Value, error) {
			return types.NewString(types.Name, "UTF8"), nil
		}},
		&expr.Func{Name: "has_table_privilege", Args: []types.Type{types.Text, types.Text}, Ret: types.Bool, Eval: func([]types.Value) (types.Value, error) {
			return types.NewBool(true), nil
		}},
		&expr.Func{Name: "has_table_privilege", Args: []types.Type{types.Oid, types.Text}, Ret: types.Bool, Eval: func([]types.Value) (types.Value, error) {
			return types.NewBool(true), nil
		}},
		&expr.Func{Name: "shobj_description", Args: []types.Type{types.Oid, types.Text}, Ret: types.Text, NonStrict: true, Eval: func([]types.Value) (types.Value, error) {
			return types.NullValue, nil
		}},
		&expr.Func{Name: "array_to_string", Args: []types.Type{types.TextArray, types.Text}, Ret: types.Text, Eval: func(a []types.Value) (types.Value, error) {
			return types.NewText(strings.ReplaceAll(strings.Trim(a[0].S, "{}"), ",", a[1].S)), nil
		}},
		&expr.Func{Name: "pg_tablespace_location", Args: []types.Type{types.Oid}, Ret: types.Text, Eval1: func(types.Value) (types.Value, error) {
			return types.NewText(""), nil
		}},
	)
	for _, name := range []string{"pg_function_is_visible", "pg_type_is_visible", "pg_operator_is_visible", "pg_collation_is_visible"} {
		expr.Register(&expr.Func{Name: name, Args: []types.Type{types.Oid}, Ret: types.Bool,
			Eval1: func(types.Value) (types.Value, error) { return types.NewBool(true), nil }})
	}
	// Definitions of objects fvsql does not have (column defaults,
	// indexes, constraints, triggers): NULL, as PostgreSQL returns for an
	// OID that names nothing.
	for _, f := range []struct {
		name string
		args []types.Type
	}{
		{"pg_get_expr", []types.Type{types.Text, types.Oid}},
		{"pg_get_expr", []types.Type{types.Text, types.Oid, types.Bool}},
		{"pg_get_indexdef", []types.Type{types.Oid}},
		{"pg_get_indexdef", []types.Type{types.Oid, types.Int4, types.Bool}},
		{"pg_get_constraintdef", []types.Type{types.Oid}},
		{"pg_get_constraintdef", []types.Type{types.Oid, types.Bool}},
		{"pg_get_triggerdef", []types.Type{types.Oid}},
		{"pg_get_triggerdef", []types.Type{types.Oid, types.Bool}},
		{"pg_get_statisticsobjdef_columns", []types.Type{types.Oid}},
		{"pg_get_partkeydef", []types.Type{types.Oid}},
		{"pg_get_viewdef", []types.Type{types.Oid, types.Bool}},
	} {
		expr.Register(&expr.Func{Name: f.name, Args: f.args, Ret: types.Text, NonStrict: true,
			Eval: func([]types.Value) (types.Value, error) { return types.NullValue, nil }})
	}
}
