package server

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/types"
)

// The input functions of the reg* types for names that are not constants
// (CAST(format('%I.%I', table_schema, table_name) AS regclass) in
// Metabase's sync, CAST($1 AS regclass) in SQLAlchemy's reflection):
// the planner looks constants up itself and calls these for columns and
// parameters, which the session's catalog resolves as the query runs.
// to_regclass and friends are the same lookups giving NULL for a name
// that names nothing.

func init() {
	for _, t := range []string{"regclass", "regnamespace", "regrole", "regproc"} {
		expr.Register(
			&expr.Func{Name: t + "in", Args: []types.Type{types.Text}, Ret: types.Oid, Volatile: true,
				EvalSession: func(sess any, a []types.Value) (types.Value, error) { return regIn(sess, t, a[0], false) }},
			&expr.Func{Name: "to_" + t, Args: []types.Type{types.Text}, Ret: types.Oid, Volatile: true,
				EvalSession: func(sess any, a []types.Value) (types.Value, error) { return regIn(sess, t, a[0], true) }},
		)
	}
}

func regIn(sess any, t string, v types.Value, missingOK bool) (types.Value, error) {
	name := strings.TrimSpace(v.S)
	if name != "" && name[0] >= '0' && name[0] <= '9' && !missingOK {
		o, err := strconv.ParseUint(name, 10, 32)
		if err != nil {
			return types.NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "invalid input syntax for type oid: %q", v.S)
		}
		return types.NewInt(types.Oid, int64(o)), nil
	}
	s := sessionOf(sess)
	if s == nil {
		return types.NullValue, pgerror.New(pgerror.FeatureNotSupported, "%s of a name outside a session's query", t)
	}
	o, err := planner.RegOID(s.srv.cat, t, name)
	if err != nil {
		if missingOK {
			return types.NullValue, nil
		}
		return types.NullValue, err
	}
	return types.NewInt(types.Oid, int64(o)), nil
}
