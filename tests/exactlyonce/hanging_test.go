package exactlyonce

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/fvsql/fvsql/tests/fvsqltest"
)

// TestHangingTransaction: a partition of a pipeline's input holds a
// transaction open that its coordinator does not know (a hanging
// transaction: no marker will ever come, so read_committed readers stop
// at its first record). The pipeline must abort it by itself and go on:
// the rows written after it reach the output, and the hanging row does
// not. Without the abort the rows after it are never read.
//
// Only a real broker can be made to accept such a transaction: a private
// one, with partition verification (KIP-890) switched off, takes a
// transactional produce for a partition the coordinator was never told
// about. The embedded broker always verifies.
func TestHangingTransaction(t *testing.T) {
	k := fvsqltest.StartKafka(t)
	c := &cluster{mode: "private", kafka: k.Addr(), broker: k}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	off := "false"
	adm := kadm.NewClient(c.client(t))
	altered, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "transaction.partition.verification.enable", Value: &off}})
	if err == nil {
		for _, r := range altered {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("switching off transaction.partition.verification.enable: %v", err)
	}

	srv := c.start(t, "b")
	conn := connect(t, srv)
	exec(t, conn, "CREATE STREAM hin (k BIGINT, v BIGINT) WITH (partitions = 1)")
	exec(t, conn, "CREATE STREAM hout AS SELECT k, v * 10 AS v10 FROM hin")
	running(t, conn, 90*time.Second, "hout")
	exec(t, conn, "INSERT INTO hin VALUES (1, 1), (2, 2)")
	flush(t, srv, 2)

	// The hanging transaction: a producer id of a transactional id whose
	// coordinator is never told of the partition (transactions v1:
	// produce v9, no AddPartitionsToTxn).
	old := c.client(t, kgo.MaxVersions(kversion.V3_6_0()))
	txnID := c.prefix + "hanging-test"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = &txnID
	init.TransactionTimeoutMillis = 60_000
	initResp, err := init.RequestWith(ctx, old)
	if err == nil {
		err = kerr.ErrorForCode(initResp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("InitProducerID: %v", err)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.TransactionID = &txnID
	produce.Acks = -1
	produce.TimeoutMillis = 10_000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = c.topic("hin")
	part := kmsg.NewProduceRequestTopicPartition()
	part.Partition = 0
	part.Records = txnBatch(initResp.ProducerID, initResp.ProducerEpoch, []byte(`{"k":-1,"v":-1}`))
	topic.Partitions = append(topic.Partitions, part)
	produce.Topics = append(produce.Topics, topic)
	produceResp, err := produce.RequestWith(ctx, old)
	if err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if code := produceResp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("transactional produce without AddPartitionsToTxn refused: %v (partition verification still on?)", kerr.ErrorForCode(code))
	}
	hungAt := time.Now()

	exec(t, conn, "INSERT INTO hin VALUES (3, 3), (4, 4)")
	lso, hwm, err := c.offsets(t, c.topic("hin"))
	if err != nil {
		t.Fatal(err)
	}
	if lso[0] >= hwm[0] {
		t.Fatalf("hin p0: last stable offset %d, high watermark %d: the transaction is not open", lso[0], hwm[0])
	}
	t.Logf("hin p0 after the hanging transaction: last stable offset %d, high watermark %d", lso[0], hwm[0])

	var n, neg int64
	for {
		q, qcancel := context.WithTimeout(ctx, sqlTimeout)
		err := conn.QueryRow(q, "SELECT count(*), coalesce(sum(CASE WHEN v10 < 0 THEN 1 ELSE 0 END), 0) FROM hout").Scan(&n, &neg)
		qcancel()
		if err != nil {
			t.Fatal(err)
		}
		if n >= 4 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if n != 4 || neg != 0 {
		t.Fatalf("hout has %d rows (%d of the hanging transaction) %s after the hanging transaction began; want the 4 committed rows", n, neg, time.Since(hungAt).Round(time.Second))
	}
	t.Logf("the pipeline went past the hanging transaction %s after it began", time.Since(hungAt).Round(time.Second))
	if lso, hwm, err := c.offsets(t, c.topic("hin")); err != nil || lso[0] != hwm[0] {
		t.Errorf("hin p0 after the abort: last stable offset %d, high watermark %d (%v)", lso[0], hwm[0], err)
	}
}

// txnBatch encodes one record as a transactional record batch (magic 2)
// of the producer.
func txnBatch(pid int64, epoch int16, value []byte) []byte {
	rec := kmsg.Record{Value: value}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1) // the zero length was one varint byte
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0x0010, // transactional
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		NumRecords:           1,
		Records:              rec.AppendTo(nil),
	}
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12) // after FirstOffset and Length
	raw = b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}
