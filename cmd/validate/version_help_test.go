package main

import (
	"strings"
	"testing"
)

// TestVersionHelp: validate version -h is a help page, not the version
// (issue 43, item 10).
func TestVersionHelp(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := validate(t, nil, "version", "-h")
	if code != exitOK || !strings.Contains(stdout+stderr, "Usage: validate version") || !strings.Contains(stdout+stderr, "Exit codes") {
		t.Errorf("exit %d: %q %q", code, stdout, stderr)
	}
}
