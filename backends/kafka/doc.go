// Package kafka is the kafka:// backend on franz-go: streams are topics,
// shards are partitions, sequences are offsets. Keyed records are
// partitioned by murmur2 of the key (Kafka's default, so fvsql and Java
// producers agree); unkeyed records are spread over partitions. Reads are
// read_committed, so transactional output of pipelines is seen exactly
// once.
//
// The URI's host list ("kafka://h1:9092,h2:9092") overrides the server's
// default brokers, so one server can read streams of several clusters.
package kafka
