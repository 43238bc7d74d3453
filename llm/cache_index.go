package llm

// A loc is where an entry lies in the log: its offset in the low 48 bits,
// and what it is in the high ones. One uint64 per entry keeps the index at
// about 40 bytes per entry (see the README).
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

// index maps a key to the entries of the identities that have it: almost
// always one, so the rare keys shared by several identities (a 64-bit
// collision) live in a second map.
type index struct {
	one        map[uint64]uint64
	more       map[uint64][]uint64
	responses  int // live responses
	tombstones int
}

func newIndex(n int) *index {
	return &index{one: make(map[uint64]uint64, n), more: map[uint64][]uint64{}}
}

// candidates appends key's entries to buf.
func (ix *index) candidates(key uint64, buf []uint64) []uint64 {
	if locs, ok := ix.more[key]; ok {
		return append(buf, locs...)
	}
	if loc, ok := ix.one[key]; ok {
		return append(buf, loc)
	}
	return buf
}

// store sets key's entries to locs (copied).
func (ix *index) store(key uint64, locs []uint64) {
	switch len(locs) {
	case 0:
		delete(ix.one, key)
		delete(ix.more, key)
	case 1:
		ix.one[key] = locs[0]
		delete(ix.more, key)
	default:
		delete(ix.one, key)
		ix.more[key] = append([]uint64(nil), locs...)
	}
}

// add records loc as one more identity of key.
func (ix *index) add(key, loc uint64) {
	var buf [4]uint64
	ix.store(key, append(ix.candidates(key, buf[:0]), loc))
	ix.count(loc, 1)
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
func (ix *index) place(key, loc uint64, same func(old uint64) bool) {
	if _, ok := ix.one[key]; !ok {
		if _, ok := ix.more[key]; !ok {
			ix.one[key] = loc
			ix.count(loc, 1)
			return
		}
	}
	var buf [4]uint64
	old := ix.candidates(key, buf[:0])
	keep := make([]uint64, 0, len(old)+1)
	for _, o := range old {
		if o&locLegacy != 0 || same(o) {
			ix.count(o, -1)
			continue
		}
		keep = append(keep, o)
	}
	ix.store(key, append(keep, loc))
	ix.count(loc, 1)
}

// each calls fn for every entry.
func (ix *index) each(fn func(key, loc uint64)) {
	for k, loc := range ix.one {
		fn(k, loc)
	}
	for k, locs := range ix.more {
		for _, loc := range locs {
			fn(k, loc)
		}
	}
}

func (ix *index) len() int { return ix.responses + ix.tombstones }
