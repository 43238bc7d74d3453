package cache

import (
	"fmt"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// putRequest is one entry for the writer, or work it does alone (run).
type putRequest struct {
	entry []byte // framed
	rec   record // what the entry says, value left out
	run   func() error
	// written, when not nil, receives once the entry is written (not yet
	// durable) or could not be.
	written chan error
	err     chan error // receives once the entry is durable or failed
}

// syncRequest hands the syncer written entries to make durable, or a
// barrier: closed once everything written before it is durable.
type syncRequest struct {
	group   []*putRequest
	end     int64 // where group ends in the log
	barrier chan struct{}
}

// minSyncGap is the least time between the starts of two fsyncs of the log
// while entries keep arriving; after a sync of one entry with nothing
// queued behind it (a lone writer's), the next starts at once. Each fsync
// costs the machine a journal commit: paced, a run answering thousands of
// requests a second synced ~140 times a second instead of ~600, and an
// answer waits a few milliseconds longer to be durable. Its request slot
// does not wait: it is freed once the answer is written (Client.attempt).
const minSyncGap = 5 * time.Millisecond

func (c *Cache) newPut(r *record) (*putRequest, error) {
	entry, err := appendEntry(c.entries.Get(entryHeader+payloadPrefix+3+len(r.usage.Stage)+len(r.usage.Model)+20+len(r.value)), r)
	if err != nil {
		return nil, fmt.Errorf("writing response cache %s: %w", c.path, err)
	}
	meta := *r
	meta.value = nil
	return &putRequest{entry: entry, rec: meta, err: make(chan error, 1)}, nil
}

// submit queues reqs and waits until each is durable or failed.
func (c *Cache) submit(reqs ...*putRequest) error {
	c.closeMu.RLock()
	for _, req := range reqs {
		if err := c.queueLocked(req); err != nil {
			c.closeMu.RUnlock()
			return err
		}
	}
	c.closeMu.RUnlock()
	var first error
	for _, req := range reqs {
		if err := <-req.err; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// queueLocked hands req to the writer. Its caller holds closeMu for reading.
func (c *Cache) queueLocked(req *putRequest) error {
	if err := c.writableLocked(); err != nil {
		return err
	}
	c.puts <- req
	return nil
}

// writableLocked says why nothing can be written, if so. Its caller holds
// closeMu for reading.
func (c *Cache) writableLocked() error {
	if c.closed {
		return fmt.Errorf("writing response cache %s: the cache is closed", c.path)
	}
	if c.readOnly {
		return fmt.Errorf("writing response cache %s: it is open read-only", c.path)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.failed
}

// writer appends queued entries in groups, one write per group, hands them
// to the syncer, and runs the work queued between them once everything
// written before it is durable.
func (c *Cache) writer() {
	defer close(c.done)
	syncerDone := make(chan struct{})
	go c.syncer(syncerDone)
	defer func() {
		close(c.syncs)
		<-syncerDone
	}()
	var buf []byte
	var next *putRequest
	for {
		first := next
		next = nil
		if first == nil {
			var ok bool
			if first, ok = <-c.puts; !ok {
				return
			}
		}
		if first.run != nil {
			if c.aloneTaken != nil {
				c.aloneTaken()
			}
			c.writeMu.Lock()
			c.awaitSynced()
			first.err <- c.runAlone(first.run)
			c.writeMu.Unlock()
			continue
		}
		group := []*putRequest{first}
		size := len(first.entry)
	drain:
		for size < maxGroupBytes {
			select {
			case req, ok := <-c.puts:
				if !ok {
					break drain
				}
				if req.run != nil {
					next = req
					break drain
				}
				group = append(group, req)
				size += len(req.entry)
			default:
				break drain
			}
		}
		c.writeMu.Lock()
		buf = c.commit(group, buf[:0])
		c.writeMu.Unlock()
		if cap(buf) > 4*maxGroupBytes {
			buf = nil
		}
	}
}

// writeNow appends req in the caller's goroutine, as the writer would: a
// request slot waiting for its answer to be written does not wait for the
// writer goroutine to be scheduled, which on a loaded machine took longer
// than the write. Its caller holds closeMu for reading.
func (c *Cache) writeNow(req *putRequest) error {
	if err := c.writableLocked(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.commit([]*putRequest{req}, nil)
	return nil
}

// runAlone runs work queued for the writer alone, unless a failed write or
// fsync (perhaps that of the entries written just before it) has ended
// writing. Its caller holds writeMu, everything written before synced.
func (c *Cache) runAlone(run func() error) error {
	c.mu.RLock()
	err := c.failed
	c.mu.RUnlock()
	if err != nil {
		return err
	}
	return run()
}

// awaitSynced returns once every entry written so far is durable (or its
// sync failed). Its caller holds writeMu.
func (c *Cache) awaitSynced() {
	b := make(chan struct{})
	c.syncs <- syncRequest{barrier: b}
	<-b
}

// commit writes group at the end of the log, indexes it and hands it to
// the syncer, which tells each entry's Put when it is durable; then it
// merges the index into its file when that is due. Its caller holds
// writeMu, so the syncer receives groups in the order they were written.
func (c *Cache) commit(group []*putRequest, buf []byte) []byte {
	c.mu.RLock()
	err, off := c.failed, c.size
	c.mu.RUnlock()
	end := off
	if err == nil {
		data := group[0].entry
		if len(group) > 1 {
			for _, req := range group {
				buf = append(buf, req.entry...)
			}
			data = buf
		}
		end += int64(len(data))
		if _, err = c.f.WriteAt(data, off); err != nil {
			// The page cache cannot be trusted after a failed write or
			// fsync: nothing more is written through this Cache.
			err = fmt.Errorf("writing response cache %s: %w: %w", c.path, ErrWrite, err)
		}
		c.mu.Lock()
		if err == nil {
			err = c.applyGroup(group, off)
		}
		if err != nil && c.failed == nil {
			c.failed = err
		}
		c.mu.Unlock()
	}
	for _, req := range group {
		c.entries.Put(req.entry)
		req.entry = nil
		if req.written != nil {
			req.written <- err
		}
	}
	if err != nil {
		for _, req := range group {
			req.err <- err
		}
		return buf
	}
	c.syncs <- syncRequest{group: group, end: end}
	if c.indexDue() {
		c.awaitSynced() // the index file describes durable entries only
		c.mergeIndex()
	}
	return buf
}

// syncer makes written entries durable, one fsync for every entry written
// since the last one, at most one fsync every minSyncGap while entries
// keep coming, and at once for a barrier.
func (c *Cache) syncer(done chan struct{}) {
	defer close(done)
	var (
		last     time.Time
		busy     bool // the last sync had company: more than one entry, or more queued
		waiting  []*putRequest
		end      int64 // where the last group waiting ends
		barriers []chan struct{}
		open     = true
	)
	add := func(r syncRequest) {
		waiting = append(waiting, r.group...)
		if r.group != nil {
			end = r.end
		}
		if r.barrier != nil {
			barriers = append(barriers, r.barrier)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for open {
		r, ok := <-c.syncs
		if !ok {
			return
		}
		add(r)
		if wait := minSyncGap - time.Since(last); busy && len(barriers) == 0 && wait > 0 {
			timer.Reset(wait)
		gather:
			for {
				select {
				case r, ok := <-c.syncs:
					if !ok {
						open = false
						break gather
					}
					add(r)
					if r.barrier != nil {
						break gather
					}
				case <-timer.C:
					break gather
				}
			}
			timer.Stop()
		}
		for drained := false; open && !drained; {
			select {
			case r, ok := <-c.syncs:
				if ok {
					add(r)
				} else {
					open = false
				}
			default:
				drained = true
			}
		}
		synced := len(waiting)
		if synced > 0 {
			last = time.Now()
			err := c.syncLog()
			c.markSynced(end, err)
			for _, req := range waiting {
				req.err <- err
			}
			clear(waiting)
			waiting = waiting[:0]
		}
		for _, b := range barriers {
			close(b)
		}
		barriers = barriers[:0]
		busy = synced > 1 || len(c.syncs) > 0
	}
}

// syncLog makes what was written to the log durable. A failure ends
// writing: every later Put returns it.
func (c *Cache) syncLog() error {
	c.mu.RLock()
	err := c.failed
	c.mu.RUnlock()
	if err != nil {
		return err
	}
	if err = fsys.SyncFile(c.f); err == nil {
		return nil
	}
	err = fmt.Errorf("writing response cache %s: %w: %w", c.path, ErrWrite, err)
	c.mu.Lock()
	if c.failed == nil {
		c.failed = err
	}
	err = c.failed
	c.mu.Unlock()
	return err
}

// markSynced records that the log up to end is durable, unless the sync
// failed, and wakes the lookups waiting for it (awaitDurable).
func (c *Cache) markSynced(end int64, err error) {
	c.mu.Lock()
	if err == nil {
		c.synced = end
	}
	c.mu.Unlock()
	c.syncedCond.Broadcast()
}

// applyGroup indexes the entries of group, written at off. A failure to
// read the index file ends writing, as a failed write does: the index
// would no longer know every entry.
func (c *Cache) applyGroup(group []*putRequest, off int64) error {
	for _, req := range group {
		if err := c.apply(&req.rec, off); err != nil {
			return fmt.Errorf("indexing response cache %s: %w: %w", c.path, ErrWrite, err)
		}
		off += int64(len(req.entry))
	}
	c.size = off
	return nil
}
