package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/plan"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A bridge moves records between a stream on another backend and an
// internal Kafka topic, so that every stage of a pipeline reads and writes
// Kafka (transactions, groups, offsets) whatever the user's streams live
// on. Ingest bridges deliver at least once (the source is acknowledged
// after Kafka has the records); sink bridges write idempotently where the
// backend records positions (PositionedProducer), at least once elsewhere.

// runBridges starts a pipeline's bridges.
func (p *pipeline) runBridges() {
	id := 1 << 20 // bridge ids stay clear of worker ids in the failing set
	for _, b := range p.topo.Ingest {
		b, bid := b, id
		id++
		p.wg.Add(1)
		go p.superviseBridge(bid, "ingest "+b.External, func() error { return p.ingest(b, bid) })
	}
	for _, b := range p.topo.Sinks {
		b, bid := b, id
		id++
		p.wg.Add(1)
		go p.superviseBridge(bid, "sink "+b.External, func() error { return p.sink(b, bid) })
	}
}

// superviseBridge reruns a bridge after errors with backoff, keeping the
// pipeline RETRYING while it fails.
func (p *pipeline) superviseBridge(id int, what string, run func() error) {
	defer p.wg.Done()
	backoff := 500 * time.Millisecond
	for {
		err := run()
		if p.ctx.Err() != nil {
			return
		}
		if err == nil {
			continue
		}
		p.workerFailed(id, fmt.Errorf("%s: %w", what, err))
		p.e.cfg.Logger.Warn("pipeline bridge failed; retrying", "pipeline", p.name, "bridge", what, "err", err, "backoff", backoff)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// ingest copies the external stream into the internal topic.
func (p *pipeline) ingest(b plan.Bridge, id int) error {
	e := p.e
	st, key, err := e.host.Backend(p.ctx, b.External)
	if err != nil {
		return err
	}
	start := backends.Earliest
	if e.cfg.OffsetReset == "latest" {
		start = backends.Latest
	}
	group := b.Group
	if group == "" {
		group = "fvsql." + p.name
	}
	opts := backends.ConsumerOptions{Group: e.cfg.TopicPrefix + group, Member: e.cfg.NodeID, Start: start, Follow: true}
	if p.topo.StartTime != 0 {
		opts.StartTime = time.UnixMicro(p.topo.StartTime) // a new group's start; one with a position keeps it
	}
	c, err := st.Consumer(p.ctx, key, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	p.setIngest(b.External, c)
	defer p.setIngest(b.External, nil)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...), kgo.ProducerLinger(2 * time.Millisecond)}, e.cfg.KafkaOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	topic := e.topic(p.internalTopic(b.Internal))
	for {
		msgs, err := c.Read(p.ctx, e.cfg.BatchSize)
		if p.ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		recs := make([]*kgo.Record, len(msgs))
		for i, m := range msgs {
			recs[i] = &kgo.Record{Topic: topic, Key: m.Key, Value: m.Payload, Timestamp: m.Timestamp}
		}
		if err := cl.ProduceSync(p.ctx, recs...).FirstErr(); err != nil {
			return err
		}
		e.cfg.Logger.Debug("ingest bridge forwarded", "pipeline", p.name, "from", b.External, "to", topic, "records", len(recs))
		if err := c.Ack(p.ctx, msgs); err != nil {
			return err
		}
		p.workerOK(id)
	}
}

func (p *pipeline) internalTopic(name string) string {
	for _, d := range p.topo.Internal {
		if d.Name == name {
			return d.Topic
		}
	}
	return name
}

// sink forwards the internal topic's committed records to the external
// stream, skipping what a positioned producer says it already wrote.
func (p *pipeline) sink(b plan.Bridge, id int) error {
	e := p.e
	st, key, err := e.host.Backend(p.ctx, b.External)
	if err != nil {
		return err
	}
	prod, err := st.Producer(p.ctx)
	if err != nil {
		return err
	}
	defer prod.Close()
	topic := e.topic(p.internalTopic(b.Internal))
	positioned, _ := prod.(backends.PositionedProducer)
	var written map[string]int64
	if positioned != nil {
		if written, err = positioned.Positions(p.ctx, key); err != nil {
			return err
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(e.cfg.Brokers...),
		kgo.ConsumerGroup(e.group(p.id, "sink")),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, e.cfg.KafkaOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollRecords(p.ctx, e.cfg.BatchSize)
		if p.ctx.Err() != nil {
			cl.AllowRebalance()
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			cl.AllowRebalance()
			return ferr
		}
		var msgs []backends.Message
		positions := map[string]int64{}
		fs.EachRecord(func(r *kgo.Record) {
			src := r.Topic + "/" + strconv.Itoa(int(r.Partition))
			positions[src] = r.Offset + 1
			if r.Attrs.IsControl() || r.Offset < written[src] {
				return
			}
			msgs = append(msgs, backends.Message{Stream: key, Key: r.Key, Payload: r.Value, Timestamp: r.Timestamp})
		})
		if len(positions) > 0 {
			if positioned != nil {
				err = positioned.SendAt(p.ctx, msgs, positions)
			} else if len(msgs) > 0 {
				err = prod.Send(p.ctx, msgs)
			}
			if err == nil {
				err = cl.CommitUncommittedOffsets(p.ctx)
			}
		}
		cl.AllowRebalance()
		if err != nil {
			return err
		}
		p.workerOK(id)
	}
}

func (p *pipeline) setIngest(name string, c backends.Consumer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ingesting == nil {
		p.ingesting = map[string]backends.Consumer{}
	}
	if c == nil {
		delete(p.ingesting, name)
	} else {
		p.ingesting[name] = c
	}
}

// waitIngest waits until every ingest bridge has acknowledged everything
// its source holds now, where the backend can tell (Lagger).
func (p *pipeline) waitIngest(ctx context.Context) error {
	for _, b := range p.topo.Ingest {
		wait := 10 * time.Millisecond
		for {
			p.mu.Lock()
			c := p.ingesting[b.External]
			p.mu.Unlock()
			if c != nil {
				l, ok := c.(backends.Lagger)
				if !ok {
					break // the backend cannot tell: FLUSH covers the Kafka stages
				}
				if lag, err := l.Lag(ctx); err == nil && lag == 0 {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("FLUSH: pipeline %q: ingest from %s did not catch up: %w", p.name, b.External, ctx.Err())
			case <-time.After(wait):
			}
			wait = min(wait*2, 200*time.Millisecond)
		}
	}
	return nil
}
