package catalog

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Functions over catalog objects that need no catalog instance: pg_proc's
// rows come from the expression function registry (fixed once the
// program has started), and what PostgreSQL answers for objects fvsql
// does not have (publications, sizes of data that lives in a backend).
func init() {
	b, oidT, text := types.Bool, types.Oid, types.Text
	nullText := func(name string, args ...types.Type) *expr.Func {
		return &expr.Func{Name: name, Args: args, Ret: text, NonStrict: true, Eval: func([]types.Value) (types.Value, error) {
			return types.NullValue, nil
		}}
	}
	// Describing a function by OID: a built-in one (procByOID), or a
	// user function of the session's catalog (user, nil for built-ins).
	procText := func(name string, f func(p *proc) string, user func(*Function) string) *expr.Func {
		return &expr.Func{Name: name, Args: []types.Type{oidT}, Ret: text, Volatile: true, EvalSession: func(sess any, a []types.Value) (types.Value, error) {
			if a[0].IsNull() {
				return types.NullValue, nil
			}
			if p := procByOID(uint32(a[0].I)); p != nil {
				return types.NewText(f(p)), nil
			}
			if uf := sessionFunction(sess, uint32(a[0].I)); uf != nil && user != nil {
				return types.NewText(user(uf)), nil
			}
			return types.NullValue, nil
		}}
	}
	// Every role may do everything (roles.go).
	for _, f := range []string{"has_database_privilege", "has_schema_privilege", "has_function_privilege",
		"has_column_privilege", "has_sequence_privilege", "has_foreign_data_wrapper_privilege",
		"has_server_privilege", "has_tablespace_privilege", "has_type_privilege", "has_language_privilege",
		"has_table_privilege", "has_any_column_privilege", "pg_has_role"} {
		yes := func([]types.Value) (types.Value, error) { return types.NewBool(true), nil }
		for _, obj := range []types.Type{text, oidT} {
			expr.Register(&expr.Func{Name: f, Args: []types.Type{obj, text}, Ret: b, Eval: yes})
			for _, user := range []types.Type{types.Name, oidT} {
				expr.Register(&expr.Func{Name: f, Args: []types.Type{user, obj, text}, Ret: b, Eval: yes})
			}
		}
	}
	for _, f := range []string{"pg_statistics_obj_is_visible", "pg_conversion_is_visible", "pg_ts_config_is_visible",
		"pg_ts_dict_is_visible", "pg_ts_parser_is_visible", "pg_ts_template_is_visible", "pg_opclass_is_visible",
		"pg_opfamily_is_visible"} {
		expr.Register(&expr.Func{Name: f, Args: []types.Type{oidT}, Ret: b, Eval1: func(types.Value) (types.Value, error) {
			return types.NewBool(true), nil // one search path holds everything
		}})
	}
	expr.Register(
		&expr.Func{Name: "format_type", Args: []types.Type{oidT, types.Int4}, Ret: text, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].K == types.Null {
				return types.NullValue, nil
			}
			o := uint32(a[0].I)
			if o == 2276 {
				return types.NewText(`"any"`), nil
			}
			// regtype's output: a type name, or the number for no type
			n := types.NewInt(types.Regtype, int64(o)).Text()
			if n != "" && n[0] >= '0' && n[0] <= '9' {
				return types.NewText("???"), nil
			}
			return types.NewText(n), nil
		}},
		&expr.Func{Name: "pg_get_function_sqlbody", Args: []types.Type{oidT}, Ret: text, Eval1: func(types.Value) (types.Value, error) {
			return types.NullValue, nil // built-in functions have none, and user functions keep their body as text (prosrc)
		}},
		// Streams are not published (fvsql has no logical replication).
		&expr.Func{Name: "pg_relation_is_publishable", Args: []types.Type{oidT}, Ret: b, Eval1: func(types.Value) (types.Value, error) {
			return types.NewBool(false), nil
		}},
		procText("pg_get_functiondef", func(p *proc) string {
			return "CREATE OR REPLACE FUNCTION pg_catalog." + p.name + "(" + p.arguments() + ")\n RETURNS " + p.result() + "\n LANGUAGE internal\nAS $function$" + p.name + "$function$\n"
		}, (*Function).Definition),
		procText("pg_get_function_result", (*proc).result, (*Function).Result),
		procText("pg_get_function_arguments", (*proc).arguments, (*Function).Arguments),
		procText("pg_get_function_identity_arguments", (*proc).arguments, (*Function).Arguments),
		// pg_get_ruledef: fvsql has no rules (pg_rewrite is empty), so
		// NULL, as PostgreSQL's for an OID that names no rule.
		nullText("pg_get_ruledef", oidT), nullText("pg_get_ruledef", oidT, b),
		// pg_table_is_visible: whether the relation is in a schema of
		// the search path (pg_catalog, public), as pg_class's rows and
		// unqualified names find it; NULL for an OID that names no
		// relation.
		&expr.Func{Name: "pg_table_is_visible", Args: []types.Type{oidT}, Ret: b, Eval1: func(v types.Value) (types.Value, error) {
			schema, ok := relationSchema(uint32(v.I))
			if !ok {
				return types.NullValue, nil
			}
			return types.NewBool(slices.Contains(expr.SearchPath(), schema)), nil
		}},
		// A relation's data lives in its backend (Kafka, Redis, a file):
		// its size is not known here, so 0 bytes for a relation (a view
		// has none in PostgreSQL either), NULL for an OID that names no
		// relation, as PostgreSQL answers.
		relSize("pg_table_size"), relSize("pg_relation_size"), relSize("pg_relation_size", text),
		relSize("pg_total_relation_size"), relSize("pg_indexes_size"),
		dbSize("pg_database_size", oidT, func(v types.Value) (bool, error) {
			if v.I != databaseOID {
				return false, pgerror.New(pgerror.MakeCode("3D000"), "database with OID %d does not exist", v.I)
			}
			return true, nil
		}),
		dbSize("pg_database_size", types.Name, func(v types.Value) (bool, error) {
			if v.S != "fvsql" {
				return false, pgerror.New(pgerror.MakeCode("3D000"), "database %q does not exist", v.S)
			}
			return true, nil
		}),
		dbSize("pg_tablespace_size", oidT, func(v types.Value) (bool, error) {
			if v.I != 1663 && v.I != 1664 {
				return false, pgerror.New(pgerror.UndefinedObject, "tablespace with OID %d does not exist", v.I)
			}
			return true, nil
		}),
		dbSize("pg_tablespace_size", types.Name, func(v types.Value) (bool, error) {
			if v.S != "pg_default" && v.S != "pg_global" {
				return false, pgerror.New(pgerror.UndefinedObject, "tablespace %q does not exist", v.S)
			}
			return true, nil
		}),
	)
}

