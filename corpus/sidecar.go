package corpus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// A shard's id list (shards/part-N.ids) holds the ids of its rows, so a
// resume learns which problems are done without reading the shards. It is
// written and renamed into place before its shard, and its checksum is in
// the shard's manifest entry. Layout:
//
//	"RFIDS" 0x01              magic and version
//	8 bytes                   xxhash64 of the shard's bytes, little-endian
//	uvarint                   number of ids
//	uvarint length, bytes     each id, in row order (sorted)
//	8 bytes                   xxhash64 of everything before, little-endian
const idsMagic = "RFIDS\x01"

func sidecarName(idx int) string { return fmt.Sprintf("part-%05d.ids", idx) }

// encodeIDs builds the id list of a shard with hash shardHash (16 hex
// digits) and returns it with its checksum (16 hex digits).
func encodeIDs(shardHash string, ids []string) (data []byte, sum string, err error) {
	sh, err := strconv.ParseUint(shardHash, 16, 64)
	if err != nil {
		return nil, "", fmt.Errorf("encoding id list: bad shard hash %q", shardHash)
	}
	size := len(idsMagic) + 8 + binary.MaxVarintLen64 + 8
	for _, id := range ids {
		size += binary.MaxVarintLen64 + len(id)
	}
	b := make([]byte, 0, size)
	b = append(b, idsMagic...)
	b = binary.LittleEndian.AppendUint64(b, sh)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
	}
	s := xxhash.Sum64(b)
	return binary.LittleEndian.AppendUint64(b, s), hashString(s), nil
}

// idList is a decoded id list.
type idList struct {
	shardHash string
	sum       string
	ids       []string
}

var errIDsShort = errors.New("id list ends early")

// decodeIDs parses an id list, checking its checksum and that every length
// fits in what remains, so a damaged file is an error, never a panic or a
// large allocation.
func decodeIDs(data []byte) (idList, error) {
	head := len(idsMagic) + 8
	if len(data) < head+1+8 || string(data[:len(idsMagic)]) != idsMagic {
		return idList{}, errors.New("not an id list (bad magic or too short)")
	}
	body, tail := data[:len(data)-8], data[len(data)-8:]
	sum := xxhash.Sum64(body)
	if sum != binary.LittleEndian.Uint64(tail) {
		return idList{}, errors.New("id list checksum mismatch")
	}
	l := idList{shardHash: hashString(binary.LittleEndian.Uint64(body[len(idsMagic):head])), sum: hashString(sum)}
	rest := body[head:]
	n, k := binary.Uvarint(rest)
	if k <= 0 {
		return idList{}, errIDsShort
	}
	rest = rest[k:]
	if n > uint64(len(rest)) {
		return idList{}, fmt.Errorf("id list claims %d ids in %d bytes", n, len(rest))
	}
	l.ids = make([]string, 0, n)
	for range n {
		size, k := binary.Uvarint(rest)
		if k <= 0 || size > uint64(len(rest)-k) {
			return idList{}, errIDsShort
		}
		l.ids = append(l.ids, string(rest[k:k+int(size)]))
		rest = rest[k+int(size):]
	}
	if len(rest) != 0 {
		return idList{}, fmt.Errorf("id list has %d bytes after its last id", len(rest))
	}
	return l, nil
}

// matches reports why the list does not belong to the shard entry s, or "".
func (l idList) matches(s ShardInfo) string {
	switch {
	case l.shardHash != s.XXHash64:
		return fmt.Sprintf("it was written for a shard with xxhash64 %s, the manifest lists %s", l.shardHash, s.XXHash64)
	case s.IDsXXHash64 != "" && l.sum != s.IDsXXHash64:
		return fmt.Sprintf("its checksum is %s, the manifest lists %s", l.sum, s.IDsXXHash64)
	case int64(len(l.ids)) != s.Rows:
		return fmt.Sprintf("it holds %d ids, the shard %d rows", len(l.ids), s.Rows)
	case l.ids[0] != s.FirstID || l.ids[len(l.ids)-1] != s.LastID:
		return fmt.Sprintf("its ids run %s..%s, the shard's %s..%s", l.ids[0], l.ids[len(l.ids)-1], s.FirstID, s.LastID)
	case !slices.IsSorted(l.ids):
		return "its ids are not sorted"
	}
	return ""
}
