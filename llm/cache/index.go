package cache

import (
	"cmp"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
)

// A loc is where an entry lies in the log: its offset in the low 48 bits,
// and what it is in the high ones. 0 is no entry (the log's header lies
// there).
const (
	locOffset    uint64 = 1<<48 - 1
	locTombstone uint64 = 1 << 62
	locLegacy    uint64 = 1 << 61
)

func makeLoc(off int64, r *record) uint64 {
	loc := uint64(off) & locOffset
	if r.kind == kindTombstone {
		loc |= locTombstone
	}
	if r.flags&flagLegacy != 0 {
		loc |= locLegacy
	}
	return loc
}

func locOff(loc uint64) int64 { return int64(loc & locOffset) }

// defaultMergeAt is how many keys the index holds in memory before it
// merges them into its table file: about 2 MB of heap.
const defaultMergeAt = 1 << 16

// index maps a key to the entries of the identities that have it: almost
// always one. Most keys live in a table file read with pread (table.go),
// so the heap holds only the keys placed since the last merge (delta, at most
// mergeAt of them) and the rare keys shared by several identities (a 64-bit
// collision, more), which are kept in the table's trailer. A key's entries
// are those of the first of more, delta and the table that has it.
type index struct {
	tab     *table // nil: none yet
	w       tableWriter
	delta   map[uint64]uint64
	more    map[uint64][]uint64
	mergeAt int // 0: never merge (a read-only base keeps its keys in memory)
	retryAt int // after a failed merge: the delta size to try again at

	responses  int // live responses
	tombstones int
}

func newIndex(w tableWriter, mergeAt int) *index {
	return &index{w: w, mergeAt: mergeAt, delta: map[uint64]uint64{}, more: map[uint64][]uint64{}}
}

// candidates appends key's entries to buf.
func (ix *index) candidates(key uint64, buf []uint64) ([]uint64, error) {
	if locs, ok := ix.more[key]; ok {
		return append(buf, locs...), nil
	}
	if loc, ok := ix.delta[key]; ok {
		return append(buf, loc), nil
	}
	if ix.tab == nil {
		return buf, nil
	}
	loc, err := ix.tab.get(key)
	if err != nil || loc == 0 {
		return buf, err
	}
	return append(buf, loc), nil
}

// store sets key's entries to locs (copied; at least one).
func (ix *index) store(key uint64, locs []uint64) {
	if len(locs) == 1 {
		ix.delta[key] = locs[0]
		delete(ix.more, key)
		return
	}
	delete(ix.delta, key)
	ix.more[key] = slices.Clone(locs)
}

// add records loc as one more identity of key.
func (ix *index) add(key, loc uint64) error {
	var buf [4]uint64
	old, err := ix.candidates(key, buf[:0])
	if err != nil {
		return err
	}
	ix.store(key, append(old, loc))
	ix.count(loc, 1)
	return nil
}

func (ix *index) count(loc uint64, d int) {
	if loc&locTombstone != 0 {
		ix.tombstones += d
	} else {
		ix.responses += d
	}
}

// place records loc as the entry of key's identity that same recognises,
// replacing that identity's earlier entry and any legacy entry of key.
func (ix *index) place(key, loc uint64, same func(old uint64) bool) error {
	var buf [4]uint64
	old, err := ix.candidates(key, buf[:0])
	if err != nil {
		return err
	}
	keep := old[:0]
	for _, o := range old {
		if o&locLegacy != 0 || same(o) {
			ix.count(o, -1)
			continue
		}
		keep = append(keep, o)
	}
	ix.store(key, append(keep, loc))
	ix.count(loc, 1)
	return nil
}

// each calls fn for every entry.
func (ix *index) each(fn func(key, loc uint64)) error {
	if ix.tab != nil {
		err := ix.tab.each(func(k, loc uint64) error {
			if _, ok := ix.delta[k]; !ok {
				if _, ok := ix.more[k]; !ok {
					fn(k, loc)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for k, loc := range ix.delta {
		fn(k, loc)
	}
	for k, locs := range ix.more {
		for _, loc := range locs {
			fn(k, loc)
		}
	}
	return nil
}

func (ix *index) len() int { return ix.responses + ix.tombstones }

// full reports whether the keys in memory are due to be merged.
func (ix *index) full() bool {
	return ix.mergeAt > 0 && len(ix.delta) >= max(ix.mergeAt, ix.retryAt)
}

// merged writes the table that holds every key, with meta in its trailer.
// The index is unchanged until install.
func (ix *index) merged(meta []byte, durable bool) (*table, error) {
	adds := make([]keyLoc, 0, len(ix.delta))
	for k, loc := range ix.delta {
		adds = append(adds, keyLoc{k, loc})
	}
	slices.SortFunc(adds, func(a, b keyLoc) int { return cmp.Compare(a.key, b.key) })
	w := ix.w
	w.durable = durable
	t, err := w.write(ix.tab, adds, ix.trailer(meta))
	if err != nil {
		ix.retryAt = len(ix.delta) + ix.mergeAt
	}
	return t, err
}

// install makes t, written by merged, the index's table.
func (ix *index) install(t *table) {
	_ = ix.tab.close() // the table is only read once written and synced
	ix.tab = t
	ix.delta = map[uint64]uint64{}
	ix.retryAt = 0
}

func (ix *index) close() {
	if ix == nil {
		return
	}
	_ = ix.tab.close() // likewise
	ix.tab = nil
}

// trailer is the counts, the keys shared by several identities, then meta.
func (ix *index) trailer(meta []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(ix.responses))
	b = binary.LittleEndian.AppendUint64(b, uint64(ix.tombstones))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.more)))
	for _, k := range slices.Sorted(maps.Keys(ix.more)) {
		b = binary.LittleEndian.AppendUint64(b, k)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.more[k])))
		for _, loc := range ix.more[k] {
			b = binary.LittleEndian.AppendUint64(b, loc)
		}
	}
	return append(b, meta...)
}

// adopt takes t, a table read back with its trailer, and returns the meta
// of the trailer.
func (ix *index) adopt(t *table, trailer []byte) ([]byte, error) {
	d := decoder{b: trailer}
	responses, tombstones := int(d.u64()), int(d.u64())
	more := map[uint64][]uint64{}
	for n := d.u32(); n > 0 && !d.bad; n-- {
		k, m := d.u64(), d.u32()
		if uint64(m) > uint64(len(d.b))/8 {
			return nil, errors.New("truncated")
		}
		for range m {
			more[k] = append(more[k], d.u64())
		}
	}
	if d.bad {
		return nil, errors.New("truncated")
	}
	ix.install(t)
	ix.more, ix.responses, ix.tombstones = more, responses, tombstones
	return d.b, nil
}
