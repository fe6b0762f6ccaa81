// Package kafka is the kafka:// backend on franz-go: streams are topics,
// shards are partitions, sequences are offsets. Keyed records are
// partitioned by murmur2 of the key (Kafka's default, so fvsql and Java
// producers agree); unkeyed records are spread over partitions. Reads are
// read_committed, so transactional output of pipelines is seen exactly
// once.
//
// The URI's host list ("kafka://h1:9092,h2:9092") overrides the server's
// default brokers, so one server can read streams of several clusters.
//
// # Consumers
//
// A consumer without a group reads every partition (realtime reading:
// every such consumer sees every record); one with a group is a member of
// the Kafka consumer group of that name, which splits the partitions
// among its members (load-balanced reading; a member joining or leaving
// rebalances, which takes a few seconds on Apache Kafka). Ack commits, per
// partition, the offset after the last message given; Start, or
// StartTime, applies to partitions without a committed offset.
//
// StartTime (ConsumerOptions) starts those partitions at their first
// record stamped at or after it — Kafka's ListOffsets by timestamp, which
// is exact when timestamps do not increase, through franz-go's reset
// offset kgo.NewOffset().AfterMilli; times are rounded up to Kafka's
// milliseconds; a partition with no record that late starts at its end.
//
// The consumer is a backends.Seeker. Offsets are per partition, so Seek(seq)
// moves every partition to its first offset >= seq (a partition's log start
// if seq is before it; past its end, the end, and records below seq that
// arrive later are skipped), and SeekTime(t) moves every partition to its
// first record stamped at or after t (ListOffsets by timestamp; the end
// when there is none). Without a group a seek replaces the consumer's
// client by one that consumes the topic's partitions from those offsets
// (partitions added to the topic afterwards are not read by it). In a
// group a seek moves only the partitions this member owns (franz-go's
// SetOffsets; a seek before the member's first assignment applies to that
// assignment); the group's committed offsets move when what is read from
// there is acknowledged, so a member that crashes before acknowledging
// leaves the group where it was.
package kafka
