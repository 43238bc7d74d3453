package rejudge

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// shared30 is the run of corpusfix's first 30 records in shards of 8 that
// several tests only read (re-judging writes nothing into its run), written
// once per test binary: under the race detector, writing it costs more CPU
// than much of what the tests check on it. TestMain removes it.
var shared30 struct {
	mu   sync.Mutex
	root string
	dir  string
}

func sharedRecords30Run(t *testing.T) string {
	t.Helper()
	shared30.mu.Lock()
	defer shared30.mu.Unlock()
	if shared30.dir == "" {
		root, err := os.MkdirTemp("", "rejudge-shared-")
		if err != nil {
			t.Fatal(err)
		}
		shared30.root = root
		dir := filepath.Join(root, "run")
		corpusfix.WriteRun(t, dir, corpusfix.Records()[:30], 8)
		shared30.dir = dir
	}
	return shared30.dir
}

// removeShared30 removes the shared run; TestMain calls it.
func removeShared30() {
	if shared30.root != "" {
		_ = os.RemoveAll(shared30.root) // a temporary directory; nothing else holds it
	}
}
