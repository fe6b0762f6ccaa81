package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
)

// catalogTopic is the compacted topic holding the shared catalog: key =
// relation name, value = its JSON definition, tombstone = dropped.
const catalogTopic = "_fvsql_catalog"

// catalogLog keeps the local catalog in step with the shared log: a
// goroutine tails the topic and applies every record, and DDL appends a
// record and waits until its own tail has applied it.
type catalogLog struct {
	s      *Server
	stream string // the catalog topic's name without the topic prefix
	tl     *kafka.Tail
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	cond    *sync.Cond
	applied int64 // offset of the next record to apply
	err     error
	live    bool // initial replay finished: changes now start and stop pipelines
	// pending holds the changes applied before live: the start lists the
	// catalog while the tail goes on, so a change applied between that
	// list and setLive is followed by setLive.
	pending []catalog.Change
	// follow orders the changes followed: setLive's pending ones before
	// the tail's next.
	follow sync.Mutex
}

// openCatalogLog creates the topic if needed, replays it into the catalog
// and keeps tailing it.
func (s *Server) openCatalogLog(ctx context.Context) (*catalogLog, error) {
	spec := backends.StreamSpec{Name: catalogTopic, Shards: 1, Options: map[string]string{"cleanup.policy": "compact"}}
	if err := s.kafka.CreateStream(ctx, spec); err != nil {
		return nil, fmt.Errorf("server: catalog topic: %w", err)
	}
	ends, err := s.kafka.StableEnds(ctx, catalogTopic)
	if err != nil {
		return nil, fmt.Errorf("server: catalog topic: %w", err)
	}
	end := ends[0]
	tl, err := s.kafka.Tail(catalogTopic, map[int32]int64{0: kafka.AtStart}, kafka.TailOptions{MaxWait: 50 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if err := s.cat.Reset(); err != nil {
		tl.Close()
		return nil, err
	}
	tctx, cancel := context.WithCancel(s.ctx)
	l := &catalogLog{s: s, stream: catalogTopic, tl: tl, cancel: cancel, done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.tail(tctx)
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := l.waitApplied(wctx, end); err != nil {
		l.close()
		return nil, fmt.Errorf("server: replaying the catalog: %w", err)
	}
	return l, nil
}

func (l *catalogLog) close() {
	l.cancel()
	<-l.done
	l.tl.Close()
}

func (l *catalogLog) tail(ctx context.Context) {
	defer close(l.done)
	for {
		b, err := l.tl.Poll(ctx)
		if ctx.Err() != nil {
			l.mu.Lock()
			l.err = errors.New("catalog log closed")
			l.cond.Broadcast()
			l.mu.Unlock()
			return
		}
		if err != nil {
			l.s.log.Warn("reading the catalog log", "err", err)
		}
		for _, r := range b.Messages {
			change, err := l.s.cat.Apply(r.Sequence, string(r.Key), r.Payload)
			if err != nil {
				l.s.log.Error("catalog record skipped", "offset", r.Sequence, "err", err)
			}
			l.mu.Lock()
			live := l.live
			if !live && err == nil {
				l.pending = append(l.pending, change)
			}
			l.applied = r.Sequence + 1
			l.cond.Broadcast()
			l.mu.Unlock()
			if live {
				l.follow.Lock()
				l.s.onCatalogChange(change)
				l.follow.Unlock()
			}
		}
	}
}

// waitApplied blocks until every record before offset is applied.
func (l *catalogLog) waitApplied(ctx context.Context, offset int64) error {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.applied < offset {
		if l.err != nil {
			return l.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		l.cond.Wait()
	}
	return nil
}

// listing drops the pending changes: the caller is about to list the
// catalog, which covers them.
func (l *catalogLog) listing() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = nil
}

// setLive makes the tail follow changes, after following those applied
// since the replay that still hold (starting a pipeline or a view's copy
// twice is a no-op; one created and dropped meanwhile is skipped).
func (l *catalogLog) setLive() {
	l.follow.Lock()
	defer l.follow.Unlock()
	l.mu.Lock()
	l.live = true
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, ch := range pending {
		if ch.Created != nil {
			if cur, ok := l.s.cat.Get(ch.Created.Name); !ok || cur.ID != ch.Created.ID {
				ch.Created = nil
			}
		}
		if ch.Deleted != nil {
			// still there (not dropped after all), not a later relation of its name
			if cur, ok := l.s.cat.Get(ch.Deleted.Name); ok && cur.ID == ch.Deleted.ID {
				ch.Deleted = nil
			}
		}
		l.s.onCatalogChange(ch)
	}
}

// publish appends a create (rel) or a drop (rel nil) of name to the log
// and waits until this process has applied it. A create that lost a race
// with another process's create of the same name fails with 42P07.
func (l *catalogLog) publish(ctx context.Context, name string, rel *catalog.Relation) error {
	var value []byte
	if rel != nil {
		if rel.ID == "" {
			rel.ID = newID()
		}
		if rel.Created.IsZero() {
			rel.Created = time.Now().UTC()
		}
		var err error
		if value, err = catalog.Encode(rel); err != nil {
			return err
		}
	}
	if err := l.publishRecord(ctx, name, value); err != nil {
		return err
	}
	if rel != nil {
		got, ok := l.s.cat.Get(name)
		if !ok || got.ID != rel.ID {
			return pgerror.New(pgerror.DuplicateTable, "relation %q already exists (created concurrently by another process)", name)
		}
		*rel = *got
	}
	return nil
}

// publishRecord appends one record (value nil: a tombstone) to the log
// and waits until this process has applied it.
func (l *catalogLog) publishRecord(ctx context.Context, key string, value []byte) error {
	offset, err := l.s.kafka.Append(ctx, backends.Message{Stream: l.stream, Key: []byte(key), Payload: value})
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "writing the catalog")
	}
	if err := l.waitApplied(ctx, offset+1); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "applying the catalog")
	}
	return nil
}

