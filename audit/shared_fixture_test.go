package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// shared holds the fixtures that several tests only read, written once
// per test binary.
var shared = corpusfix.Shared{Prefix: "audit-shared-"}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Remove()
	os.Exit(code)
}

// sharedGoldenRun is corpusfix.Run written once per test binary. Tests must
// not change it.
func sharedGoldenRun(t *testing.T) string {
	t.Helper()
	return corpusfix.Get(t, &shared, "golden", func(dir string) string {
		run := filepath.Join(dir, "run")
		corpusfix.RunAt(t, run)
		return run
	})
}

// sharedSheetFixture is auditWithSheet(t, "items.csv") made once per test
// binary. Tests must not change it.
func sharedSheetFixture(t *testing.T) sheetFixture {
	t.Helper()
	return corpusfix.Get(t, &shared, "sheet", func(dir string) sheetFixture {
		return auditWithSheetAt(t, filepath.Join(dir, "run"), "items.csv")
	})
}
