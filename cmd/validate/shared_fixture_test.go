package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Fixtures that several tests only read are written once per test binary:
// under the race detector, writing a corpus of a hundred records costs
// more CPU than most of the checks made on it.
var shared struct {
	mu     sync.Mutex
	root   string            // removed by TestMain
	runs   map[int]string    // n -> writeRun(n, nil)
	sheets map[string]string // "n/items" -> labelledSheet of that run
}

// sharedDir makes a directory under the binary's shared root. The caller
// holds shared.mu.
func sharedDir(t *testing.T, name string) string {
	t.Helper()
	if shared.root == "" {
		root, err := os.MkdirTemp("", "validate-shared-")
		if err != nil {
			t.Fatal(err)
		}
		shared.root = root
	}
	dir, err := os.MkdirTemp(shared.root, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// removeShared removes the shared fixtures; TestMain calls it after the
// tests.
func removeShared() {
	if shared.root != "" {
		os.RemoveAll(shared.root)
	}
}

// sharedRun is writeRun(t, n, nil) written once per test binary. Tests must
// not change it (copyRun makes a copy to change).
func sharedRun(t *testing.T, n int) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if dir, ok := shared.runs[n]; ok {
		return dir
	}
	dir := filepath.Join(sharedDir(t, fmt.Sprintf("run%d", n)), "run")
	writeRunAt(t, dir, n, nil)
	if shared.runs == nil {
		shared.runs = map[int]string{}
	}
	shared.runs[n] = dir
	return dir
}

// sharedLabelledSheet is labelledSheet(t, sharedRun(t, n), items) made
// once per test binary. Tests must not change it.
func sharedLabelledSheet(t *testing.T, n int, items string) (run, sheet string) {
	t.Helper()
	run = sharedRun(t, n)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	key := fmt.Sprintf("%d/%s", n, items)
	if sheet, ok := shared.sheets[key]; ok {
		return run, sheet
	}
	sheet = labelledSheetAt(t, filepath.Join(sharedDir(t, "sheet"), "items.csv"), run, items)
	if shared.sheets == nil {
		shared.sheets = map[string]string{}
	}
	shared.sheets[key] = sheet
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
