// Package types defines fvsql's SQL types and values: the PostgreSQL type
// OIDs clients see, the in-memory Value every operator works on, and the
// encodings a value crosses: PostgreSQL text and binary formats (pgwire),
// JSON rows (streams on every backend), and an order-preserving key
// encoding (state keys in Pebble and Kafka).
//
// Values are small structs passed by value; a Value never aliases a buffer
// it was decoded from unless the decoder's comment says so (DecodeJSONRow
// may point strings into the record payload, which callers must then treat
// as immutable, as franz-go's record buffers are).
//
// This package sits at the bottom of the import graph: it imports only
// pgerror and the decimal library.
package types
