package cache

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/llm/internal/bufpool"
)

// Cache is a persistent map from a request's Identity to its raw response
// bytes and usage: an append-only log of checksummed entries (format in
// format.go) and an index of where each identity's latest entry lies,
// a hash table in a file beside the log (index.go) read with pread,
// so its size is in the page cache, not in the heap. The index is derived:
// an open that finds it missing or not matching the log reads the log.
//
// Concurrent writes are made durable together by one fsync (group commit);
// Put returns only after its entry is on disk, so a crash loses nothing Put
// reported stored. A write or sync failure is returned by that Put and by
// every later one: after a failed fsync the page cache cannot be trusted.
//
// On open a torn tail, which only a crash mid-write can leave, is cut off
// quietly; a damaged entry in the middle of the log is skipped, the entries
// after it kept, and counted (Stats) and logged once. A file of format 1 is
// converted to format 2 on open; its entries, which carry no digest,
// answer the first request with their key that asks for them.
//
// A cache may read a base cache (WithBase): a hit there is copied into
// this cache, which alone is written. One process at a time may open a
// cache; any number may read one as a base while no one writes it.
type Cache struct {
	path     string
	fs       fsys.FS
	log      *slog.Logger
	readOnly bool   // a base: never written
	base     *Cache // nil: none

	mu     sync.RWMutex // guards everything below, and f while compaction swaps it
	f      fsys.File
	format int // 1 or 2; a cache that is written is always 2
	header logHeader
	idx    *index
	size   int64 // end of the last entry written (durable once the syncer has synced it)
	// synced is the end of the log known durable: a lookup serves an
	// entry before it only (awaitDurable); syncedCond (on mu) is
	// broadcast when it moves or writing fails.
	synced     int64
	syncedCond *sync.Cond
	// indexCovers is the log the index file describes (0: none).
	indexCovers int64
	mergeAt     int // keys the index holds in memory before a merge
	spend       map[spendKey]Spend
	stats       Stats
	// spendRecords of stats.Records carry the usage of dropped entries.
	spendRecords int64
	failed       error // the write failure that ends writing; sticky

	closeMu sync.RWMutex // held for reading by Get and while a Put queues; for writing by Close and Compact
	closed  bool

	entries bufpool.Pool // framed entries, back once written
	writeMu sync.Mutex   // held while an entry or group is appended, or while the writer runs work alone
	puts    chan *putRequest
	syncs   chan syncRequest // written entries for the syncer (write.go)
	done    chan struct{}    // closed when the writer has stopped
	// aloneTaken, set by tests before they queue work, is called when the
	// writer takes work it runs alone, before it waits for the sync.
	aloneTaken func()
	// awaitingSync, set by tests before they read, is called (c.mu held)
	// when a lookup finds its entry not yet durable and waits for the sync.
	awaitingSync func()
}

// Stats describe a cache's log and what its open found.
type Stats struct {
	Entries    int   // live responses
	Tombstones int   // identities marked unusable (Invalidate)
	Records    int64 // entries in the log, live or dead
	LogBytes   int64
	// IndexLoaded: the open read the index saved at the last Close or
	// compaction, and ScannedBytes of log after it.
	IndexLoaded  bool
	ScannedBytes int64
	// Damaged entries skipped in the middle of the log since it was last
	// compacted, and their bytes; their requests are asked again.
	Damaged      int64
	DamagedBytes int64
	// TornBytes were cut off the end of the log by this open.
	TornBytes int64
	// Converted from format 1 (this open or earlier): Spent does not cover
	// what was spent before.
	Converted bool
}

// Spend is the usage of the responses a cache paid for, by stage and
// model, and whether they were paid at the batch rate.
type Spend struct {
	Stage, Model     string
	Batch            bool
	Responses        int64
	PromptTokens     int64
	CompletionTokens int64
}

type spendKey struct {
	stage, model string
	batch        bool
}

func spendKeyOf(u Usage) spendKey { return spendKey{u.Stage, u.Model, u.Batch} }

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func (s *Spend) add(o Spend) {
	s.Responses += o.Responses
	s.PromptTokens += o.PromptTokens
	s.CompletionTokens += o.CompletionTokens
}

