package services_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fvsql/fvsql/tests/testenv"
)

const partitions = 2

// rec is one produced or consumed record, reduced to what the test compares.
type rec struct {
	Partition int32
	Key       string
	Value     string
}

func (r rec) String() string { return fmt.Sprintf("p%d %s=%s", r.Partition, r.Key, r.Value) }

// TestKafkaTransactionsOnCompactedTopic produces committed and aborted
// transactions into a compacted topic and checks that the broker really
// applies transaction semantics: a read_committed consumer sees exactly the
// committed records, in order per partition, while a read_uncommitted consumer
// shows that the aborted records are physically in the log.
func TestKafkaTransactionsOnCompactedTopic(t *testing.T) {
	brokers := strings.Split(testenv.Kafka(t), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(admCl.Close) // after the topic is deleted: cleanups run last-in first-out
	adm := kadm.NewClient(admCl)
	logBrokerVersion(ctx, t, adm)

	topic := testenv.UniqueName("services-txn-compact-")
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, partitions, 1, map[string]*string{"cleanup.policy": &compact}, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := adm.DeleteTopic(ctx, topic); err != nil {
			t.Logf("delete topic %s: %v", topic, err)
		}
	})
	waitTopicReady(ctx, t, adm, topic)

	// The topic config as the broker stores it.
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v / %v", topic, err, rc.Err)
	}
	var policy *kadm.Config
	for i := range rc.Configs {
		if rc.Configs[i].Key == "cleanup.policy" {
			policy = &rc.Configs[i]
		}
	}
	switch {
	case policy == nil:
		t.Fatalf("topic %s: cleanup.policy missing from %d described configs", topic, len(rc.Configs))
	case policy.Value == nil || *policy.Value != "compact":
		t.Fatalf("topic %s: cleanup.policy = %v, want compact", topic, policy.Value)
	case policy.Source != kmsg.ConfigSourceDynamicTopicConfig:
		t.Fatalf("topic %s: cleanup.policy source = %v, want DYNAMIC_TOPIC_CONFIG", topic, policy.Source)
	}
	t.Logf("topic %s: cleanup.policy=%s (source %v), %d configs described", topic, *policy.Value, policy.Source, len(rc.Configs))

	// Compaction is done by the brokers' log cleaner, which must be on.
	bcs, err := adm.DescribeBrokerConfigs(ctx, brokerIDs(ctx, t, adm)...)
	if err != nil {
		t.Fatalf("describe broker configs: %v", err)
	}
	for _, bc := range bcs {
		cleaner := ""
		for _, c := range bc.Configs {
			if c.Key == "log.cleaner.enable" && c.Value != nil {
				cleaner = *c.Value
			}
		}
		if bc.Err != nil || cleaner != "true" {
			t.Fatalf("broker %s: log.cleaner.enable = %q (err %v), want true", bc.Name, cleaner, bc.Err)
		}
		t.Logf("broker %s: log.cleaner.enable=true, %d broker configs described", bc.Name, len(bc.Configs))
	}

	producer, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.TransactionalID(testenv.UniqueName("services-txn-id-")),
		kgo.TransactionTimeout(30*time.Second),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		t.Fatalf("transactional producer: %v", err)
	}
	defer producer.Close()

	// Several values per key, on both partitions; batches 2 and 4 abort.
	var committed, aborted []rec
	batches := []struct {
		commit bool
		recs   []rec
	}{
		{true, []rec{{0, "k1", "v1"}, {1, "k2", "v1"}, {0, "k1", "v2"}, {0, "k3", "v1"}}},
		{false, []rec{{0, "k1", "aborted-1"}, {1, "k2", "aborted-1"}, {1, "k4", "aborted-1"}}},
		{true, []rec{{1, "k2", "v2"}, {0, "k1", "v3"}, {1, "k4", "v1"}, {0, "k3", "v2"}}},
		{false, []rec{{0, "k3", "aborted-2"}, {1, "k2", "aborted-2"}}},
		{true, []rec{{0, "k1", "v4"}, {1, "k2", "v3"}}},
	}
	for i, b := range batches {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatalf("batch %d: begin transaction: %v", i, err)
		}
		krs := make([]*kgo.Record, len(b.recs))
		for j, r := range b.recs {
			krs[j] = &kgo.Record{Partition: r.Partition, Key: []byte(r.Key), Value: []byte(r.Value)}
		}
		if err := producer.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			t.Fatalf("batch %d: produce: %v", i, err)
		}
		end := kgo.TryAbort
		if b.commit {
			end = kgo.TryCommit
			committed = append(committed, b.recs...)
		} else {
			aborted = append(aborted, b.recs...)
		}
		if err := producer.EndTransaction(ctx, end); err != nil {
			t.Fatalf("batch %d: end transaction (commit=%v): %v", i, b.commit, err)
		}
	}
	all := make([]rec, 0, len(committed)+len(aborted))
	for _, b := range batches {
		all = append(all, b.recs...)
	}

	gotCommitted, offsets := consumeAll(ctx, t, brokers, topic, kgo.ReadCommitted(), len(committed))
	if want := perPartition(committed); !equalPerPartition(want, perPartition(gotCommitted)) {
		t.Fatalf("read_committed consumer:\n got  %v\n want %v", perPartition(gotCommitted), want)
	}
	for _, r := range gotCommitted {
		if strings.HasPrefix(r.Value, "aborted") {
			t.Fatalf("read_committed consumer saw aborted record %v", r)
		}
	}
	// Commit and abort markers take offsets in a real log, so the offsets the
	// read_committed consumer sees are not contiguous.
	for p, offs := range offsets {
		if len(offs) > 0 && offs[len(offs)-1]-offs[0]+1 == int64(len(offs)) {
			t.Errorf("partition %d: committed records have contiguous offsets %v; expected gaps for aborted records and transaction markers", p, offs)
		}
	}
	t.Logf("read_committed: %d records, offsets per partition %v", len(gotCommitted), offsets)

	gotAll, _ := consumeAll(ctx, t, brokers, topic, kgo.ReadUncommitted(), len(all))
	if want := perPartition(all); !equalPerPartition(want, perPartition(gotAll)) {
		t.Fatalf("read_uncommitted consumer:\n got  %v\n want %v", perPartition(gotAll), want)
	}
	nAborted := 0
	for _, r := range gotAll {
		if strings.HasPrefix(r.Value, "aborted") {
			nAborted++
		}
	}
	if nAborted != len(aborted) {
		t.Fatalf("read_uncommitted consumer saw %d aborted records, want %d", nAborted, len(aborted))
	}
	t.Logf("read_uncommitted: %d records, %d of them from aborted transactions", len(gotAll), nAborted)
}

