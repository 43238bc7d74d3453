// Package crashfs is an in-memory fsys.FS for tests of crash safety. It
// records every operation, and it can stop at any of them as a power cut
// would: CrashClone then returns the file system a reboot would find, where
// a file holds what it held at its last Sync and a directory lists what it
// listed at its last SyncDir; the two are kept apart, so a synced file whose
// directory was never synced is gone, and a rename whose directory was never
// synced is undone. It also fails chosen operations with an errno (ENOSPC,
// EIO, EROFS, ...), by operation index or by a predicate on the operation.
//
// Paths are slash-separated and absolute ("/run/shards/part-00000.parquet");
// a relative path is taken from the root.
package crashfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// ErrCrashed is returned by every operation at and after the crash point.
var ErrCrashed = errors.New("crashfs: the machine has crashed")

// Kind is the kind of an operation.
type Kind uint8

// The operations an FS records.
const (
	OpOpen     Kind = iota + 1 // OpenFile
	OpRead                     // File.Read, File.ReadAt
	OpWrite                    // File.Write, File.WriteAt
	OpTruncate                 // File.Truncate
	OpSync                     // File.Sync
	OpClose                    // File.Close
	OpStat                     // FS.Stat, File.Stat
	OpReadDir                  // FS.ReadDir
	OpRename                   // FS.Rename
	OpRemove                   // FS.Remove
	OpMkdir                    // FS.MkdirAll
	OpSyncDir                  // FS.SyncDir
	OpLock                     // FS.Lock
	OpUnlock                   // FS.Unlock
)

var kindNames = map[Kind]string{
	OpOpen: "open", OpRead: "read", OpWrite: "write", OpTruncate: "truncate", OpSync: "sync", OpClose: "close",
	OpStat: "stat", OpReadDir: "readdir", OpRename: "rename", OpRemove: "remove", OpMkdir: "mkdir",
	OpSyncDir: "syncdir", OpLock: "lock", OpUnlock: "unlock",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Op is one recorded operation.
type Op struct {
	Index int    // position in the FS's log, from 0
	Kind  Kind   //
	Path  string // the file or directory; for a rename, the old path
	To    string // a rename's new path
	Flag  int    // OpenFile's flags
}

// Mutates reports whether op can change what a crash leaves behind: a
// creating or truncating open, a write, truncate, sync, rename, remove,
// mkdir or directory sync. Crashing at any other operation leaves the same
// state as crashing at the next one that mutates.
func (op Op) Mutates() bool {
	switch op.Kind {
	case OpOpen:
		return op.Flag&(os.O_CREATE|os.O_TRUNC) != 0
	case OpWrite, OpTruncate, OpSync, OpRename, OpRemove, OpMkdir, OpSyncDir:
		return true
	}
	return false
}

// Writes reports whether op is an open for writing or changes the tree.
func (op Op) Writes() bool {
	if op.Kind == OpOpen {
		return op.Flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0
	}
	return op.Mutates()
}

func (op Op) String() string {
	s := fmt.Sprintf("#%d %s %s", op.Index, op.Kind, op.Path)
	if op.Kind == OpRename {
		s += " -> " + op.To
	}
	if op.Kind == OpOpen {
		s += fmt.Sprintf(" flag=%#x", op.Flag)
	}
	return s
}

// node is a file or a directory. A file's data and a directory's entries
// are what a reader sees now; synced and syncedEntries are what a crash
// leaves.
type node struct {
	dir                  bool
	mode                 fs.FileMode
	data, synced         []byte
	mtime, syncedMtime   int64
	entries, syncedEntrs map[string]*node
	locker               *file
}

func newDir(mode fs.FileMode) *node {
	return &node{dir: true, mode: fs.ModeDir | mode.Perm(), entries: map[string]*node{}, syncedEntrs: map[string]*node{}}
}

type fault struct {
	index int // -1: use pred
	pred  func(Op) bool
	err   error
}

// FS is the in-memory, crashable file system. Its methods are safe for
// concurrent use.
type FS struct {
	mu      sync.Mutex
	root    *node
	log     []Op
	crashAt int // -1: never
	crashed bool
	faults  []fault
	fired   []Op
	clock   int64
}

var _ fsys.FS = (*FS)(nil)

// New returns an empty file system holding only the root directory.
func New() *FS {
	return &FS{root: newDir(0o755), crashAt: -1}
}

// Ops returns a copy of the operations recorded so far.
func (f *FS) Ops() []Op {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// CrashAt makes the operation with index i, and every one after it, fail
// with ErrCrashed without taking effect: the machine dies just before it.
func (f *FS) CrashAt(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAt = i
}

// Crashed reports whether the crash point was reached.
func (f *FS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// FailAt makes the operation with index i fail with err (wrapped in an
// *fs.PathError). A failed operation takes no effect, except a failed
// write, which first writes the first half of its bytes, as a disk that
// fills up mid-write does.
func (f *FS) FailAt(i int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fault{index: i, err: err})
}

// FailWhen makes every operation for which pred is true fail with err, as
// FailAt does, until ClearFaults.
func (f *FS) FailWhen(pred func(Op) bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fault{index: -1, pred: pred, err: err})
}

// ClearFaults removes every injected fault.
func (f *FS) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// Fired returns the operations that failed by an injected fault.
func (f *FS) Fired() []Op {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fired)
}

