package rejudge

import (
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// shared holds the runs that several tests only read (re-judging writes
// nothing into its run), written once per test binary; TestMain removes
// them (shared.Remove).
var shared = corpusfix.Shared{Prefix: "rejudge-shared-"}

// sharedRecords30Run is the run of corpusfix's first 30 records in shards
// of 8.
func sharedRecords30Run(t *testing.T) string {
	t.Helper()
	return corpusfix.Get(t, &shared, "records30", func(dir string) string {
		run := filepath.Join(dir, "run")
		corpusfix.WriteRun(t, run, corpusfix.Records()[:30], 8)
		return run
	})
}
