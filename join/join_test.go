package join

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// joinRow is one generated input row: side, key (nil: NULL), time, id.
type joinRow struct {
	side   int
	key    *int64
	ts     int64
	id     int64
	nullTS bool // the time is NULL (an interval join's input only)
}

// input is the operator's input row: [side, lkey, lts, lid, rkey, rts, rid].
func (r joinRow) input() types.Row {
	row := types.Row{types.NewInt(types.Int4, int64(r.side)), types.NullValue, types.NullValue, types.NullValue, types.NullValue, types.NullValue, types.NullValue}
	base := 1 + 3*r.side
	if r.key != nil {
		row[base] = types.NewInt8(*r.key)
	}
	if !r.nullTS {
		row[base+1] = types.NewTimestamp(types.Timestamp, r.ts)
	}
	row[base+2] = types.NewInt8(r.id)
	return row
}

// pairText renders an output row by the ids it joins ("3|-", "3|7", "-|7").
func pairText(row types.Row) string {
	l, r := "-", "-"
	if !row[2].IsNull() {
		l = fmt.Sprint(row[2].I)
	}
	if !row[5].IsNull() {
		r = fmt.Sprint(row[5].I)
	}
	return l + "|" + r
}

// TestIntervalJoinOracle runs random interleaved, out-of-order streams
// (some with NULL times, which never match: a row a LEFT JOIN padded
// with NULLs, read by the next join) through the interval join,
// advancing the watermark as a pipeline would, and compares its output with a nested-loop join of the rows that were
// not late, for every join type, with and without a residual condition;
// at the end the state must be empty.
func TestIntervalJoinOracle(t *testing.T) {
	cases := 400
	if testing.Short() {
		cases = 60
	}
	for c := 0; c < cases; c++ {
		seed := uint64(20261129 + c)
		rng := rand.New(rand.NewPCG(seed, 7))
		typ := []string{"inner", "left", "right", "full"}[c%4]
		lo := int64(rng.IntN(5)-2) * 1000
		hi := lo + int64(rng.IntN(6))*1000
		delay := int64(rng.IntN(4)) * 1000
		residual := c%3 == 0 // l.id % 2 = r.id % 2
		keys := 1 + rng.IntN(5)
		n := 20 + rng.IntN(200)
		desc := fmt.Sprintf("seed %d: %s join, right.ts - left.ts in [%d, %d], delay %d, keys %d, residual %v, %d rows", seed, typ, lo, hi, delay, keys, residual, n)

		spec := plan.JoinSpec{Type: typ, LeftWidth: 3, RightWidth: 3, LeftKey: []int{1}, RightKey: []int{4}, LeftTime: 2, RightTime: 5, Lo: lo, Hi: hi, TimeType: types.Timestamp}
		var res expr.Eval
		if residual {
			res = func(row types.Row) (types.Value, error) {
				if row[2].IsNull() || row[5].IsNull() {
					return types.NullValue, nil
				}
				if row[2].I%2 == row[5].I%2 {
					return types.NewBool(true), nil
				}
				return types.NewBool(false), nil
			}
		}
		var late []int64
		onErr := func(b *operators.Batch, i int, err error) error {
			if !errors.Is(err, operators.ErrLate) {
				return fmt.Errorf("row %d: unexpected error %v", i, err)
			}
			late = append(late, b.Rows[i][3+3*int(b.Rows[i][0].I)].I)
			return nil
		}
		kv := operators.NewMemKV()
		j := NewIntervalJoin(spec, res, onErr)
		j.Bind(kv)

		var got []string
		emit := func(b *operators.Batch) error {
			for _, r := range b.Rows {
				got = append(got, pairText(r))
			}
			return nil
		}
		var rows []joinRow
		clock, maxSeen := int64(0), int64(math.MinInt64)
		wm := int64(math.MinInt64)
		for i := 0; i < n; {
			batch := &operators.Batch{}
			for k := 1 + rng.IntN(6); k > 0 && i < n; k-- {
				clock += int64(rng.IntN(800))
				r := joinRow{side: rng.IntN(2), ts: clock - int64(rng.IntN(int(delay)+1500)), id: int64(i)}
				if rng.IntN(15) > 0 {
					k := int64(rng.IntN(keys))
					r.key = &k
				}
				r.nullTS = rng.IntN(20) == 0 // never matches, kept by an outer side
				rows = append(rows, r)
				batch.Rows = append(batch.Rows, r.input())
				if !r.nullTS {
					maxSeen = max(maxSeen, r.ts)
				}
				i++
			}
			if err := j.Process(batch, emit); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			if w := maxSeen - delay; maxSeen > math.MinInt64 && w > wm && rng.IntN(3) > 0 {
				wm = w
				if err := j.OnWatermark(wm, emit); err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
			}
			// Occasionally rebind to a fresh view of the same state, as a
			// new epoch (or a restart on the same state) does.
			if rng.IntN(5) == 0 {
				j = NewIntervalJoin(spec, res, onErr)
				j.Bind(kv)
				if wm > math.MinInt64 {
					if err := j.OnWatermark(wm, func(*operators.Batch) error { return nil }); err != nil {
						t.Fatalf("%s: %v", desc, err)
					}
				}
			}
		}
		if err := j.Finish(emit); err != nil {
			t.Fatalf("%s: %v", desc, err)
		}

		// The oracle: a nested-loop join of the rows that were not late.
		isLate := map[int64]bool{}
		for _, id := range late {
			isLate[id] = true
		}
		var kept []joinRow
		for _, r := range rows {
			if !isLate[r.id] {
				kept = append(kept, r)
			}
		}
		want := nestedJoin(kept, typ, func(l, r joinRow) bool {
			d := r.ts - l.ts
			return !l.nullTS && !r.nullTS && d >= lo && d <= hi && (!residual || l.id%2 == r.id%2)
		})
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\ngot  %d rows %s\nwant %d rows %s", desc, len(got), strings.Join(got, " "), len(want), strings.Join(want, " "))
		}
		if kv.Len() != 1 { // only the sequence counter is left
			t.Fatalf("%s: %d state entries left after the final watermark", desc, kv.Len())
		}
	}
}

