package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
)

// The log (format 2):
//
//	header: magic (24 bytes) | nonce [16] | flags u32 | crc32c(preceding 44 bytes) u32
//	entry:  sync [4] | len u32 | crc32c(len, payload) u32 | payload
//	payload: kind u8 | flags u8 | key u64 | digest [32] | body
//	  response: stage (u8 length, bytes) | model (u16 length, bytes) |
//	            prompt tokens uvarint | completion tokens uvarint | value
//	  tombstone: nothing (the identity's earlier entries are unusable)
//	  spend:     stage | model | responses uvarint | prompt uvarint | completion uvarint
//	             (usage of paid entries that compaction dropped; key and digest 0)
//
// The nonce is new at every creation and compaction, so a saved index can
// tell which log it describes. The sync bytes are never found in UTF-8 text
// (response bodies are JSON), so after a damaged entry the next one is found
// by searching for them. Integers are little-endian.
//
// Format 1 (rubricforge-cache-log/1) had entries crc32c(payload) u32 |
// len u32 | payload, payload key length u16 | key (16 hex digits) | value,
// and no identity digest; such files are read (see Cache).
const (
	cacheMagicV1 = "rubricforge-cache-log/1\n"
	cacheMagic   = "rubricforge-cache-log/2\n"
	magicPrefix  = "rubricforge-cache-log/"
	headerSize   = len(cacheMagic) + 16 + 4 + 4

	entryHeader   = 12
	payloadPrefix = 1 + 1 + 8 + 32
	maxEntry      = 1 << 30
	// maxGroupBytes bounds one group commit's write.
	maxGroupBytes = 8 << 20

	entryHeaderV1 = 8
)

// entrySync starts every entry: bytes that UTF-8 text never holds.
const entrySync = "\xff\xc1\xc0\xf5"

// Record kinds.
const (
	kindResponse  byte = 1
	kindTombstone byte = 2
	kindSpend     byte = 3
)

// Record flags.
const (
	// flagCopied: the response was not paid for by this cache (copied from
	// a base, or claimed from a format-1 entry); its usage is not spend.
	flagCopied byte = 1 << iota
	// flagLegacy: converted from a format-1 entry, which had no digest; it
	// answers the first identity with its key that asks for it.
	flagLegacy
	// flagBatch: the response (or, on a spend record, the usage) was paid
	// at the provider's batch rate (Usage.Batch).
	flagBatch
)

// Header flags.
const (
	// headerConverted: the log was converted from format 1, whose entries
	// carried no usage, so Spent cannot cover what was spent before.
	headerConverted uint32 = 1 << iota
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Usage is what one answered request cost, stored with its cache entry.
type Usage struct {
	Stage            string
	Model            string
	PromptTokens     int64
	CompletionTokens int64
	// Batch: answered through the provider's batch API, so priced at the
	// batch rate (Price.BatchRate). Stored as the entry's flagBatch.
	Batch bool
}

// usageFlags are the record flags that carry u.
func usageFlags(u Usage) byte {
	if u.Batch {
		return flagBatch
	}
	return 0
}

// record is one decoded log entry.
type record struct {
	kind      byte
	flags     byte
	key       uint64
	digest    [32]byte
	usage     Usage
	responses int64  // kindSpend only
	value     []byte // kindResponse only; aliases the read buffer
}

func (r *record) paid() bool { return r.kind == kindResponse && r.flags&(flagCopied|flagLegacy) == 0 }

// appendEntry appends r, framed and checksummed, to dst.
func appendEntry(dst []byte, r *record) ([]byte, error) {
	if len(r.usage.Stage) >= batchSpendBit || len(r.usage.Model) > 65535 {
		return dst, fmt.Errorf("stage or model name too long (%d, %d bytes)", len(r.usage.Stage), len(r.usage.Model))
	}
	start := len(dst)
	dst = append(dst, entrySync...)
	dst = append(dst, make([]byte, 8)...)
	dst = append(dst, r.kind, r.flags)
	dst = binary.LittleEndian.AppendUint64(dst, r.key)
	dst = append(dst, r.digest[:]...)
	switch r.kind {
	case kindResponse, kindSpend:
		dst = append(dst, byte(len(r.usage.Stage)))
		dst = append(dst, r.usage.Stage...)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.usage.Model)))
		dst = append(dst, r.usage.Model...)
		if r.kind == kindSpend {
			dst = binary.AppendUvarint(dst, uint64(r.responses))
		}
		dst = binary.AppendUvarint(dst, uint64(max(r.usage.PromptTokens, 0)))
		dst = binary.AppendUvarint(dst, uint64(max(r.usage.CompletionTokens, 0)))
		dst = append(dst, r.value...)
	}
	n := len(dst) - start - entryHeader
	if n > maxEntry {
		return dst[:start], fmt.Errorf("entry of %d bytes is too large", n)
	}
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(n))
	binary.LittleEndian.PutUint32(dst[start+8:], entrySum(dst[start:]))
	return dst, nil
}

var errBadEntry = errors.New("damaged entry")

// errV1Key marks a whole format-1 entry whose key is not a CacheKey; it is
// skipped.
var errV1Key = errors.New("format-1 entry with a key that is not 16 hex digits")

// entryLen checks an entry header and returns its payload length.
func entryLen(hdr []byte) (int, error) {
	if string(hdr[:4]) != entrySync {
		return 0, fmt.Errorf("%w: no entry marker", errBadEntry)
	}
	n := binary.LittleEndian.Uint32(hdr[4:8])
	if n < payloadPrefix || n > maxEntry {
		return 0, fmt.Errorf("%w: length %d", errBadEntry, n)
	}
	return int(n), nil
}

