package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadPartitionFlag: a --partition that is not I/K with 0 <= I < K is
// a usage error (exit 2) naming the setting.
func TestBadPartitionFlag(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"0/0", "16/16", "-1/4", "a/b", "3"} {
		var stdout, stderr bytes.Buffer
		args := []string{"run", "--input", filepath.Join(dir, "in.jsonl"), "--out", filepath.Join(dir, "run"),
			"--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--partition", bad}
		if code := run(args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "partition: ") {
			t.Errorf("--partition %s: exit %d, want %d naming partition:\n%s", bad, code, exitUsage, stderr.String())
		}
	}
}
