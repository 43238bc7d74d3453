package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeTestSaysHowToGetChromium: make test on a machine without
// Chromium says so first, how to get it and how to run the rest without
// the browser test, and stops before anything else runs, rather than
// failing at the end of a long run (issue 43, item 9).
func TestMakeTestSaysHowToGetChromium(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"sh", "make", "git", "env", "cat", "grep"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(bin, "make"), "-s", "test", "GO=false")
	cmd.Dir = "../.."
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	text := string(out)
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if err == nil || !strings.Contains(first, "Chromium") || !strings.Contains(text, "apt-get install") || !strings.Contains(text, "RF_SKIP_BROWSER=1") {
		t.Errorf("make test without Chromium (%v):\n%s", err, text)
	}
}
