package cache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// scan reads the log from start to size into the index. A damaged entry
// followed by whole ones is skipped and counted; a damaged end (a torn
// tail) is cut off, except in a base, which is never written.
func (c *Cache) scan(start, size int64) error {
	c.stats.ScannedBytes = size - start
	var damaged, damagedBytes int64
	off := start
	r := bufio.NewReaderSize(io.NewSectionReader(c.f, off, size-off), 1<<20)
	var buf []byte
	for off < size {
		var rec record
		var err error
		buf, rec, err = readEntry(r, buf, size-off)
		if err == nil {
			if err := c.apply(&rec, off); err != nil {
				return fmt.Errorf("reading response cache %s: %w", c.path, err)
			}
			off += int64(len(buf))
			c.size = off
			c.mergeIndex()
			continue
		}
		if !errors.Is(err, errBadEntry) {
			return fmt.Errorf("reading response cache %s: %w", c.path, err)
		}
		next, found, err := c.findEntry(off+1, size)
		if err != nil {
			return fmt.Errorf("reading response cache %s: %w", c.path, err)
		}
		if !found {
			return c.cutTail(off, size)
		}
		// Counted at once: a merge of the index during this scan
		// carries the counts with it.
		damaged++
		damagedBytes += next - off
		c.stats.Damaged++
		c.stats.DamagedBytes += next - off
		off = next
		r.Reset(io.NewSectionReader(c.f, off, size-off))
	}
	c.size = off
	if damaged > 0 {
		c.log.Warn("response cache: skipped damaged entries in the middle of the log; the entries after them are kept, and the requests they held will be asked again",
			"path", c.path, "entries", damaged, "bytes", damagedBytes)
	}
	return nil
}

// readEntry reads one whole, checksummed entry of at most left bytes
// into buf. A short or damaged entry is an errBadEntry.
func readEntry(r io.Reader, buf []byte, left int64) ([]byte, record, error) {
	buf = slicesGrow(buf[:0], entryHeader)
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, record{}, badRead(err)
	}
	n, err := entryLen(buf)
	if err != nil {
		return buf, record{}, err
	}
	if int64(entryHeader+n) > left {
		return buf, record{}, fmt.Errorf("%w: entry runs past the end of the log", errBadEntry)
	}
	buf = slicesGrow(buf, entryHeader+n)
	if _, err := io.ReadFull(r, buf[entryHeader:]); err != nil {
		return buf, record{}, badRead(err)
	}
	if err := checkEntry(buf); err != nil {
		return buf, record{}, err
	}
	rec, err := decodePayload(buf[entryHeader:])
	return buf, rec, err
}

// slicesGrow returns buf resized to n bytes, keeping its contents.
func slicesGrow(buf []byte, n int) []byte {
	if cap(buf) < n {
		nb := make([]byte, n, max(n, 2*cap(buf)))
		copy(nb, buf)
		return nb
	}
	return buf[:n]
}

func badRead(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the log ends inside it", errBadEntry)
	}
	return err
}

// findEntry returns the offset of the first whole entry at or after from.
func (c *Cache) findEntry(from, size int64) (int64, bool, error) {
	const chunk = 1 << 20
	buf := make([]byte, chunk+len(entrySync)-1)
	var ebuf []byte
	for pos := from; pos < size; pos += chunk {
		n, err := c.f.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		for i := 0; ; {
			j := bytes.Index(buf[i:n], []byte(entrySync))
			if j < 0 || i+j >= chunk {
				break
			}
			at := pos + int64(i+j)
			var rerr error
			ebuf, _, rerr = readEntry(io.NewSectionReader(c.f, at, size-at), ebuf, size-at)
			if rerr == nil {
				return at, true, nil
			}
			if !errors.Is(rerr, errBadEntry) {
				return 0, false, rerr
			}
			i += j + 1
		}
	}
	return 0, false, nil
}

// cutTail ends the log at off, where only damaged bytes follow.
func (c *Cache) cutTail(off, size int64) error {
	c.size = off
	if c.readOnly {
		return nil
	}
	if err := c.f.Truncate(off); err != nil {
		return fmt.Errorf("opening response cache %s: cutting off a torn tail: %w", c.path, err)
	}
	if err := fsys.SyncFile(c.f); err != nil {
		return fmt.Errorf("opening response cache %s: cutting off a torn tail: %w", c.path, err)
	}
	c.stats.TornBytes = size - off
	return nil
}

// scanV1 reads a format-1 log into the index, as legacy entries. Format 1
// has no entry marker to find the next entry by, so reading stops at the
// first damaged one, as it always did.
func (c *Cache) scanV1(size int64) error {
	off := int64(len(cacheMagicV1))
	c.stats.ScannedBytes = size
	r := bufio.NewReaderSize(io.NewSectionReader(c.f, off, size-off), 1<<20)
	var buf []byte
	for off+entryHeaderV1 <= size {
		buf = slicesGrow(buf[:0], entryHeaderV1)
		if _, err := io.ReadFull(r, buf); err != nil {
			break
		}
		n := int64(binary.LittleEndian.Uint32(buf[4:]))
		if n < 2 || n > maxEntry || off+entryHeaderV1+n > size {
			break
		}
		buf = slicesGrow(buf, entryHeaderV1+int(n))
		if _, err := io.ReadFull(r, buf[entryHeaderV1:]); err != nil {
			break
		}
		rec, err := decodeV1Entry(buf)
		if err == nil {
			if err := c.apply(&rec, off); err != nil {
				return fmt.Errorf("reading response cache %s: %w", c.path, err)
			}
		} else if !errors.Is(err, errV1Key) {
			break
		}
		off += entryHeaderV1 + n
	}
	c.size = off
	return nil
}

// readRecord reads and checks the entry at loc.
func (c *Cache) readRecord(loc uint64) (record, error) {
	off := locOff(loc)
	hdr := entryHeader
	if c.format == 1 {
		hdr = entryHeaderV1
	}
	buf := make([]byte, 4096)
	n, err := c.f.ReadAt(buf, off)
	if n < hdr {
		if err == nil || errors.Is(err, io.EOF) {
			return record{}, fmt.Errorf("%w: the log ends inside it", errBadEntry)
		}
		return record{}, err
	}
	var plen int
	if c.format == 1 {
		plen = int(binary.LittleEndian.Uint32(buf[4:]))
		if plen > maxEntry {
			return record{}, fmt.Errorf("%w: length %d", errBadEntry, plen)
		}
	} else if plen, err = entryLen(buf[:hdr]); err != nil {
		return record{}, err
	}
	if total := hdr + plen; total <= n {
		buf = buf[:total]
	} else {
		buf = slicesGrow(buf[:n], total)
		if _, err := c.f.ReadAt(buf[n:], off+int64(n)); err != nil {
			return record{}, badRead(err)
		}
	}
	if c.format == 1 {
		return decodeV1Entry(buf)
	}
	if err := checkEntry(buf); err != nil {
		return record{}, err
	}
	return decodePayload(buf[hdr:])
}
