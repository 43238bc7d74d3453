package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestFailedStdoutFailsTheCommand: output that cannot be written (here to
// /dev/full, a disk with no space) makes the command fail and say why, not
// exit 0 with the output lost.
func TestFailedStdoutFailsTheCommand(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("this test needs /dev/full (Linux): %v", err)
	}
	defer func() { _ = full.Close() }() // only written to fail
	cmd := exec.Command(buildDistill(t), "version")
	cmd.Stdout = full
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "distill: writing to standard output: ") {
		t.Errorf("distill version > /dev/full: %v, stderr %q; want exit 1 naming the failed write", err, stderr.String())
	}
}
