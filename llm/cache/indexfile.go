package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
)

// The index file (PATH.idx) is the index's table (table.go), written
// at each merge, at Close and after compaction. Its trailer holds, after
// the index's own part, this meta:
//
//	log nonce [16] | covered offset u64 | crc32c of the 4 KiB of log before it u32 |
//	records u64 | spend records u64 | damaged u64 | damaged bytes u64 |
//	spend rows u32 | per row: stage (u8 length, bytes) | model (u16 length, bytes) |
//	  responses u64 | prompt tokens u64 | completion tokens u64
//
// A spend row paid at the batch rate sets the high bit of its stage's
// length byte (stage names are shorter than 128 bytes; see appendEntry), so
// index files written before batches existed read unchanged.
//
// An open uses it only when the log's nonce matches and the log still holds
// the same bytes before the covered offset; it then reads only the log after
// that offset. A merge while the cache is written does not sync it: after a
// crash it is checked whole (checksums) like any other, and when it does
// not match the log, the log is read again.

// batchSpendBit marks a batch-rate spend row in the index file's meta.
const batchSpendBit = 0x80

func (c *Cache) indexPath() string { return IndexPath(c.path) }

// IndexPath is where the cache at path keeps its index.
func IndexPath(path string) string { return path + ".idx" }

func (c *Cache) newIndex() *index {
	if c.readOnly {
		return newIndex(tableWriter{}, 0)
	}
	return newIndex(tableWriter{fs: c.fs, path: c.indexPath()}, c.mergeAt)
}

// tailSum checksums the last 4 KiB of the log before off.
func (c *Cache) tailSum(off int64) (uint32, error) {
	from := max(int64(headerSize), off-4096)
	b := make([]byte, off-from)
	if _, err := c.f.ReadAt(b, from); err != nil {
		return 0, err
	}
	return crc32.Checksum(b, castagnoli), nil
}

// meta describes the log up to c.size for the index file.
func (c *Cache) meta() ([]byte, error) {
	sum, err := c.tailSum(c.size)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64+64*len(c.spend))
	b = append(b, c.header.nonce[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.size))
	b = binary.LittleEndian.AppendUint32(b, sum)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.stats.Records))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.spendRecords))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.stats.Damaged))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.stats.DamagedBytes))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.spend)))
	for k, s := range c.spend {
		n := byte(len(k.stage))
		if k.batch {
			n |= batchSpendBit
		}
		b = append(b, n)
		b = append(b, k.stage...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k.model)))
		b = append(b, k.model...)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Responses))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.PromptTokens))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.CompletionTokens))
	}
	return b, nil
}

// saveIndex writes the index of the log up to c.size, durably, unless the
// index file already holds it. The writer must be idle.
func (c *Cache) saveIndex() error {
	if c.size == c.indexCovers {
		return nil
	}
	if err := c.writeIndex(true); err != nil {
		return fmt.Errorf("saving the index of response cache %s: %w", c.path, err)
	}
	return nil
}

// mergeIndex moves the keys the index holds in memory into its file, when
// they are due. Only the writer (or an open) calls it; lookups go on
// meanwhile. A failure costs memory, not answers: it is logged, and tried
// again later.
func (c *Cache) mergeIndex() {
	if !c.indexDue() {
		return
	}
	if err := c.writeIndex(false); err != nil {
		c.log.Warn("response cache: could not write the index file; keeping its keys in memory", "path", c.indexPath(), "error", err)
	}
}

// indexDue says the index holds enough keys in memory to merge them.
func (c *Cache) indexDue() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.idx.full() && c.failed == nil
}

func (c *Cache) writeIndex(durable bool) error {
	c.mu.RLock()
	meta, err := c.meta()
	var t *table
	if err == nil {
		t, err = c.idx.merged(meta, durable)
	}
	c.mu.RUnlock()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.idx.install(t)
	c.indexCovers = c.size
	c.mu.Unlock()
	return nil
}

// loadIndex loads the index file when it describes this log of size bytes
// and returns the offset the log must be read from.
func (c *Cache) loadIndex(size int64) int64 {
	t, trailer, err := openTable(c.fs, c.indexPath())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Debug("response cache: not using the index file", "path", c.indexPath(), "error", err)
		}
		return int64(headerSize)
	}
	meta, err := c.idx.adopt(t, trailer)
	if err == nil {
		err = c.decodeMeta(meta, size)
	}
	if err != nil {
		c.log.Debug("response cache: not using the index file; reading the whole log", "path", c.indexPath(), "reason", err)
		c.idx.close()
		c.idx, c.spend, c.stats, c.spendRecords = c.newIndex(), map[spendKey]Spend{}, Stats{}, 0
		return int64(headerSize)
	}
	c.stats.IndexLoaded = true
	c.indexCovers = c.size
	return c.size
}

func (c *Cache) decodeMeta(b []byte, size int64) error {
	d := decoder{b: b}
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
	for rows := d.u32(); rows > 0 && !d.bad; rows-- {
		n := d.byte()
		k := spendKey{stage: string(d.bytes(int(n &^ batchSpendBit))), batch: n&batchSpendBit != 0}
		k.model = string(d.bytes(int(d.u16())))
		c.spend[k] = Spend{Responses: int64(d.u64()), PromptTokens: int64(d.u64()), CompletionTokens: int64(d.u64())}
	}
	if d.bad || len(d.b) != 0 {
		return errors.New("truncated or trailing bytes")
	}
	c.size = covered
	return nil
}
