package server

import (
	"os"
	"runtime"

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
	pid := int64(os.Getpid())
	expr.Register(
		constText("version", "PostgreSQL "+ServerVersion+" on "+runtime.GOARCH+"-"+runtime.GOOS+", compiled by "+runtime.Version()),
		constName("current_database", "fvsql"),
		constName("current_catalog", "fvsql"),
		constName("current_schema", "public"),
		constName("current_user", "fvsql"),
		constName("session_user", "fvsql"),
		constName("user", "fvsql"),
		&expr.Func{Name: "pg_backend_pid", Ret: types.Int4, Eval: func([]types.Value) (types.Value, error) {
			return types.NewInt(types.Int4, pid), nil
		}},
		&expr.Func{Name: "pg_table_is_visible", Args: []types.Type{types.Oid}, Ret: types.Bool, Eval1: func(v types.Value) (types.Value, error) {
			return types.NewBool(true), nil // every relation is on the search path
		}},
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
	)
}
