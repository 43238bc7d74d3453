package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// sharedRoot holds the corpora tests share (sharedCorpus): made by
// TestMain, removed when the tests end.
var sharedRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "distill-test-corpora-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir) // temporary: a leftover loses nothing
	os.Exit(code)
}

// built is one shared corpus, made once.
type built struct {
	once    sync.Once
	dir     string
	answers map[string]string
	err     error
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*built{}
)

// sharedCorpus is the corpus named name, written once per test binary by
// write (into the directory it is given, the corpus at dir/run) and then
// read by every test that asks for it. The tests that share one only read
// it (refine writes next to --out, never into SRC), so a corpus is paid
// for once, not once per test; the answers are the problems'
// (writeProblems).
func sharedCorpus(t *testing.T, name string, write func(dir string) (map[string]string, error)) (string, map[string]string) {
	t.Helper()
	sharedMu.Lock()
	b := shared[name]
	if b == nil {
		b = &built{}
		shared[name] = b
	}
	sharedMu.Unlock()
	b.once.Do(func() {
		b.dir = filepath.Join(sharedRoot, name)
		if b.err = os.Mkdir(b.dir, 0o755); b.err == nil {
			b.answers, b.err = write(b.dir)
		}
	})
	if b.err != nil {
		t.Fatalf("shared corpus %s: %v", name, b.err)
	}
	return filepath.Join(b.dir, "run"), b.answers
}
