package types

import "testing"

// TestRecordKeyBytes pins the record key bytes: the partitioner hashes
// them, so a change here moves keys to other partitions for every stream
// written before it.
func TestRecordKeyBytes(t *testing.T) {
	row := Row{
		NewText("ACME"), NewInt8(-7), NewText(`a<b & "c"`), NullValue,
		NewFloat8(1.5), NewBool(true), NewTimestamp(Timestamp, 1_700_000_000_123_000),
	}
	for _, c := range []struct {
		cols []int
		want string // "<nil>" for no key
	}{
		{nil, "<nil>"},
		{[]int{0}, "ACME"},
		{[]int{1}, "-7"},
		{[]int{2}, `a<b & "c"`},
		{[]int{3}, "<nil>"},
		{[]int{4}, "1.5"},
		{[]int{5}, "t"},
		{[]int{6}, "2023-11-14 22:13:20.123"},
		{[]int{0, 1}, `["ACME",-7]`},
		// Several columns: JSON without HTML escaping (encoding/json's
		// Marshal would write \u003c and \u0026 and hash elsewhere).
		{[]int{2, 3}, `["a<b & \"c\"",null]`},
		{[]int{4, 5, 6}, `[1.5,true,"2023-11-14T22:13:20.123"]`},
	} {
		got := RecordKey(row, c.cols)
		s := string(got)
		if got == nil {
			s = "<nil>"
		}
		if s != c.want {
			t.Errorf("RecordKey(cols %v) = %s, want %s", c.cols, s, c.want)
		}
	}
}
