//go:build !race

package operators_test

const raceEnabled = false
