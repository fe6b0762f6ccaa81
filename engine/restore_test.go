package engine

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const checkpointTopic = "state"

// txnProducer is a transactional producer on the test broker.
func txnProducer(t *testing.T, brokers []string, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(checkpointTopic), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// writeTxn produces kvs (value "" is a tombstone) in one transaction and,
// unless end is nil, ends it that way.
func writeTxn(t *testing.T, cl *kgo.Client, end *kgo.TransactionEndTry, kvs ...string) {
	t.Helper()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(kvs); i += 2 {
		r := &kgo.Record{Key: []byte(kvs[i])}
		if kvs[i+1] != "" {
			r.Value = []byte(kvs[i+1])
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if end != nil {
		if err := cl.EndTransaction(ctx, *end); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll runs readCheckpoint and folds what it passes on into a map; the
// checkpoint wanted is the one whose key "m" (the partition meta) is want.
func readAll(t *testing.T, brokers []string, admin *kgo.Client, want string) (map[string]string, checkpointRead) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	state := map[string]string{}
	current := func() bool { return state["m"] == want }
	read, err := readCheckpoint(ctx, admin, kadm.NewClient(admin), brokers, nil, checkpointTopic, 0, current, func(key, value []byte) error {
		if value == nil {
			delete(state, string(key))
		} else {
			state[string(key)] = string(value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state, read
}

// newCheckpointBroker starts a kfake cluster with the state topic and an
// admin client on it.
func newCheckpointBroker(t *testing.T) ([]string, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, checkpointTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return brokers, admin
}

func checkState(t *testing.T, state, want map[string]string) {
	t.Helper()
	if len(state) != len(want) {
		t.Fatalf("state %v, want %v", state, want)
	}
	for k, v := range want {
		if state[k] != v {
			t.Fatalf("state %v, want %v", state, want)
		}
	}
}

// TestReadCheckpointPastOpenTransaction: a transaction left open in a
// state partition (by a process that died) before later checkpoints
// committed must not hide those checkpoints: the read waits for it to
// end and returns the checkpoint wanted. Reading only to the last stable
// offset, as restores once did, returned the state from before the open
// transaction.
func TestReadCheckpointPastOpenTransaction(t *testing.T) {
	for _, outcome := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		name := map[kgo.TransactionEndTry]string{kgo.TryAbort: "aborted", kgo.TryCommit: "committed"}[outcome]
		t.Run(name, func(t *testing.T) {
			brokers, admin := newCheckpointBroker(t)
			commit := kgo.TryCommit
			writeTxn(t, txnProducer(t, brokers, "old-owner"), &commit, "m", "1", "a", "1", "b", "2")
			dead := txnProducer(t, brokers, "dead")
			writeTxn(t, dead, nil, "c", "dead", "a", "dead")
			writeTxn(t, txnProducer(t, brokers, "new-owner"), &commit, "m", "2", "a", "3", "b", "", "d", "4")

			const hold = 500 * time.Millisecond
			go func() {
				time.Sleep(hold)
				if err := dead.EndTransaction(context.Background(), outcome); err != nil {
					t.Error(err)
				}
			}()
			began := time.Now()
			state, read := readAll(t, brokers, admin, "2")
			want := map[string]string{"m": "2", "a": "3", "d": "4"}
			if outcome == kgo.TryCommit {
				want["c"] = "dead" // its "a" came before the new owner's
			}
			checkState(t, state, want)
			if took := time.Since(began); took < hold/2 {
				t.Fatalf("read returned after %s, before the open transaction ended", took)
			}
			if read.waited <= 0 {
				t.Fatalf("waited %s: the wait for the open transaction is not reported", read.waited)
			}

			// With nothing open, the read returns at once and says it
			// did not wait.
			if _, again := readAll(t, brokers, admin, "2"); again.waited != 0 {
				t.Fatalf("second read waited %s with no transaction open", again.waited)
			}
		})
	}
}

// TestReadCheckpointBeforeOpenTransaction: when the checkpoint before an
// open transaction is the one wanted (the dead process never committed
// the offsets of its last epoch), the read does not wait for it.
func TestReadCheckpointBeforeOpenTransaction(t *testing.T) {
	brokers, admin := newCheckpointBroker(t)
	commit := kgo.TryCommit
	writeTxn(t, txnProducer(t, brokers, "old-owner"), &commit, "m", "1", "a", "1")
	writeTxn(t, txnProducer(t, brokers, "old-owner-2"), &commit, "m", "2", "b", "2")
	dead := txnProducer(t, brokers, "dead")
	writeTxn(t, dead, nil, "m", "3", "a", "dead")
	defer dead.EndTransaction(context.Background(), kgo.TryAbort)

	began := time.Now()
	state, read := readAll(t, brokers, admin, "2")
	checkState(t, state, map[string]string{"m": "2", "a": "1", "b": "2"})
	if read.waited != 0 || time.Since(began) > 5*time.Second {
		t.Fatalf("read waited %s (took %s) for a transaction after the checkpoint it wanted", read.waited, time.Since(began))
	}
}
