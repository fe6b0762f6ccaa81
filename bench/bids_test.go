package bench

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

// TestBidExpected checks BidGen.Expected against a brute-force grouping.
func TestBidExpected(t *testing.T) {
	g := BidGen{N: 20_000, Partitions: 4, Auctions: 50, Bidders: 700}
	got := g.Expected(10*time.Second, 2*time.Second)
	type tk struct{ a, w int64 }
	tumble := map[tk]int64{}
	hop := map[tk]int64{}
	bidders := map[int64]bool{}
	auctions := map[int64]bool{}
	var prices, hopSum int64
	for i := int64(0); i < g.N; i++ {
		a, ts, p := g.Auction(i), g.TSMillis(i), g.Price(i)
		if ts-tsBase.UnixMilli() > int64(i) || int64(i)-(ts-tsBase.UnixMilli()) >= 1500 {
			t.Fatalf("row %d: ts %d out of the generator's bounds", i, ts)
		}
		auctions[a], bidders[g.Bidder(i)] = true, true
		prices += p
		k := tk{a, floorDivMs(ts, 10_000)}
		tumble[k] = max(tumble[k], p)
		for s := floorDivMs(ts, 2000); s*2000 > ts-10_000; s-- {
			hop[tk{a, s}]++
			hopSum++
		}
	}
	var top int64
	for _, v := range tumble {
		top += v
	}
	want := BidExpect{Rows: g.N, PriceSum: prices, Auctions: int64(len(auctions)), Bidders: int64(len(bidders)),
		TumbleRows: int64(len(tumble)), TumbleTopSum: top, HopRows: int64(len(hop)), HopCountSum: hopSum}
	// the joins, by nested loops over each auction's rows
	byAuction := map[int64][]int64{}
	for i := int64(0); i < g.N; i++ {
		byAuction[g.Auction(i)] = append(byAuction[g.Auction(i)], i)
	}
	within := func(from, to int64) bool { d := g.TSMillis(to) - g.TSMillis(from); return d >= 0 && d <= JoinBound }
	for _, rows := range byAuction {
		after := map[int64][]int64{} // row -> the rows within the bound after it
		for _, a := range rows {
			for _, b := range rows {
				if within(a, b) {
					after[a] = append(after[a], b)
				}
			}
		}
		for _, a := range rows {
			for _, b := range after[a] {
				want.PairRows++
				want.PairPriceSum += g.Price(a)
				want.PairNextSum += g.Price(b)
				for _, c := range after[b] {
					want.TripleRows++
					want.TriplePriceSum += g.Price(c)
				}
			}
		}
	}
	// DISTINCT auction, price / 1000; each auction's first bid by (ts, price)
	bands := map[tk]bool{}
	type first struct{ ts, price int64 }
	firsts := map[int64]first{}
	for i := int64(0); i < g.N; i++ {
		a, ts, p := g.Auction(i), g.TSMillis(i), g.Price(i)
		if !bands[tk{a, p / 1000}] {
			bands[tk{a, p / 1000}] = true
			want.BandRows++
			want.BandSum += p / 1000
		}
		if f, ok := firsts[a]; !ok || ts < f.ts || ts == f.ts && p < f.price {
			firsts[a] = first{ts, p}
		}
	}
	for _, f := range firsts {
		want.FirstPriceSum += f.price
	}
	// each bid's last ten bids of its auction: those that sort before it
	// by (ts, price), ties by arrival, ten at most, and itself
	type bid struct{ i, ts, price int64 }
	perAuction := map[int64][]bid{}
	for i := int64(0); i < g.N; i++ {
		perAuction[g.Auction(i)] = append(perAuction[g.Auction(i)], bid{i, g.TSMillis(i), g.Price(i)})
	}
	for _, bs := range perAuction {
		for _, b := range bs {
			var before []bid
			for _, o := range bs {
				if o.ts < b.ts || o.ts == b.ts && (o.price < b.price || o.price == b.price && o.i < b.i) {
					before = append(before, o)
				}
			}
			slices.SortFunc(before, func(x, y bid) int {
				return cmp.Or(cmp.Compare(y.ts, x.ts), cmp.Compare(y.price, x.price), cmp.Compare(y.i, x.i))
			})
			top := b.price
			for _, o := range before[:min(9, len(before))] {
				top = max(top, o.price)
			}
			want.LastTenCountSum += int64(min(len(before)+1, 10))
			want.LastTenTopSum += top
			for _, o := range bs {
				if o.ts <= b.ts && o.ts >= b.ts-OverMinute {
					want.MinuteCountSum++
					want.MinuteSumSum += o.price
				}
			}
		}
	}
	if want.TripleRows <= want.PairRows || want.PairRows <= g.N {
		t.Fatalf("the joins' case is too sparse to check: %d rows, %d pairs, %d triples", g.N, want.PairRows, want.TripleRows)
	}
	if got != want {
		t.Fatalf("Expected = %+v, want %+v", got, want)
	}
	if g.Auction(g.N) != -1 || g.TSMillis(g.N) <= g.TSMillis(g.N-1)+int64(time.Hour/time.Millisecond)-10 {
		t.Fatal("sentinel rows")
	}
}

// TestPullExpect checks pullGen.expect against summing the rows.
func TestPullExpect(t *testing.T) {
	for _, keys := range []int64{1000, 1024, 7919 * 2} {
		g := newPullGen(5_500, keys)
		count, sum := map[int64]int64{}, map[int64]int64{}
		for i := int64(0); i < g.n; i++ {
			count[g.auction(i)]++
			sum[g.auction(i)] += g.price(i)
		}
		for a := int64(0); a < keys; a++ {
			c, s := g.expect(a)
			if c != count[a] || s != sum[a] {
				t.Fatalf("keys %d: expect(%d) = %d, %d; want %d, %d", keys, a, c, s, count[a], sum[a])
			}
		}
	}
}
