package engine

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/state"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stateTopic is the compacted topic holding a stateful stage's checkpoints.
func stateTopic(pipeline, stage string) string {
	return "_fvsql-" + pipeline + "-" + stage + "-state"
}

// restoreState makes a newly owned partition's local state match the
// group's committed checkpoint. Pebble is a cache: when the offset its
// state reflects equals the committed offset, it is used as is; otherwise
// (a crash between the Kafka commit and the local write, a partition that
// moved here from another process, a wiped data directory) the partition's
// state is rebuilt from the compacted state topic, read to the committed
// checkpoint (readCheckpoint).
func (w *worker) restoreState(pt *partition) error {
	if w.ep == nil || w.ep.st == nil {
		return nil // stateless stage
	}
	w.stage.committing.wait()
	committed, ok := w.committed(pt.key.topic, pt.key.part)
	meta := pt.table(w, state.MetaSuffix)
	v, haveLocal, err := meta.Get(state.MetaKey)
	if err != nil {
		return err
	}
	switch {
	case !ok && !haveLocal:
		return nil // a partition that never checkpointed: start empty
	case ok && haveLocal && metaNextOffset(v) == committed:
		w.p.restoresLocal.Add(1)
		return nil
	}
	return w.rebuild(pt, committed, ok)
}

// rebuild replaces the partition's local state with the state topic's.
func (w *worker) rebuild(pt *partition, committed int64, haveCommit bool) error {
	e := w.p.e
	start := time.Now()
	if err := e.cfg.Store.DeletePrefix(pt.prefix); err != nil {
		return err
	}
	if !haveCommit {
		return nil // local state without a commit behind it is void
	}
	w.p.restoring.Add(1)
	defer w.p.restoring.Add(-1)
	topic := e.topic(stateTopic(w.p.id, w.stage.def.Name))
	ctx, cancel := context.WithTimeout(w.p.ctx, 10*time.Minute)
	defer cancel()
	batch := e.cfg.Store.NewWriteEpoch()
	defer func() {
		if batch != nil {
			batch.Discard()
		}
	}()
	table := batch.Table(pt.prefix)
	// The checkpoint wanted is the one whose partition meta names the
	// committed offset as the next to read.
	metaAt := append(append([]byte(nil), state.MetaSuffix...), state.MetaKey...)
	next := int64(-1)
	current := func() bool { return next == committed }
	read, err := readCheckpoint(ctx, e.cl, kadm.NewClient(e.cl), e.cfg.Brokers, e.cfg.KafkaOpts, topic, pt.key.part, current, func(key, value []byte) error {
		if bytes.Equal(key, metaAt) {
			next = metaNextOffset(value)
		}
		var err error
		if value == nil {
			err = table.Delete(key)
		} else {
			err = table.Set(key, value)
		}
		if err == nil && batch.Size() > 64<<20 {
			if err = batch.Commit(); err == nil {
				batch = e.cfg.Store.NewWriteEpoch()
				table = batch.Table(pt.prefix)
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("restore %s[%d]: %w", topic, pt.key.part, err)
	}
	if err := batch.Commit(); err != nil {
		return err
	}
	batch = nil
	w.p.restoredKeys.Add(read.records)
	e.cfg.Logger.Info("partition state restored from its checkpoint topic", "pipeline", w.p.name, "stage", w.stage.def.Name,
		"partition", pt.key.part, "records", read.records, "took", time.Since(start).Round(time.Millisecond),
		"waited_for_open_transactions", read.waited.Round(time.Millisecond))
	return nil
}

// checkpointRead is what readCheckpoint read.
type checkpointRead struct {
	records int64         // committed records passed on
	waited  time.Duration // time spent waiting for transactions open at the start to end
}

// readCheckpoint reads one partition of a state topic, read_committed,
// from its start, passing each committed record to apply (value nil for
// a tombstone). It stops at the end of a transaction at or past the last
// stable offset of the start when current says the state read so far is
// the checkpoint it wants; otherwise it reads on to the high watermark of
// the start, waiting for every transaction open at the start to end.
//
// The last stable offset alone is not enough: a transaction left open by
// a process that died and cannot be fenced (a wiped node restarts with new
// transactional ids) holds it at its first record until the transaction
// times out, while the new owner's checkpoints commit beyond it. Reading
// only to it restored an old checkpoint under the group's newer input
// offsets: windows closed a second time and rows were lost. The record
// at the high watermark minus one is visible once the transactions open
// at the start end: committed data, a marker (KeepControlRecords keeps
// them), or aborted data, whose marker comes after it.
func readCheckpoint(ctx context.Context, meta *kgo.Client, adm *kadm.Client, brokers []string, auth []kgo.Opt, topic string, part int32, current func() bool, apply func(key, value []byte) error) (checkpointRead, error) {
	var out checkpointRead
	ends, err := kafka.ListFresh(ctx, meta, adm.ListEndOffsets, topic)
	if err != nil {
		return out, err
	}
	end, ok := ends.Lookup(topic, part)
	if err := end.Err; ok && err != nil {
		return out, err
	}
	if !ok || end.Offset <= 0 {
		return out, nil
	}
	stable := end.Offset
	if lso, err := kafka.ListFresh(ctx, meta, adm.ListCommittedOffsets, topic); err == nil {
		if o, ok := lso.Lookup(topic, part); ok && o.Err == nil {
			stable = o.Offset
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(32 << 20),
		// While a transaction is open the broker has nothing to return
		// past it; poll again soon after its end.
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, auth...)...)
	if err != nil {
		return out, err
	}
	defer cl.Close()
	var stableAt time.Time // when the read passed the last stable offset of the start
	for done := false; !done; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return out, ferr
		}
		var aerr error
		fs.EachRecord(func(r *kgo.Record) {
			if aerr != nil || done {
				return
			}
			if stableAt.IsZero() && r.Offset >= stable-1 {
				stableAt = time.Now()
			}
			if r.Offset >= end.Offset-1 {
				done = true
			}
			if r.Attrs.IsControl() {
				// A transaction's end: the state read so far is a
				// checkpoint; past the stable offset of the start, it
				// may be the one wanted.
				done = done || r.Offset >= stable-1 && current()
				return
			}
			if r.Offset >= end.Offset {
				return
			}
			out.records++
			aerr = apply(r.Key, r.Value)
		})
		if aerr != nil {
			return out, aerr
		}
	}
	// The read ends at or past stable-1, so stableAt is set.
	if stable < end.Offset {
		if out.waited = time.Since(stableAt); out.waited < time.Millisecond {
			out.waited = 0 // stopped at the stable offset's transaction end
		}
	}
	return out, nil
}