// CrashOptions tune CrashClone.
type CrashOptions struct {
	// Tear, when set, lets a random prefix of the bytes appended to a file
	// since its last Sync survive (a page written back before the power
	// went), as real disks may; without it every unsynced byte is lost.
	Tear *rand.Rand
}

// CrashClone returns the file system as a reboot after a crash at this
// instant would find it: the root, then every directory entry that was
// synced, recursively; each file with its synced contents. The receiver is
// not changed. Open files and locks do not carry over.
func (f *FS) CrashClone(o CrashOptions) *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[*node]*node{}
	var clone func(n *node) *node
	clone = func(n *node) *node {
		if c, ok := seen[n]; ok {
			return c
		}
		c := &node{dir: n.dir, mode: n.mode, mtime: n.syncedMtime, syncedMtime: n.syncedMtime}
		seen[n] = c
		if n.dir {
			c.entries = make(map[string]*node, len(n.syncedEntrs))
			for _, name := range slices.Sorted(maps.Keys(n.syncedEntrs)) {
				c.entries[name] = clone(n.syncedEntrs[name])
			}
			c.syncedEntrs = maps.Clone(c.entries)
			return c
		}
		c.data = slices.Clone(n.synced)
		if o.Tear != nil && len(n.data) > len(n.synced) && string(n.data[:len(n.synced)]) == string(n.synced) {
			extra := n.data[len(n.synced):]
			c.data = append(c.data, extra[:o.Tear.IntN(len(extra)+1)]...)
		}
		if c.data == nil {
			c.data = []byte{}
		}
		c.synced = slices.Clone(c.data)
		return c
	}
	return &FS{root: clone(f.root), crashAt: -1, clock: f.clock}
}

// begin records an operation and decides its fate: nil to go on, or the
// error it must return without taking effect.
func (f *FS) begin(op Op) error {
	op.Index = len(f.log)
	f.log = append(f.log, op)
	if f.crashed || (f.crashAt >= 0 && op.Index >= f.crashAt) {
		f.crashed = true
		return &fs.PathError{Op: op.Kind.String(), Path: op.Path, Err: ErrCrashed}
	}
	for _, ft := range f.faults {
		if ft.index == op.Index || (ft.index < 0 && ft.pred(op)) {
			f.fired = append(f.fired, op)
			return &fs.PathError{Op: op.Kind.String(), Path: op.Path, Err: ft.err}
		}
	}
	return nil
}

func (f *FS) tick() int64 {
	f.clock++
	return f.clock
}

