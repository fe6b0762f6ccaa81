package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestFuncRows: a function in FROM computed per execution, with that
// execution's parameters, its rows charged to the query's memory.
func TestFuncRows(t *testing.T) {
	call, err := expr.ResolveSet("generate_series", []*expr.Expr{expr.Const(types.NewInt(types.Int4, 1)), expr.Param(0, types.Int4)})
	if err != nil {
		t.Fatal(err)
	}
	set := &plan.FuncRows{Set: call.Fn.Key(), Args: call.Args, Ordinality: true}
	upper, err := expr.Call("upper", expr.Param(0, types.Text))
	if err != nil {
		t.Fatal(err)
	}
	scalar := &plan.FuncRows{Args: []*expr.Expr{upper}}
	run := func(n plan.Node, lim Limits, params ...types.Value) (string, error) {
		var rows []string
		err := RunBoundedLimits(context.Background(), n, nil, params, func(_ *operators.Batch, _ int, err error) error { return err }, lim,
			func(b *operators.Batch) error {
				for _, r := range b.Rows {
					cells := make([]string, len(r))
					for i, v := range r {
						cells[i] = v.String()
					}
					rows = append(rows, strings.Join(cells, ","))
				}
				return nil
			})
		return strings.Join(rows, " "), err
	}
	for _, c := range []struct {
		n      plan.Node
		params []types.Value
		want   string
	}{
		{set, []types.Value{types.NewInt(types.Int4, 3)}, "1,1 2,2 3,3"},
		{set, []types.Value{types.NewInt(types.Int4, 0)}, ""},
		{set, []types.Value{types.NullValue}, ""},
		{scalar, []types.Value{types.NewText("ab")}, "AB"},
		{scalar, []types.Value{types.NullValue}, "NULL"},
	} {
		if got, err := run(c.n, Limits{}, c.params...); err != nil || got != c.want {
			t.Errorf("%v: %q %v, want %q", c.params, got, err, c.want)
		}
	}
	_, err = run(set, Limits{MemoryBytes: 10000}, types.NewInt(types.Int4, 100000))
	if pgerror.CodeOf(err) != pgerror.MakeCode("53200") {
		t.Errorf("over the memory limit: %v, want 53200", err)
	}
}
