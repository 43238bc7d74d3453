package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// shared holds the fixtures that several tests only read, written once
// per test binary; TestMain removes them (shared.Remove).
var shared = corpusfix.Shared{Prefix: "validate-shared-"}

// sharedRun is writeRun(t, n, nil) written once per test binary. Tests must
// not change it (copyRun makes a copy to change).
func sharedRun(t *testing.T, n int) string {
	t.Helper()
	return corpusfix.Get(t, &shared, fmt.Sprintf("run%d", n), func(dir string) string {
		run := filepath.Join(dir, "run")
		writeRunAt(t, run, n, nil)
		return run
	})
}

// sharedLabelledSheet is labelledSheet(t, sharedRun(t, n), items) made
// once per test binary. Tests must not change it.
func sharedLabelledSheet(t *testing.T, n int, items string) (run, sheet string) {
	t.Helper()
	run = sharedRun(t, n)
	sheet = corpusfix.Get(t, &shared, fmt.Sprintf("sheet%d/%s", n, items), func(dir string) string {
		return labelledSheetAt(t, filepath.Join(dir, "items.csv"), run, items)
	})
	return run, sheet
}

// copyRun copies the run directory src into a directory of the test's own
// and returns the copy.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		return copyFile(path, to)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
