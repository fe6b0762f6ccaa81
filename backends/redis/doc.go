// Package redis is the redis:// backend on go-redis/v9 and Redis Streams
// (Redis 6.2 or later, for XAUTOCLAIM).
//
// # URI
//
//	redis://[[user]:password@]host[:port][/db][?claim_idle=30s&lease=10s]
//
// The port defaults to 6379 and the database to 0. claim_idle is how long
// an entry must have been pending with another member of a consumer group
// before a consumer takes it over (default 30s; 0 claims at once); lease
// is how long a group member's hold on a shard of a sharded stream lasts
// unless renewed (default 10s, at least 300ms). Other
// query options are rejected (22023). Connect checks PING within 5 s: an
// unreachable server fails with an error wrapping backends.ErrNotConnected
// with SQLSTATE 08001.
//
// # Streams and entries
//
// A stream of one shard is one Redis stream key, Env.TopicPrefix + the
// stream name. A stream created with StreamSpec.Shards = n > 1 is the n
// keys <key>:0 … <key>:<n-1> (the toolkit's naming: SeaStreamer's Redis
// backend names a shard <stream key>:<shard id>), its shard count kept in
// the config hash (field shards) so every process routes alike; creating
// it again with another count fails with 22023. A producer routes a
// message with a key to shard FNV-1a(key) mod n (one key, one shard, in
// send order) and one without a key to the shards in turn; one Send is
// still one MULTI/EXEC over every shard it touches. Each entry has two fields: "v", the
// payload, and "k", the key, omitted when the key is nil, so payloads and
// keys are arbitrary bytes. Entries other writers add without "v" read as
// an empty payload.
//
// Message.ID is the entry's stream ID ("1700000000000-3"). Message.Sequence
// encodes it order-preservingly as ms<<20 | seq (see SeqBits, Sequence,
// IDOf); an ID with seq ≥ 2^20 (over a million entries in one millisecond)
// or ms ≥ 2^43 cannot be encoded and fails the read with 22003.
// Message.Timestamp is the ID's milliseconds; the Timestamp given to Send
// is not stored (Redis assigns the IDs).
//
// Two hashes sit next to a stream key and go away with it (DropStream
// deletes all three with DEL):
//
//	<key>:fvsql:config     options of the stream (maxlen)
//	<key>:fvsql:positions  source positions recorded by SendAt
//
// # Options
//
// CreateStream makes the key exist (XGROUP CREATE … MKSTREAM of a
// throw-away group destroyed in the same MULTI/EXEC: an empty stream, no
// stray entry) and stores the options it is given; an existing stream is
// fine, options not given keep their stored values. The one option is
// maxlen=N (a positive integer, else 22023): every XADD of every fvsql
// producer to the stream then carries MAXLEN ~ N, so Redis trims whole
// macro nodes once the stream is over N entries (it may keep somewhat more
// than N, never fewer). Producers re-read the config hash at most every
// 5 s, so another process's change applies within that time. Options
// fvsql does not know (of other layers, like "pipeline") are ignored.
//
// # Producing
//
// Send writes a batch as one MULTI/EXEC of XADDs: one round trip, all or
// nothing, and never re-sent by the client once EXEC may have run (a plain
// pipeline would be retried after a lost reply and duplicate entries).
// SendAt adds to the same transaction an HSET of the positions into the
// positions hash of each stream written, so entries and positions appear
// together; a writer that skips what Positions reports writes each source
// record exactly once into Redis. (Redis does not roll back a transaction
// whose commands fail while it runs: if a stream key was replaced by a
// value of another type, its XADDs fail with 42809 while the rest of the
// batch, positions included, is applied.)
//
// # Consuming
//
// Without a group a consumer reads by ID: XRANGE up to the last entry
// present at open when not following (then ErrEndOfStream), XREAD BLOCK
// (1 s at a time, looping) when following. Earliest starts before the
// first entry, Latest after the last one present at open.
//
// With a group (the Redis consumer group of that name on the key; the
// name is not prefixed, the key is), created from "0" for Earliest or "$"
// for Latest when missing, a consumer delivers in this order: its own
// pending entries (an earlier run under the same Member name did not
// acknowledge them), entries pending with other members for at least
// claim_idle (XAUTOCLAIM, on the first Read and again every claim_idle/2,
// but not more often than every 100 ms, so a member that dies mid-run
// loses its entries to the survivors), then new entries (XREADGROUP ">").
// Ack is XACK; unacknowledged entries are delivered again after a crash:
// at-least-once. A member may get an entry again that it is still
// processing when that takes longer than claim_idle. Not following, a
// group consumer stops at the last entry present at open; entries after
// it that XREADGROUP handed out stay pending with the member. Closing a
// consumer does not delete the member (XGROUP DELCONSUMER would drop its
// pending entries). A member name left empty is made unique per consumer.
//
// A consumer of a sharded stream reads each shard's key as above, on a
// goroutine per shard, and merges their batches (Message.Shard says
// which). Without a group it reads every shard. In a group each shard is
// read by one member at a time (the toolkit's M shards to N nodes): a
// member announces itself in the sorted set
// <key>:fvsql:members:<group> (scored by its expiry) and holds the shards
// it reads by leases, <key>:fvsql:lease:<group>:<shard> = member, set
// with SET NX PX lease and renewed every lease/3. It takes free shards
// up to its fair share, ceil(shards / live members), and hands back the
// ones beyond it when members join; the shards of a member that died are
// free once its leases run out. Taking a shard claims the entries
// pending there with other members at once (the lease says nobody else
// reads it), and so does every renewal while the lease is held (XPENDING,
// XCLAIM; never the holder's own entries): what the dead member read
// without acknowledging is delivered again, and so is what a blocking
// read the last holder still had in flight took after the handover:
// at-least-once, as without shards. Closing a consumer
// deletes its leases and leaves the set, so the others take its shards
// at their next renewal. Seek, SeekTime and Lag apply to every shard.
//
// ConsumerOptions.StartTime starts a consumer without a group, or a
// group created by this consumer, after the entry IDs below
// <ms of StartTime, rounded up>-0; an existing group keeps its position.
//
// Seek(seq) and SeekTime(t) move a consumer to the first entry with an ID
// of at least IDOf(seq) or <t in ms>-0; in a group they move the group's
// last-delivered ID (XGROUP SETID), for all members.
//
// Read calls Redis on a goroutine and returns as soon as ctx ends; a call
// in progress finishes in the background (at most the 1 s block) and its
// entries are returned by the next Read.
//
// # Scan
//
// Scan reads XRANGE pages of 1000 from the first entry to the last one
// present when it began, fetching the next page while fn handles one;
// shard after shard on a sharded stream.
//
// # Errors
//
// Errors of a lost or refused connection, timeouts, and replies meaning
// "not now" (LOADING, MASTERDOWN, TRYAGAIN, …) wrap backends.ErrNotConnected
// with SQLSTATE 08000; go-redis dials again on the next call, so callers
// retry. Writes and the stream options read before them first wait up to
// 10 s for a server answering "not now" (a restarted Redis answers
// LOADING until it has read its data back; inside MULTI that shows as
// EXECABORT), since such a server ran none of the commands. A key of another type gives 42809, a missing group 42704, other
// error replies 58030.
package redis