// Option configures Open.
type Option func(*cacheOptions)

type cacheOptions struct {
	fs      fsys.FS
	base    string
	log     *slog.Logger
	mergeAt int
}

// WithFS sets the file system (default fsys.OS).
func WithFS(f fsys.FS) Option { return func(o *cacheOptions) { o.fs = f } }

// WithBase sets a cache to read, never write: a request it answers is
// copied into the opened cache, so the answer stays when the base is
// deleted. The base is held with a shared lock, so several caches may read
// one base at once, and its own run cannot write it meanwhile. A base that
// does not exist is skipped with a warning.
func WithBase(path string) Option { return func(o *cacheOptions) { o.base = path } }

// WithLogger sets the logger for what an open found (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *cacheOptions) { o.log = l } }

// ErrWrite marks a failure to make an entry durable: every error of a
// failed write, sync or index write wraps it (errors.Is), and llm's Chat
// makes it a fatal error (reason "cache_write").
var ErrWrite = errors.New("the response cache could not be written")

// Open opens or creates the cache log at path. If another process holds
// the file it fails at once with an error saying so.
func Open(path string, opts ...Option) (*Cache, error) {
	o := cacheOptions{fs: fsys.OS, log: slog.Default(), mergeAt: defaultMergeAt}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := openLog(path, o, false)
	if err != nil {
		return nil, err
	}
	if o.base != "" {
		if c.base, err = openBase(o, c); err != nil {
			_ = c.close(false) // nothing was put yet; err is the failure
			return nil, err
		}
	}
	c.puts = make(chan *putRequest, 1024)
	c.syncs = make(chan syncRequest, 1024)
	c.done = make(chan struct{})
	go c.writer()
	return c, nil
}

func openBase(o cacheOptions, own *Cache) (*Cache, error) {
	st, err := o.fs.Stat(o.base)
	if errors.Is(err, fs.ErrNotExist) {
		o.log.Warn("the base response cache does not exist; answering from the run's own cache only", "base", o.base)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening base response cache %s: %w", o.base, err)
	}
	if ownSt, err := own.f.Stat(); err == nil && os.SameFile(ownSt, st) {
		return nil, nil // the run's own cache: nothing more to read
	}
	return openLog(o.base, o, true)
}

// openLog opens and locks path (shared and read-only for a base) and loads it.
func openLog(path string, o cacheOptions, readOnly bool) (*Cache, error) {
	c := &Cache{path: path, fs: o.fs, log: o.log, readOnly: readOnly, spend: map[spendKey]Spend{}, mergeAt: o.mergeAt}
	c.syncedCond = sync.NewCond(&c.mu)
	what := "response cache"
	if readOnly {
		what = "base response cache"
	}
	for try := 0; ; try++ {
		f, err := c.lockedOpen(what)
		if err != nil {
			return nil, err
		}
		// A compaction may have renamed a new log over the path between
		// the open and the lock: then the lock is on a file no one uses.
		fst, err1 := f.Stat()
		pst, err2 := c.fs.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(fst, fst) && !os.SameFile(fst, pst) && try < 3 {
			_ = f.Close() // only locked, not written
			continue
		}
		c.f = f
		break
	}
	if err := c.load(); err != nil {
		c.idx.close()
		_ = c.f.Close() // only read so far; err is the failure
		return nil, err
	}
	c.synced = c.size // what an open reads is on disk
	return c, nil
}

func (c *Cache) lockedOpen(what string) (fsys.File, error) {
	flag := os.O_RDWR | os.O_CREATE
	if c.readOnly {
		flag = os.O_RDONLY
	}
	f, err := c.fs.OpenFile(c.path, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s %s: %w", what, c.path, err)
	}
	var held bool
	if sl, ok := c.fs.(fsys.SharedLocker); ok && c.readOnly {
		held, err = sl.LockShared(f)
	} else {
		held, err = c.fs.Lock(f)
	}
	switch {
	case err != nil:
		_ = f.Close() // not locked, not written
		return nil, fmt.Errorf("opening %s %s: locking: %w", what, c.path, err)
	case held && c.readOnly:
		_ = f.Close() // likewise
		return nil, fmt.Errorf("opening %s %s: a run is writing it (it is locked by another process); wait for that run to end", what, c.path)
	case held:
		_ = f.Close() // likewise
		return nil, fmt.Errorf("opening %s %s: the file is locked by another process (is another run using it, or reading it as its base cache?)", what, c.path)
	}
	return f, nil
}