// databaseOID is pg_database.oid of the one database, fvsql.
const databaseOID = 16383

// relSize is a size function of relations: 0 for a relation, NULL for
// an OID that names none.
func relSize(name string, more ...types.Type) *expr.Func {
	return &expr.Func{Name: name, Args: append([]types.Type{types.Oid}, more...), Ret: types.Int8, Eval: func(a []types.Value) (types.Value, error) {
		if _, ok := relationSchema(uint32(a[0].I)); !ok {
			return types.NullValue, nil
		}
		return types.NewInt8(0), nil
	}}
}

// dbSize is pg_database_size or pg_tablespace_size: 0 for the database
// and tablespaces of pg_database and pg_tablespace (the data is in the
// backends), an error for others, as PostgreSQL answers.
func dbSize(name string, arg types.Type, known func(types.Value) (bool, error)) *expr.Func {
	return &expr.Func{Name: name, Args: []types.Type{arg}, Ret: types.Int8, Eval1: func(v types.Value) (types.Value, error) {
		if ok, err := known(v); !ok {
			return types.NullValue, err
		}
		return types.NewInt8(0), nil
	}}
}

var systemByOID struct {
	once sync.Once
	m    map[uint32]string // OID → schema
}

// relationSchema is the schema of the relation with an OID, known
// without a catalog instance (these functions are registered for every
// catalog): the system relations have fixed OIDs (relOID's ranges), and
// every OID from FirstOID is a user relation in public. (Whether such an
// OID names a relation of this catalog is not known here: it is taken to.)
func relationSchema(o uint32) (string, bool) {
	systemByOID.once.Do(func() {
		m := map[uint32]string{}
		for full, t := range systemTables {
			schema, _, _ := strings.Cut(full, ".")
			m[t.rel.OID] = schema
		}
		for full, o := range dynamicOIDs {
			schema, _, _ := strings.Cut(full, ".")
			m[o] = schema
		}
		systemByOID.m = m
	})
	switch {
	case o >= FirstOID:
		return "public", true
	case o >= 13800 && o < 13900:
		return "fvsql_catalog", true // AddSystemTable's, without a fixed OID
	}
	s, ok := systemByOID.m[o]
	return s, ok
}

// proc is one row of pg_proc.
type proc struct {
	oid      uint32
	name     string
	args     []types.Type
	variadic bool
	ret      types.Type
	set      bool
	agg      bool
	volatile bool
	strict   bool
}

// firstProcOID is the OID of the first function, in the range
// PostgreSQL's initdb gives its own objects.
const firstProcOID = 12000

var procList struct {
	once  sync.Once
	procs []*proc
}

