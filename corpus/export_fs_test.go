package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
)

var errExportFault = errors.New("injected fault")

// exportFaultFS records every operation an export makes on its directory
// and fails the failAt-th one (0: none). With noSync it records syncs
// without making them: a test of the order of operations needs no disk
// flushes, and they cost seconds on a busy machine.
type exportFaultFS struct {
	fsys.FS
	root   string
	ops    []string
	n      int
	failAt int
	noSync bool
}

func (f *exportFaultFS) step(op string, paths ...string) error {
	f.n++
	for i, p := range paths {
		rel, err := filepath.Rel(f.root, p)
		if err == nil {
			paths[i] = filepath.ToSlash(rel)
		}
	}
	f.ops = append(f.ops, op+" "+strings.Join(paths, " "))
	if f.n == f.failAt {
		return fmt.Errorf("%s %s: %w", op, strings.Join(paths, " "), errExportFault)
	}
	return nil
}

func (f *exportFaultFS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	if err := f.step("open", name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &exportFaultFile{File: file, fs: f, name: name}, nil
}

func (f *exportFaultFS) Rename(oldpath, newpath string) error {
	if err := f.step("rename", oldpath, newpath); err != nil {
		return err
	}
	return f.FS.Rename(oldpath, newpath)
}

func (f *exportFaultFS) Remove(name string) error {
	if err := f.step("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *exportFaultFS) MkdirAll(path string, perm fs.FileMode) error {
	if err := f.step("mkdir", path); err != nil {
		return err
	}
	return f.FS.MkdirAll(path, perm)
}

func (f *exportFaultFS) SyncDir(dir string) error {
	if err := f.step("syncdir", dir); err != nil || f.noSync {
		return err
	}
	return f.FS.SyncDir(dir)
}

func (f *exportFaultFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.step("readdir", name); err != nil {
		return nil, err
	}
	return f.FS.ReadDir(name)
}

type exportFaultFile struct {
	fsys.File
	fs   *exportFaultFS
	name string
}

func (f *exportFaultFile) Write(p []byte) (int, error) {
	if err := f.fs.step("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *exportFaultFile) Sync() error {
	if err := f.fs.step("sync", f.name); err != nil || f.fs.noSync {
		return err
	}
	return f.File.Sync()
}

func (f *exportFaultFile) Close() error {
	if err := f.fs.step("close", f.name); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

func indexOf(ops []string, pred func(string) bool) int { return slices.IndexFunc(ops, pred) }

func lastIndexOf(ops []string, pred func(string) bool) int {
	for i := len(ops) - 1; i >= 0; i-- {
		if pred(ops[i]) {
			return i
		}
	}
	return -1
}

// TestExportCommitOrder pins the protocol: data files are only ever created
// under temporary names, each is synced and closed before it is renamed; the
// earlier export.json goes before the first rename, the data directory is
// synced after the last, and export.json is written before the card.
func TestExportCommitOrder(t *testing.T) {
	t.Chdir(t.TempDir())
	writeExportCorpus(t, "run", exportFixture(), 3)
	if _, err := Export(context.Background(), "run", quietExportOptions(FormatRaR, "exp")); err != nil {
		t.Fatal(err)
	}
	ffs := &exportFaultFS{FS: fsys.OS, root: "exp"}
	opt := quietExportOptions(FormatVerl, "exp")
	opt.RowsPerFile, opt.FS = 2, ffs
	m, err := Export(context.Background(), "run", opt)
	if err != nil {
		t.Fatal(err)
	}
	ops := ffs.ops
	for _, op := range ops {
		if strings.HasPrefix(op, "open data/") && exportFileRE.MatchString(filepath.Base(op)) {
			t.Errorf("%q: a data file was opened under its final name", op)
		}
	}
	firstRename := indexOf(ops, func(s string) bool { return strings.HasPrefix(s, "rename data/") })
	lastRename := lastIndexOf(ops, func(s string) bool { return strings.HasPrefix(s, "rename data/") })
	removeManifest := indexOf(ops, func(s string) bool { return s == "remove export.json" })
	syncData := lastIndexOf(ops, func(s string) bool { return s == "syncdir data" })
	manifestRename := indexOf(ops, func(s string) bool {
		return strings.HasPrefix(s, "rename .export.json.") && strings.HasSuffix(s, ".tmp export.json")
	})
	cardOpen := indexOf(ops, func(s string) bool { return strings.HasPrefix(s, "open .README.md.") && strings.HasSuffix(s, ".tmp") })
	if removeManifest < 0 || !(removeManifest < firstRename && lastRename < syncData && syncData < manifestRename && manifestRename < cardOpen) {
		t.Errorf("commit order: remove export.json %d, renames %d..%d, sync data %d, export.json %d, card %d:\n%s",
			removeManifest, firstRename, lastRename, syncData, manifestRename, cardOpen, strings.Join(ops, "\n"))
	}
	renames := 0
	for i, op := range ops {
		if !strings.HasPrefix(op, "rename data/") {
			continue
		}
		renames++
		tmp := strings.Fields(op)[1]
		synced := indexOf(ops, func(s string) bool { return s == "sync "+tmp })
		closed := lastIndexOf(ops[:i], func(s string) bool { return s == "close "+tmp })
		if synced < 0 || synced > i || closed < synced {
			t.Errorf("%q: not synced (%d) and closed (%d) before the rename (%d)", op, synced, closed, i)
		}
	}
	if renames != len(m.Files) {
		t.Errorf("%d renames for %d files", renames, len(m.Files))
	}
	if last := ops[len(ops)-1]; last != "syncdir ." && !strings.HasPrefix(last, "syncdir") {
		t.Errorf("the export does not end by syncing the directory after the card: %q", last)
	}
}

// TestExportSurvivesAFaultAtEveryStep fails each operation of an export over
// an earlier export in turn (jsonl both: the protocol is the same for every
// format, and parquet's zstd encoders make each export far slower under
// -race). Whatever fails, a directory with export.json is
// a complete export (the earlier or the new one), and running the export
// again gives exactly the bytes of a clean export.
func TestExportSurvivesAFaultAtEveryStep(t *testing.T) {
	t.Chdir(t.TempDir())
	writeExportCorpus(t, "run", exportFixture(), 3)
	ctx := context.Background()
	earlier := func(dir string) {
		opt := quietExportOptions(FormatJSONL, dir)
		opt.RowsPerFile, opt.FS = 1, &exportFaultFS{FS: fsys.OS, root: dir, noSync: true}
		if _, err := Export(ctx, "run", opt); err != nil {
			t.Fatal(err)
		}
	}
	newOpt := func(dir string, ffs *exportFaultFS) ExportOptions {
		if ffs == nil {
			ffs = &exportFaultFS{FS: fsys.OS, root: dir}
		}
		ffs.noSync = true
		opt := quietExportOptions(FormatJSONL, dir)
		opt.RowsPerFile, opt.ValidOnly, opt.FS = 2, true, ffs
		return opt
	}
	earlier("old")
	oldFiles := renameDir(dirFiles(t, "old"), "old")
	if _, err := Export(ctx, "run", newOpt("new", nil)); err != nil {
		t.Fatal(err)
	}
	newFiles := renameDir(dirFiles(t, "new"), "new")
	count := &exportFaultFS{FS: fsys.OS, root: "probe"}
	earlier("probe")
	if _, err := Export(ctx, "run", newOpt("probe", count)); err != nil {
		t.Fatal(err)
	}
	t.Logf("an export over an earlier one makes %d file-system operations", count.n)

	// Each fault meets the same earlier export, in a directory of the one
	// name every step uses (the card shows it): its files written back
	// stand for running that export again.
	const dir = "step"
	earlier(dir)
	earlierFiles := dirFiles(t, dir)
	for _, k := range exportFaultCover(t, count.ops) {
		putDir(t, dir, earlierFiles)
		ffs := &exportFaultFS{FS: fsys.OS, root: dir, failAt: k}
		_, err := Export(ctx, "run", newOpt(dir, ffs))
		if err != nil && !errors.Is(err, errExportFault) {
			t.Fatalf("fault at %q: error %v does not wrap the fault", ffs.ops[k-1], err)
		}
		checkExportState(t, dir, ffs.ops[k-1], oldFiles, newFiles)
		if t.Failed() {
			t.FailNow()
		}
		if _, err := Export(ctx, "run", newOpt(dir, nil)); err != nil {
			t.Fatalf("fault at %q: the export run again: %v", ffs.ops[k-1], err)
		}
		if got := renameDir(dirFiles(t, dir), dir); !reflect.DeepEqual(got, newFiles) {
			t.Fatalf("fault at %q: after running again the directory holds %v, a clean export %v",
				ffs.ops[k-1], slices.Sorted(mapKeys(got)), slices.Sorted(mapKeys(newFiles)))
		}
	}
}

// opClass matches what opClassOf puts out of an operation: the split, the
// numbers and the random part of a temporary name.
var opClass = regexp.MustCompile(`train|validation|test|[0-9a-f]{12}|[0-9]+`)

// opClassOf is the step an operation of exportFaultFS is: the same for
// each data file, and for each run.
func opClassOf(op string) string { return opClass.ReplaceAllString(op, "N") }

// exportFaultCover is the operations (numbered from 1, as failAt counts)
// that TestExportSurvivesAFaultAtEveryStep fails: every one in the long
// form (make test-long), else a cover: the first operation of each class
// (the same step on each kind of file: a train data file, a test one,
// export.json, the card, ...; opClass), every rename and the operation
// after it, the last, and every exportFaultEvery-th.
func exportFaultCover(t *testing.T, ops []string) []int {
	t.Helper()
	long := longtest.Pick(t, false, true)
	seen := map[string]bool{}
	var out []int
	for i, op := range ops {
		class := opClassOf(op)
		first := !seen[class]
		seen[class] = true
		afterRename := i > 0 && strings.HasPrefix(ops[i-1], "rename ")
		if long || first || strings.HasPrefix(op, "rename ") || afterRename || i == len(ops)-1 {
			out = append(out, i+1)
		}
	}
	t.Logf("failing %d of the %d operations in turn", len(out), len(ops))
	return out
}

// putDir makes dir hold files (dirFiles of a directory) and nothing else.
func putDir(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// renameDir puts the export's own directory name out of the card, which
// shows --out.
func renameDir(files map[string][]byte, dir string) map[string][]byte {
	out := make(map[string][]byte, len(files))
	for name, data := range files {
		out[name] = bytes.ReplaceAll(data, []byte("--out "+dir), []byte("--out DIR"))
		out[name] = bytes.ReplaceAll(out[name], []byte(`load_dataset("`+dir+`")`), []byte(`load_dataset("DIR")`))
	}
	return out
}

// checkExportState asserts what a directory may look like after a failed
// export: every committed data file is whole (one of the earlier or the new
// export's), and export.json, if present, is the earlier or the new one and
// describes files that are all there. The maps have the directory names put
// out of the cards (renameDir).
func checkExportState(t *testing.T, dir, fault string, oldFiles, newFiles map[string][]byte) {
	t.Helper()
	files := renameDir(dirFiles(t, dir), dir)
	for name, data := range files {
		if !strings.HasPrefix(name, "data/") || !exportFileRE.MatchString(filepath.Base(name)) {
			continue
		}
		if !bytes.Equal(data, oldFiles[name]) && !bytes.Equal(data, newFiles[name]) {
			t.Errorf("fault at %q: %s is neither the earlier export's nor the new one's", fault, name)
		}
	}
	if _, ok := files[ExportManifestName]; !ok {
		return
	}
	m, err := ReadExportManifest(dir)
	if err != nil {
		t.Fatalf("fault at %q: %v", fault, err)
	}
	want := oldFiles
	if m.ValidOnly {
		want = newFiles
	}
	if !bytes.Equal(files[ExportManifestName], want[ExportManifestName]) {
		t.Errorf("fault at %q: export.json is neither the earlier export's nor the new one's", fault)
	}
	for _, f := range m.Files {
		if !bytes.Equal(files[f.File], want[f.File]) {
			t.Errorf("fault at %q: export.json lists %s, which is missing or differs", fault, f.File)
		}
	}
	if card, ok := files[DatasetCardName]; ok && !bytes.Equal(card, want[DatasetCardName]) {
		t.Errorf("fault at %q: the card does not go with export.json", fault)
	}
}

// TestExportRenamesAreSynced: every data file (and export.json, and the
// card) is renamed into place between two syncs of its directory.
func TestExportRenamesAreSynced(t *testing.T) {
	t.Chdir(t.TempDir())
	writeExportCorpus(t, "run", exportFixture(), 3)
	ffs := &exportFaultFS{FS: fsys.OS, root: "exp"}
	opt := quietExportOptions(FormatVerl, "exp")
	opt.RowsPerFile, opt.FS = 2, ffs
	if _, err := Export(context.Background(), "run", opt); err != nil {
		t.Fatal(err)
	}
	ops := ffs.ops
	changes := func(op string) bool { return !strings.HasPrefix(op, "readdir ") && !strings.HasPrefix(op, "close ") }
	for i, op := range ops {
		if !strings.HasPrefix(op, "rename ") {
			continue
		}
		f := strings.Fields(op)
		dir := path.Dir(f[2])
		before := lastIndexOf(ops[:i], changes)
		after := indexOf(ops[i+1:], changes)
		if before < 0 || ops[before] != "syncdir "+dir || after < 0 || ops[i+1+after] != "syncdir "+dir {
			t.Errorf("%q is not between two syncs of %s:\n%s", op, dir, strings.Join(ops[max(0, i-3):min(len(ops), i+4)], "\n"))
		}
	}
}
