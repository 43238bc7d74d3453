//go:build !race

package pipeline

// raceEnabled is whether the tests run under the race detector, where the
// run crash tests take a sample of their points.
const raceEnabled = false
