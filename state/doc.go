// Package state is fvsql's local durable state on Pebble: the catalog's
// records, operator state and the views' local copies, each under its own
// key prefix of one Pebble database in the data directory. keys.go
// defines the whole keyspace; no other package builds a key prefix.
//
// An Epoch is one batch of changes applied at once: NewEpoch's tables read
// their own writes over what is committed (operators), NewWriteEpoch's
// only what is committed (bulk writers: restores, views' local copies).
// Epoch.Changes lists an epoch's final changes for the state topic.
//
// Byte-slice ownership follows Pebble's rules and is stated on every
// method: it is safe to modify the contents of the arguments after Set or
// Delete returns; a value returned by Get is a copy the caller owns; the
// key and value passed to a Scan callback are only valid until the
// callback returns.
//
// Open refuses a store Pebble cannot open with ErrDamaged, naming the
// directory and the hint to move it aside (everything in it is rebuilt
// from Kafka): a CURRENT missing from a directory that holds a store
// (Pebble would start a new store over the old WAL, and panics), a
// MANIFEST missing or damaged, or a panic inside pebble.Open. Damage in
// a WAL or table is Pebble's to find, by its checksums: a torn WAL tail
// is cut, other damage fails the read that meets it.
package state
