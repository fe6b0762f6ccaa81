package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {1, time.Millisecond}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("Percentile sorted its input")
	}
	if got := Median([]time.Duration{3, 1, 2}); got != 2 {
		t.Errorf("median = %v", got)
	}
	if got := Median([]time.Duration{4, 1, 2, 3}); got != 2 {
		t.Errorf("median of even count = %v", got)
	}
}

func TestCount(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -12345: "-12,345"} {
		if got := Count(in); got != want {
			t.Errorf("Count(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	tb := Table{Title: "t", Header: []string{"a", "bbb"}}
	tb.Add("xx", "1")
	tb.Print(&b)
	want := "t\na   bbb\n-------\nxx    1\n\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestSelfUsage(t *testing.T) {
	if err := ResetSelfPeaks(); err != nil {
		t.Skip("clear_refs not writable:", err)
	}
	u := SelfUsage()
	if u.PeakRSS <= 0 || u.RSS <= 0 || u.Heap <= 0 || u.CPU <= 0 {
		t.Fatalf("usage %+v", u)
	}
	if HostCPU() <= 0 {
		t.Fatal("no host CPU")
	}
}

func TestRowJSON(t *testing.T) {
	g := Gen{WithID: true}
	b := g.AppendJSON(nil, 12345)
	s := string(b)
	for _, want := range []string{`"id":12345`, `"sym":"`, `"price":`, `"qty":`, `"ts":"2026-01-01T`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %s", s, want)
		}
	}
}
