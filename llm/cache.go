package llm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Cache is a persistent map from CacheKey to raw response bytes: an
// append-only log file of checksummed entries and an in-memory index of
// where each key's latest entry lies.
//
// Concurrent Puts are written together and made durable by one fsync (group
// commit); Put returns only after its entry is on disk, so a crash loses
// nothing Put reported stored. On open the log is read through; a torn or
// damaged tail, which only a crash mid-write can leave, is cut off. One
// process at a time may open a file.
//
// The log replaced a bbolt B+tree: with content-hash keys every commit
// rewrote pages all over the tree, which held writes to a few thousand per
// second, far below what one busy endpoint answers.
type Cache struct {
	path string
	f    *os.File

	mu    sync.RWMutex // guards index and size
	index map[string]span
	size  int64 // end of the last durable entry

	closeMu sync.RWMutex // held for reading while a Put queues; for writing by Close
	closed  bool

	puts chan *putRequest
	done chan struct{} // closed when the writer has stopped
}

type span struct {
	off int64 // of the value
	n   int32
}

type putRequest struct {
	key   string
	value []byte
	err   chan error
}

const (
	cacheMagic = "rubricforge-cache-log/1\n"
	// entry: crc32c(payload) u32 | len(payload) u32 | payload
	// payload: len(key) u16 | key | value
	entryHeader = 8
	maxKeyLen   = 1 << 10
	maxEntry    = 1 << 30
	// maxGroupBytes bounds one group commit's write.
	maxGroupBytes = 8 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenCache opens or creates the cache log at path. If another process holds
// the file it fails at once with an error saying so.
func OpenCache(path string) (*Cache, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening response cache %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("opening response cache %s: the file is locked by another process (is another run using it?)", path)
		}
		return nil, fmt.Errorf("opening response cache %s: locking: %w", path, err)
	}
	c := &Cache{path: path, f: f, index: map[string]span{}, puts: make(chan *putRequest, 1024), done: make(chan struct{})}
	if err := c.load(); err != nil {
		f.Close()
		return nil, err
	}
	go c.writer()
	return c, nil
}

