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
//   - Damage (check.go): kfake absorbs a damaged file silently (a segment
//     cut at its first bad batch, a groups log appended to after a bad
//     entry, a missing topics.json taken for a new cluster). Start first
//     checks every file under the data directory: batch CRC32C, offsets
//     and .idx entries of each segment, the framing and checksums of
//     groups.log and pids.log, the metadata files, and, after a clean
//     stop, each file against clean.json (sizes and checksums that Close
//     records). A torn tail (the partial last batch or entry a crash in
//     the middle of a write leaves) is cut off with a WARN naming the file
//     and the bytes dropped, and a group commit past the new end is
//     lowered to it; any other damage refuses the start with a
//     *DamageError (errors.Is ErrDamaged) naming the file and offset.
//     What it cannot see: a segment file deleted from a compacted topic
//     after a crash, a groups.log cut at an entry boundary after a crash
//     (both look like what compaction or a torn write leaves), and a
//     batch's partition leader epoch, which no checksum covers. The check
//     reads every byte once, before kfake reads them again.
//
// The broker listens on the address given (loopback by default) and, like
// kfake, does not fsync.
package embedded