func clean(name string) string {
	return path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
}

// lookup finds the node at name.
func (f *FS) lookup(name string) (*node, error) {
	n := f.root
	for _, part := range strings.Split(strings.Trim(clean(name), "/"), "/") {
		if part == "" {
			continue
		}
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.entries[part]
		if !ok {
			return nil, fs.ErrNotExist
		}
		n = c
	}
	return n, nil
}

// parent finds the directory holding name and name's last element.
func (f *FS) parent(name string) (*node, string, error) {
	p := clean(name)
	if p == "/" {
		return nil, "", syscall.EINVAL
	}
	dir, base := path.Split(p)
	d, err := f.lookup(dir)
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", syscall.ENOTDIR
	}
	return d, base, nil
}

func pathErr(op Kind, name string, err error) error {
	return &fs.PathError{Op: op.String(), Path: name, Err: err}
}

// OpenFile opens name. The flags O_RDONLY, O_WRONLY, O_RDWR, O_CREATE,
// O_EXCL, O_TRUNC and O_APPEND have their usual meaning.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpOpen, Path: name, Flag: flag}); err != nil {
		return nil, err
	}
	d, base, err := f.parent(name)
	if err != nil {
		return nil, pathErr(OpOpen, name, err)
	}
	n, ok := d.entries[base]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr(OpOpen, name, fs.ErrExist)
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr(OpOpen, name, fs.ErrNotExist)
	case !ok:
		n = &node{mode: perm.Perm(), data: []byte{}, mtime: f.tick()}
		d.entries[base] = n
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if n.dir && writable {
		return nil, pathErr(OpOpen, name, syscall.EISDIR)
	}
	if flag&os.O_TRUNC != 0 && writable && len(n.data) > 0 {
		n.data = []byte{}
		n.mtime = f.tick()
	}
	return &file{fs: f, n: n, name: name, flag: flag}, nil
}

// Rename moves oldpath to newpath, replacing a file there.
func (f *FS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpRename, Path: oldpath, To: newpath}); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errors.Unwrap(err)}
	}
	od, ob, err := f.parent(oldpath)
	if err == nil {
		if _, ok := od.entries[ob]; !ok {
			err = fs.ErrNotExist
		}
	}
	var nd *node
	var nb string
	if err == nil {
		nd, nb, err = f.parent(newpath)
	}
	if err == nil {
		if old, ok := nd.entries[nb]; ok && old.dir && len(old.entries) > 0 {
			err = syscall.ENOTEMPTY
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	n := od.entries[ob]
	delete(od.entries, ob)
	nd.entries[nb] = n
	return nil
}

// Remove removes a file or an empty directory.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpRemove, Path: name}); err != nil {
		return err
	}
	d, base, err := f.parent(name)
	if err != nil {
		return pathErr(OpRemove, name, err)
	}
	n, ok := d.entries[base]
	switch {
	case !ok:
		return pathErr(OpRemove, name, fs.ErrNotExist)
	case n.dir && len(n.entries) > 0:
		return pathErr(OpRemove, name, syscall.ENOTEMPTY)
	}
	delete(d.entries, base)
	return nil
}

// MkdirAll creates name and its missing parents.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpMkdir, Path: name}); err != nil {
		return err
	}
	n := f.root
	for _, part := range strings.Split(strings.Trim(clean(name), "/"), "/") {
		if part == "" {
			continue
		}
		c, ok := n.entries[part]
		if !ok {
			c = newDir(perm)
			c.mtime = f.tick()
			n.entries[part] = c
		}
		if !c.dir {
			return pathErr(OpMkdir, name, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

// ReadDir lists a directory, sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpReadDir, Path: name}); err != nil {
		return nil, err
	}
	d, err := f.lookup(name)
	if err == nil && !d.dir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, pathErr(OpReadDir, name, err)
	}
	out := make([]fs.DirEntry, 0, len(d.entries))
	for _, n := range slices.Sorted(maps.Keys(d.entries)) {
		out = append(out, fs.FileInfoToDirEntry(info(n, d.entries[n])))
	}
	return out, nil
}

