package review

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/schema"
)

// Corpus is a corpus as a review sees it. It holds a small index of every
// record (its id, where it is, its items' types, verdicts and risks: about
// 200 bytes a record) and reads a record whole only when a page shows it,
// so that a corpus of 100,000 records is reviewed in little memory.
type Corpus struct {
	Paths []string
	// Parts are the corpora the paths make, one per review directory: each
	// record's decisions go to the log of the part it came from, under
	// that part's fingerprint.
	Parts []Part
	// Running: a distill run held a run directory when it was read; the
	// records are those committed by then (a snapshot).
	Running  bool
	Problems []audit.Problem
	// Total counts the records read; with a sample, the index holds
	// Sample.N of them.
	Total  int
	Sample *Sample

	recs    []recEntry
	byID    map[string]int32
	sampled map[string]bool // the ids read, while a sample is drawn
	items   int
	cache   recordCache
	orders  orderCache
}

// Part is one corpus among the paths reviewed together.
type Part struct {
	Paths       []string
	Dir         string // its review directory (Dir)
	Fingerprint string
	Records     int // records of it in the review
	Grounded    int // of which grounded
	in          *audit.Input
	rows        *audit.Rows
}

// Sample is a review of a random sample: the N records with the smallest
// keys xxhash64(seed, record id); the same seed always draws the same
// records, and a larger N draws a superset.
type Sample struct {
	N    int
	Seed uint64
}

// Options configure Open.
type Options struct {
	// Sample, when above 0, reviews that many records drawn by Seed.
	Sample int
	Seed   uint64
}

// recEntry is what the index holds of one record.
type recEntry struct {
	id    string // its name in the queue
	logID string // the record its items' keys name, when not id (a verl export's grounded question)
	part  uint16
	ref   audit.RowRef
	risk  int32
	items []itemEntry
	draw  uint64 // its place in a sample's draw
	// grounded: a grounded record (its items are criteria)
	grounded bool
}

// itemEntry is what the index holds of one item.
type itemEntry struct {
	question int32 // ItemKey.Question
	id       int32
	typ      uint8 // index in Corpus.types
	flags    uint8
	risk     uint8
}

// itemEntry flags.
const (
	judgeInvalid uint8 = 1 << iota
	empiricalInvalid
	lowEdge
)

// recordID is the record its items' keys name.
func (r *recEntry) recordID() string {
	if r.logID != "" {
		return r.logID
	}
	return r.id
}

func (r *recEntry) key(it *itemEntry) ItemKey {
	return ItemKey{Record: r.recordID(), Question: it.question, Item: it.id}
}

// Open reads the corpora at paths for review: each path is a run
// directory, an export directory or a shard file; paths that share a
// review directory are one part. Records that repeat an id are read once
// (the first).
func Open(ctx context.Context, paths []string, opt Options) (*Corpus, error) {
	c := &Corpus{Paths: paths, byID: map[string]int32{}}
	if opt.Sample > 0 {
		c.Sample = &Sample{N: opt.Sample, Seed: opt.Seed}
	}
	for _, group := range groupByDir(paths) {
		in, err := audit.Open(group...)
		if err != nil {
			_ = c.Close() // only read: err is the failure
			return nil, err
		}
		c.Parts = append(c.Parts, Part{Paths: group, Dir: Dir(group[0]), in: in})
	}
	if err := c.index(ctx); err != nil {
		_ = c.Close() // only read: err is the failure
		return nil, err
	}
	return c, nil
}

