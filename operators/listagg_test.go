package operators

import (
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestListAccOracle: string_agg(v, ',' [ORDER BY k DESC]) kept by a
// listAcc over random signed rows (adds, and retractions of rows held)
// equals, after every change and after a state round trip, the result of
// the rows still held: in arrival order, or sorted by k with ties in
// arrival order.
func TestListAccOracle(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ordered := seed%2 == 1
		f, err := ResolveAgg("string_agg", types.Text, false)
		if err != nil {
			t.Fatal(err)
		}
		comma := ","
		f.Delim = &comma
		c := AggCall{Func: f}
		if ordered {
			c.Order = []plan.SortKey{{Col: 1, Desc: true}}
		}
		acc := c.stateAcc().(*listAcc)
		type held struct {
			v   string
			k   int64
			seq int
		}
		var rows []held
		arg := func(h held) types.Value {
			if !ordered {
				return types.NewText(h.v)
			}
			return types.NewRecord([]types.Value{types.NewText(h.v), types.NewInt8(h.k)})
		}
		for step := 0; step < 60; step++ {
			if len(rows) > 0 && rng.Intn(3) == 0 {
				i := rng.Intn(len(rows))
				// a retraction takes out the earliest row of equal value
				for j := range rows {
					if rows[j].v == rows[i].v && (!ordered || rows[j].k == rows[i].k) {
						i = j
						break
					}
				}
				if err := acc.retract(arg(rows[i])); err != nil {
					t.Fatal(err)
				}
				rows = slices.Delete(rows, i, i+1)
			} else {
				h := held{v: string(rune('a' + rng.Intn(4))), k: int64(rng.Intn(3)), seq: step}
				if err := acc.Add(arg(h)); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, h)
			}
			if rng.Intn(5) == 0 {
				state := acc.AppendState(nil)
				back := c.stateAcc().(*listAcc)
				if rest, err := back.LoadState(state); err != nil || len(rest) != 0 {
					t.Fatalf("seed %d: state round trip: %v, %d bytes left", seed, err, len(rest))
				}
				acc = back
			}
			want := slices.Clone(rows)
			if ordered {
				sort.SliceStable(want, func(i, j int) bool { return want[i].k > want[j].k })
			}
			var vs []string
			for _, h := range want {
				vs = append(vs, h.v)
			}
			got := acc.Result()
			if len(vs) == 0 {
				if got.K != types.Null {
					t.Fatalf("seed %d step %d: %v over no rows", seed, step, got)
				}
				continue
			}
			if got.Text() != strings.Join(vs, ",") {
				t.Fatalf("seed %d step %d (ordered %v): %q, want %q", seed, step, ordered, got.Text(), strings.Join(vs, ","))
			}
		}
	}
}

// TestListAccLimit: a row that would take a group past MaxListStateBytes
// is refused with 54000 and leaves the group as it was.
func TestListAccLimit(t *testing.T) {
	f, _ := ResolveAgg("array_agg", types.Text, false)
	c := AggCall{Func: f}
	acc := c.stateAcc().(*listAcc)
	big := types.NewText(strings.Repeat("x", MaxListStateBytes/4))
	n := 0
	for ; n < 10; n++ {
		if err := acc.Add(big); err != nil {
			if pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
				t.Fatalf("add %d: %v, want 54000", n, err)
			}
			break
		}
	}
	if n != 3 || len(acc.rows) != 3 {
		t.Fatalf("the group took %d values of a quarter of the limit (%d held), want 3", n, len(acc.rows))
	}
}
