// Package all registers every backend fvsql ships (file://, kafka://,
// redis://, stdio://) by importing them for their side effect: a command
// that opens streams imports it once, blank, and so knows the same URI
// schemes as every other command.
package all

import (
	_ "github.com/fvsql/fvsql/backends/file"  // file:// logs and line files
	_ "github.com/fvsql/fvsql/backends/kafka" // kafka:// streams
	_ "github.com/fvsql/fvsql/backends/redis" // redis:// streams
	_ "github.com/fvsql/fvsql/backends/stdio" // stdio:// lines
)