// checkEntry verifies the checksum of an entry whose header and payload
// are in e.
func checkEntry(e []byte) error {
	if entrySum(e) != binary.LittleEndian.Uint32(e[8:12]) {
		return fmt.Errorf("%w: checksum mismatch", errBadEntry)
	}
	return nil
}

// entrySum is the checksum of an entry: its length field and payload.
func entrySum(e []byte) uint32 {
	return crc32.Update(crc32.Checksum(e[4:8], castagnoli), castagnoli, e[entryHeader:])
}

// decodePayload decodes a checksummed payload. value aliases p.
func decodePayload(p []byte) (record, error) {
	var r record
	if len(p) < payloadPrefix {
		return r, fmt.Errorf("%w: payload of %d bytes", errBadEntry, len(p))
	}
	r.kind, r.flags = p[0], p[1]
	r.usage.Batch = r.flags&flagBatch != 0
	r.key = binary.LittleEndian.Uint64(p[2:])
	copy(r.digest[:], p[10:payloadPrefix])
	rest := p[payloadPrefix:]
	switch r.kind {
	case kindTombstone:
		if len(rest) != 0 {
			return r, fmt.Errorf("%w: tombstone with a body", errBadEntry)
		}
		return r, nil
	case kindResponse, kindSpend:
	default:
		return r, fmt.Errorf("%w: unknown kind %d", errBadEntry, r.kind)
	}
	d := decoder{b: rest}
	r.usage.Stage = string(d.bytes(int(d.byte())))
	r.usage.Model = string(d.bytes(int(d.u16())))
	if r.kind == kindSpend {
		r.responses = int64(d.uvarint())
	}
	r.usage.PromptTokens = int64(d.uvarint())
	r.usage.CompletionTokens = int64(d.uvarint())
	if d.bad {
		return r, fmt.Errorf("%w: truncated body", errBadEntry)
	}
	if r.kind == kindSpend && len(d.b) != 0 {
		return r, fmt.Errorf("%w: spend record with trailing bytes", errBadEntry)
	}
	r.value = d.b
	return r, nil
}

// decoder reads the fields of a payload, remembering the first overrun.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) bytes(n int) []byte {
	if d.bad || n > len(d.b) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if v := d.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if v := d.bytes(2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if v := d.bytes(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if v := d.bytes(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > 1<<62 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

// logHeader is the decoded header of a format-2 log.
type logHeader struct {
	nonce [16]byte
	flags uint32
}

func (h logHeader) encode() []byte {
	b := make([]byte, 0, headerSize)
	b = append(b, cacheMagic...)
	b = append(b, h.nonce[:]...)
	b = binary.LittleEndian.AppendUint32(b, h.flags)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readHeader reads the start of a log of size bytes and returns its format
// (1 or 2), and the header of a format-2 log. A file too short for a header
// whose bytes are a prefix of one is format 0: a creation cut short.
func readHeader(r io.ReaderAt, size int64, path string) (int, logHeader, error) {
	var h logHeader
	b := make([]byte, min(size, int64(headerSize)))
	if _, err := r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, h, fmt.Errorf("reading response cache %s: %w", path, err)
	}
	switch {
	case len(b) < headerSize && bytes.HasPrefix([]byte(cacheMagic), b[:min(len(b), len(cacheMagic))]):
		return 0, h, nil
	case bytes.HasPrefix(b, []byte(cacheMagicV1)):
		return 1, h, nil
	case bytes.HasPrefix(b, []byte(cacheMagic)):
		if crc32.Checksum(b[:headerSize-4], castagnoli) != binary.LittleEndian.Uint32(b[headerSize-4:]) {
			return 0, h, fmt.Errorf("opening response cache %s: its header is damaged (remove the file to start a new cache; every answer in it will be asked again)", path)
		}
		copy(h.nonce[:], b[len(cacheMagic):])
		h.flags = binary.LittleEndian.Uint32(b[len(cacheMagic)+16:])
		return 2, h, nil
	case bytes.HasPrefix(b, []byte(magicPrefix)):
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			end = len(b)
		}
		return 0, h, fmt.Errorf("opening response cache %s: format %q was written by a newer rubricforge; use that version, or point --cache elsewhere", path, b[len(magicPrefix):end])
	default:
		return 0, h, fmt.Errorf("opening response cache %s: not a rubricforge cache log (remove it to start a new cache)", path)
	}
}

// decodeV1Entry decodes a format-1 entry (header and payload in e) into a
// legacy record. Its key must be 16 hex digits, as CacheKey wrote them.
func decodeV1Entry(e []byte) (record, error) {
	var r record
	if len(e) < entryHeaderV1+2 {
		return r, errBadEntry
	}
	payload := e[entryHeaderV1:]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(e) {
		return r, fmt.Errorf("%w: checksum mismatch", errBadEntry)
	}
	klen := int(binary.LittleEndian.Uint16(payload))
	if 2+klen > len(payload) {
		return r, fmt.Errorf("%w: key of %d bytes", errBadEntry, klen)
	}
	key, err := strconv.ParseUint(string(payload[2:2+klen]), 16, 64)
	if err != nil || klen != 16 {
		return r, fmt.Errorf("%w: %q", errV1Key, payload[2:2+klen])
	}
	r.kind, r.flags, r.key = kindResponse, flagLegacy|flagCopied, key
	r.value = payload[2+klen:]
	return r, nil
}
