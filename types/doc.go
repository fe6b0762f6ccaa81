// Package types defines fvsql's SQL types and values: the PostgreSQL type
// OIDs clients see, the in-memory Value every operator works on, and the
// encodings a value crosses: PostgreSQL text and binary formats (pgwire),
// JSON rows (streams on every backend), binary rows (BinaryCodec: the
// value encoding of operator state, for fvsql's internal topics), and an
// order-preserving key encoding (state keys in Pebble and Kafka).
//
// Values are small structs passed by value; a Value never aliases a buffer
// it was decoded from unless the decoder's comment says so (DecodeJSONRow
// may point strings into the record payload, which callers must then treat
// as immutable, as franz-go's record buffers are).
//
// Arrays (array.go) exist for every element type, one-dimensional with
// lower bound 1: a value holds its elements in the value encoding, and
// has PostgreSQL's text form ({a,"b c",NULL}), binary form (array_send's
// layout, for element types with a binary form), key encoding (element by
// element, so equal arrays group together) and JSON form (a JSON array).
// Input with several dimensions is 0A000. Regtype is an OID shown as a
// type name; regclass and the other reg* types are plain OIDs here (the
// planner reads a constant name cast to them through the catalog).
//
// This package sits at the bottom of the import graph: it imports only
// pgerror and the decimal library.
package types