// nestedJoin is the oracle of the join operators: a nested-loop join of
// rows (equal non-NULL keys, and match) of join type typ, as pairText
// renders its rows.
func nestedJoin(rows []joinRow, typ string, match func(l, r joinRow) bool) []string {
	var left, right []joinRow
	for _, r := range rows {
		if r.side == 0 {
			left = append(left, r)
		} else {
			right = append(right, r)
		}
	}
	var want, pairs []string
	lm, rm := map[int64]bool{}, map[int64]bool{}
	for _, l := range left {
		for _, r := range right {
			if l.key == nil || r.key == nil || *l.key != *r.key || !match(l, r) {
				continue
			}
			pairs = append(pairs, fmt.Sprintf("%d|%d", l.id, r.id))
			lm[l.id], rm[r.id] = true, true
		}
	}
	if typ == "semi" || typ == "anti" { // left rows alone: with a partner, or without
		for _, l := range left {
			if lm[l.id] == (typ == "semi") {
				want = append(want, fmt.Sprintf("%d|-", l.id))
			}
		}
		return want
	}
	want = pairs
	if typ == "left" || typ == "full" {
		for _, l := range left {
			if !lm[l.id] {
				want = append(want, fmt.Sprintf("%d|-", l.id))
			}
		}
	}
	if typ == "right" || typ == "full" {
		for _, r := range right {
			if !rm[r.id] {
				want = append(want, fmt.Sprintf("-|%d", r.id))
			}
		}
	}
	return want
}