// onCatalogChange follows changes another process (or this one) made:
// pipelines start where they appear and stop where they go away. The
// effects on one name run in the order of the changes (followUp), so a
// DROP's Stop never comes after the Start of a view created again under
// the same name, which would leave that process without the new
// pipeline.
func (s *Server) onCatalogChange(ch catalog.Change) {
	if ch.FunctionReplaced != nil {
		s.funcs.retire(ch.FunctionReplaced)
	}
	if ch.FunctionDeleted != nil {
		s.funcs.retire(ch.FunctionDeleted)
	}
	if ch.Created != nil && ch.Created.Kind == catalog.MaterializedView {
		s.views.start(ch.Created)
	}
	if ch.Deleted != nil && ch.Deleted.Kind == catalog.MaterializedView {
		deleted := ch.Deleted
		s.followUp(deleted.Name, func() { s.views.stop(deleted) })
	}
	if ch.Deleted != nil && len(ch.Deleted.Plan) > 0 {
		deleted := ch.Deleted
		s.followUp(deleted.Name, func() {
			topo, err := topologyOf(deleted)
			if err != nil {
				s.engine.Stop(deleted.Name)
				return
			}
			if err := s.engine.Forget(deleted.Name, topo); err != nil {
				s.log.Warn("deleting a dropped pipeline's local state failed", "pipeline", deleted.Name, "err", err)
			}
		})
	}
	if ch.Created != nil && len(ch.Created.Plan) > 0 {
		s.followUp(ch.Created.Name, func() {
			ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
			defer cancel()
			if err := s.engine.Start(ctx, ch.Created.Name); err != nil {
				s.log.Error("pipeline did not start", "pipeline", ch.Created.Name, "err", err)
			}
		})
	}
}

// followUp runs fn, a catalog change's effect on the relation name, in a
// goroutine that Close waits for: it uses the engine and the store, which
// Close closes after. The effects on one name run one at a time, in the
// order followUp was called; those on different names run concurrently.
func (s *Server) followUp(name string, fn func()) {
	s.followUps.Add(1)
	s.followMu.Lock()
	q, draining := s.followQ[name]
	s.followQ[name] = append(q, fn)
	s.followMu.Unlock()
	if draining {
		return
	}
	go func() {
		for {
			s.followMu.Lock()
			fn := s.followQ[name][0] // it stays queued while it runs
			s.followMu.Unlock()
			fn()
			s.followMu.Lock()
			rest := s.followQ[name][1:]
			if len(rest) == 0 {
				delete(s.followQ, name)
			} else {
				s.followQ[name] = rest
			}
			s.followMu.Unlock()
			s.followUps.Done()
			if len(rest) == 0 {
				return
			}
		}
	}()
}
