package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// A table is an immutable open-addressing hash table of (key, loc) slots in
// a file, read with pread: it lives in the page cache, not in the heap.
// Linear probing, with a key's home slot taken from its top bits, and a
// tail of tableTail slots after the 1<<bits homes that probes run into
// instead of wrapping. A table is never changed in place: a merge writes
// the next one beside it and renames it over (tableWriter).
//
// The file:
//
//	header (tableData bytes): magic | bits u32 | used u64 | slot crc32c u32 |
//	  trailer length u64 | trailer crc32c u32 | crc32c of the header before it u32
//	slots: (1<<bits + tableTail) × (key u64, loc u64); loc 0 is an empty slot
//	trailer: what the owner keeps with the table (see index.trailer)
const (
	tableMagic = "rubricforge-cache-index/2\n"
	tableData  = 4096 // where the slots start
	slotSize   = 16
	tableTail  = 1024
	// tableMinBits is the smallest table, 16 KiB of homes; tableLoad is
	// the most a table holds in its homes before it doubles.
	tableMinBits = 10
	tableLoad    = 0.7
	probeBatch   = 8 // slots read by one pread of a lookup
	tableChunk   = 1 << 16
	// tableMaxGrow is how many times a merge doubles a table whose tail
	// overflows (keys crowding one home) before it gives up.
	tableMaxGrow = 4
)

var errTableFull = errors.New("the table's tail is full")

type table struct {
	f    fsys.File
	bits uint
	used int64 // occupied slots
}

func (t *table) slots() int64 { return 1<<t.bits + tableTail }

func (t *table) home(key uint64) int64 { return int64(key >> (64 - t.bits)) }

// bitsFor is the table size that holds n keys.
func bitsFor(n int64) uint {
	b := uint(tableMinBits)
	for float64(n) > tableLoad*float64(int64(1)<<b) {
		b++
	}
	return b
}

// get returns key's loc, or 0.
func (t *table) get(key uint64) (uint64, error) {
	var buf [probeBatch * slotSize]byte
	for p := t.home(key); p < t.slots(); p += probeBatch {
		n := min(probeBatch, t.slots()-p)
		if _, err := t.f.ReadAt(buf[:n*slotSize], tableData+p*slotSize); err != nil {
			return 0, fmt.Errorf("reading the cache index: %w", err)
		}
		for i := range n {
			k, loc := slotAt(buf[:], i)
			if loc == 0 {
				return 0, nil
			}
			if k == key {
				return loc, nil
			}
		}
	}
	return 0, nil
}

func slotAt(b []byte, i int64) (key, loc uint64) {
	return binary.LittleEndian.Uint64(b[i*slotSize:]), binary.LittleEndian.Uint64(b[i*slotSize+8:])
}

func putSlot(b []byte, i int64, key, loc uint64) {
	binary.LittleEndian.PutUint64(b[i*slotSize:], key)
	binary.LittleEndian.PutUint64(b[i*slotSize+8:], loc)
}

