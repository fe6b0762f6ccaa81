//go:build race

package operators_test

// raceEnabled scales the oracle down under the race detector, which makes
// this single-goroutine work about ten times slower without checking more.
const raceEnabled = true