// consumeAll reads topic from the start with the given isolation level until
// it has want records, then polls a little longer to make sure no more come.
// It returns the records and, per partition, their offsets.
func consumeAll(ctx context.Context, t *testing.T, brokers []string, topic string, iso kgo.IsolationLevel, want int) ([]rec, map[int32][]int64) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cl.Close()

	var got []rec
	offsets := map[int32][]int64{}
	deadline := time.Now().Add(30 * time.Second)
	settle := time.Time{} // when set: keep polling until then for unexpected extra records
	for {
		now := time.Now()
		if settle.IsZero() && len(got) >= want {
			settle = now.Add(time.Second)
		}
		if !settle.IsZero() && now.After(settle) {
			break
		}
		if now.After(deadline) {
			t.Fatalf("consumer: got %d of %d records within 30s: %v", len(got), want, got)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Fatalf("consumer: fetch %s/%d: %v", topic, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			got = append(got, rec{r.Partition, string(r.Key), string(r.Value)})
			offsets[r.Partition] = append(offsets[r.Partition], r.Offset)
		})
	}
	if len(got) != want {
		t.Fatalf("consumer: got %d records, want %d: %v", len(got), want, got)
	}
	return got, offsets
}

func perPartition(rs []rec) map[int32][]rec {
	m := map[int32][]rec{}
	for _, r := range rs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

func equalPerPartition(a, b map[int32][]rec) bool {
	if len(a) != len(b) {
		return false
	}
	for p, rs := range a {
		if !slices.Equal(rs, b[p]) {
			return false
		}
	}
	return true
}

// waitTopicReady waits until every partition of topic has a leader.
func waitTopicReady(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td, ok := md.Topics[topic]
			ready := ok && td.Err == nil && len(td.Partitions) == partitions
			for _, p := range td.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				return
			}
			if ok && td.Err != nil && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) && !errors.Is(td.Err, kerr.LeaderNotAvailable) {
				err = td.Err
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s not ready within 30s (last error: %v)", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func brokerIDs(ctx context.Context, t *testing.T, adm *kadm.Client) []int32 {
	t.Helper()
	bs, err := adm.ListBrokers(ctx)
	if err != nil {
		t.Fatalf("list brokers: %v", err)
	}
	return bs.NodeIDs()
}

// logBrokerVersion logs what the brokers say about themselves: franz-go's
// guess of the Kafka version from the ApiVersions response and the finalized
// metadata.version feature level.
func logBrokerVersion(ctx context.Context, t *testing.T, adm *kadm.Client) {
	t.Helper()
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatalf("api versions: %v", err)
	}
	for _, v := range versions.Sorted() {
		if v.Err != nil {
			t.Fatalf("api versions of broker %d: %v", v.NodeID, v.Err)
		}
		level := int16(-1)
		for _, f := range v.Raw().FinalizedFeatures {
			if f.Name == "metadata.version" {
				level = f.MaxVersionLevel
			}
		}
		t.Logf("Kafka broker %d: version %s (from ApiVersions), metadata.version level %d, %d API keys",
			v.NodeID, v.VersionGuess(), level, len(v.Raw().ApiKeys))
	}
	cluster, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	t.Logf("Kafka cluster %s: %d broker(s), controller %d", cluster.Cluster, len(cluster.Brokers), cluster.Controller)
}