// load reads the log into the index: from the saved index and the log
// after it when they match, otherwise the whole log.
func (c *Cache) load() error {
	st, err := c.f.Stat()
	if err != nil {
		return fmt.Errorf("opening response cache %s: %w", c.path, err)
	}
	size := st.Size()
	format, hdr, err := readHeader(c.f, size, c.path)
	if err != nil {
		return err
	}
	c.format, c.header = format, hdr
	c.idx = c.newIndex()
	if !c.readOnly {
		if err := c.removeStaleCompaction(); err != nil {
			return err
		}
	}
	switch {
	case format == 0 && c.readOnly:
		c.format = 2 // empty, or a creation cut short: nothing to read
		return nil
	case format == 0:
		return c.create()
	case format == 1:
		if err := c.scanV1(size); err != nil {
			return err
		}
		if c.readOnly {
			return nil
		}
		return c.convert()
	}
	start := c.loadIndex(size)
	if err := c.scan(start, size); err != nil {
		return err
	}
	c.stats.Converted = c.header.flags&headerConverted != 0
	return nil
}

// create writes the header of a new log.
func (c *Cache) create() error {
	c.header = logHeader{nonce: newNonce()}
	c.format = 2
	fail := func(err error) error { return fmt.Errorf("initialising response cache %s: %w", c.path, err) }
	if err := c.f.Truncate(0); err != nil {
		return fail(err)
	}
	if _, err := c.f.WriteAt(c.header.encode(), 0); err != nil {
		return fail(err)
	}
	if err := fsys.SyncFile(c.f); err != nil {
		return fail(err)
	}
	if err := fsys.SyncDir(c.fs, filepath.Dir(c.path)); err != nil {
		return fail(err)
	}
	c.size = int64(headerSize)
	return nil
}

// convert rewrites a format-1 log as format 2.
func (c *Cache) convert() error {
	n := c.idx.responses
	if _, err := c.rewrite(headerConverted); err != nil {
		return fmt.Errorf("converting response cache %s to format 2: %w", c.path, err)
	}
	c.stats.Converted = true
	c.log.Info("converted the response cache to the current format; its answers are kept", "path", c.path, "entries", n)
	return nil
}

func newNonce() [16]byte {
	var n [16]byte
	rand.Read(n[:])
	return n
}

// apply adds a durable record at off to the index and the spend.
func (c *Cache) apply(r *record, off int64) error {
	c.stats.Records++
	switch r.kind {
	case kindSpend:
		c.spendRecords++
		c.addSpend(r.usage, Spend{Responses: r.responses, PromptTokens: r.usage.PromptTokens, CompletionTokens: r.usage.CompletionTokens})
		return nil
	case kindResponse:
		if r.paid() {
			c.addSpend(r.usage, Spend{Responses: 1, PromptTokens: r.usage.PromptTokens, CompletionTokens: r.usage.CompletionTokens})
		}
	}
	return c.idx.place(r.key, makeLoc(off, r), func(old uint64) bool { return c.sameIdentity(old, r.digest) })
}

func (c *Cache) addSpend(u Usage, s Spend) {
	k := spendKeyOf(u)
	t := c.spend[k]
	t.add(s)
	c.spend[k] = t
}

// sameIdentity reports whether the entry at loc has digest, or is
// unreadable (and so replaceable).
func (c *Cache) sameIdentity(loc uint64, digest [32]byte) bool {
	if c.format != 2 {
		return true
	}
	var b [entryHeader + payloadPrefix]byte
	if _, err := c.f.ReadAt(b[:], locOff(loc)); err != nil {
		return true
	}
	if _, err := entryLen(b[:entryHeader]); err != nil {
		return true
	}
	return [32]byte(b[entryHeader+10:]) == digest
}

// lookupState is what a lookup found for an identity.
type lookupState int

