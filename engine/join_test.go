package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestSemiAntiJoin: a bounded semi join puts out each left row that has
// a partner once, an anti join each that has none, hashed on a key or by
// ON alone, against a nested loop over random rows with NULL keys.
func TestSemiAntiJoin(t *testing.T) {
	for c := range 200 {
		rng := rand.New(rand.NewPCG(uint64(c), 7))
		val := func() types.Value {
			if rng.IntN(6) == 0 {
				return types.NullValue
			}
			return types.NewInt8(int64(rng.IntN(4)))
		}
		var left, right []types.Row
		for i := rng.IntN(12); i > 0; i-- {
			left = append(left, types.Row{val(), types.NewInt8(int64(i))})
		}
		for i := rng.IntN(12); i > 0; i-- {
			right = append(right, types.Row{val(), types.NewInt8(int64(i))})
		}
		kind := []string{"semi", "anti"}[c%2]
		hashed := c%4 < 2
		j := &plan.Join{Kind: kind, Left: &plan.Values{Rows: left}, Right: &plan.Values{Rows: right}, LeftWidth: 2, RightWidth: 2}
		// l.k = r.k AND l.id > r.id
		gt, err := expr.Call(">", expr.Col(1, types.Int8, "id"), expr.Col(3, types.Int8, "id"))
		if err != nil {
			t.Fatal(err)
		}
		if hashed {
			j.LeftKeys, j.RightKeys, j.On = []*expr.Expr{expr.Col(0, types.Int8, "k")}, []*expr.Expr{expr.Col(0, types.Int8, "k")}, gt
		} else {
			eq, err := expr.Call("=", expr.Col(0, types.Int8, "k"), expr.Col(2, types.Int8, "k"))
			if err != nil {
				t.Fatal(err)
			}
			if j.On, err = expr.And(eq, gt); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		err = RunBounded(context.Background(), j, nil, nil, func(_ *operators.Batch, _ int, err error) error { return err },
			func(b *operators.Batch) error {
				for _, r := range b.Rows {
					if len(r) != 2 {
						return fmt.Errorf("a row of %d columns, want the left row's 2", len(r))
					}
					got = append(got, r[0].String()+"/"+r[1].String())
				}
				return nil
			})
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		var want []string
		for _, l := range left {
			has := false
			for _, r := range right {
				has = has || (!l[0].IsNull() && !r[0].IsNull() && l[0].I == r[0].I && l[1].I > r[1].I)
			}
			if has == (kind == "semi") {
				want = append(want, l[0].String()+"/"+l[1].String())
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: %s join (hashed %v) of %v and %v:\ngot  %v\nwant %v", c, kind, hashed, left, right, got, want)
		}
	}
}
