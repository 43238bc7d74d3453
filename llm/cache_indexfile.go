package llm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// The saved index (PATH.idx), written atomically at Close and after
// compaction:
//
//	magic | log nonce [16] | covered offset u64 | crc32c of the 4 KiB of log before it u32 |
//	records u64 | spend records u64 | damaged u64 | damaged bytes u64 |
//	n u64 | n × (key u64, loc u64) |
//	spend rows u32 | per row: stage (u8 length, bytes) | model (u16 length, bytes) |
//	  responses u64 | prompt tokens u64 | completion tokens u64 |
//	crc32c of everything before u32
//
// An open uses it only when the log's nonce matches and the log still holds
// the same bytes before the covered offset; it then reads only the log after
// that offset.
const indexMagic = "rubricforge-cache-index/1\n"

func (c *Cache) indexPath() string { return CacheIndexPath(c.path) }

// CacheIndexPath is where the cache at path saves its index.
func CacheIndexPath(path string) string { return path + ".idx" }

// tailSum checksums the last 4 KiB of the log before off.
func (c *Cache) tailSum(off int64) (uint32, error) {
	from := max(int64(headerSize), off-4096)
	b := make([]byte, off-from)
	if _, err := c.f.ReadAt(b, from); err != nil {
		return 0, err
	}
	return crc32.Checksum(b, castagnoli), nil
}

// saveIndex writes the index of the log up to c.size. The writer must be
// idle.
func (c *Cache) saveIndex() error {
	sum, err := c.tailSum(c.size)
	if err != nil {
		return fmt.Errorf("saving the index of response cache %s: %w", c.path, err)
	}
	n := c.idx.len()
	b := make([]byte, 0, len(indexMagic)+64+16*n+64*len(c.spend))
	b = append(b, indexMagic...)
	b = append(b, c.header.nonce[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.size))
	b = binary.LittleEndian.AppendUint32(b, sum)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.stats.Records))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.spendRecords))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.stats.Damaged))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.stats.DamagedBytes))
	b = binary.LittleEndian.AppendUint64(b, uint64(n))
	c.idx.each(func(key, loc uint64) {
		b = binary.LittleEndian.AppendUint64(b, key)
		b = binary.LittleEndian.AppendUint64(b, loc)
	})
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.spend)))
	for k, s := range c.spend {
		b = append(b, byte(len(k.stage)))
		b = append(b, k.stage...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k.model)))
		b = append(b, k.model...)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Responses))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.PromptTokens))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.CompletionTokens))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if err := fsys.WriteFileAtomic(c.fs, c.indexPath(), b, 0o600); err != nil {
		return fmt.Errorf("saving the index of response cache %s: %w", c.path, err)
	}
	return nil
}

// loadIndex loads the saved index when it describes this log of size bytes
// and returns the offset the log must be read from.
func (c *Cache) loadIndex(size int64) int64 {
	b, err := fsys.ReadFile(c.fs, c.indexPath())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Debug("response cache: not using the saved index", "path", c.indexPath(), "error", err)
		}
		return int64(headerSize)
	}
	if err := c.decodeIndex(b, size); err != nil {
		c.log.Debug("response cache: not using the saved index; reading the whole log", "path", c.indexPath(), "reason", err)
		c.idx, c.spend, c.stats, c.spendRecords = newIndex(0), map[spendKey]Spend{}, CacheStats{}, 0
		return int64(headerSize)
	}
	c.stats.IndexLoaded = true
	return c.size
}

func (c *Cache) decodeIndex(b []byte, size int64) error {
	if len(b) < len(indexMagic)+4 || !bytes.HasPrefix(b, []byte(indexMagic)) {
		return errors.New("not an index of this format")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return errors.New("checksum mismatch")
	}
	d := decoder{b: body[len(indexMagic):]}
	if !bytes.Equal(d.bytes(16), c.header.nonce[:]) {
		return errors.New("it describes another log (compacted or replaced since)")
	}
	covered := int64(d.u64())
	sum := d.u32()
	if d.bad || covered < int64(headerSize) || covered > size {
		return fmt.Errorf("it covers %d bytes of a log of %d", covered, size)
	}
	if got, err := c.tailSum(covered); err != nil || got != sum {
		return errors.New("the log's bytes before the covered offset changed")
	}
	c.stats.Records = int64(d.u64())
	c.spendRecords = int64(d.u64())
	c.stats.Damaged = int64(d.u64())
	c.stats.DamagedBytes = int64(d.u64())
	n := d.u64()
	if d.bad || n > uint64(len(d.b))/16 {
		return errors.New("truncated")
	}
	c.idx = newIndex(int(n))
	for range n {
		key, loc := d.u64(), d.u64()
		if locOff(loc) >= covered {
			return fmt.Errorf("an entry at %d lies past the covered offset %d", locOff(loc), covered)
		}
		c.idx.add(key, loc)
	}
	for rows := d.u32(); rows > 0 && !d.bad; rows-- {
		k := spendKey{stage: string(d.bytes(int(d.byte())))}
		k.model = string(d.bytes(int(d.u16())))
		c.spend[k] = Spend{Responses: int64(d.u64()), PromptTokens: int64(d.u64()), CompletionTokens: int64(d.u64())}
	}
	if d.bad || len(d.b) != 0 {
		return errors.New("truncated or trailing bytes")
	}
	c.size = covered
	return nil
}