const (
	lookupMiss      lookupState = iota
	lookupHit                   // an entry of the identity
	lookupLegacy                // a format-1 entry with the identity's key
	lookupTombstone             // the identity was marked unusable
)

// lookup finds id's entry. A read error is returned with a miss.
func (c *Cache) lookup(id Identity) (record, lookupState, error) {
	var buf [4]uint64
	c.mu.RLock()
	locs, rerr := c.idx.candidates(id.Key, buf[:0])
	c.mu.RUnlock()
	var legacy *record
	for _, loc := range locs {
		r, err := c.readRecord(loc)
		if err != nil {
			rerr = err
			continue
		}
		switch {
		case r.key != id.Key:
		case r.flags&flagLegacy != 0:
			legacy = &r
		case r.digest != id.Digest:
		case !c.awaitDurable(locOff(loc)):
			return record{}, lookupMiss, nil
		case r.kind == kindTombstone:
			return r, lookupTombstone, nil
		default:
			return r, lookupHit, nil
		}
	}
	if legacy != nil {
		return *legacy, lookupLegacy, nil
	}
	return record{}, lookupMiss, rerr
}

// awaitDurable waits until the entry at off is durable and says whether it
// is: false when a failed write or fsync ended writing first (the page
// cache holding it cannot be trusted). An entry is indexed once written,
// before the syncer makes it durable; a lookup must not hand it out until
// then, or a power loss would take away an answer a caller built on.
func (c *Cache) awaitDurable(off int64) bool {
	c.mu.RLock()
	durable := off < c.synced
	c.mu.RUnlock()
	if durable {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.awaitingSync != nil && off >= c.synced && c.failed == nil {
		c.awaitingSync()
	}
	for off >= c.synced && c.failed == nil {
		c.syncedCond.Wait()
	}
	return off < c.synced
}

// Get returns the value stored for id, or one found in the base cache,
// which is then copied into this one. An identity marked unusable
// (Invalidate) is a miss, also when the base has it. An entry written but
// not yet durable (PutWritten) is returned once it is; one whose write or
// fsync failed is a miss.
func (c *Cache) Get(id Identity) ([]byte, bool, error) {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return nil, false, fmt.Errorf("reading response cache %s: the cache is closed", c.path)
	}
	r, state, err := c.lookup(id)
	switch state {
	case lookupHit:
		return r.value, true, nil
	case lookupTombstone:
		return nil, false, nil
	case lookupLegacy:
		// The first identity to ask for a format-1 entry's key claims it.
		return c.copyIn(id, &r)
	}
	if c.base != nil {
		br, bstate, berr := c.base.lookup(id)
		if bstate == lookupHit || bstate == lookupLegacy {
			return c.copyIn(id, &br)
		}
		err = cmp.Or(err, berr)
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading response cache %s: %w", c.path, err)
	}
	return nil, false, nil
}

// copyIn stores a response not paid for by this cache under id. Its caller
// holds closeMu for reading.
func (c *Cache) copyIn(id Identity, r *record) ([]byte, bool, error) {
	cp := record{kind: kindResponse, flags: flagCopied, key: id.Key, digest: id.Digest, usage: r.usage, value: r.value}
	req, err := c.newPut(&cp)
	if err == nil {
		err = c.queueLocked(req)
	}
	if err == nil {
		err = <-req.err
	}
	if err != nil {
		return nil, false, err
	}
	return r.value, true, nil
}

// Put stores value, the response to the request of id, with its usage,
// replacing any earlier value of id, and returns once it is durable. value
// must not be modified until Put returns.
func (c *Cache) Put(id Identity, value []byte, u Usage) error {
	return c.write(&record{kind: kindResponse, flags: usageFlags(u), key: id.Key, digest: id.Digest, usage: u, value: value})
}

