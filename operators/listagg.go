package operators

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// MaxListStateBytes bounds what one group's string_agg, array_agg or
// ORDER BY aggregate keeps in a continuous query. A row that would take
// it past is a poison row (54000): the group's state is written whole at
// each checkpoint that changed it, and a state entry must stay well under
// the largest record the state topic takes.
const MaxListStateBytes = 4 << 20

// listAcc is, in a continuous query, an aggregate whose result depends on
// the order of its rows or holds them all: string_agg, array_agg, and any
// aggregate with ORDER BY. It keeps each row's argument in order (by the
// ORDER BY keys, ties and the no-ORDER-BY case by arrival) and feeds them
// to a new inner accumulator when the result is asked for; over signed
// rows (a view's changes, an outer join), a leaving row takes out one
// held row of equal argument, so the result is that of the rows still
// there, in the order they arrived. State: the arrival counter and the
// rows with their arrival numbers. It is as large as the group's rows and
// each result reads them all.
type listAcc struct {
	// keys, under ORDER BY or array_agg's FILTER (then maybe empty): the
	// argument is a record of the value and its keys, NULL for a row
	// FILTER left out.
	keys  []plan.SortKey
	inner func() Accumulator
	rows  []listRow
	next  int64 // the arrival number of the next row
	bytes int64
	buf   []byte
}

type listRow struct {
	seq    int64
	v      types.Value
	fields []types.Value // v's fields, under ORDER BY
}

func (a *listAcc) row(v types.Value) listRow {
	r := listRow{seq: a.next, v: v}
	if a.keys != nil {
		r.fields = v.Fields()
	}
	return r
}

func listRowBytes(v types.Value) int64 { return int64(len(v.S)) + valueBytes + 8 }

// check says whether v fits; aggState calls it before it changes any
// accumulator, so that a poison row leaves the group as it was.
func (a *listAcc) check(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	if a.bytes+listRowBytes(v) > MaxListStateBytes {
		return pgerror.New(pgerror.ProgramLimitExceeded, "a group of this aggregate would hold more than %d MiB of values", MaxListStateBytes>>20).
			WithDetail("string_agg, array_agg and aggregates with ORDER BY keep their group's rows in a continuous query.").
			WithHint("Group by finer keys, or aggregate in a bounded query.")
	}
	return nil
}

// less orders held rows: by the ORDER BY keys, then by arrival.
func (a *listAcc) less(x, y *listRow) bool {
	if a.keys != nil {
		if c := CompareRows(a.keys, x.fields, y.fields); c != 0 {
			return c < 0
		}
	}
	return x.seq < y.seq
}

func (a *listAcc) Add(v types.Value) error {
	if a.keys != nil && v.K == types.Null { // a row FILTER left out
		return nil
	}
	if err := a.check(v); err != nil {
		return err
	}
	r := a.row(v)
	a.next++
	a.bytes += listRowBytes(v)
	i := len(a.rows)
	if a.keys != nil {
		i = sort.Search(len(a.rows), func(j int) bool { return a.less(&r, &a.rows[j]) })
	}
	a.rows = slices.Insert(a.rows, i, r)
	return nil
}

// retract takes out the earliest held row whose argument equals v; a
// value it does not hold (its row was set aside when it came) changes
// nothing.
func (a *listAcc) retract(v types.Value) error {
	if a.keys != nil && v.K == types.Null {
		return nil
	}
	want := types.AppendValue(nil, v)
	r := listRow{seq: -1, v: v}
	lo := 0
	if a.keys != nil { // from the first row of equal keys
		r.fields = v.Fields()
		lo = sort.Search(len(a.rows), func(j int) bool { return !a.less(&a.rows[j], &r) })
	}
	for i := lo; i < len(a.rows); i++ {
		if a.keys != nil && CompareRows(a.keys, a.rows[i].fields, r.fields) != 0 {
			break
		}
		a.buf = types.AppendValue(a.buf[:0], a.rows[i].v)
		if bytes.Equal(a.buf, want) {
			a.bytes -= listRowBytes(a.rows[i].v)
			a.rows = slices.Delete(a.rows, i, i+1)
			break
		}
	}
	return nil
}

func (a *listAcc) Result() types.Value {
	acc := a.inner()
	for i := range a.rows {
		v := a.rows[i].v
		if a.keys != nil {
			v = a.rows[i].fields[0]
		}
		if err := acc.Add(v); err != nil {
			break // the inner aggregate's own limit; it reports NULL or what it has
		}
	}
	return acc.Result()
}

// Size implements sizedAcc.
func (a *listAcc) Size() int64 { return a.bytes }

func (a *listAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.next)
	buf = binary.AppendUvarint(buf, uint64(len(a.rows)))
	for _, r := range a.rows {
		buf = binary.AppendVarint(buf, r.seq)
		buf = types.AppendValue(buf, r.v)
	}
	return buf
}

func (a *listAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.next, buf, err = readVarint(buf); err != nil {
		return nil, err
	}
	n, m := binary.Uvarint(buf)
	if m <= 0 || n > uint64(len(buf)) {
		return nil, ErrBadState
	}
	buf = buf[m:]
	a.rows, a.bytes = make([]listRow, 0, n), 0
	for range n {
		var seq int64
		if seq, buf, err = readVarint(buf); err != nil {
			return nil, err
		}
		var v types.Value
		if v, buf, err = types.DecodeValue(buf); err != nil {
			return nil, err
		}
		r := a.row(v)
		r.seq = seq
		a.rows = append(a.rows, r)
		a.bytes += listRowBytes(v)
	}
	return buf, nil
}

// Merge takes another group's rows after this one's (a session a row
// bridges to the next).
func (a *listAcc) Merge(o Accumulator) error {
	for _, r := range o.(*listAcc).rows {
		if err := a.Add(r.v); err != nil {
			return err
		}
	}
	return nil
}
