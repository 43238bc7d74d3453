// Package longtest says whether the tests run their long form: the
// exhaustive sweeps and sizes that a default `go test` (make test) runs a
// cover of, which `make test-long` runs whole. It is for tests only.
//
// The long form is asked for with the environment variable
// RUBRICFORGE_TEST_LONG=1, not a flag, so that `go test ./...` passes it to
// every package (a flag would fail the packages that do not define it).
package longtest

import (
	"os"
	"testing"
)

// Env is the environment variable that asks for the long form.
const Env = "RUBRICFORGE_TEST_LONG"

// Enabled reports whether the tests run their long form.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Pick is long in the long form and short otherwise, and says in the
// test's log which one it runs and how to run the other.
func Pick[T any](t testing.TB, short, long T) T {
	t.Helper()
	if Enabled() {
		t.Logf("the long form (%s=1)", Env)
		return long
	}
	t.Logf("the default form; %s=1 runs the long one", Env)
	return short
}
