package crashfs

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// setup returns an FS with the durable directory /d.
func setup(t *testing.T) *FS {
	t.Helper()
	f := New()
	if err := f.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return f
}

func write(t *testing.T, f *FS, name, data string, sync bool) fsys.File {
	t.Helper()
	h, err := f.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// content is the file's bytes after a crash, or "<missing>".
func content(t *testing.T, f *FS, name string) string {
	t.Helper()
	b, err := fsys.ReadFile(f, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCrashKeepsOnlyWhatWasSynced(t *testing.T) {
	tests := []struct {
		name  string
		steps func(t *testing.T, f *FS)
		file  string
		want  string
	}{
		{"write without sync is lost", func(t *testing.T, f *FS) {
			write(t, f, "/d/a", "old", true)
			f.SyncDir("/d")
			h, _ := f.OpenFile("/d/a", os.O_WRONLY|os.O_APPEND, 0)
			h.Write([]byte(" and new"))
		}, "/d/a", "old"},
		{"synced file in an unsynced directory is lost", func(t *testing.T, f *FS) {
			write(t, f, "/d/a", "data", true)
		}, "/d/a", "<missing>"},
		{"sync then crash keeps the data", func(t *testing.T, f *FS) {
			write(t, f, "/d/a", "data", true)
			f.SyncDir("/d")
		}, "/d/a", "data"},
		{"unsynced file in a synced directory is empty", func(t *testing.T, f *FS) {
			write(t, f, "/d/a", "data", false)
			f.SyncDir("/d")
		}, "/d/a", ""},
		{"rename without dir sync is lost: old name", func(t *testing.T, f *FS) {
			write(t, f, "/d/tmp", "new", true)
			f.SyncDir("/d")
			f.Rename("/d/tmp", "/d/final")
		}, "/d/tmp", "new"},
		{"rename without dir sync is lost: new name", func(t *testing.T, f *FS) {
			write(t, f, "/d/tmp", "new", true)
			f.SyncDir("/d")
			f.Rename("/d/tmp", "/d/final")
		}, "/d/final", "<missing>"},
		{"rename over a file, dir synced", func(t *testing.T, f *FS) {
			write(t, f, "/d/final", "old", true)
			write(t, f, "/d/tmp", "new", true)
			f.SyncDir("/d")
			f.Rename("/d/tmp", "/d/final")
			f.SyncDir("/d")
		}, "/d/final", "new"},
		{"rename over a file, dir not synced keeps the old", func(t *testing.T, f *FS) {
			write(t, f, "/d/final", "old", true)
			write(t, f, "/d/tmp", "new", true)
			f.SyncDir("/d")
			f.Rename("/d/tmp", "/d/final")
		}, "/d/final", "old"},
		{"remove without dir sync is undone", func(t *testing.T, f *FS) {
			write(t, f, "/d/a", "data", true)
			f.SyncDir("/d")
			f.Remove("/d/a")
		}, "/d/a", "data"},
		{"new directory in an unsynced parent is lost", func(t *testing.T, f *FS) {
			f.MkdirAll("/d/sub", 0o755)
			write(t, f, "/d/sub/a", "data", true)
			f.SyncDir("/d/sub")
		}, "/d/sub/a", "<missing>"},
		{"truncate without sync is lost", func(t *testing.T, f *FS) {
			h := write(t, f, "/d/a", "long data", true)
			f.SyncDir("/d")
			h.Truncate(2)
		}, "/d/a", "long data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			tt.steps(t, f)
			if got := content(t, f.CrashClone(CrashOptions{}), tt.file); got != tt.want {
				t.Errorf("after crash %s = %q, want %q", tt.file, got, tt.want)
			}
		})
	}
}

func TestCrashAtStopsEverything(t *testing.T) {
	f := setup(t)
	h := write(t, f, "/d/a", "one", true)
	if err := f.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	next := len(f.Ops())
	f.CrashAt(next + 1) // the write goes through, the sync does not
	if _, err := h.Write([]byte(" two")); err != nil {
		t.Fatal(err)
	}
	if err := h.Sync(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Sync at the crash point: %v", err)
	}
	if _, err := f.Stat("/d/a"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Stat after the crash: %v", err)
	}
	if !f.Crashed() {
		t.Fatal("Crashed() = false")
	}
	if got := content(t, f.CrashClone(CrashOptions{}), "/d/a"); got != "one" {
		t.Errorf("after crash = %q, want the synced %q", got, "one")
	}
}

func TestTornTailKeepsAPrefix(t *testing.T) {
	seed := uint64(7)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	f := setup(t)
	h := write(t, f, "/d/log", "synced|", true)
	f.SyncDir("/d")
	h.Write([]byte("appended but never synced"))
	lengths := map[int]bool{}
	for range 50 {
		got := content(t, f.CrashClone(CrashOptions{Tear: rng}), "/d/log")
		if len(got) < len("synced|") || got != "synced|appended but never synced"[:len(got)] {
			t.Fatalf("torn content %q is not synced data plus a prefix of the append", got)
		}
		lengths[len(got)] = true
	}
	if len(lengths) < 3 {
		t.Errorf("tearing gave only lengths %v", lengths)
	}
}

func TestInjectedErrors(t *testing.T) {
	f := setup(t)
	f.FailWhen(func(op Op) bool { return op.Kind == OpWrite }, syscall.ENOSPC)
	h, err := f.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n, err := h.Write([]byte("12345678"))
	if !errors.Is(err, syscall.ENOSPC) || n != 4 {
		t.Fatalf("Write = %d, %v; want 4 bytes written then ENOSPC", n, err)
	}
	f.ClearFaults()
	next := len(f.Ops())
	f.FailAt(next, syscall.EIO)
	if err := h.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync = %v, want EIO", err)
	}
	f.FailWhen(func(op Op) bool { return op.Writes() }, syscall.EROFS)
	if err := f.Rename("/d/a", "/d/b"); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Rename = %v, want EROFS", err)
	}
	if _, err := f.OpenFile("/d/c", os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("create = %v, want EROFS", err)
	}
	if _, err := f.OpenFile("/d/a", os.O_RDONLY, 0); err != nil {
		t.Fatalf("read-only open on a read-only FS: %v", err)
	}
	if got := len(f.Fired()); got != 4 {
		t.Errorf("Fired() holds %d ops, want 4", got)
	}
	if got := content(t, f, "/d/a"); got != "1234" {
		t.Errorf("content %q, want the half write", got)
	}
	f.ClearFaults()
	if err := f.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if got := content(t, f.CrashClone(CrashOptions{}), "/d/a"); got != "" {
		t.Errorf("after crash %q; the only sync failed, so want empty", got)
	}
}