// PutWritten stores value like Put but returns once its entry is written
// to the log, before the entry is durable: a process killed after it returns
// keeps the entry (the kernel holds it), a machine that loses power before
// the next sync may not. durable waits for that sync and returns what Put
// would have; the entry is not to be relied on (an answer used, a record
// written from it) before durable returns nil.
func (c *Cache) PutWritten(id Identity, value []byte, u Usage) (durable func() error, err error) {
	req, err := c.newPut(&record{kind: kindResponse, flags: usageFlags(u), key: id.Key, digest: id.Digest, usage: u, value: value})
	if err != nil {
		return nil, err
	}
	req.written = make(chan error, 1)
	c.closeMu.RLock()
	err = c.writeNow(req)
	c.closeMu.RUnlock()
	if err == nil {
		err = <-req.written
	}
	if err != nil {
		return nil, err
	}
	return sync.OnceValue(func() error { return <-req.err }), nil
}

// Invalidate marks the entries of ids unusable, durably: Get misses them
// (also in the base cache) until a new Put.
func (c *Cache) Invalidate(ids ...Identity) error {
	reqs := make([]*putRequest, 0, len(ids))
	for _, id := range ids {
		req, err := c.newPut(&record{kind: kindTombstone, key: id.Key, digest: id.Digest})
		if err != nil {
			return err
		}
		reqs = append(reqs, req)
	}
	return c.submit(reqs...)
}

func (c *Cache) write(r *record) error {
	req, err := c.newPut(r)
	if err != nil {
		return err
	}
	return c.submit(req)
}

// Len returns the number of stored responses.
func (c *Cache) Len() (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.idx.responses, nil
}

// Stats returns the figures of the log and of what its open found.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.stats
	s.Entries, s.Tombstones, s.LogBytes = c.idx.responses, c.idx.tombstones, c.size
	return s
}

// Spent returns the usage of every response this cache paid for, by stage
// and model, sorted: the entries Put, not those copied from a base, and
// also those since replaced, invalidated or dropped by compaction. A run
// restores its Meter from it (Meter.RestoreSpent). complete is false for
// a cache converted from format 1, whose entries carried no usage.
func (c *Cache) Spent() (spent []Spend, complete bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for k, s := range c.spend {
		s.Stage, s.Model, s.Batch = k.stage, k.model, k.batch
		spent = append(spent, s)
	}
	slices.SortFunc(spent, func(a, b Spend) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Model, b.Model), compareBool(a.Batch, b.Batch))
	})
	return spent, c.header.flags&headerConverted == 0
}

// Close waits for queued writes, saves the index and closes the files. It
// is safe to call twice. It returns the write failure that ended writing,
// if any.
func (c *Cache) Close() error { return c.close(true) }

func (c *Cache) close(saveIndex bool) error {
	c.closeMu.Lock()
	if c.closed {
		c.closeMu.Unlock()
		return nil
	}
	c.closed = true
	if c.puts != nil {
		close(c.puts)
	}
	c.closeMu.Unlock()
	if c.done != nil {
		<-c.done
	}
	var errs []error
	if c.failed != nil {
		errs = append(errs, c.failed)
	} else if saveIndex && !c.readOnly {
		errs = append(errs, c.saveIndex())
	}
	c.idx.close()
	if err := c.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing response cache %s: %w", c.path, err))
	}
	if c.base != nil {
		errs = append(errs, c.base.close(false))
	}
	return errors.Join(errs...)
}

// spendDiff returns total minus part, leaving out zero rows.
func spendDiff(total, part map[spendKey]Spend) map[spendKey]Spend {
	out := maps.Clone(total)
	for k, p := range part {
		t := out[k]
		t.Responses -= p.Responses
		t.PromptTokens -= p.PromptTokens
		t.CompletionTokens -= p.CompletionTokens
		out[k] = t
	}
	maps.DeleteFunc(out, func(_ spendKey, s Spend) bool { return s == Spend{} })
	return out
}

// Entry is one response for PutMany.
type Entry struct {
	ID    Identity
	Value []byte
	Usage Usage
}

// PutMany stores entries like Put, in as few durable writes as the writer
// groups them into, and returns once all are durable.
func (c *Cache) PutMany(entries []Entry) error {
	reqs := make([]*putRequest, 0, len(entries))
	for _, e := range entries {
		req, err := c.newPut(&record{kind: kindResponse, flags: usageFlags(e.Usage), key: e.ID.Key, digest: e.ID.Digest, usage: e.Usage, value: e.Value})
		if err != nil {
			return err
		}
		reqs = append(reqs, req)
	}
	return c.submit(reqs...)
}
