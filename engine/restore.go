package engine

import (
	"context"
	"fmt"
	"time"

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
// state is rebuilt from the compacted state topic, read to its end.
func (w *worker) restoreState(pt *partition) error {
	if w.ep == nil || w.ep.st == nil {
		return nil // stateless stage
	}
	committed, ok := w.committed(pt.key.topic, pt.key.part)
	meta := pt.table(w, metaSuffix)
	v, haveLocal, err := meta.Get(metaKey)
	if err != nil {
		return err
	}
	local := int64(-1)
	if haveLocal {
		probe := &partition{sources: map[int32]*sourceWM{}}
		if probe.decodeMeta(v) == nil {
			local = probe.nextOffset
		}
	}
	switch {
	case !ok && !haveLocal:
		return nil // a partition that never checkpointed: start empty
	case ok && haveLocal && local == committed:
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
	topic := e.topic(stateTopic(w.p.name, w.stage.def.Name))
	ctx, cancel := context.WithTimeout(w.p.ctx, 10*time.Minute)
	defer cancel()
	adm := kadm.NewClient(e.cl)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("restore %s[%d]: %w", topic, pt.key.part, err)
	}
	end, ok := ends.Lookup(topic, pt.key.part)
	if !ok || end.Offset <= 0 {
		return nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {pt.key.part: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(32<<20),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	batch := e.cfg.Store.NewEpoch()
	defer func() {
		if batch != nil {
			batch.Discard()
		}
	}()
	table := batch.Table(pt.prefix)
	keys := int64(0)
	for done := false; !done; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("restore %s[%d]: %w", topic, pt.key.part, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("restore %s[%d]: %w", topic, pt.key.part, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end.Offset-1 {
				done = true
			}
			if r.Attrs.IsControl() || r.Offset >= end.Offset {
				return
			}
			keys++
			if r.Value == nil {
				table.Delete(r.Key)
			} else {
				table.Set(r.Key, r.Value)
			}
		})
		if batch.Size() > 64<<20 {
			if err := batch.Commit(); err != nil {
				return err
			}
			batch = e.cfg.Store.NewEpoch()
			table = batch.Table(pt.prefix)
		}
	}
	if err := batch.Commit(); err != nil {
		return err
	}
	batch = nil
	w.p.restoredKeys.Add(keys)
	e.cfg.Logger.Info("partition state restored from its checkpoint topic", "pipeline", w.p.name, "stage", w.stage.def.Name,
		"partition", pt.key.part, "records", keys, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