// each calls fn for every occupied slot, in slot order.
func (t *table) each(fn func(key, loc uint64) error) error {
	r := slotReader{t: t}
	for p := int64(0); p < t.slots(); p++ {
		k, loc, err := r.slot(p)
		if err != nil {
			return err
		}
		if loc != 0 {
			if err := fn(k, loc); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *table) close() error {
	if t == nil {
		return nil
	}
	return t.f.Close()
}

// slotReader reads a table's slots a chunk at a time.
type slotReader struct {
	t    *table
	buf  []byte
	base int64 // first slot in buf
}

func (r *slotReader) slot(p int64) (key, loc uint64, err error) {
	if p < r.base || p >= r.base+int64(len(r.buf)/slotSize) {
		n := min(tableChunk, r.t.slots()-p)
		r.buf = slicesGrow(r.buf, int(n*slotSize))
		if _, err := r.t.f.ReadAt(r.buf, tableData+p*slotSize); err != nil {
			return 0, 0, fmt.Errorf("reading the cache index: %w", err)
		}
		r.base = p
	}
	k, loc := slotAt(r.buf, p-r.base)
	return k, loc, nil
}

// openTable opens the table at path read-only and checks it whole. It
// returns its trailer.
func openTable(fs fsys.FS, path string) (*table, []byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	t, trailer, err := checkTable(f)
	if err != nil {
		_ = f.Close() // only read
		return nil, nil, err
	}
	return t, trailer, nil
}

func checkTable(f fsys.File) (*table, []byte, error) {
	hdr := make([]byte, len(tableMagic)+32)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil, nil, fmt.Errorf("reading the header: %w", err)
	}
	if !bytes.HasPrefix(hdr, []byte(tableMagic)) {
		return nil, nil, errors.New("not an index of this format")
	}
	d := decoder{b: hdr[len(tableMagic):]}
	bits, used, slotSum, tlen, tsum := uint(d.u32()), int64(d.u64()), d.u32(), int64(d.u64()), d.u32()
	if crc32.Checksum(hdr[:len(hdr)-4], castagnoli) != d.u32() || bits < tableMinBits || bits > 40 {
		return nil, nil, errors.New("damaged header")
	}
	t := &table{f: f, bits: bits, used: used}
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() != tableData+t.slots()*slotSize+tlen {
		return nil, nil, fmt.Errorf("%d bytes, want %d", st.Size(), tableData+t.slots()*slotSize+tlen)
	}
	sum := crc32.New(castagnoli)
	if _, err := io.Copy(sum, io.NewSectionReader(f, tableData, t.slots()*slotSize)); err != nil {
		return nil, nil, err
	}
	trailer := make([]byte, tlen)
	if _, err := f.ReadAt(trailer, tableData+t.slots()*slotSize); err != nil {
		return nil, nil, err
	}
	if sum.Sum32() != slotSum || crc32.Checksum(trailer, castagnoli) != tsum {
		return nil, nil, errors.New("checksum mismatch")
	}
	return t, trailer, nil
}

// tableWriter writes the table that holds old's slots and adds, which
// replace old's slot of the same key, in the file tmp beside path, and
// renames it over path. adds must be sorted by key, without duplicates.
type tableWriter struct {
	fs      fsys.FS
	path    string
	durable bool // sync the file and the directory
}

func (w tableWriter) tmp() string {
	return filepath.Join(filepath.Dir(w.path), "."+filepath.Base(w.path)+".tmp")
}

func (w tableWriter) write(old *table, adds []keyLoc, trailer []byte) (*table, error) {
	n := int64(len(adds))
	bits := uint(tableMinBits)
	if old != nil {
		n += old.used
		bits = old.bits
	}
	bits = max(bits, bitsFor(n))
	for grown := 0; ; grown++ {
		t, err := w.writeBits(old, adds, trailer, bits+uint(grown))
		if !errors.Is(err, errTableFull) || grown == tableMaxGrow {
			return t, err
		}
	}
}

func (w tableWriter) writeBits(old *table, adds []keyLoc, trailer []byte, bits uint) (*table, error) {
	tmp := w.tmp()
	if err := w.fs.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale %s: %w", tmp, err)
	}
	f, err := w.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	t := &table{f: f, bits: bits}
	if err = w.fill(t, old, adds, trailer); err == nil {
		err = w.finish(t)
	}
	if err != nil { // the new table is dropped; err says why
		_ = f.Close()
		_ = w.fs.Remove(tmp)
		return nil, err
	}
	return t, nil
}

// finish syncs and renames the written table over path.
func (w tableWriter) finish(t *table) error {
	if w.durable {
		if err := fsys.SyncFile(t.f); err != nil {
			return err
		}
	}
	if err := w.fs.Rename(w.tmp(), w.path); err != nil {
		return err
	}
	if w.durable {
		return fsys.SyncDir(w.fs, filepath.Dir(w.path))
	}
	return nil
}

