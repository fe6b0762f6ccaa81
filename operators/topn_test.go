package operators

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestSignedTopNOracle feeds random signed rows [p, v, id, sign] (a row
// already in may go, as a view's changes make it go) through a top-N of
// each ranking over partitions p, ordered by v DESC, in random batches,
// rebuilding it from its state at random, and after every batch checks
// the view its changes make (by partition and position) against the
// ranking of the rows live so far, ties in arrival order. Every other
// case asks for update_before rows: each must hold what the view shows at
// its position, just before the update there.
func TestSignedTopNOracle(t *testing.T) {
	for c := range 300 {
		rng := rand.New(rand.NewPCG(uint64(c), 23))
		ranking := []string{"row_number", "rank", "dense_rank"}[c%3]
		n := int64(1 + rng.IntN(4))
		before := c%2 == 1
		desc := fmt.Sprintf("case %d: %s <= %d, before %t", c, ranking, n, before)
		step := &plan.Step{Op: plan.OpTopN, N: n, Width: 3, Sign: 3, Rank: ranking, Keys: []plan.SortKey{{Col: 1, Desc: true}},
			PartitionBy: []*expr.Expr{expr.Col(0, types.Int8, "p")}}
		kv := NewMemKV()
		build := func() Operator {
			op, err := Build(step, nil, AbortOnError)
			if err != nil {
				t.Fatal(err)
			}
			op.(Stateful).Bind(kv)
			if before {
				op.(BeforeEmitter).EmitBefore()
			}
			return op
		}
		op := build()
		view := map[[2]int64]string{} // (p, position) -> "v/id #number"
		var live []types.Row          // in arrival order
		var log []string
		for range 30 {
			b := &Batch{}
			for range 1 + rng.IntN(5) {
				if len(live) > 0 && rng.IntN(3) == 0 {
					g := rng.IntN(len(live))
					b.Rows = append(b.Rows, append(types.CloneRow(live[g]), types.NewInt(types.Int8, -1)))
					log = append(log, fmt.Sprintf("-%v", live[g]))
					// of equal rows the first goes: ties keep arrival order
					g = slices.IndexFunc(live, func(r types.Row) bool { return fmt.Sprint(r) == fmt.Sprint(live[g]) })
					live = slices.Delete(live, g, g+1)
					continue
				}
				r := types.Row{types.NewInt8(int64(rng.IntN(2))), types.NewInt8(int64(rng.IntN(6))), types.NewInt8(int64(rng.IntN(3)))}
				live = append(live, r)
				log = append(log, fmt.Sprintf("+%v", r))
				b.Rows = append(b.Rows, append(types.CloneRow(r), types.NewInt(types.Int8, 1)))
			}
			err := op.Process(b, func(o *Batch) error {
				for i, r := range o.Rows {
					pos := r[3].I - 1
					if ranking != "row_number" {
						pos = r[4].I - 1
					}
					k := [2]int64{r[0].I, pos}
					shown, had := view[k]
					row := fmt.Sprintf("%d/%d #%d", r[1].I, r[2].I, r[3].I)
					if o.Ops[i] == OpUpdateBefore {
						switch {
						case !before:
							return fmt.Errorf("update_before at %v, not asked for", k)
						case row != shown:
							return fmt.Errorf("update_before %s at %v, which shows %s", row, k, shown)
						case i+1 == len(o.Rows) || o.Ops[i+1] != OpUpdate:
							return fmt.Errorf("update_before at %v without its update", k)
						}
						continue
					}
					if o.Ops[i] == OpUpdate && before && (i == 0 || o.Ops[i-1] != OpUpdateBefore) {
						return fmt.Errorf("update at %v without its update_before", k)
					}
					switch o.Ops[i] {
					case OpInsert:
						if had {
							return fmt.Errorf("insert at %v, which the view has", k)
						}
					case OpUpdate, OpDelete:
						if !had {
							return fmt.Errorf("%s at %v, which the view lacks", o.Ops[i], k)
						}
					}
					if o.Ops[i] == OpDelete {
						delete(view, k)
					} else {
						view[k] = row
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v\ninput: %s", desc, err, strings.Join(log, " "))
			}
			want := map[[2]int64]string{}
			for p := int64(0); p < 2; p++ {
				var rows []types.Row
				for _, r := range live {
					if r[0].I == p {
						rows = append(rows, r)
					}
				}
				sort.SliceStable(rows, func(i, j int) bool { return rows[i][1].I > rows[j][1].I })
				var num int64
				for i, r := range rows {
					switch {
					case i == 0:
						num = 1
					case r[1].I == rows[i-1][1].I:
					case ranking == "dense_rank":
						num++
					default:
						num = int64(i) + 1
					}
					if ranking == "row_number" {
						num = int64(i) + 1
					}
					if num > n {
						break
					}
					want[[2]int64{p, int64(i)}] = fmt.Sprintf("%d/%d #%d", r[1].I, r[2].I, num)
				}
			}
			if fmt.Sprint(view) != fmt.Sprint(want) {
				t.Fatalf("%s:\nview %v\nwant %v\ninput: %s", desc, view, want, strings.Join(log, " "))
			}
			if rng.IntN(4) == 0 {
				if err := op.(Stateful).OnCheckpoint(); err != nil {
					t.Fatal(err)
				}
				op = build()
			}
		}
	}
}
