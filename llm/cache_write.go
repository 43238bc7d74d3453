package llm

import (
	"fmt"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// putRequest is one entry for the writer, or work it does alone (run).
type putRequest struct {
	entry []byte // framed
	rec   record // what the entry says, value left out
	run   func() error
	err   chan error
}

func (c *Cache) newPut(r *record) (*putRequest, error) {
	entry, err := appendEntry(make([]byte, 0, entryHeader+payloadPrefix+3+len(r.usage.Stage)+len(r.usage.Model)+20+len(r.value)), r)
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
	if c.closed {
		return fmt.Errorf("writing response cache %s: the cache is closed", c.path)
	}
	if c.readOnly {
		return fmt.Errorf("writing response cache %s: it is open read-only", c.path)
	}
	c.mu.RLock()
	failed := c.failed
	c.mu.RUnlock()
	if failed != nil {
		return failed
	}
	c.puts <- req
	return nil
}

// writer appends queued entries in groups, one write and one fsync per
// group, and runs the work queued between them.
func (c *Cache) writer() {
	defer close(c.done)
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
			first.err <- first.run()
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
		buf = c.commit(group, buf[:0])
		if cap(buf) > 4*maxGroupBytes {
			buf = nil
		}
		c.mergeIndex()
	}
}

// commit writes and syncs group at the end of the log, then indexes it.
func (c *Cache) commit(group []*putRequest, buf []byte) []byte {
	c.mu.RLock()
	err, off := c.failed, c.size
	c.mu.RUnlock()
	if err == nil {
		data := group[0].entry
		if len(group) > 1 {
			for _, req := range group {
				buf = append(buf, req.entry...)
			}
			data = buf
		}
		_, err = c.f.WriteAt(data, off)
		if err == nil {
			err = fsys.SyncFile(c.f)
		}
		if err != nil {
			// The page cache cannot be trusted after a failed write or
			// fsync: nothing more is written through this Cache.
			err = fmt.Errorf("writing response cache %s: %w: %w", c.path, errCacheWrite, err)
		}
		c.mu.Lock()
		if err == nil {
			err = c.applyGroup(group, off)
		}
		if err != nil {
			c.failed = err
		}
		c.mu.Unlock()
	}
	for _, req := range group {
		req.err <- err
	}
	return buf
}

// applyGroup indexes the entries of group, written at off. A failure to
// read the index file ends writing, as a failed write does: the index
// would no longer know every entry.
func (c *Cache) applyGroup(group []*putRequest, off int64) error {
	for _, req := range group {
		if err := c.apply(&req.rec, off); err != nil {
			return fmt.Errorf("indexing response cache %s: %w: %w", c.path, errCacheWrite, err)
		}
		off += int64(len(req.entry))
	}
	c.size = off
	return nil
}
