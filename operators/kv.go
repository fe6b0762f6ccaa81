package operators

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sort"
)

// KV is the keyed state of one stateful operator instance. Pipelines give
// it a keyspace of the epoch's Pebble batch (package state); bounded
// queries an in-memory MemKV. Values returned by Get are the caller's;
// the arguments of Set and Delete may be modified after they return.
type KV interface {
	Get(key []byte) ([]byte, bool, error)
	Set(key, value []byte) error
	Delete(key []byte) error
	// Scan visits the keys in [lo, hi) in order (hi nil: all above lo);
	// fn must not change the KV.
	Scan(lo, hi []byte, fn func(key, value []byte) error) error
}

// Stateful is an operator that keeps state across batches.
type Stateful interface {
	Operator
	// Bind gives the operator its state for the coming epoch; any cached
	// state from before is dropped (it may belong to an aborted epoch).
	Bind(kv KV)
	// OnWatermark tells the operator that no row with an event time at or
	// below wm will come (late rows aside); it emits what that completes.
	OnWatermark(wm int64, emit Emit) error
	// OnCheckpoint writes everything the operator holds in memory into its
	// KV, before the epoch commits.
	OnCheckpoint() error
}

// Seeder is a Stateful operator with output before any input row: an
// aggregate without GROUP BY has its one group over no rows too (count 0,
// sum NULL), as a bounded query does. A pipeline calls Seed once the
// operator's partition is bound, when a seed marker comes in its input
// (engine: the marker a pipeline's start writes); Seed emits the group
// unless the state already holds it, so a marker after rows, or a second
// marker, changes nothing.
type Seeder interface {
	Seed(emit Emit) error
}

// WatermarkSetter is a Stateful operator that can take back its
// watermark after a restart without closing anything (WindowAggregate:
// its windows at or below the watermark closed before the checkpoint it
// restarts from; re-running the close from no watermark would emit again
// the windows of panes still held for later ones).
type WatermarkSetter interface {
	SetWatermark(wm int64)
}

// Rearm gives an operator rebuilt from a checkpoint the watermark it had
// then: SetWatermark where it has one, else OnWatermark into emit (none
// is expected: what the watermark closed was closed before the
// checkpoint).
func Rearm(op Stateful, wm int64, emit Emit) error {
	if s, ok := op.(WatermarkSetter); ok {
		s.SetWatermark(wm)
		return nil
	}
	return op.OnWatermark(wm, emit)
}

// ErrLate marks rows that arrive behind the watermark: the engine counts
// them as late and reports them, distinct from poison rows.
var ErrLate = errors.New("late: the row's window is already closed")

// Op is the kind of change a row of a changelog batch carries.
type Op byte

// Changelog ops (Batch.Ops). An update replaces the row of a key;
// OpUpdateBefore, when an operator emits before rows (BeforeEmitter), is
// the row it replaces, just before the OpUpdate row, for readers of a
// view's changes that fold rows in and must take the old one out.
const (
	OpInsert       Op = 'I'
	OpUpdate       Op = 'U'
	OpDelete       Op = 'D'
	OpUpdateBefore Op = 'B'
)

// String names the op as the changes streams show it.
func (o Op) String() string {
	switch o {
	case OpInsert:
		return "insert"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	case OpUpdateBefore:
		return "update_before"
	}
	return "?"
}

// BeforeEmitter is a Stateful operator whose changes can carry the old
// row of each update: after EmitBefore, every OpUpdate row it emits
// follows an OpUpdateBefore row holding what the key showed before (a
// view's <view>_changes then lets an outside reader retract). Rendering
// the old rows costs, so only a stage writing such a changes stream asks.
type BeforeEmitter interface {
	EmitBefore()
}

// MemKV is an in-memory KV (bounded queries, tests).
type MemKV struct{ m map[string][]byte }

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV { return &MemKV{m: map[string][]byte{}} }

// Get implements KV.
func (k *MemKV) Get(key []byte) ([]byte, bool, error) {
	v, ok := k.m[string(key)]
	return bytes.Clone(v), ok, nil
}

// Set implements KV.
func (k *MemKV) Set(key, value []byte) error {
	k.m[string(key)] = bytes.Clone(value)
	return nil
}

// Delete implements KV.
func (k *MemKV) Delete(key []byte) error {
	delete(k.m, string(key))
	return nil
}

// Scan implements KV.
func (k *MemKV) Scan(lo, hi []byte, fn func(key, value []byte) error) error {
	keys := make([]string, 0, len(k.m))
	for key := range k.m {
		if key >= string(lo) && (hi == nil || key < string(hi)) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		if err := fn([]byte(key), k.m[key]); err != nil {
			return err
		}
	}
	return nil
}

// Len is the number of keys (state size in tests).
func (k *MemKV) Len() int { return len(k.m) }

// AppendInt64Key appends an int64 so that byte order is numeric order.
func AppendInt64Key(buf []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(buf, uint64(v)^(1<<63))
}

func readBE64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }
