package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadReferences: of a JSONL file of records, each problem's shortest
// correct stored rollout, cut to 16 KiB; a problem without a correct one
// has none.
func TestLoadReferences(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 10000) // 20,000 bytes
	path := filepath.Join(t.TempDir(), "records.jsonl")
	lines := `{"id": "a", "rollouts": [{"text": "a long correct one", "correct": true}, {"text": "short", "correct": true}, {"text": "x", "correct": false}]}
{"id": "b", "rollouts": [{"text": "wrong", "correct": false}]}
{"id": "c", "rollouts": [{"text": "` + long + `", "correct": true}]}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	refs, err := LoadReferences(path)
	if err != nil {
		t.Fatal(err)
	}
	if refs["a"] != "short" || refs["b"] != "" || len(refs["c"]) > maxReferenceBytes || !strings.HasPrefix(long, refs["c"]) || len(refs) != 2 {
		t.Errorf("references %q", refs)
	}
}
