package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicWait bounds how long CreateTopic and DeleteTopics wait for the
// cluster's metadata to show what they did.
const topicWait = 15 * time.Second

// CreateTopic creates topic (an existing one is fine) and returns once
// the cluster's metadata lists it with a leader for every partition,
// under the id the creation gave it.
//
// Apache Kafka answers CreateTopics when its controller has the topic,
// before the brokers do. After a DROP and a CREATE of the same name, a
// broker can still list the old topic, with its old id and leaders, and
// serve its old records: a client made in that moment (a view's table
// copy, a stage's consumer) takes the old id, reads the dropped view's
// rows, and then fails with UNKNOWN_TOPIC_ID for as long as it lives.
// Waiting for the new id closes that window for every reader created
// after CreateTopic returns. A topic that already existed has no id from
// the creation, and any listing with leaders will do.
func CreateTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, configs map[string]*string) error {
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	var id [16]byte
	switch {
	case err == nil:
		id = resp.ID
	case errors.Is(err, kerr.TopicAlreadyExists):
	default:
		return err
	}
	return awaitMetadata(ctx, cl, topic, func(t *kmsg.MetadataResponseTopic) error { return topicReady(t, id) })
}

// DeleteTopics deletes topics (a missing one is fine), forgets them in
// cl's metadata, and returns once the cluster's metadata no longer lists
// them, so that a topic created next under one of the names is a new one
// to every client. Past topicWait it gives up waiting without an error:
// the deletion itself was accepted, and CreateTopic waits for its own id.
func DeleteTopics(ctx context.Context, cl *kgo.Client, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	if err != nil {
		return err
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("delete topic %s: %w", r.Topic, r.Err)
		}
	}
	// The client keeps a topic's id and partitions; a topic created
	// again under the name has a new id, which it would not learn.
	cl.PurgeTopicsFromClient(topics...)
	for _, topic := range topics {
		err := awaitMetadata(ctx, cl, topic, func(t *kmsg.MetadataResponseTopic) error {
			if errors.Is(kerr.ErrorForCode(t.ErrorCode), kerr.UnknownTopicOrPartition) {
				return nil
			}
			return errors.New("still listed")
		})
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// topicReady reports why a topic's metadata is not yet the created topic
// with a leader for every partition; nil when it is. A zero id matches
// any.
func topicReady(t *kmsg.MetadataResponseTopic, id [16]byte) error {
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return err
	}
	if id != ([16]byte{}) && t.TopicID != id {
		return fmt.Errorf("the cluster still lists an earlier topic of the name (id %s, created %s)",
			kadm.TopicID(t.TopicID), kadm.TopicID(id))
	}
	if len(t.Partitions) == 0 {
		return errors.New("no partitions yet")
	}
	for _, p := range t.Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		if p.Leader < 0 {
			return fmt.Errorf("partition %d has no leader yet", p.Partition)
		}
	}
	return nil
}

// awaitMetadata asks the cluster for topic's metadata until done accepts
// it, every 50 ms for up to topicWait.
//
// It sends a metadata request of its own each time: kadm's ListTopics
// answers from franz-go's metadata cache, which keeps a topic it saw
// without leaders (a topic of several partitions, just created) for the
// client's MetadataMinAge, 5 s; on Apache Kafka every CREATE of a view
// took 5 s more for it. A request sent through the client also refreshes
// that cache, so the offsets listed next see the leaders.
func awaitMetadata(ctx context.Context, cl *kgo.Client, topic string, done func(*kmsg.MetadataResponseTopic) error) error {
	ctx, cancel := context.WithTimeout(ctx, topicWait)
	defer cancel()
	for {
		err := askMetadata(ctx, cl, topic, done)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: %w (last: %v)", topic, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func askMetadata(ctx context.Context, cl *kgo.Client, topic string, done func(*kmsg.MetadataResponseTopic) error) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for i := range resp.Topics {
		if t := &resp.Topics[i]; t.Topic != nil && *t.Topic == topic {
			return done(t)
		}
	}
	missing := kmsg.NewMetadataResponseTopic()
	missing.ErrorCode = kerr.UnknownTopicOrPartition.Code
	return done(&missing)
}