// Load reads the corpus in (one part) for review.
func Load(ctx context.Context, in *audit.Input) (*Corpus, error) {
	c := &Corpus{Paths: in.Paths, byID: map[string]int32{}, Parts: []Part{{Paths: in.Paths, Dir: Dir(in.Paths[0]), in: in}}}
	if err := c.index(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// groupByDir groups paths by their review directory, in order of first
// appearance.
func groupByDir(paths []string) [][]string {
	var dirs []string
	groups := map[string][]string{}
	for _, p := range paths {
		d := Dir(p)
		if _, ok := groups[d]; !ok {
			dirs = append(dirs, d)
		}
		groups[d] = append(groups[d], p)
	}
	out := make([][]string, len(dirs))
	for i, d := range dirs {
		out[i] = groups[d]
	}
	return out
}

// index scans every part into the index, the files of a part several at
// once, and takes their records in file order.
func (c *Corpus) index(ctx context.Context) error {
	draw := &sampleHeap{}
	for p := range c.Parts {
		part := &c.Parts[p]
		c.Running = c.Running || part.in.Running
		files, err := scanFiles(ctx, part.in, uint16(p))
		if err != nil {
			return fmt.Errorf("reading the corpus for review: %w", err)
		}
		fps := map[string]bool{}
		var ids []string // only when no record names a job (fingerprintOf hashes the ids then)
		n := 0
		for _, f := range files {
			n += len(f.recs)
			for fp := range f.fps {
				fps[fp] = true
			}
		}
		if len(fps) == 0 {
			ids = make([]string, 0, n)
		}
		if c.Sample == nil {
			c.recs = slices.Grow(c.recs, n)
			if len(c.byID) == 0 {
				c.byID = make(map[string]int32, n)
			}
		}
		for k := range files {
			f := &files[k]
			c.Problems = append(c.Problems, f.problems...)
			for _, e := range f.recs {
				if len(fps) == 0 {
					ids = append(ids, e.id)
				}
				if c.seen(e.id) {
					continue
				}
				c.Total++
				c.take(e, draw)
			}
			f.recs = nil // the index holds them now
		}
		part.Fingerprint = fingerprintOf(fps, part.in, ids)
		part.rows = part.in.OpenRows()
	}
	if c.Sample != nil {
		c.recs = []recEntry(*draw)
		slices.SortFunc(c.recs, func(a, b recEntry) int { return strings.Compare(a.id, b.id) })
		c.byID = make(map[string]int32, len(c.recs))
		for i := range c.recs {
			c.byID[c.recs[i].id] = int32(i)
		}
	}
	c.recs, c.sampled = slices.Clip(c.recs), nil
	for i := range c.recs {
		c.items += len(c.recs[i].items)
		c.Parts[c.recs[i].part].Records++
		if c.recs[i].grounded {
			c.Parts[c.recs[i].part].Grounded++
		}
	}
	c.orders.get(c, Filter{}) // the queue's order, ready for the first page
	return nil
}

// scannedFile is what the index read of one file.
type scannedFile struct {
	recs     []recEntry
	fps      map[string]bool
	problems []audit.Problem
}

// scanFiles reads the index entries of every file of in, as many files at
// once as there are CPUs.
func scanFiles(ctx context.Context, in *audit.Input, part uint16) ([]scannedFile, error) {
	out := make([]scannedFile, len(in.Files))
	errs := make([]error, len(in.Files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(in.Files)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = indexFile(ctx, in, i, part, &out[i])
			}
		})
	}
	for i := range in.Files {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, errors.Join(errs...)
}

// indexFile reads the index entries of file i of in into f: a Parquet
// file of records by its columns (scanColumns), any other file, or one
// whose columns do not read, row by row (audit.ScanFileAt, which reports
// what is wrong with it).
func indexFile(ctx context.Context, in *audit.Input, i int, part uint16, f *scannedFile) error {
	take := func(row *indexRow, ref audit.RowRef) {
		if fp := row.Provenance.JobFingerprint; fp != "" && !f.fps[fp] {
			f.fps[fp] = true
		}
		e := entryOf(row, part, ref)
		e.id, e.grounded = row.ID, row.Grounded != nil
		if row.unit != "" {
			e.id, e.logID = row.unit, row.ID
		}
		f.recs = append(f.recs, e)
	}
	start := func() {
		*f = scannedFile{fps: map[string]bool{}}
		if n := in.Files[i].Rows; n > 0 {
			f.recs = make([]recEntry, 0, n)
		}
	}
	start()
	ok, err := scanColumns(ctx, in, i, take)
	if ok && err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	start()
	return audit.ScanFileAt(ctx, in, i, indexOfLabel, func(row *indexRow, ref audit.RowRef) error {
		take(row, ref)
		return nil
	}, func(pr audit.Problem) { f.problems = append(f.problems, pr) })
}

// seen reports whether a record with id was read before, and notes it:
// in the index (byID) for a whole corpus, in the sample's own set for a
// sample, whose index is made from its draw at the end.
func (c *Corpus) seen(id string) bool {
	if c.Sample == nil {
		_, dup := c.byID[id]
		if !dup {
			c.byID[id] = int32(len(c.recs)) // take appends it next
		}
		return dup
	}
	if c.sampled == nil {
		c.sampled = map[string]bool{}
	}
	dup := c.sampled[id]
	c.sampled[id] = true
	return dup
}

// take adds e to the index, or to the sample's draw.
func (c *Corpus) take(e recEntry, draw *sampleHeap) {
	if c.Sample == nil {
		c.recs = append(c.recs, e)
		return
	}
	e.draw = sampleKey(c.Sample.Seed, e.id)
	if draw.Len() == c.Sample.N && e.draw >= (*draw)[0].draw {
		return
	}
	heap.Push(draw, e)
	if draw.Len() > c.Sample.N {
		heap.Pop(draw)
	}
}

// sampleKey is a record's place in the draw of a seed.
func sampleKey(seed uint64, id string) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	d := xxhash.New()
	d.Write(b[:])
	d.WriteString(id)
	return d.Sum64()
}

