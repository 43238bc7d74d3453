package audit

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// Fixtures that several tests only read are written once per test binary:
// under the race detector, writing a corpus costs more CPU than most of
// the checks made on it.
var shared struct {
	mu     sync.Mutex
	root   string // removed by TestMain
	golden string // corpusfix.RunAt
	sheet  *sheetFixture
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.root != "" {
		os.RemoveAll(shared.root)
	}
	os.Exit(code)
}

// sharedDir makes a directory under the binary's shared root. The caller
// holds shared.mu.
func sharedDir(t *testing.T, name string) string {
	t.Helper()
	if shared.root == "" {
		root, err := os.MkdirTemp("", "audit-shared-")
		if err != nil {
			t.Fatal(err)
		}
		shared.root = root
	}
	dir, err := os.MkdirTemp(shared.root, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// sharedGoldenRun is corpusfix.Run written once per test binary. Tests must
// not change it.
func sharedGoldenRun(t *testing.T) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.golden == "" {
		dir := filepath.Join(sharedDir(t, "golden"), "run")
		corpusfix.RunAt(t, dir)
		shared.golden = dir
	}
	return shared.golden
}

// sharedSheetFixture is auditWithSheet(t, "items.csv") made once per test
// binary. Tests must not change it.
func sharedSheetFixture(t *testing.T) sheetFixture {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.sheet == nil {
		f := auditWithSheetAt(t, filepath.Join(sharedDir(t, "sheet"), "run"), "items.csv")
		shared.sheet = &f
	}
	return *shared.sheet
}
