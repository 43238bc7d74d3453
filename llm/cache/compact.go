package cache

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// CompactResult says what a compaction kept and dropped.
type CompactResult struct {
	RecordsBefore, RecordsAfter int64 // entries of the log
	BytesBefore, BytesAfter     int64
	Entries, Tombstones         int   // kept
	Dropped                     int64 // replaced or invalidated responses, tombstones answered since
	Damaged                     int64 // damaged entries dropped, found by this compaction or skipped by opens before it
}

// Compact compacts the cache at path (see Cache.Compact). It fails if
// a run holds the cache.
func Compact(path string, opts ...Option) (CompactResult, error) {
	c, err := Open(path, opts...)
	if err != nil {
		return CompactResult{}, err
	}
	res, err := c.Compact()
	return res, errors.Join(err, c.Close())
}

// Compact rewrites the log with only its live entries: each identity's
// latest response or tombstone. Replaced and invalidated responses and
// damaged entries are dropped; the usage of dropped paid responses is kept
// as spend records, so Spent is unchanged. It is crash-safe: the new log is
// written aside, synced, renamed over the old one and the directory synced,
// so a crash leaves one whole log or the other. Gets and Puts wait while it
// runs.
func (c *Cache) Compact() (CompactResult, error) {
	if c.readOnly {
		return CompactResult{}, fmt.Errorf("compacting response cache %s: it is open read-only", c.path)
	}
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return CompactResult{}, fmt.Errorf("compacting response cache %s: the cache is closed", c.path)
	}
	c.mu.RLock()
	failed := c.failed
	c.mu.RUnlock()
	if failed != nil {
		return CompactResult{}, failed
	}
	var res CompactResult
	done := make(chan error, 1)
	c.puts <- &putRequest{err: done, run: func() error {
		var err error
		res, err = c.rewrite(c.header.flags)
		return err
	}}
	if err := <-done; err != nil {
		return res, fmt.Errorf("compacting response cache %s: %w", c.path, err)
	}
	return res, nil
}

func (c *Cache) compactPath() string {
	return filepath.Join(filepath.Dir(c.path), "."+filepath.Base(c.path)+".compact")
}

// removeStaleCompaction removes what a compaction cut short left behind.
func (c *Cache) removeStaleCompaction() error {
	if err := c.fs.Remove(c.compactPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing an unfinished compaction of %s: %w", c.path, err)
	}
	return nil
}

type keyLoc struct{ key, loc uint64 }

// rewrite writes the live entries into a new log with header flags and
// switches to it. No write may run meanwhile.
func (c *Cache) rewrite(flags uint32) (res CompactResult, err error) {
	res.RecordsBefore, res.BytesBefore = c.stats.Records, c.size
	entriesBefore, damagedBefore := c.stats.Records-c.spendRecords, c.stats.Damaged
	if err := c.removeStaleCompaction(); err != nil {
		return res, err
	}
	tmp := c.compactPath()
	f, err := c.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return res, err
	}
	renamed := false
	idx := c.newIndex()
	defer func() {
		if !renamed { // the new log is dropped: the old one stays in use
			idx.close()
			_ = f.Close()
			_ = c.fs.Remove(tmp)
		}
	}()
	// Lock before the rename, so no one can lock the new log meanwhile.
	if held, err := c.fs.Lock(f); err != nil || held {
		return res, fmt.Errorf("locking %s: %w (held by another: %v)", tmp, err, held)
	}
	hdr := logHeader{nonce: newNonce(), flags: flags}
	kept, size, damaged, err := c.copyLive(f, hdr, idx)
	if err != nil {
		return res, err
	}
	if err := fsys.SyncFile(f); err != nil {
		return res, err
	}
	if err := c.fs.Rename(tmp, c.path); err != nil {
		return res, err
	}
	renamed = true
	c.mu.Lock()
	old, oldIdx := c.f, c.idx
	c.f, c.idx, c.size, c.header, c.format = f, idx, size, hdr, 2
	c.synced = size // synced before the rename
	c.indexCovers = 0
	c.stats.Records, c.spendRecords = int64(idx.len())+kept, kept
	c.stats.Damaged, c.stats.DamagedBytes = 0, 0
	c.mu.Unlock()
	oldIdx.close()
	_ = old.Close() // replaced: the new log, synced before the rename, holds everything it had
	if err := fsys.SyncDir(c.fs, filepath.Dir(c.path)); err != nil {
		err = fmt.Errorf("%w: %w", ErrWrite, err)
		c.mu.Lock()
		c.failed = err
		c.mu.Unlock()
		return res, err
	}
	res.RecordsAfter, res.BytesAfter = c.stats.Records, size
	res.Entries, res.Tombstones = idx.responses, idx.tombstones
	res.Damaged = damagedBefore + damaged
	res.Dropped = entriesBefore - int64(idx.len()) - damaged
	return res, c.saveIndex()
}