// sampleHeap keeps the drawn records with the largest key on top.
type sampleHeap []recEntry

func (h sampleHeap) Len() int           { return len(h) }
func (h sampleHeap) Less(i, j int) bool { return h[i].draw > h[j].draw }
func (h sampleHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sampleHeap) Push(x any)        { *h = append(*h, x.(recEntry)) }
func (h *sampleHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// entryOf is the index entry of row.
func entryOf(row *indexRow, part uint16, ref audit.RowRef) recEntry {
	e := recEntry{part: part, ref: ref, items: make([]itemEntry, 0, row.items())}
	edges := row.edges()
	for k, it := range row.Rubric {
		edge := edges[k]
		risk, _ := itemRiskWhy(it.Valid, it.EmpiricalValid, edge, false)
		var flags uint8
		if it.Valid != nil && !*it.Valid {
			flags |= judgeInvalid
		}
		if it.EmpiricalValid != nil && !*it.EmpiricalValid {
			flags |= empiricalInvalid
		}
		if edge != nil && *edge < LowEdge {
			flags |= lowEdge
		}
		e.items = append(e.items, itemEntry{id: it.ID, typ: typeIndex(it.Type), flags: flags, risk: uint8(min(risk, math.MaxUint8))})
		e.risk = max(e.risk, int32(risk))
	}
	if g := row.Grounded; g != nil {
		for _, q := range g.Questions {
			for i, cr := range q.Criteria {
				risk, _ := criterionRiskWhy(cr.Valid, cr.Varies, false)
				var flags uint8
				if cr.Valid != nil && !*cr.Valid {
					flags |= judgeInvalid
				}
				if cr.Varies != nil && !*cr.Varies {
					flags |= empiricalInvalid
				}
				e.items = append(e.items, itemEntry{question: q.Index + 1, id: int32(i + 1), typ: typeIndex(CriterionType), flags: flags, risk: uint8(risk)})
				e.risk = max(e.risk, int32(risk))
			}
		}
	}
	return e
}

// items counts the row's items: its rubric's and its criteria.
func (row *indexRow) items() int {
	n := len(row.Rubric)
	if g := row.Grounded; g != nil {
		for _, q := range g.Questions {
			n += len(q.Criteria)
		}
	}
	return n
}

// itemTypes are the types an itemEntry's typ indexes: the rubric types,
// criteria, and any other type a damaged record may hold.
var itemTypes = append(append(slices.Clone(schema.ItemTypes), CriterionType), "other")

// typeIndex is t's index in itemTypes.
func typeIndex(t string) uint8 {
	if i := slices.Index(itemTypes, t); i >= 0 {
		return uint8(i)
	}
	return uint8(len(itemTypes) - 1)
}

// Len is the number of records under review.
func (c *Corpus) Len() int { return len(c.recs) }

// Items counts the items of every record under review.
func (c *Corpus) Items() int { return c.items }

// Has reports whether record id is under review.
func (c *Corpus) Has(id string) bool {
	_, ok := c.byID[id]
	return ok
}

// PartOf is the part record id came from; -1 when it is not under review.
func (c *Corpus) PartOf(id string) int {
	i, ok := c.byID[id]
	if !ok {
		return -1
	}
	return int(c.recs[i].part)
}

// Types lists the item types of the corpus, in schema.ItemTypes order
// (criteria last).
func (c *Corpus) Types() []string {
	var out []string
	var has [256]bool
	for i := range c.recs {
		for _, it := range c.recs[i].items {
			has[it.typ] = true
		}
	}
	for i, t := range itemTypes[:len(itemTypes)-1] {
		if has[i] {
			out = append(out, t)
		}
	}
	return out
}

// ItemInfo is what the index knows of item k: its type (CriterionType for
// a criterion) and whether the judge said it is invalid; ok is false when
// the corpus has no such item.
func (c *Corpus) ItemInfo(k ItemKey) (typ string, judged, valid bool, ok bool) {
	r := c.unitOf(k)
	if r == nil {
		return "", false, false, false
	}
	for i := range r.items {
		it := &r.items[i]
		if it.question == k.Question && it.id == k.Item {
			return c.typeName(it.typ), true, it.flags&judgeInvalid == 0, true
		}
	}
	return "", false, false, false
}

func (c *Corpus) typeName(i uint8) string { return itemTypes[i] }

// unitOf is the index entry holding item k.
func (c *Corpus) unitOf(k ItemKey) *recEntry {
	if i, ok := c.byID[k.Record]; ok {
		return &c.recs[i]
	}
	if k.Question > 0 {
		if i, ok := c.byID[schema.QuestionID(k.Record, k.Question-1)]; ok {
			return &c.recs[i]
		}
	}
	return nil
}

// Record reads record id whole (the last few read are kept).
func (c *Corpus) Record(ctx context.Context, id string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i, ok := c.byID[id]
	if !ok {
		return nil, fmt.Errorf("no record %q in this review", id)
	}
	if r := c.cache.get(id); r != nil {
		return r, nil
	}
	e := &c.recs[i]
	rec, err := c.Parts[e.part].rows.Record(e.ref)
	if err != nil {
		return nil, fmt.Errorf("reading record %s: %w", id, err)
	}
	if rec.ID != e.recordID() {
		return nil, fmt.Errorf("reading record %s: found record %s in its place (did the corpus change since the page started?)", id, rec.ID)
	}
	r := newRecord(id, rec)
	c.cache.put(r)
	return r, nil
}

// Close closes the corpus's files.
func (c *Corpus) Close() error {
	var first error
	for _, p := range c.Parts {
		if p.rows != nil {
			if err := p.rows.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// recordCache keeps the records read last.
type recordCache struct {
	mu    sync.Mutex
	order []string
	recs  map[string]*Record
}

// cachedRecords is how many whole records a corpus keeps.
const cachedRecords = 64

func (rc *recordCache) get(id string) *Record {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.recs[id]
}

func (rc *recordCache) put(r *Record) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.recs == nil {
		rc.recs = map[string]*Record{}
	}
	if _, ok := rc.recs[r.ID]; ok {
		return
	}
	if len(rc.order) == cachedRecords {
		delete(rc.recs, rc.order[0])
		rc.order = rc.order[1:]
	}
	rc.order = append(rc.order, r.ID)
	rc.recs[r.ID] = r
}

// Fingerprint is the review fingerprint of the corpus in: what its logs
// carry, and what `distill export --review` checks a log against.
func Fingerprint(ctx context.Context, in *audit.Input) (string, error) {
	fps := map[string]bool{}
	var ids []string
	err := audit.ScanAt(ctx, in, indexOfLabel, func(row *indexRow, _ audit.RowRef) error {
		if row.Provenance.JobFingerprint != "" {
			fps[row.Provenance.JobFingerprint] = true
		}
		id := row.ID
		if row.unit != "" {
			id = row.unit
		}
		ids = append(ids, id)
		return nil
	}, func(audit.Problem) {})
	if err != nil {
		return "", fmt.Errorf("reading the corpus for review: %w", err)
	}
	return fingerprintOf(fps, in, ids), nil
}

// fingerprintOf hashes the job fingerprints the records were made under
// (a verl export's come from export.json), so that a run, its jsonl export
// and its verl export have one fingerprint and a run still growing keeps
// it. A corpus without any hashes its record ids.
func fingerprintOf(fps map[string]bool, in *audit.Input, ids []string) string {
	keys := make([]string, 0, len(fps))
	for k := range fps {
		keys = append(keys, k)
	}
	if len(keys) == 0 && in.Export != nil {
		keys = append(keys, in.Export.JobFingerprints...)
	}
	kind := "jobs"
	if len(keys) == 0 {
		kind, keys = "ids", slices.Clone(ids)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	return fmt.Sprintf("%016x", xxhash.Sum64String("review-fingerprint/1 "+kind+"\n"+strings.Join(keys, "\n")))
}

// indexRow is what the index reads of a record: ids, verdicts and the
// rollouts' satisfaction verdicts, none of the long texts. Its json tags
// are schema.Record's, so JSONL records decode into it too.
type indexRow struct {
	ID         string         `parquet:"id" json:"id"`
	Style      string         `parquet:"style" json:"style"`
	Rubric     []indexItem    `parquet:"rubric,list" json:"rubric"`
	Rollouts   []indexRollout `parquet:"rollouts,list" json:"rollouts"`
	Provenance struct {
		JobFingerprint string `parquet:"job_fingerprint" json:"job_fingerprint"`
	} `parquet:"provenance" json:"provenance"`
	Grounded *indexGrounded `parquet:"grounded,optional" json:"grounded,omitempty"`
	// unit names a verl export's grounded question (its question id);
	// ID is then its passage's record.
	unit string
	// scratch, when set, holds edges' working space from one row to the
	// next (the column reader's rows).
	scratch *edgeScratch
}

// edgeScratch is the working space of indexRow.edges.
type edgeScratch struct {
	counts []edgeCounts
	edges  []float64
	out    []*float64
}

// edgeCounts are an item's good verdicts and verdicts on correct ([0])
// and flawed ([1]) rollouts.
type edgeCounts struct{ good, n [2]int }

type indexItem struct {
	ID             int32  `parquet:"id" json:"id"`
	Type           string `parquet:"type" json:"type"`
	Polarity       int32  `parquet:"polarity" json:"polarity"`
	Valid          *bool  `parquet:"valid,optional" json:"valid,omitempty"`
	EmpiricalValid *bool  `parquet:"empirical_valid,optional" json:"empirical_valid,omitempty"`
}

type indexRollout struct {
	Correct      bool                 `parquet:"correct" json:"correct"`
	Satisfaction []schemaSatisfaction `parquet:"satisfaction,list" json:"satisfaction"`
}

// schemaSatisfaction is a satisfaction verdict without its step.
type schemaSatisfaction struct {
	ID        int32 `parquet:"item_id" json:"item_id"`
	Satisfied bool  `parquet:"satisfied" json:"satisfied"`
}

type indexGrounded struct {
	Questions []indexQuestion `parquet:"questions,list" json:"questions"`
}

type indexQuestion struct {
	Index    int32            `parquet:"index" json:"index"`
	Criteria []indexCriterion `parquet:"criteria,list" json:"criteria"`
}

type indexCriterion struct {
	Valid  *bool `parquet:"valid,optional" json:"valid,omitempty"`
	Varies *bool `parquet:"varies,optional" json:"varies,omitempty"`
}

// edges are the discrimination edges of the row's items (edgeOf), in
// rubric order, from one pass over its rollouts' verdicts. They live in
// row.scratch until the next call when it is set.
func (row *indexRow) edges() []*float64 {
	sc := row.scratch
	if sc == nil {
		sc = &edgeScratch{}
	}
	n := len(row.Rubric)
	sc.counts = append(sc.counts[:0], make([]edgeCounts, n)...)
	sc.edges = append(sc.edges[:0], make([]float64, n)...)
	sc.out = append(sc.out[:0], make([]*float64, n)...)
	for _, ro := range row.Rollouts {
		side := 1
		if ro.Correct {
			side = 0
		}
		for _, s := range ro.Satisfaction {
			k := row.itemAt(s.ID)
			if k < 0 {
				continue
			}
			sc.counts[k].n[side]++
			if s.Satisfied == (row.Rubric[k].Polarity >= 0) {
				sc.counts[k].good[side]++
			}
		}
	}
	for k, c := range sc.counts {
		if c.n[0] > 0 && c.n[1] > 0 {
			sc.edges[k] = float64(c.good[0])/float64(c.n[0]) - float64(c.good[1])/float64(c.n[1])
			sc.out[k] = &sc.edges[k]
		}
	}
	return sc.out
}

// itemAt is the place in the rubric of the item with id (the last, when
// a damaged rubric repeats it); -1 when none. Rubrics are short: a search
// costs less than a map.
func (row *indexRow) itemAt(id int32) int {
	for k := len(row.Rubric) - 1; k >= 0; k-- {
		if row.Rubric[k].ID == id {
			return k
		}
	}
	return -1
}

// indexOfLabel is what a verl export's label holds for the index: a math
// record's rubric, or one grounded question of a passage.
func indexOfLabel(l *schema.Label, _ string) indexRow {
	if g := l.Grounded; g != nil {
		q := indexQuestion{Index: g.Index}
		for _, c := range g.Criteria {
			q.Criteria = append(q.Criteria, indexCriterion{Valid: c.Valid, Varies: c.Varies})
		}
		return indexRow{ID: g.RecordID, Style: schema.StyleGrounded, unit: schema.QuestionID(g.RecordID, g.Index),
			Grounded: &indexGrounded{Questions: []indexQuestion{q}}}
	}
	row := indexRow{ID: l.ID, Style: l.Style}
	for _, it := range l.Rubric {
		row.Rubric = append(row.Rubric, indexItem{ID: it.ID, Type: it.Type, Polarity: it.Polarity, Valid: it.Valid, EmpiricalValid: it.EmpiricalValid})
	}
	return row
}