func TestLockAndFileSystemBasics(t *testing.T) {
	f := setup(t)
	a := write(t, f, "/d/LOCK", "", false)
	b, err := f.OpenFile("/d/LOCK", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := f.Lock(a); held || err != nil {
		t.Fatalf("Lock a: %v %v", held, err)
	}
	if held, _ := f.Lock(b); !held {
		t.Fatal("second lock not refused")
	}
	a.Close()
	if held, _ := f.Lock(b); held {
		t.Fatal("lock not dropped by Close")
	}
	if err := fsys.WriteFileAtomic(f, "/d/m.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := content(t, f.CrashClone(CrashOptions{}), "/d/m.json"); got != "{}" {
		t.Errorf("atomic write after crash = %q", got)
	}
	ents, err := f.ReadDir("/d")
	if err != nil || len(ents) != 2 || ents[0].Name() != "LOCK" || ents[1].Name() != "m.json" {
		t.Errorf("ReadDir = %v, %v", ents, err)
	}
	if err := f.Remove("/d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("removing a non-empty dir: %v", err)
	}
	if _, err := f.OpenFile("/d/m.json", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on an existing file: %v", err)
	}
}

// TestUnsyncedRenames: a rename is accepted only between syncs of its
// directories.
func TestUnsyncedRenames(t *testing.T) {
	t.Parallel()
	rename := Op{Kind: OpRename, Path: "/d/.x.tmp", To: "/d/x"}
	sync := func(dir string) Op { return Op{Kind: OpSyncDir, Path: dir} }
	stat := Op{Kind: OpStat, Path: "/d/x"}
	write := Op{Kind: OpWrite, Path: "/d/.x.tmp"}
	across := Op{Kind: OpRename, Path: "/a/f", To: "/b/f"}
	for _, tc := range []struct {
		name string
		ops  []Op
		bad  int
	}{
		{"synced before and after", []Op{write, sync("/d"), stat, rename, stat, sync("/d")}, 0},
		{"no sync before", []Op{write, rename, sync("/d")}, 1},
		{"a write between the sync and the rename", []Op{sync("/d"), write, rename, sync("/d")}, 1},
		{"no sync after", []Op{sync("/d"), rename, write}, 1},
		{"another directory synced", []Op{sync("/e"), rename, sync("/d")}, 1},
		{"across directories, both synced after", []Op{sync("/a"), across, sync("/b"), sync("/a")}, 0},
		{"across directories, the old one not synced after", []Op{sync("/a"), across, sync("/b")}, 1},
	} {
		if got := UnsyncedRenames(tc.ops); len(got) != tc.bad {
			t.Errorf("%s: %d renames refused, want %d", tc.name, len(got), tc.bad)
		}
	}
}