// procs lists fvsql's functions: the expression functions, the
// set-returning ones and the aggregates, by name.
func procs() []*proc {
	procList.once.Do(func() {
		var ps []*proc
		for _, f := range expr.Funcs() {
			ps = append(ps, &proc{name: f.Name, args: f.Args, variadic: f.Variadic, ret: f.Ret, volatile: f.Volatile, strict: !f.NonStrict})
		}
		for _, f := range expr.SetFuncs() {
			formal := append([]types.Type(nil), f.Args...)
			names, ts := f.Cols(formal)
			ret := types.Type(types.Null)
			if len(names) == 1 {
				ret = ts[0]
				if formal[0] == expr.AnyArray {
					ret = expr.AnyElement
				}
			}
			ps = append(ps, &proc{name: f.Name, args: f.Args, variadic: f.Variadic, ret: ret, set: true, strict: !f.NonStrict})
		}
		for _, name := range []string{"avg", "bool_and", "bool_or", "count", "every", "max", "min", "stddev", "stddev_pop", "stddev_samp", "sum", "var_pop", "var_samp", "variance"} {
			if !operators.IsAggregate(name) {
				continue
			}
			if name == "count" {
				ps = append(ps, &proc{name: name, ret: types.Int8, agg: true})
			}
			for _, t := range types.All() {
				if t.IsPseudo() || t.IsArray() || t == types.Unknown {
					continue
				}
				if a, err := operators.ResolveAgg(name, t, false); err == nil {
					arg := t
					if name == "count" {
						arg = expr.Any
					}
					ps = append(ps, &proc{name: name, args: []types.Type{arg}, ret: a.Ret, agg: true})
					if name == "count" {
						break
					}
				}
			}
		}
		for _, name := range []string{"corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept",
			"regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy"} {
			if a, err := operators.ResolveAgg(name, types.Record, false); err == nil { // f(y float8, x float8)
				ps = append(ps, &proc{name: name, args: []types.Type{types.Float8, types.Float8}, ret: a.Ret, agg: true})
			}
		}
		// name order, overloads in their order
		sortProcs(ps)
		for i, p := range ps {
			p.oid = uint32(firstProcOID + i)
		}
		procList.procs = ps
	})
	return procList.procs
}

func sortProcs(ps []*proc) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
}

func procByOID(o uint32) *proc {
	ps := procs()
	if o < firstProcOID || int(o-firstProcOID) >= len(ps) {
		return nil
	}
	return ps[o-firstProcOID]
}

// typeOID is a parameter type's OID, the polymorphic "any" included.
func typeOID(t types.Type) uint32 {
	if t == expr.Any {
		return 2276
	}
	return t.OID()
}

func typeName(t types.Type) string {
	if t == expr.Any {
		return `"any"`
	}
	return t.String()
}

func (p *proc) result() string {
	if p.ret == expr.Any || p.ret == types.Null && !p.set {
		return "anyelement"
	}
	if p.set && p.ret == types.Null {
		return "SETOF record"
	}
	if p.set {
		return "SETOF " + typeName(p.ret)
	}
	return typeName(p.ret)
}

func (p *proc) arguments() string {
	if p.agg && len(p.args) == 0 {
		return "*"
	}
	parts := make([]string, len(p.args))
	for i, a := range p.args {
		parts[i] = typeName(a)
		if p.variadic && i == len(p.args)-1 {
			parts[i] = "VARIADIC " + typeName(a) + "[]"
			if a == expr.Any {
				parts[i] = `VARIADIC "any"`
			}
			if a.IsArray() || a == expr.AnyArray {
				parts[i] = "VARIADIC " + typeName(a)
			}
		}
	}
	return strings.Join(parts, ", ")
}

func (p *proc) row() types.Row {
	kind, volatile := "f", "i"
	if p.agg {
		kind = "a"
	}
	if p.volatile {
		volatile = "v"
	}
	rows := float64(0)
	if p.set {
		rows = 1000
	}
	argOIDs := make([]types.Value, len(p.args))
	for i, a := range p.args {
		argOIDs[i] = oid(typeOID(a))
	}
	ret := p.ret
	if ret == expr.Any || ret == types.Null {
		ret = expr.AnyElement
		if p.set && len(p.args) > 0 && p.name == "pg_options_to_table" {
			ret = types.Null // record
		}
	}
	variadic := uint32(0)
	if p.variadic && len(p.args) > 0 {
		variadic = typeOID(p.args[len(p.args)-1])
	}
	retOID := typeOID(ret)
	if ret == types.Null {
		retOID = 2249 // record
	}
	return types.Row{
		oid(p.oid), name(p.name), oid(PgCatalogOID), oid(10),
		oid(12), float4(1), float4(rows), oid(variadic), oid(0), char(kind),
		boolean(false), boolean(false), boolean(p.strict), boolean(p.set), char(volatile),
		char("s"), i2(len(p.args)), i2(0), oid(retOID), types.NewArray(types.OidVector, argOIDs),
		types.NullValue, types.NullValue, types.NullValue, types.NullValue,
		types.NullValue, text(p.name), types.NullValue, types.NullValue, types.NullValue, types.NullValue,
	}
}
