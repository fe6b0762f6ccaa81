package redis

import (
	"math"
	"testing"
)

func TestSequenceEncoding(t *testing.T) {
	ids := []string{"0-1", "0-2", "1-0", "1-1048575", "2-0", "1700000000000-0", "1700000000000-7", "1700000000001-0", "8796093022207-1048575"}
	var prev int64 = -1
	for _, id := range ids {
		seq, err := Sequence(id)
		if err != nil {
			t.Fatalf("Sequence(%s): %v", id, err)
		}
		if seq <= prev {
			t.Fatalf("Sequence(%s) = %d, not above %d", id, seq, prev)
		}
		prev = seq
		if back := IDOf(seq); back != id {
			t.Fatalf("IDOf(Sequence(%s)) = %s", id, back)
		}
	}
	if prev != math.MaxInt64 {
		t.Errorf("largest encodable ID gives %d, want MaxInt64", prev)
	}
	for _, bad := range []string{"1-1048576", "8796093022208-0", "x", "1-", "-1", "18446744073709551615-18446744073709551615"} {
		if _, err := Sequence(bad); err == nil {
			t.Errorf("Sequence(%q) did not fail", bad)
		}
	}
	if got := IDOf(-5); got != "0-0" {
		t.Errorf("IDOf(-5) = %s", got)
	}
}

func TestIDArithmetic(t *testing.T) {
	for _, c := range []struct{ id, prev, next string }{
		{"5-3", "5-2", "5-4"},
		{"5-0", "4-18446744073709551615", "5-1"},
		{"0-0", "0-0", "0-1"},
		{"7-18446744073709551615", "7-18446744073709551614", "8-0"},
	} {
		id, ok := parseID(c.id)
		if !ok {
			t.Fatalf("parseID(%s) failed", c.id)
		}
		if got := id.prev().String(); got != c.prev {
			t.Errorf("prev(%s) = %s, want %s", c.id, got, c.prev)
		}
		if n, _ := id.next(); n.String() != c.next {
			t.Errorf("next(%s) = %s, want %s", c.id, n, c.next)
		}
	}
}
