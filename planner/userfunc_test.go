package planner_test

import (
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// funcCatalog is a relCatalog with user functions.
type funcCatalog struct {
	relCatalog
	funcs map[string]*catalog.Function
}

func (c funcCatalog) Function(name string) (*catalog.Function, bool) {
	f, ok := c.funcs[name]
	return f, ok
}

func userFuncCatalog() funcCatalog {
	cat := funcCatalog{relCatalog: namesCatalog("unused"), funcs: map[string]*catalog.Function{}}
	for _, f := range []*catalog.Function{
		{Name: "risk", Language: "wasm", Args: []catalog.FuncArg{{Name: "amount", Type: types.Numeric}, {Name: "country", Type: types.Text}}, Ret: types.Float8},
		{Name: "add2", Language: "wasm", Args: []catalog.FuncArg{{Type: types.Int8}, {Type: types.Int8}}, Ret: types.Int8},
		{Name: "net", Language: "sql", Args: []catalog.FuncArg{{Name: "price", Type: types.Numeric}}, Ret: types.Numeric, Body: "SELECT price * 0.908"},
		{Name: "twice", Language: "sql", Args: []catalog.FuncArg{{Type: types.Int8}}, Ret: types.Int8, Body: "SELECT add2($1, $1)"},
		{Name: "loop", Language: "sql", Args: []catalog.FuncArg{{Name: "x", Type: types.Int8}}, Ret: types.Int8, Body: "SELECT loop(x)"},
		{Name: "enrich", Language: "wasm", Args: []catalog.FuncArg{{Name: "p", Type: types.JSONB}}, Table: []catalog.Column{{Name: "id", Type: types.Int8}}},
	} {
		cat.funcs[f.Name] = f
	}
	return cat
}

// TestUserFunctionCalls: a wasm function's call is a KUser node over its
// arguments cast to its argument types; a sql function's body is
// inlined, its parameters (by name or $n) replaced by the arguments;
// calls that match no function, a table function in an expression and a
// sql function calling itself are refused.
func TestUserFunctionCalls(t *testing.T) {
	cat := userFuncCatalog()
	for _, c := range []struct {
		sql, want string
	}{
		{"CREATE STREAM x AS SELECT risk(k, v) AS r FROM src", "risk(k::numeric, v)"},
		{"CREATE STREAM x AS SELECT k FROM src WHERE add2(k, 1) > 3", "add2(k, 1) > 3"},
		{"CREATE STREAM x AS SELECT net(k) AS n FROM src", "k::numeric * 0.908"},
		{"CREATE STREAM x AS SELECT twice(k + 1) AS n FROM src", "add2((k + 1), (k + 1))"},
	} {
		stmts, perr := sql.Parse(c.sql)
		if perr != nil {
			t.Fatal(perr)
		}
		p, err := planner.PlanContinuous(cat, stmts[0].Stmt.(*sql.CreateAs))
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if got := p.Topology.String(); !strings.Contains(got, c.want) {
			t.Errorf("%s: plan\n%s\nhas no %s", c.sql, got, c.want)
		}
	}
	for _, c := range []struct {
		sql  string
		code pgerror.Code
	}{
		{"CREATE STREAM x AS SELECT add2(k) AS r FROM src", pgerror.UndefinedFunction},
		{"CREATE STREAM x AS SELECT add2(k, now()) AS r FROM src", pgerror.UndefinedFunction},
		{"CREATE STREAM x AS SELECT enrich(v::jsonb) AS r FROM src", pgerror.FeatureNotSupported},
		{"CREATE STREAM x AS SELECT loop(k) AS r FROM src", pgerror.MakeCode("54001")},
	} {
		stmts, _ := sql.Parse(c.sql)
		_, err := planner.PlanContinuous(cat, stmts[0].Stmt.(*sql.CreateAs))
		if pgerror.CodeOf(err) != c.code {
			t.Errorf("%s: %v (%s), want %s", c.sql, err, pgerror.CodeOf(err), c.code)
		}
	}
	// a sql function's body, checked as CREATE FUNCTION does
	bad := &catalog.Function{Name: "bad", Language: "sql", Args: []catalog.FuncArg{{Name: "a", Type: types.Int8}}, Ret: types.Int8, Body: "SELECT b + 1"}
	if _, err := planner.PlanFunctionCall(cat, bad); pgerror.CodeOf(err) != pgerror.UndefinedColumn {
		t.Errorf("a body naming no argument: %v, want 42703", err)
	}
	agg := &catalog.Function{Name: "agg", Language: "sql", Args: []catalog.FuncArg{{Name: "a", Type: types.Int8}}, Ret: types.Int8, Body: "SELECT a FROM src"}
	if _, err := planner.PlanFunctionCall(cat, agg); pgerror.CodeOf(err) != pgerror.FeatureNotSupported {
		t.Errorf("a body with FROM: %v, want 0A000", err)
	}
	txt := &catalog.Function{Name: "txt", Language: "sql", Args: []catalog.FuncArg{{Name: "a", Type: types.Int8}}, Ret: types.Bool, Body: "SELECT 'x' || a"}
	if _, err := planner.PlanFunctionCall(cat, txt); pgerror.CodeOf(err) != pgerror.InvalidFunctionDefinition {
		t.Errorf("a body of another type than the result: %v, want 42P13", err)
	}
}
