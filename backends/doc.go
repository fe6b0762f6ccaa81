// Package backends is the contract between fvsql and the systems that
// hold streams: one small interface per direction, chosen at run time by
// URI scheme through one registry (kafka://, redis://, file://, stdio://).
//
// A Streamer connects to one backend and makes producers and scanners for
// streams; optional abilities (transactions, seeking, consumer groups) are
// separate interfaces detected by type assertion. A new backend is one
// folder with a package that calls Register in its init, plus a blank
// import in cmd/fvsql.
package backends
