package rejudge

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
)

func ptr[T any](v T) *T { return &v }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// checkGolden compares got with testdata/name, or rewrites it with -update;
// a report whose figures contradict each other is refused
// (agreementDisagreements). base is replaced by "FIXTURE" first, so paths
// do not depend on the temporary directory.
func checkGolden(t *testing.T, name, base string, got []byte) {
	t.Helper()
	golden.CheckAgreeing(t, filepath.Join("testdata", name), bytes.ReplaceAll(got, []byte(base), []byte("FIXTURE")), agreementDisagreements)
}

func render(t testing.TB, write func(io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
