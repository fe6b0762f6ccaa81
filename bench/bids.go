package bench

import (
	"sort"
	"strconv"
	"time"
)

// bidsColumns is the bids stream of the windows and eos scenarios.
const bidsColumns = "(auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)"

// BidGen generates the bids rows of the windows and eos scenarios. Row i
// (0 ≤ i < N) is deterministic:
//
//	auction  mix(i) % Auctions                   (pseudo-random)
//	bidder   (i % Bidders) * 7919 % Bidders      (every bidder N/Bidders times when Bidders divides N)
//	price    mix(i ^ salt) % 10000 + 1
//	ts       2026-01-01 09:00:00 + i ms, one row in 8 up to 1.5 s
//	         earlier: out of order, but within the 4 s watermark delay
//
// Rows N … N+Partitions-1 are sentinels, one per partition (rows go to
// partition i % Partitions): auction -1, bidder -1, price 0, and a
// timestamp one hour after the last row, so that the watermark passes the
// end of every window of the real rows and they all close. Queries and
// checks leave them out with auction >= 0.
type BidGen struct {
	N          int64
	Partitions int
	Auctions   int64
	Bidders    int64
	// SentinelAuctions, for a stream keyed by auction, are the sentinels'
	// auctions (negative), one per partition chosen so that the key lands
	// in that partition (see KeyedSentinels); nil: all -1.
	SentinelAuctions []int64
}

// KeyedSentinels returns g with sentinel auctions -1, -2, … picked so that
// one lands in each partition of a stream keyed by auction.
func (g BidGen) KeyedSentinels() BidGen {
	g.SentinelAuctions = make([]int64, g.Partitions)
	filled := 0
	for a := int64(-1); filled < g.Partitions; a-- {
		p := partitionOf(strconv.AppendInt(nil, a, 10), g.Partitions)
		if g.SentinelAuctions[p] == 0 {
			g.SentinelAuctions[p] = a
			filled++
		}
	}
	return g
}

// Key is row i's record key in a stream keyed by auction.
func (g BidGen) Key(i int64) []byte { return strconv.AppendInt(nil, g.Auction(i), 10) }

// mix is splitmix64's finaliser: a cheap deterministic hash.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Total is the number of rows loaded: N and the sentinels.
func (g BidGen) Total() int64 { return g.N + int64(g.Partitions) }

func (g BidGen) sentinel(i int64) bool { return i >= g.N }

// Auction, Bidder, Price and TSMillis are row i's values.
func (g BidGen) Auction(i int64) int64 {
	if g.sentinel(i) {
		if j := i - g.N; j < int64(len(g.SentinelAuctions)) {
			return g.SentinelAuctions[j]
		}
		return -1
	}
	return int64(mix(uint64(i)) % uint64(g.Auctions))
}

func (g BidGen) Bidder(i int64) int64 {
	if g.sentinel(i) {
		return -1
	}
	m := int64(7919)
	if gcd(m, g.Bidders) != 1 {
		m = 1
	}
	return (i % g.Bidders) * m % g.Bidders
}

func (g BidGen) Price(i int64) int64 {
	if g.sentinel(i) {
		return 0
	}
	return int64(mix(uint64(i)^0x5bd1e995)%10000) + 1
}

// TSMillis is row i's event time in Unix milliseconds.
func (g BidGen) TSMillis(i int64) int64 {
	base := tsBase.UnixMilli()
	if g.sentinel(i) {
		return base + g.N + int64(time.Hour/time.Millisecond)
	}
	t := base + i
	if h := mix(uint64(i) ^ 0x2545f491); h%8 == 0 {
		t -= int64((h >> 8) % 1500)
	}
	return t
}

// AppendJSON appends row i as the JSON object fvsql stores.
func (g BidGen) AppendJSON(b []byte, i int64) []byte {
	b = append(b, `{"auction":`...)
	b = strconv.AppendInt(b, g.Auction(i), 10)
	b = append(b, `,"bidder":`...)
	b = strconv.AppendInt(b, g.Bidder(i), 10)
	b = append(b, `,"price":`...)
	b = strconv.AppendInt(b, g.Price(i), 10)
	b = append(b, `,"ts":"`...)
	b = time.UnixMilli(g.TSMillis(i)).UTC().AppendFormat(b, "2006-01-02T15:04:05.000")
	return append(b, `"}`...)
}

// BidExpect are the known results over the real rows (auction >= 0).
type BidExpect struct {
	Rows         int64 // N
	PriceSum     int64 // sum(price)
	Auctions     int64 // distinct auctions
	Bidders      int64 // distinct bidders
	TumbleRows   int64 // distinct (auction, 10 s window)
	TumbleTopSum int64 // sum over those of max(price)
	HopRows      int64 // distinct (auction, HOP 2 s / 10 s window)
	HopCountSum  int64 // sum over those of count(*): every row is in 5 windows
	// The interval joins of bids with bids of the same auction: pairs
	// (a, b) with b.ts - a.ts in [0, JoinBound] (a row pairs with itself),
	// and triples (a, b, c) with c.ts - b.ts in the same range too.
	PairRows, PairPriceSum, PairNextSum int64 // count(*), sum(a.price), sum(b.price)
	TripleRows, TriplePriceSum          int64 // count(*), sum(c.price)
	// DISTINCT auction, price / 1000: the distinct pairs, the sum of
	// their bands
	BandRows, BandSum int64
	// each auction's first bid in time (ties: the lower price): the sum
	// of their prices (one row per auction)
	FirstPriceSum int64
	// each bid with its auction's last ten bids in (time, price) order,
	// itself included: the sum of their counts and of their top prices
	LastTenCountSum, LastTenTopSum int64
	// each bid with its auction's bids of the minute up to its time (a
	// RANGE frame: ts - 60 s to ts, the bids at its time included): the
	// sum of their counts and of their price sums
	MinuteCountSum, MinuteSumSum int64
}