// TestHashJoinOracle feeds random interleaved rows of two sides (any
// times: a regular join has no time bound; in signed cases, rows already
// in also go, with sign -1) through the hash join, in random batches,
// rebinding it to its state at random as a new epoch or a restart does,
// and checks after every batch that its signed output, summed per pair,
// is exactly the nested-loop join of the rows live so far:
// every pair once, an outer row with NULLs once while it has no partner
// and not at all once it has one (a semi join's left row only while it
// has one, an anti join's only while it has none), and nothing ever below
// 0 or above 1.
func TestHashJoinOracle(t *testing.T) {
	cases := 600
	if testing.Short() {
		cases = 80
	}
	for c := 0; c < cases; c++ {
		seed := uint64(20261202 + c)
		rng := rand.New(rand.NewPCG(seed, 11))
		typ := []string{"inner", "left", "right", "full", "semi", "anti"}[c/2%6]
		residual := c%3 == 0 // l.id % 2 = r.id % 2
		keys := 1 + rng.IntN(5)
		n := 10 + rng.IntN(150)
		signed := c%5 >= 2 // rows also go, as another join's signed rows do
		desc := fmt.Sprintf("seed %d: %s hash join, keys %d, residual %v, signed %v, %d rows", seed, typ, keys, residual, signed, n)

		spec := plan.JoinSpec{Type: typ, LeftWidth: 3, RightWidth: 3, LeftKey: []int{1}, RightKey: []int{4}}
		if signed {
			spec.SignCol = 7
		}
		var res expr.Eval
		if residual {
			res = func(row types.Row) (types.Value, error) {
				if len(row) != 6 {
					return types.NullValue, fmt.Errorf("residual over %d columns", len(row))
				}
				return types.NewBool(row[2].I%2 == row[5].I%2), nil
			}
		}
		onErr := func(b *operators.Batch, i int, err error) error {
			return fmt.Errorf("row %d: unexpected error %v", i, err)
		}
		// the row cache: the default, one a few keys' rows fill (prefixes
		// dropped, or too large to cache, all the time), or none at all
		cache := []int{0, 600, 2500, 1}[rng.IntN(4)]
		desc += fmt.Sprintf(", row cache %d", cache)
		kv := operators.NewMemKV()
		j := NewHashJoin(spec, res, onErr, cache)
		j.Bind(kv)
		net := map[string]int64{}
		emit := func(b *operators.Batch) error {
			for _, r := range b.Rows {
				if len(r) != 7 {
					return fmt.Errorf("output row of %d columns, want 7", len(r))
				}
				p := pairText(r)
				net[p] += r[6].I
				if net[p] < 0 || net[p] > 1 {
					return fmt.Errorf("pair %s counted %d times", p, net[p])
				}
			}
			return nil
		}
		var rows []joinRow
		for i := 0; i < n; {
			batch := &operators.Batch{}
			for k := 1 + rng.IntN(6); k > 0 && i < n; k-- {
				if signed && len(rows) > 0 && rng.IntN(3) == 0 { // a live row goes
					g := rng.IntN(len(rows))
					batch.Rows = append(batch.Rows, append(rows[g].input(), types.NewInt(types.Int8, -1)))
					rows = slices.Delete(rows, g, g+1)
					i++
					continue
				}
				r := joinRow{side: rng.IntN(2), ts: int64(rng.IntN(1000)), id: int64(i)}
				if rng.IntN(12) > 0 {
					k := int64(rng.IntN(keys))
					r.key = &k
				}
				rows = append(rows, r)
				in := r.input()
				if signed {
					in = append(in, types.NewInt(types.Int8, 1))
				}
				batch.Rows = append(batch.Rows, in)
				i++
			}
			if err := j.Process(batch, emit); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			want := nestedJoin(rows, typ, func(l, r joinRow) bool { return !residual || l.id%2 == r.id%2 })
			var got []string
			for p, c := range net {
				if c == 1 {
					got = append(got, p)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, after %d rows:\ngot  %d rows %s\nwant %d rows %s", desc, len(rows), len(got), strings.Join(got, " "), len(want), strings.Join(want, " "))
			}
			switch rng.IntN(6) {
			case 0: // rebuilt from its state (a restart, an aborted epoch)
				j = NewHashJoin(spec, res, onErr, cache)
				j.Bind(kv)
			case 1: // a new epoch: the cache stays
				j.Bind(kv)
			}
		}
	}
}

// TestHashJoinResidualError: a row whose join condition fails to
// evaluate against a stored partner is set aside whole (none of its pairs
// come out, it is not stored), and the join goes on.
func TestHashJoinResidualError(t *testing.T) {
	spec := plan.JoinSpec{Type: "left", LeftWidth: 3, RightWidth: 3, LeftKey: []int{1}, RightKey: []int{4}}
	res := func(row types.Row) (types.Value, error) {
		if row[5].I == 13 {
			return types.NullValue, errors.New("division by zero")
		}
		return types.NewBool(true), nil
	}
	var aside []int64
	onErr := func(b *operators.Batch, i int, err error) error {
		aside = append(aside, b.Rows[i][3+3*int(b.Rows[i][0].I)].I)
		return nil
	}
	j := NewHashJoin(spec, res, onErr, 0)
	var got []string
	emit := func(b *operators.Batch) error {
		for _, r := range b.Rows {
			got = append(got, fmt.Sprintf("%s%+d", pairText(r), r[6].I))
		}
		return nil
	}
	k := int64(1)
	in := []joinRow{{side: 0, key: &k, id: 1}, {side: 1, key: &k, id: 13}, {side: 1, key: &k, id: 2}, {side: 0, key: &k, id: 3}}
	b := &operators.Batch{}
	for _, r := range in {
		b.Rows = append(b.Rows, r.input())
	}
	if err := j.Process(b, emit); err != nil {
		t.Fatal(err)
	}
	want := []string{"1|-+1", "1|--1", "1|2+1", "3|2+1"}
	if !slices.Equal(got, want) || !slices.Equal(aside, []int64{13}) {
		t.Fatalf("got %v, set aside %v; want %v, set aside [13]", got, aside, want)
	}
}

// TestBoundedJoinOracle runs random left and right rows (keys with NULLs,
// with and without an ON over the joined row) through the bounded join
// of every type, the right input and the left in random batches, and
// checks its rows against the same nested-loop oracle as the continuous
// joins: one row per pair, the unmatched outer rows NULL-padded, a semi
// join's left rows with a partner and an anti join's without.
func TestBoundedJoinOracle(t *testing.T) {
	cases := 600
	if testing.Short() {
		cases = 80
	}
	for c := 0; c < cases; c++ {
		seed := uint64(20261205 + c)
		rng := rand.New(rand.NewPCG(seed, 13))
		typ := []string{"inner", "left", "right", "full", "semi", "anti"}[c%6]
		residual := c/6%2 == 1 // l.id % 2 = r.id % 2
		keys := 1 + rng.IntN(5)
		n := rng.IntN(120)
		desc := fmt.Sprintf("seed %d: bounded %s join, keys %d, residual %v, %d rows", seed, typ, keys, residual, n)

		spec := &plan.Join{Kind: typ, LeftWidth: 3, RightWidth: 3,
			LeftKeys: []*expr.Expr{expr.Col(0, types.Int8, "lkey")}, RightKeys: []*expr.Expr{expr.Col(0, types.Int8, "rkey")}}
		if residual {
			lm, err := expr.Call("mod", expr.Col(2, types.Int8, "lid"), expr.Const(types.NewInt8(2)))
			if err != nil {
				t.Fatal(err)
			}
			rm, err := expr.Call("mod", expr.Col(5, types.Int8, "rid"), expr.Const(types.NewInt8(2)))
			if err != nil {
				t.Fatal(err)
			}
			if spec.On, err = expr.Compare("=", lm, rm); err != nil {
				t.Fatal(err)
			}
		}
		var rows []joinRow
		var sides [2][]types.Row
		for i := 0; i < n; i++ {
			r := joinRow{side: rng.IntN(2), ts: int64(rng.IntN(1000)), id: int64(i)}
			if rng.IntN(12) > 0 {
				k := int64(rng.IntN(keys))
				r.key = &k
			}
			rows = append(rows, r)
			sides[r.side] = append(sides[r.side], r.input()[1+3*r.side:4+3*r.side])
		}
		budget := operators.NewBudget(context.Background(), 0, "")
		j, err := NewBounded(spec, &expr.Env{}, budget)
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		var got []string
		emit := func(b *operators.Batch) error {
			for _, r := range b.Rows {
				switch {
				case (typ == "semi" || typ == "anti") && len(r) == 3:
					got = append(got, fmt.Sprintf("%d|-", r[2].I))
				case len(r) == 6:
					got = append(got, pairText(r))
				default:
					return fmt.Errorf("a %s join's row of %d columns", typ, len(r))
				}
			}
			return nil
		}
		inBatches := func(rows []types.Row, fn func([]types.Row) error) {
			for len(rows) > 0 {
				k := min(len(rows), 1+rng.IntN(8))
				if err := fn(rows[:k]); err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				rows = rows[k:]
			}
		}
		inBatches(sides[1], j.AddRight)
		inBatches(sides[0], func(b []types.Row) error { return j.Probe(b, emit) })
		if err := j.Finish(emit); err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		j.Release()
		if used := budget.Used(); used != 0 {
			t.Fatalf("%s: %d bytes still charged after Release", desc, used)
		}
		want := nestedJoin(rows, typ, func(l, r joinRow) bool { return !residual || l.id%2 == r.id%2 })
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\ngot  %d rows %s\nwant %d rows %s", desc, len(got), strings.Join(got, " "), len(want), strings.Join(want, " "))
		}
	}
}
