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

func TestLockSharedAllowsReadersExcludesWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	open := func() File {
		f, err := OS.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	sl := OS.(SharedLocker)
	r1, r2, w := open(), open(), open()
	if held, err := sl.LockShared(r1); held || err != nil {
		t.Fatalf("first shared lock: held=%v err=%v", held, err)
	}
	if held, err := sl.LockShared(r2); held || err != nil {
		t.Fatalf("second shared lock: held=%v err=%v; shared locks must coexist", held, err)
	}
	if held, err := OS.Lock(w); !held || err != nil {
		t.Fatalf("exclusive lock under shared ones: held=%v err=%v; want held", held, err)
	}
	r1.Close()
	r2.Close()
	if held, err := OS.Lock(w); held || err != nil {
		t.Fatalf("exclusive lock after the readers closed: held=%v err=%v", held, err)
	}
	r3 := open()
	if held, err := sl.LockShared(r3); !held || err != nil {
		t.Fatalf("shared lock under an exclusive one: held=%v err=%v; want held", held, err)
	}
}