// OverMinute is the RANGE frame of MinuteCountSum (ms).
const OverMinute = 60_000

// JoinBound is the time bound of the windows scenario's joins (ms).
const JoinBound = 2000

// Expected computes the results of the windows scenario's queries with
// TUMBLE(size) and HOP(slide, size) windows.
func (g BidGen) Expected(size, slide time.Duration) BidExpect {
	e := BidExpect{Rows: g.N, Bidders: min(g.N, g.Bidders)}
	// Rows grouped by auction (a counting sort), then per auction sorted
	// by time: windows are runs of equal window index.
	counts := make([]int64, g.Auctions+1)
	for i := int64(0); i < g.N; i++ {
		counts[g.Auction(i)+1]++
		e.PriceSum += g.Price(i)
	}
	for a := int64(1); a <= g.Auctions; a++ {
		if counts[a] > 0 {
			e.Auctions++
		}
		counts[a] += counts[a-1]
	}
	type tp struct{ ts, price int64 }
	rows := make([]tp, g.N)
	next := append([]int64(nil), counts[:g.Auctions]...)
	for i := int64(0); i < g.N; i++ {
		a := g.Auction(i)
		rows[next[a]] = tp{g.TSMillis(i), g.Price(i)}
		next[a]++
	}
	sz, sl := size.Milliseconds(), slide.Milliseconds()
	perRow := sz / sl
	for a := int64(0); a < g.Auctions; a++ {
		rs := rows[counts[a]:counts[a+1]]
		sort.Slice(rs, func(i, j int) bool { return rs[i].ts < rs[j].ts || rs[i].ts == rs[j].ts && rs[i].price < rs[j].price })
		if len(rs) > 0 {
			e.FirstPriceSum += rs[0].price
		}
		for i := range rs {
			top := int64(0)
			for _, r := range rs[max(0, i-9) : i+1] {
				top = max(top, r.price)
			}
			e.LastTenCountSum += int64(min(i+1, 10))
			e.LastTenTopSum += top
		}
		// the minute up to each bid: its frame starts at lo and ends
		// after its peers (bids at its time), at hi
		lo, hi, inFrame := 0, 0, int64(0)
		for i := range rs {
			for ; hi < len(rs) && rs[hi].ts <= rs[i].ts; hi++ {
				inFrame += rs[hi].price
			}
			for ; rs[lo].ts < rs[i].ts-OverMinute; lo++ {
				inFrame -= rs[lo].price
			}
			e.MinuteCountSum += int64(hi - lo)
			e.MinuteSumSum += inFrame
		}
		var bands [10001/1000 + 1]bool
		for _, r := range rs {
			if b := r.price / 1000; !bands[b] {
				bands[b] = true
				e.BandRows++
				e.BandSum += b
			}
		}
		var win, top int64 = -1 << 62, 0
		var hopEnd int64 = -1 << 62 // windows counted so far: starts (in slides) up to hopEnd
		for _, r := range rs {
			if w := floorDivMs(r.ts, sz); w != win {
				if win != -1<<62 {
					e.TumbleTopSum += top
				}
				e.TumbleRows++
				win, top = w, 0
			}
			top = max(top, r.price)
			// HOP: the row is in the windows starting at slides s-perRow+1 … s.
			s := floorDivMs(r.ts, sl)
			lo := max(s-perRow+1, hopEnd+1)
			if s >= lo {
				e.HopRows += s - lo + 1
				hopEnd = s
			}
			e.HopCountSum += perRow
		}
		if win != -1<<62 {
			e.TumbleTopSum += top
		}
		e.countJoins(func(n int) (int64, int64) { return rs[n].ts, rs[n].price }, len(rs))
	}
	return e
}

// countJoins adds the pairs and triples of one auction's rows, sorted by
// time (row n's time and price), to e: for each row b, the rows a at most
// JoinBound before it (b itself and its ties included) and the rows c at
// most JoinBound after it.
func (e *BidExpect) countJoins(row func(n int) (ts, price int64), n int) {
	lo, hi := 0, 0 // rows [lo, b] are the a's … ; rows [b, hi) the c's (ties widen both)
	for b := 0; b < n; b++ {
		tb, pb := row(b)
		for t, _ := row(lo); t < tb-JoinBound; t, _ = row(lo) {
			lo++
		}
		hi = max(hi, b)
		for hi < n {
			if t, _ := row(hi); t > tb+JoinBound {
				break
			}
			hi++
		}
		var as, aPrices int64 // a.ts in [tb - bound, tb]: ties after b count too
		for a := lo; a < hi; a++ {
			if t, p := row(a); t <= tb {
				as, aPrices = as+1, aPrices+p
			}
		}
		var cs, cPrices int64 // c.ts in [tb, tb + bound]: ties before b count too
		for c := lo; c < hi; c++ {
			if t, p := row(c); t >= tb {
				cs, cPrices = cs+1, cPrices+p
			}
		}
		e.PairRows += as
		e.PairPriceSum += aPrices
		e.PairNextSum += as * pb
		e.TripleRows += as * cs
		e.TriplePriceSum += as * cPrices
	}
}

func floorDivMs(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
