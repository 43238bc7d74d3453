package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestRunWritesProfiles: --cpuprofile and --memprofile leave pprof files
// (gzip-compressed protocol buffers) once the run is done, and a profile
// that cannot be created is a usage error before anything is sent.
func TestRunWritesProfiles(t *testing.T) {
	// Not parallel: the CPU profile is the process's own, one at a time.
	input, url := startRun(t, 3)
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	args := []string{"run", "--input", input, "--out", filepath.Join(dir, "run"), "--base-url", url, "--model", "simulated",
		"--n", "2", "--quiet", "--cpuprofile", cpu, "--memprofile", mem}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitOK && code != exitProblems {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, path := range []string{cpu, mem} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s is not a pprof profile (%d bytes)", filepath.Base(path), len(b))
		}
	}

	stderr.Reset()
	bad := []string{"run", "--input", input, "--out", filepath.Join(dir, "run2"), "--base-url", url, "--model", "simulated",
		"--quiet", "--cpuprofile", filepath.Join(dir, "missing", "cpu.pprof")}
	if code := run(bad, &stdout, &stderr); code != exitUsage {
		t.Errorf("unwritable --cpuprofile: exit %d, want %d\n%s", code, exitUsage, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "run2")); !os.IsNotExist(err) {
		t.Errorf("a run with an unwritable profile created its run directory")
	}
}