// load reads the log into the index, writing the header of a new file and
// cutting off a torn tail.
func (c *Cache) load() error {
	st, err := c.f.Stat()
	if err != nil {
		return fmt.Errorf("opening response cache %s: %w", c.path, err)
	}
	if st.Size() == 0 {
		if _, err := c.f.WriteAt([]byte(cacheMagic), 0); err != nil {
			return fmt.Errorf("initialising response cache %s: %w", c.path, err)
		}
		if err := c.f.Sync(); err != nil {
			return fmt.Errorf("initialising response cache %s: %w", c.path, err)
		}
		if err := syncDir(filepath.Dir(c.path)); err != nil {
			return fmt.Errorf("initialising response cache %s: %w", c.path, err)
		}
		c.size = int64(len(cacheMagic))
		return nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(c.f, 0, st.Size()), 1<<20)
	magic := make([]byte, len(cacheMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != cacheMagic {
		return fmt.Errorf("opening response cache %s: not a rubricforge cache log (remove it to start a new cache)", c.path)
	}
	off := int64(len(cacheMagic))
	var hdr [entryHeader]byte
	buf := make([]byte, 0, 64<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break // clean end, or a torn header
		}
		sum, n := binary.LittleEndian.Uint32(hdr[:4]), binary.LittleEndian.Uint32(hdr[4:])
		if n < 2 || n > maxEntry || off+entryHeader+int64(n) > st.Size() {
			break
		}
		buf = append(buf[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r, buf); err != nil || crc32.Checksum(buf, castagnoli) != sum {
			break
		}
		klen := int(binary.LittleEndian.Uint16(buf))
		if 2+klen > len(buf) {
			break
		}
		key := string(buf[2 : 2+klen])
		c.index[key] = span{off: off + entryHeader + 2 + int64(klen), n: int32(len(buf) - 2 - klen)}
		off += entryHeader + int64(n)
	}
	if off < st.Size() {
		if err := c.f.Truncate(off); err != nil {
			return fmt.Errorf("opening response cache %s: cutting off a torn tail: %w", c.path, err)
		}
		if err := c.f.Sync(); err != nil {
			return fmt.Errorf("opening response cache %s: %w", c.path, err)
		}
	}
	c.size = off
	return nil
}

// Get returns a copy of the value stored under key.
func (c *Cache) Get(key string) ([]byte, bool, error) {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return nil, false, fmt.Errorf("reading response cache %s: the cache is closed", c.path)
	}
	c.mu.RLock()
	sp, ok := c.index[key]
	c.mu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	out := make([]byte, sp.n)
	if _, err := c.f.ReadAt(out, sp.off); err != nil {
		return nil, false, fmt.Errorf("reading response cache %s: %w", c.path, err)
	}
	return out, true, nil
}

// Put stores value under key, replacing any earlier value, and returns once
// it is durable. value must not be modified until Put returns.
func (c *Cache) Put(key string, value []byte) error {
	if len(key) == 0 || len(key) > maxKeyLen {
		return fmt.Errorf("writing response cache %s: key length %d is outside 1..%d", c.path, len(key), maxKeyLen)
	}
	if 2+len(key)+len(value) > maxEntry {
		return fmt.Errorf("writing response cache %s: value of %d bytes is too large", c.path, len(value))
	}
	req := &putRequest{key: key, value: value, err: make(chan error, 1)}
	c.closeMu.RLock()
	if c.closed {
		c.closeMu.RUnlock()
		return fmt.Errorf("writing response cache %s: the cache is closed", c.path)
	}
	c.puts <- req
	c.closeMu.RUnlock()
	return <-req.err
}

// writer appends queued puts in groups, one write and one fsync per group.
func (c *Cache) writer() {
	defer close(c.done)
	var buf []byte
	for first := range c.puts {
		group := []*putRequest{first}
		size := first.size()
	drain:
		for size < maxGroupBytes {
			select {
			case req, ok := <-c.puts:
				if !ok {
					break drain
				}
				group = append(group, req)
				size += req.size()
			default:
				break drain
			}
		}
		buf = buf[:0]
		spans := make([]span, len(group))
		off := c.size
		for i, req := range group {
			start := len(buf)
			buf = append(buf, make([]byte, entryHeader)...)
			buf = binary.LittleEndian.AppendUint16(buf, uint16(len(req.key)))
			buf = append(buf, req.key...)
			buf = append(buf, req.value...)
			payload := buf[start+entryHeader:]
			binary.LittleEndian.PutUint32(buf[start:], crc32.Checksum(payload, castagnoli))
			binary.LittleEndian.PutUint32(buf[start+4:], uint32(len(payload)))
			spans[i] = span{off: off + int64(start) + entryHeader + 2 + int64(len(req.key)), n: int32(len(req.value))}
		}
		_, err := c.f.WriteAt(buf, off)
		if err == nil {
			err = c.f.Sync()
		}
		if err != nil {
			// Leave the index as it was; the unsynced tail is overwritten by the next group.
			err = fmt.Errorf("writing response cache %s: %w", c.path, err)
		} else {
			c.mu.Lock()
			for i, req := range group {
				c.index[req.key] = spans[i]
			}
			c.size = off + int64(len(buf))
			c.mu.Unlock()
		}
		for _, req := range group {
			req.err <- err
		}
		if cap(buf) > 4*maxGroupBytes {
			buf = nil
		}
	}
}

func (p *putRequest) size() int { return entryHeader + 2 + len(p.key) + len(p.value) }

// Len returns the number of stored responses.
func (c *Cache) Len() (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.index), nil
}

// Close waits for queued writes, then closes the file. It is safe to call twice.
func (c *Cache) Close() error {
	c.closeMu.Lock()
	if c.closed {
		c.closeMu.Unlock()
		return nil
	}
	c.closed = true
	close(c.puts)
	c.closeMu.Unlock()
	<-c.done
	if err := c.f.Close(); err != nil {
		return fmt.Errorf("closing response cache %s: %w", c.path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
