//go:build race

package corpus

// raceEnabled is whether the tests run under the race detector, where the
// crash tests take a sample of their points.
const raceEnabled = true
