package server

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"

	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

// views keeps, in every process, a copy of each materialized view's
// current rows in Pebble, fed by the view's compacted table topic: pull
// queries read it, by key without a scan. Each copy records, atomically
// with its rows, the topic offsets it reflects, and resumes from them.
type views struct {
	s  *Server
	mu sync.Mutex
	m  map[string]*viewCopy
	// ending are copies stop took out of m whose end has not finished:
	// a new copy of the same name waits for it.
	ending map[string]*viewCopy
}

type viewCopy struct {
	rel    *catalog.Relation
	keyIdx []int
	codec  *types.JSONCodec
	cancel context.CancelFunc
	done   chan struct{} // run returned
	ended  chan struct{} // end deleted the copy's rows and offsets

	mu   sync.Mutex
	cond *sync.Cond
	pos  map[int32]int64 // next offset to apply, per partition
}

// start begins (or keeps) the copy of a view. A copy of an earlier view
// of the same name (dropped, its change not applied yet: DROP and CREATE
// in quick succession) is replaced: the new copy runs once the old one
// has ended and its rows and offsets are deleted, so it never resumes
// from the old table's offsets.
func (v *views) start(rel *catalog.Relation) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old, ok := v.m[rel.Name]
	if ok && old.rel.ID == rel.ID {
		return
	}
	ending := v.ending[rel.Name]
	c := &viewCopy{rel: rel, codec: types.NewJSONCodec(rel.ColumnNames(), rel.ColumnTypes()),
		done: make(chan struct{}), ended: make(chan struct{}), pos: map[int32]int64{}}
	c.cond = sync.NewCond(&c.mu)
	for _, k := range rel.Key {
		c.keyIdx = append(c.keyIdx, rel.ColumnIndex(k))
	}
	ctx, cancel := context.WithCancel(v.s.ctx)
	c.cancel = cancel
	v.m[rel.Name] = c
	go func() {
		if old != nil {
			v.end(old)
		}
		if ending != nil {
			<-ending.ended
		}
		c.run(ctx, v.s)
	}()
}

// stop ends the copy of the view rel (if it is still that view's, not a
// later one's of the same name) and deletes it.
func (v *views) stop(rel *catalog.Relation) {
	v.mu.Lock()
	c := v.m[rel.Name]
	if c != nil && c.rel.ID != rel.ID {
		c = nil // replaced already, by start
	}
	if c != nil {
		delete(v.m, rel.Name)
		v.ending[rel.Name] = c
	}
	v.mu.Unlock()
	if c != nil {
		v.end(c)
	}
}

// end stops a copy taken out of v.m and deletes its rows and offsets.
func (v *views) end(c *viewCopy) {
	c.cancel()
	<-c.done
	_ = v.s.store.DeletePrefix(state.ViewPrefix(c.rel.Name))
	_ = v.s.store.DeletePrefix(state.ViewPosPrefix(c.rel.Name))
	v.mu.Lock()
	if v.ending[c.rel.Name] == c {
		delete(v.ending, c.rel.Name)
	}
	v.mu.Unlock()
	close(c.ended)
}

func (v *views) get(name string) *viewCopy {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[name]
}

func (v *views) closeAll() {
	v.mu.Lock()
	cs := v.m
	v.m = map[string]*viewCopy{}
	v.mu.Unlock()
	for _, c := range cs {
		c.cancel()
		<-c.done
	}
}