// Stat describes name.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpStat, Path: name}); err != nil {
		return nil, err
	}
	n, err := f.lookup(name)
	if err != nil {
		return nil, pathErr(OpStat, name, err)
	}
	return info(path.Base(clean(name)), n), nil
}

// SyncDir makes dir's current entries the ones a crash leaves.
func (f *FS) SyncDir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpSyncDir, Path: dir}); err != nil {
		return err
	}
	d, err := f.lookup(dir)
	if err == nil && !d.dir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return pathErr(OpSyncDir, dir, err)
	}
	d.syncedEntrs = maps.Clone(d.entries)
	return nil
}

// Lock takes the file's lock unless another open file holds it.
func (f *FS) Lock(h fsys.File) (bool, error) {
	fl, ok := h.(*file)
	if !ok || fl.fs != f {
		return false, fmt.Errorf("crashfs: locking %s: not a file of this FS", h.Name())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpLock, Path: fl.name}); err != nil {
		return false, err
	}
	if fl.closed {
		return false, pathErr(OpLock, fl.name, fs.ErrClosed)
	}
	if fl.n.locker != nil && fl.n.locker != fl {
		return true, nil
	}
	fl.n.locker = fl
	return false, nil
}

// Unlock drops a lock taken by Lock.
func (f *FS) Unlock(h fsys.File) error {
	fl, ok := h.(*file)
	if !ok || fl.fs != f {
		return fmt.Errorf("crashfs: unlocking %s: not a file of this FS", h.Name())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(Op{Kind: OpUnlock, Path: fl.name}); err != nil {
		return err
	}
	if fl.n.locker == fl {
		fl.n.locker = nil
	}
	return nil
}

// Contents returns the current bytes of the file at name, bypassing the
// log, for tests that inspect what a crash left.
func (f *FS) Contents(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup(name)
	if err != nil {
		return nil, pathErr(OpRead, name, err)
	}
	if n.dir {
		return nil, pathErr(OpRead, name, syscall.EISDIR)
	}
	return slices.Clone(n.data), nil
}

// file is an open file.
type file struct {
	fs     *FS
	n      *node
	name   string
	flag   int
	off    int64
	closed bool
}

func (h *file) Name() string { return h.name }

// start records a file operation and checks that the handle allows it.
func (h *file) start(k Kind, needWrite bool) error {
	if err := h.fs.begin(Op{Kind: k, Path: h.name}); err != nil {
		return err
	}
	if h.closed {
		return pathErr(k, h.name, fs.ErrClosed)
	}
	if needWrite && h.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return pathErr(k, h.name, syscall.EBADF)
	}
	if !needWrite && k == OpRead && h.flag&os.O_WRONLY != 0 {
		return pathErr(k, h.name, syscall.EBADF)
	}
	return nil
}

