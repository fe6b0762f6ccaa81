// Package embedded runs the in-process Kafka-protocol broker fvsql uses
// when no --kafka cluster is given: franz-go's kfake, persisted under the
// data directory, and the workarounds its differences from Apache Kafka
// need. Nothing above this package knows them.
//
//   - Ghost members (ghosts.go): kfake's classic group coordinator keeps
//     for ever a member whose process died while it waited in JoinGroup
//     or SyncGroup; a reaper goroutine, started by Start and stopped by
//     Close, makes such a member leave its group once its connection is
//     closed and it has been silent for two heartbeat intervals.
//   - Crashed transactions (AbortProducer): kfake, reloading its log
//     after a kill, aborts the transactions that were open without
//     writing abort markers; a pipeline's transactional writer writes them
//     itself before its first epoch.
//
// The broker listens on the address given (loopback by default) and, like
// kfake, does not fsync.
package embedded
