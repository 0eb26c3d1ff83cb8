//go:build race

package testrun

// Race is whether the tests were built with the race detector.
const Race = true
