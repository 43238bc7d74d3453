package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestHelpPagesAreConsistent: every subcommand's -h is a help page that
// starts with its usage line, names its exit codes and calls a run
// directory RUN_DIR in it, as status, merge and batches do (issue 43, item
// 10: compact pages without exit codes, version -h printing the version,
// RUN here and RUN_DIR there).
func TestHelpPagesAreConsistent(t *testing.T) {
	bareRun := regexp.MustCompile(`\bRUN\b[^_]`)
	for _, cmd := range [][]string{{"run"}, {"plan"}, {"status"}, {"batches"}, {"merge"}, {"compact"}, {"cache", "compact"}, {"repair"},
		{"export"}, {"refine"}, {"verify"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		code := run(append(cmd, "-h"), &stdout, &stderr)
		name := "distill " + strings.Join(cmd, " ")
		page := stdout.String() + stderr.String() // help goes to stderr, as every message that is not data
		if code != exitOK || !strings.Contains(page, "Usage:") || !strings.Contains(page, name) {
			t.Errorf("%s -h: exit %d: %.200q", name, code, page)
			continue
		}
		if !strings.Contains(page, "Exit codes") {
			t.Errorf("%s -h names no exit codes", name)
		}
		usage, _, _ := strings.Cut(page[strings.Index(page, "Usage:"):], "\n\n")
		if bareRun.MatchString(usage + " ") {
			t.Errorf("%s -h calls a run directory RUN, not RUN_DIR: %q", name, usage)
		}
	}
}
