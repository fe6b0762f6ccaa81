// Package state is fvsql's local durable state on Pebble: the catalog's
// records and operator state, each under its own key prefix of one Pebble
// database in the data directory.
//
// Byte-slice ownership follows Pebble's rules and is stated on every
// method: it is safe to modify the contents of the arguments after Set or
// Delete returns; a value returned by Get is a copy the caller owns; the
// key and value passed to a Scan callback are only valid until the
// callback returns.
package state
