package main

import (
	"context"
	"strings"
	"testing"
)

// TestVersionFlag: rewardd --version prints the version from the build
// information and exits 0 without starting.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--version"}, &out, &errb, func(string) string { return "" })
	if code != exitOK || !strings.HasPrefix(out.String(), "rewardd ") || strings.Contains(out.String(), "dev\n") {
		t.Errorf("--version: exit %d, %q %q", code, out.String(), errb.String())
	}
}
