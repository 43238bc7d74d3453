package fsys_test

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
)

// renameHook is a file system that runs a function once, just before its
// first rename: another writer of the same file at the worst moment.
type renameHook struct {
	*crashfs.FS
	before func() // nil once it ran
}

func (h *renameHook) Rename(oldpath, newpath string) error {
	if f := h.before; f != nil {
		h.before = nil
		f()
	}
	return h.FS.Rename(oldpath, newpath)
}

// TestWriteFileAtomicTwoWritersAtOnce: two writers of one file at once
// (a status command and the run, two refine commands) each write their
// own temporary file, so neither removes the other's before its rename:
// both succeed and the file holds one of the two contents, whole.
func TestWriteFileAtomicTwoWritersAtOnce(t *testing.T) {
	t.Parallel()
	c := crashfs.New()
	if err := c.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	h := &renameHook{FS: c}
	var inner error
	h.before = func() { inner = fsys.WriteFileAtomic(h, "/d/report.json", []byte("second"), 0o644) }
	if err := fsys.WriteFileAtomic(h, "/d/report.json", []byte("first"), 0o644); err != nil {
		t.Errorf("the first writer: %v", err)
	}
	if inner != nil {
		t.Errorf("the second writer: %v", inner)
	}
	got, err := fsys.ReadFile(c, "/d/report.json")
	if err != nil || string(got) != "first" {
		t.Errorf("the file holds %q (%v), want the last rename's %q", got, err, "first")
	}
	ents, _ := c.ReadDir("/d")
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left behind: %s", strings.Join(names, ", "))
	}
}

// TestWriteFileAtomicSyncsAroundRename: the directory is synced before the
// temporary file is renamed over the target and again after.
func TestWriteFileAtomicSyncsAroundRename(t *testing.T) {
	t.Parallel()
	c := crashfs.New()
	if err := c.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(c, "/d/manifest.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if bad := crashfs.UnsyncedRenames(c.Ops()); len(bad) > 0 {
		t.Errorf("renames without a directory sync before and after: %v", bad)
	}
}