// copyLive writes hdr and the live entries to f, indexing them in idx,
// then one spend record per stage and model for the paid responses left
// out. It returns the number of spend records, the size written and the
// number of damaged entries dropped.
func (c *Cache) copyLive(f interface{ Write([]byte) (int, error) }, hdr logHeader, idx *index) (int64, int64, int64, error) {
	var live []keyLoc
	if err := c.idx.each(func(key, loc uint64) { live = append(live, keyLoc{key, loc}) }); err != nil {
		return 0, 0, 0, err
	}
	slices.SortFunc(live, func(a, b keyLoc) int { return cmp.Compare(locOff(a.loc), locOff(b.loc)) })

	w := bufio.NewWriterSize(f, 1<<20)
	off := int64(0)
	put := func(entry []byte) {
		_, _ = w.Write(entry) // a bufio.Writer keeps its first error: Flush, checked below, returns it
		off += int64(len(entry))
	}
	put(hdr.encode())
	kept := map[spendKey]Spend{}
	var entry []byte
	var damaged int64
	for _, kl := range live {
		r, err := c.readRecord(kl.loc)
		if errors.Is(err, errBadEntry) {
			damaged++
			continue
		}
		if err != nil {
			return 0, 0, 0, err
		}
		if entry, err = appendEntry(entry[:0], &r); err != nil {
			return 0, 0, 0, err
		}
		if err := addLive(idx, r.key, makeLoc(off, &r)); err != nil {
			return 0, 0, 0, err
		}
		put(entry)
		if r.paid() {
			k := spendKeyOf(r.usage)
			s := kept[k]
			s.add(Spend{Responses: 1, PromptTokens: r.usage.PromptTokens, CompletionTokens: r.usage.CompletionTokens})
			kept[k] = s
		}
	}
	carry := spendDiff(c.spend, kept)
	keys := slices.SortedFunc(maps.Keys(carry), func(a, b spendKey) int {
		return cmp.Or(cmp.Compare(a.stage, b.stage), cmp.Compare(a.model, b.model), compareBool(a.batch, b.batch))
	})
	for _, k := range keys {
		s := carry[k]
		u := Usage{Stage: k.stage, Model: k.model, PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, Batch: k.batch}
		r := record{kind: kindSpend, flags: usageFlags(u), responses: s.Responses, usage: u}
		var err error
		if entry, err = appendEntry(entry[:0], &r); err != nil {
			return 0, 0, 0, err
		}
		put(entry)
	}
	if err := w.Flush(); err != nil {
		return 0, 0, 0, err
	}
	return int64(len(keys)), off, damaged, nil
}

// addLive adds an entry of the new log to its index, merging the keys in
// memory into the index file when they are due. Such a table describes no
// log yet (its meta is empty): the compaction's end writes the one that does.
func addLive(idx *index, key, loc uint64) error {
	if err := idx.add(key, loc); err != nil {
		return err
	}
	if !idx.full() {
		return nil
	}
	t, err := idx.merged(nil, false)
	if err != nil {
		return err
	}
	idx.install(t)
	return nil
}