// fill writes t's slots a window of homes at a time, its trailer and its
// header.
func (w tableWriter) fill(t, old *table, adds []keyLoc, trailer []byte) error {
	win := min(int64(tableChunk), 1<<t.bits)
	buf := make([]byte, win*slotSize)
	sum := crc32.New(castagnoli)
	fl := filler{t: t, old: old, adds: adds}
	if old != nil {
		fl.r = slotReader{t: old}
	}
	for lo := int64(0); lo < 1<<t.bits; lo += win {
		clear(buf)
		if err := fl.window(buf, lo); err != nil {
			return err
		}
		if err := writeSlots(t, buf, lo, sum); err != nil {
			return err
		}
	}
	tail := make([]byte, tableTail*slotSize)
	for _, kl := range fl.carry {
		if !insertSlot(tail, 0, kl, &t.used) {
			return errTableFull
		}
	}
	if err := writeSlots(t, tail, 1<<t.bits, sum); err != nil {
		return err
	}
	if _, err := t.f.WriteAt(trailer, tableData+t.slots()*slotSize); err != nil {
		return err
	}
	hdr := append([]byte(tableMagic), make([]byte, 0, 32)...)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(t.bits))
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(t.used))
	hdr = binary.LittleEndian.AppendUint32(hdr, sum.Sum32())
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(len(trailer)))
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.Checksum(trailer, castagnoli))
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.Checksum(hdr, castagnoli))
	_, err := t.f.WriteAt(hdr, 0)
	return err
}

func writeSlots(t *table, b []byte, at int64, sum io.Writer) error {
	_, _ = sum.Write(b) // a hash's Write never fails
	_, err := t.f.WriteAt(b, tableData+at*slotSize)
	return err
}

// filler places the slots of one window of homes after another. An entry
// whose probe runs past its window is carried to the start of the next:
// every slot from its home to there is taken, so a lookup finds it.
type filler struct {
	t, old *table
	r      slotReader
	adds   []keyLoc
	next   int // first add not placed
	carry  []keyLoc
}

func (fl *filler) window(buf []byte, lo int64) error {
	hi := lo + int64(len(buf)/slotSize)
	var over []keyLoc
	place := func(kl keyLoc, at int64) {
		if !insertSlot(buf, at, kl, &fl.t.used) {
			over = append(over, kl)
		}
	}
	for _, kl := range fl.carry {
		place(kl, 0)
	}
	if fl.old != nil {
		if err := fl.oldWindow(lo, hi, place); err != nil {
			return err
		}
	}
	for ; fl.next < len(fl.adds) && fl.t.home(fl.adds[fl.next].key) < hi; fl.next++ {
		kl := fl.adds[fl.next]
		place(kl, fl.t.home(kl.key)-lo)
	}
	fl.carry = over
	return nil
}

// oldWindow places the old table's slots with homes in [lo, hi): they lie
// from lo's old home up to the first empty slot after hi's.
func (fl *filler) oldWindow(lo, hi int64, place func(keyLoc, int64)) error {
	shift := fl.t.bits - fl.old.bits
	last := (hi - 1) >> shift
	for p := lo >> shift; p < fl.old.slots(); p++ {
		k, loc, err := fl.r.slot(p)
		if err != nil {
			return err
		}
		if loc == 0 {
			if p > last {
				return nil
			}
			continue
		}
		h := fl.t.home(k)
		if h < lo || h >= hi || fl.replaced(k) {
			continue
		}
		place(keyLoc{k, loc}, h-lo)
	}
	return nil
}

func (fl *filler) replaced(key uint64) bool {
	_, found := slices.BinarySearchFunc(fl.adds, key, func(kl keyLoc, k uint64) int { return cmp.Compare(kl.key, k) })
	return found
}

// insertSlot puts kl in the first empty slot of b at or after at.
func insertSlot(b []byte, at int64, kl keyLoc, used *int64) bool {
	for i := at; i < int64(len(b)/slotSize); i++ {
		if _, loc := slotAt(b, i); loc == 0 {
			putSlot(b, i, kl.key, kl.loc)
			*used++
			return true
		}
	}
	return false
}
