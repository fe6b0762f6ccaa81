// Package file is the file:// backend: a stream is one local file (one
// shard), either a durable append-only log this package writes, or a text
// file (JSON lines, CSV, …) read as one message per line.
//
// # URIs and stream names
//
// The stream name given to CreateStream, Producer and Consumer (a
// relation's topic) is a path:
//
//	file:///data/streams/      a directory: relative names resolve inside it
//	file:///data/clicks.log    a file: every relative name means this file
//	                           (the URI names the stream; the topic is ignored)
//	file://  or  file:rel/dir/ no absolute path: relative to the root
//
// An absolute stream name is used as it is, whatever the URI. A relative
// name may not leave its directory ("../x" is refused). Query options:
// format=log (default) or format=lines chooses the format of files this
// Streamer creates; block_size=N sets the beacon interval of new logs
// (default 65536; a testing knob).
//
// # The root
//
// Every file is inside one directory, the root: Env.FileRoot, or
// <Env.DataDir>/files when it is empty (the server's --file-root, default
// <data dir>/files; created if missing). Open and every use of a stream
// name clean the path and resolve the symlinks of its longest existing
// prefix, and refuse with SQLSTATE 42501 a path that is then outside the
// root, so that SQL users reach neither the server's own files (its
// /etc/passwd, its data directory's state) nor, through a symlink in the
// root, anything else. Without a root (neither field set) Open refuses
// every URI. Known limit: a symlink swapped in between the check and the
// open is followed; only whoever can write the root can plant one.
//
// # Log format
//
// A log is a 48-byte header ("FVSQLLOG", version, block size) and then
// fixed-size blocks, each starting with a 48-byte beacon (next sequence,
// greatest timestamp so far, offset of the first record in the block, and
// of the last finished batch's commit). Records are length-prefixed and
// CRC-32C checked and straddle block boundaries freely: data (sequence,
// timestamp in µs, key, payload), positions (SendAt's map), and a commit
// that ends every Send. See format.go for the byte layout.
//
// Sequences start at 0 and increase by one per message. Seek and SeekTime
// binary-search the beacons and scan about one block; the beacon's
// "greatest timestamp before" makes SeekTime exact even when timestamps do
// not increase.
//
// # Durability and crashes
//
// Send writes each file's messages as one batch ending in a commit record
// and fdatasyncs before it returns. A batch without its commit does not
// exist: readers never deliver it, and the writer, on opening the file,
// verifies from the last intact beacon's commit forward and truncates a
// torn or damaged tail (partial record, bad CRC, missing commit, damaged
// beacon) before it appends. Damage before the last beacon (bit rot) is
// not repaired: reads stop at it.
//
// One process writes a file: its writers share one handle (Sends of
// several producers serialise), which holds an exclusive flock(2) on the
// log; a second process that tries to write gets SQLSTATE 55000. Other
// processes may read (they see committed batches, polling the size).
//
// # Consumers and groups
//
// A consumer has its own read handle and reads from the start or the end
// (Start), or from the first message stamped at or after StartTime (which
// replaces Start; found like SeekTime, times rounded up to the log's µs),
// to the end present at open or, following, forever: woken at once by a
// writer of this process, else by a 50 ms poll. Consumers without a group
// each read every message (realtime reading). There is no sharing of
// messages within a group (no load-balanced reading): a group is a
// remembered position, and a group with one ignores Start and StartTime.
// Ack of a group consumer stores the position after the last message
// acknowledged without a gap in "<path>.<group>.pos" (two checksummed
// slots, fdatasynced), and the group's next consumer resumes there:
// at-least-once. One consumer per group at a time (flocked).
//
// PositionedProducer: SendAt stores the writer's complete position map in
// the batch, before its commit, so positions and messages are durable
// together; on open the map is read from the record the last commit
// names. With no messages SendAt writes nothing (there is no file to
// record into).
//
// # Text files
//
// A file not starting with the log magic is text: Scan and consumers
// deliver its lines (newline and a '\r' before it stripped, blank lines
// skipped, sequence = line number from 1, timestamp = the file's
// modification time). A following consumer delivers a line once its
// newline is written; a bounded read also delivers an unterminated last
// line. Send to a text file appends lines (payloads may not contain a
// newline); SendAt, SeekTime and StartTime are not supported there (0A000;
// StartTime wraps backends.ErrCannotSeek, and on a file empty at open is
// refused by the first Read that finds lines), Seek scans.
package file