func (h *file) Read(p []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.start(OpRead, false); err != nil {
		return 0, err
	}
	n, err := h.readAt(p, h.off)
	h.off += int64(n)
	return n, err
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.start(OpRead, false); err != nil {
		return 0, err
	}
	n, err := h.readAt(p, off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (h *file) readAt(p []byte, off int64) (int, error) {
	if h.n.dir {
		return 0, pathErr(OpRead, h.name, syscall.EISDIR)
	}
	if off < 0 {
		return 0, pathErr(OpRead, h.name, syscall.EINVAL)
	}
	if off >= int64(len(h.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	return copy(p, h.n.data[off:]), nil
}

func (h *file) Write(p []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.flag&os.O_APPEND != 0 {
		h.off = int64(len(h.n.data))
	}
	n, err := h.writeAt(p, h.off)
	h.off += int64(n)
	return n, err
}

func (h *file) WriteAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.flag&os.O_APPEND != 0 {
		return 0, pathErr(OpWrite, h.name, errors.New("WriteAt on a file opened with O_APPEND"))
	}
	return h.writeAt(p, off)
}

// writeAt writes p at off; an injected fault first writes half of p.
func (h *file) writeAt(p []byte, off int64) (int, error) {
	err := h.start(OpWrite, true)
	if err != nil && (errors.Is(err, ErrCrashed) || h.closed || h.flag&(os.O_WRONLY|os.O_RDWR) == 0) {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr(OpWrite, h.name, syscall.EINVAL)
	}
	n := len(p)
	if err != nil {
		n = len(p) / 2
	}
	if end := off + int64(n); end > int64(len(h.n.data)) {
		h.n.data = append(h.n.data, make([]byte, end-int64(len(h.n.data)))...)
	}
	copy(h.n.data[off:], p[:n])
	if n > 0 {
		h.n.mtime = h.fs.tick()
	}
	return n, err
}

func (h *file) Seek(offset int64, whence int) (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = h.off
	case io.SeekEnd:
		base = int64(len(h.n.data))
	default:
		return 0, pathErr(OpRead, h.name, syscall.EINVAL)
	}
	if base+offset < 0 {
		return 0, pathErr(OpRead, h.name, syscall.EINVAL)
	}
	h.off = base + offset
	return h.off, nil
}

func (h *file) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return pathErr(OpClose, h.name, fs.ErrClosed)
	}
	// A file is closed even when the close reports an error, as with close(2).
	err := h.fs.begin(Op{Kind: OpClose, Path: h.name})
	h.closed = true
	if h.n.locker == h {
		h.n.locker = nil
	}
	return err
}

func (h *file) Stat() (fs.FileInfo, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.start(OpStat, false); err != nil {
		return nil, err
	}
	return info(path.Base(clean(h.name)), h.n), nil
}

func (h *file) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.start(OpSync, false); err != nil {
		return err
	}
	h.n.synced = slices.Clone(h.n.data)
	h.n.syncedMtime = h.n.mtime
	return nil
}

func (h *file) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.start(OpTruncate, true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr(OpTruncate, h.name, syscall.EINVAL)
	}
	if size <= int64(len(h.n.data)) {
		h.n.data = h.n.data[:size:size]
	} else {
		h.n.data = append(h.n.data, make([]byte, size-int64(len(h.n.data)))...)
	}
	h.n.mtime = h.fs.tick()
	return nil
}

// fileInfo describes a node as it is now.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime int64
}

func info(name string, n *node) fileInfo {
	return fileInfo{name: name, size: int64(len(n.data)), mode: n.mode, mtime: n.mtime}
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return time.Unix(0, i.mtime) }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }

// UnsyncedRenames returns the renames among ops that durable state may not
// make: every rename must follow a sync of the old path's directory (the
// last operation that changes anything before it), so that what moves is
// durably where it was, and be followed at once by a sync of the new
// path's directory (and of the old one's when it is another), so that the
// move itself survives a crash.
func UnsyncedRenames(ops []Op) []Op {
	var bad []Op
	// mutating is the position of the first operation from from on, in
	// the direction step, that changes anything; -1 when there is none.
	mutating := func(from, step int) int {
		for i := from; i >= 0 && i < len(ops); i += step {
			if ops[i].Mutates() {
				return i
			}
		}
		return -1
	}
	syncOf := func(at int, dir string) bool {
		return at >= 0 && ops[at].Kind == OpSyncDir && clean(ops[at].Path) == dir
	}
	for i, op := range ops {
		if op.Kind != OpRename {
			continue
		}
		oldDir, newDir := path.Dir(clean(op.Path)), path.Dir(clean(op.To))
		after := mutating(i+1, 1)
		switch {
		case !syncOf(mutating(i-1, -1), oldDir), !syncOf(after, newDir):
			bad = append(bad, op)
		case oldDir != newDir && !syncOf(mutating(after+1, 1), oldDir):
			bad = append(bad, op)
		}
	}
	return bad
}
