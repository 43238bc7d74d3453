package fsys

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "manifest.json")
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := WriteFileAtomic(OS, path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(OS, path)
		if err != nil || string(got) != content {
			t.Fatalf("ReadFile = %q, %v; want %q", got, err, content)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp file left behind: %v", entries)
	}
}

func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	a, err := OS.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if held, err := OS.Lock(a); held || err != nil {
		t.Fatalf("first Lock: held=%v err=%v", held, err)
	}
	b, err := OS.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if held, err := OS.Lock(b); !held || err != nil {
		t.Fatalf("second Lock: held=%v err=%v; want held", held, err)
	}
	if err := OS.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if held, err := OS.Lock(b); held || err != nil {
		t.Fatalf("Lock after Unlock: held=%v err=%v", held, err)
	}
}

func TestMkdirAllSynced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "shards")
	if err := MkdirAllSynced(OS, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("not created: %v", err)
	}
	if err := MkdirAllSynced(OS, dir, 0o755); err != nil {
		t.Fatalf("second call: %v", err)
	}
}
