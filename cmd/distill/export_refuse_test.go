package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/schema"
)

// TestSRaRLinesRefusalIsAUsageError: srar-lines of a corpus it cannot
// hold (a factual_process or grounded record) is a usage error, exit 2 as
// for any format a corpus does not take, not a failure (issue 43, item 10).
func TestSRaRLinesRefusalIsAUsageError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, []schema.Record{corpusfix.Record(1, schema.StyleFactualProcess, nil, nil)}, 4)
	var stdout, stderr bytes.Buffer
	code := run([]string{"export", dir, "--format", "srar-lines", "--out", filepath.Join(t.TempDir(), "x")}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "srar-lines holds SRaR rubrics only") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