// run tails the view's table topic from the stored positions.
func (c *viewCopy) run(ctx context.Context, s *Server) {
	defer close(c.done)
	from := map[int32]int64{}
	for p := int32(0); p < int32(c.rel.Partitions); p++ {
		from[p] = kafka.AtStart
		if b, err := s.store.Get(state.ViewPosKey(c.rel.Name, p)); err == nil {
			n, _ := binary.Varint(b)
			from[p] = n
			c.pos[p] = n
		}
	}
	tl, err := s.kafka.Tail(c.rel.Topic, from, kafka.TailOptions{})
	if err != nil {
		s.log.Error("view copy", "view", c.rel.Name, "err", err)
		return
	}
	defer tl.Close()
	for {
		fetched, err := tl.Poll(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("reading a view's table topic", "view", c.rel.Name, "err", err)
		}
		// A record's key is its row's key encoding (engine.TableKey): the
		// row is stored under it as it comes (Set copies it), and a
		// tombstone deletes it without a read. A write epoch suffices:
		// nothing here reads.
		b := s.store.NewWriteEpoch()
		rows := b.Table(state.ViewRowsPrefix(c.rel.Name))
		moved := fetched.Next
		for _, m := range fetched.Messages {
			if m.Payload == nil {
				rows.Delete(m.Key)
				continue
			}
			rows.Set(m.Key, m.Payload)
		}
		if len(moved) == 0 {
			b.Discard()
			continue
		}
		meta := b.Table(nil)
		for p, off := range moved {
			meta.Set(state.ViewPosKey(c.rel.Name, p), binary.AppendVarint(nil, off))
		}
		if err := b.Commit(); err != nil {
			s.log.Error("view copy", "view", c.rel.Name, "err", err)
			return
		}
		c.mu.Lock()
		for p, off := range moved {
			c.pos[p] = off
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// waitFor blocks until the copy has applied everything up to the
// topic's read_committed end as it is now (FLUSH).
func (c *viewCopy) waitFor(ctx context.Context, s *Server) error {
	ends, err := s.kafka.StableEnds(ctx, c.rel.Topic)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		behind := false
		for p, end := range ends {
			if end > 0 && c.pos[p] < end {
				behind = true
			}
		}
		if !behind {
			return nil
		}
		if ctx.Err() != nil {
			return pgerror.New(pgerror.QueryCanceled, "FLUSH: the copy of view %q did not catch up", c.rel.Name)
		}
		c.cond.Wait()
	}
}

// flush waits for every view copy.
func (v *views) flush(ctx context.Context) error {
	v.mu.Lock()
	cs := make([]*viewCopy, 0, len(v.m))
	for _, c := range v.m {
		cs = append(cs, c)
	}
	v.mu.Unlock()
	for _, c := range cs {
		if err := c.waitFor(ctx, v.s); err != nil {
			return err
		}
	}
	return nil
}

// viewDataset reads a view's local copy: every row, or the rows of given
// keys without a scan.
type viewDataset struct {
	d *datasets
	c *viewCopy
	s *Server
}

func (v *viewDataset) Scan(ctx context.Context, fn func(int32, *operators.Batch) error) error {
	return v.scanRows(state.ViewRowsPrefix(v.c.rel.Name), fn)
}

func (v *viewDataset) scanRows(prefix []byte, fn func(int32, *operators.Batch) error) error {
	width := len(v.c.rel.Columns)
	b := &operators.Batch{}
	err := v.s.store.Scan(prefix, func(_, value []byte) error {
		row := make(types.Row, width)
		if err := v.c.codec.Decode(value, row); err != nil {
			v.d.skipped.Add(1)
			return nil
		}
		b.Rows = append(b.Rows, row)
		if len(b.Rows) == 1024 {
			if err := fn(0, b); err != nil {
				return err
			}
			b = &operators.Batch{}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(b.Rows) > 0 {
		return fn(0, b)
	}
	return nil
}

// Lookup implements engine.KeyedDataset: the rows whose key columns equal
// the values given, in the view's key order.
func (v *viewDataset) Lookup(_ context.Context, key types.Row, fn func(int32, *operators.Batch) error) error {
	buf := state.ViewRowsPrefix(v.c.rel.Name)
	for i, val := range key {
		t := v.c.rel.Columns[v.c.keyIdx[i]].Type
		cv, err := types.Cast(val, t)
		if err != nil {
			return nil // a key that cannot be of the column's type matches nothing
		}
		buf = types.AppendKey(buf, cv)
	}
	if len(key) < len(v.c.keyIdx) {
		return v.scanRows(buf, fn)
	}
	value, err := v.s.store.Get(buf)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	row := make(types.Row, len(v.c.rel.Columns))
	if err := v.c.codec.Decode(value, row); err != nil {
		return nil
	}
	return fn(0, &operators.Batch{Rows: []types.Row{row}})
}

// viewLookup reads this process's copy of a view by its key or a prefix
// of it, for stream-table joins.
func (s *Server) viewLookup(ctx context.Context, view string, key types.Row) ([]types.Row, error) {
	c := s.views.get(view)
	if c == nil {
		return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState, "materialized view %q has no local copy on this node yet", view)
	}
	var out []types.Row
	err := (&viewDataset{d: &datasets{}, s: s, c: c}).Lookup(ctx, key, func(_ int32, b *operators.Batch) error {
		out = append(out, b.Rows...)
		return nil
	})
	return out, err
}
