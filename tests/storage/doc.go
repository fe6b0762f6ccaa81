// Package storage holds end-to-end tests of fvsql's files on disk: a
// real fvsql process (tests/fvsqltest) writes rows, stops or is killed,
// the test damages one file of its data directory (a byte of a stream's
// or the catalog's segment overwritten, a segment's tail cut, Pebble's
// CURRENT deleted), and starts it again. A damaged file refuses the start:
// the process exits non-zero with one message naming the file, and no
// panic or goroutine dump; a torn tail (the partial last batch a crash in
// the middle of a write leaves) is cut off and said in the log, and what
// remains is consistent: the first rows inserted, in order, and the
// server writes and restarts on after it. Damage points are seeded
// (FVSQL_DAMAGE_SEED reproduces a run) and few.
//
// The embedded broker only: on a real Kafka cluster the broker's files
// are its own.
package storage
