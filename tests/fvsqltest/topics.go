package fvsqltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadTopic returns every record of topic on brokers as a downstream
// consumer sees it: with committed, what a read_committed consumer sees,
// once no transaction is open on the topic (last stable offset = high
// watermark on every partition: a process killed or paused mid-transaction
// holds its partitions back until it is fenced or its transaction times
// out); without, every record, also those of aborted and open transactions
// (for diagnosis). The test fails when that takes longer than timeout.
func ReadTopic(t testing.TB, brokers []string, topic string, committed bool, timeout time.Duration) []*kgo.Record {
	t.Helper()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	deadline := time.Now().Add(timeout)
	var ends, starts kadm.ListedOffsets
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lso, err1 := adm.ListCommittedOffsets(ctx, topic)
		hwm, err2 := adm.ListEndOffsets(ctx, topic)
		st, err3 := adm.ListStartOffsets(ctx, topic)
		cancel()
		err := errors.Join(err1, err2, err3)
		if err == nil {
			err = errors.Join(lso.Error(), hwm.Error(), st.Error())
		}
		var open []string
		if err == nil {
			if !committed {
				ends, starts = hwm, st
				break
			}
			hwm.Each(func(o kadm.ListedOffset) {
				if l, ok := lso.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
					open = append(open, fmt.Sprintf("p%d lso %d < hwm %d", o.Partition, l.Offset, o.Offset))
				}
			})
			if len(open) == 0 {
				ends, starts = lso, st
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: transactions still open after %s (err %v): %s", topic, timeout, err, strings.Join(open, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := map[int32]int64{}
	assign := map[string]map[int32]kgo.Offset{topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Offset >= o.Offset {
			return
		}
		want[o.Partition] = o.Offset
		assign[topic][o.Partition] = kgo.NewOffset().AtStart()
	})
	if len(want) == 0 {
		return nil
	}
	iso := kgo.ReadCommitted()
	if !committed {
		iso = kgo.ReadUncommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(assign),
		kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(16<<20),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Until(deadline)+timeout)
	defer cancel()
	pos := map[int32]int64{}
	var out []*kgo.Record
	for {
		done := true
		for p, end := range want {
			if pos[p] < end {
				done = false
			}
		}
		if done {
			return out
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			if committed {
				describeStuck(t, brokers, topic, pos, want)
			}
			t.Fatalf("reading %s: %v; positions %v, ends %v", topic, ctx.Err(), pos, want)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("reading %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() || r.Offset >= want[r.Partition] {
				return
			}
			out = append(out, r)
		})
	}
}

// describeStuck logs, for each partition a read_committed read could not
// take to its end, the records from just before where it stopped as a
// read_uncommitted consumer sees them: offset, producer, transactional
// and control flags (a diagnosis of a partition no consumer can pass).
func describeStuck(t testing.TB, brokers []string, topic string, pos, want map[int32]int64) {
	t.Helper()
	assign := map[string]map[int32]kgo.Offset{topic: {}}
	for p, end := range want {
		if pos[p] < end {
			assign[topic][p] = kgo.NewOffset().At(max(0, pos[p]-3))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(assign),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Logf("diagnosis: %v", err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lines := map[int32][]string{}
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, p int32, err error) {
			lines[p] = append(lines[p], fmt.Sprintf("error %v", err))
		})
		fs.EachRecord(func(r *kgo.Record) {
			if len(lines[r.Partition]) < 12 {
				lines[r.Partition] = append(lines[r.Partition], fmt.Sprintf("@%d pid %d/%d txn=%v ctl=%v", r.Offset, r.ProducerID, r.ProducerEpoch, r.Attrs.IsTransactional(), r.Attrs.IsControl()))
			}
		})
	}
	for p, l := range lines {
		t.Logf("diagnosis: %s[%d] read_uncommitted from %d: %s", topic, p, pos[p]-3, strings.Join(l, ", "))
	}
}

// StageGroup names the consumer group of a pipeline's stage on the
// broker: <prefix>fvsql.<pipeline>.<incarnation>.<stage> (the engine's
// Topology.Ident: a pipeline created again under its name gets new
// groups), found by listing the groups; the name without an incarnation
// (a pipeline stored before incarnations) when no group matches.
func StageGroup(ctx context.Context, adm *kadm.Client, prefix, pipeline, stage string) string {
	plain := prefix + "fvsql." + pipeline + "." + stage
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return plain
	}
	head, tail := prefix+"fvsql."+pipeline+".", "."+stage
	for _, g := range listed.Groups() {
		rest, ok1 := strings.CutPrefix(g, head)
		inc, ok2 := strings.CutSuffix(rest, tail)
		if ok1 && ok2 && len(inc) == 8 && !strings.Contains(inc, ".") {
			return g
		}
	}
	return plain
}
