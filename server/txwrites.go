package server

import (
	"context"
	"fmt"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
)

// txWrites are the records a transaction block's INSERT and COPY
// statements wrote, held until COMMIT sends them (ROLLBACK, or a COMMIT
// of a failed block, drops them), so that ROLLBACK undoes the writes as
// PostgreSQL's does. The block's own bounded queries read them after
// what the stream holds (streamDataset.Scan). Every row was checked by
// the statement that wrote it, so COMMIT fails only when a backend
// refuses the records, as a lone INSERT's send can; it sends each
// backend's records in one Producer.Send.
type txWrites struct {
	rels       map[string]*relWrites // by relation name
	order      []*relWrites          // in order of first write
	bytes      int64
	savepoints []savepoint // innermost last
}

// savepoint is what the block held when SAVEPOINT name ran.
type savepoint struct {
	name  string
	held  map[string]int // records per relation
	bytes int64
}

// relWrites are one relation's held records.
type relWrites struct {
	rel  *catalog.Relation
	msgs []backends.Message
}

// hold adds msgs, the records of one statement that wrote to rel, within
// limit bytes in all (0: no limit).
func (w *txWrites) hold(rel *catalog.Relation, msgs []backends.Message, limit int64) error {
	var n int64
	for _, m := range msgs {
		n += int64(len(m.Payload)+len(m.Key)) + 64
	}
	if limit > 0 && w.bytes+n > limit {
		e := pgerror.New(pgerror.OutOfMemory, "out of memory")
		e.Detail = fmt.Sprintf("A transaction block holds the rows it writes until COMMIT; this one would hold more than %d MB, the limit set by --query-memory-mb (FVSQL_QUERY_MEMORY_MB).", limit>>20)
		e.Hint = "COMMIT more often, or write outside a transaction block."
		return e
	}
	if w.rels == nil {
		w.rels = map[string]*relWrites{}
	}
	rw := w.rels[rel.Name]
	if rw == nil {
		rw = &relWrites{rel: rel}
		w.rels[rel.Name] = rw
		w.order = append(w.order, rw)
	}
	rw.msgs = append(rw.msgs, msgs...)
	w.bytes += n
	return nil
}

// of returns the records held for relation name (nil for none).
func (w *txWrites) of(name string) []backends.Message {
	if w == nil || w.rels[name] == nil {
		return nil
	}
	return w.rels[name].msgs
}

// commit sends the held records, one Send per backend.
func (w *txWrites) commit(ctx context.Context, s *Server) error {
	type batch struct {
		st   backends.Streamer
		msgs []backends.Message
	}
	var batches []*batch
	for _, rw := range w.order {
		if _, ok := s.cat.Get(rw.rel.Name); !ok {
			return pgerror.New(pgerror.UndefinedTable, "relation %q was dropped before COMMIT; nothing was written", rw.rel.Name)
		}
		st, err := s.backend(ctx, rw.rel)
		if err != nil {
			return err
		}
		var b *batch
		for _, x := range batches {
			if x.st == st {
				b = x
			}
		}
		if b == nil {
			b = &batch{st: st}
			batches = append(batches, b)
		}
		b.msgs = append(b.msgs, rw.msgs...)
	}
	for _, b := range batches {
		prod, err := b.st.Producer(ctx)
		if err != nil {
			return err
		}
		err = prod.Send(ctx, b.msgs)
		prod.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// savepoint runs SAVEPOINT, RELEASE or ROLLBACK TO name: ROLLBACK TO
// drops what was written since the savepoint (which stays), RELEASE
// forgets it and the savepoints after it.
func (w *txWrites) savepoint(kind sql.TxKind, name string) error {
	if kind == sql.TxSavepoint {
		sp := savepoint{name: name, held: map[string]int{}, bytes: w.bytes}
		for n, rw := range w.rels {
			sp.held[n] = len(rw.msgs)
		}
		w.savepoints = append(w.savepoints, sp)
		return nil
	}
	i := len(w.savepoints) - 1
	for i >= 0 && w.savepoints[i].name != name {
		i--
	}
	if i < 0 {
		return pgerror.New(pgerror.InvalidSavepointSpec, "savepoint %q does not exist", name)
	}
	if kind == sql.TxRelease {
		w.savepoints = w.savepoints[:i]
		return nil
	}
	sp := w.savepoints[i]
	w.savepoints = w.savepoints[:i+1]
	kept := w.order[:0]
	for _, rw := range w.order {
		n, ok := sp.held[rw.rel.Name]
		if !ok {
			delete(w.rels, rw.rel.Name)
			continue
		}
		clear(rw.msgs[n:])
		rw.msgs = rw.msgs[:n]
		kept = append(kept, rw)
	}
	w.order, w.bytes = kept, sp.bytes
	return nil
}
