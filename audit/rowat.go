package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// RowRef names one row of an Input, so that a reader can hold a small
// index of a large corpus and read a record again when it needs all of
// it (the review page): File indexes Input.Files; At is the row's index in
// a Parquet file, or the byte offset of its line in a JSONL file (-1 when
// it is not known: after a line too long to read).
type RowRef struct {
	File int32
	At   int64
}

// ScanAt streams every row of in to fn decoded as T, with its RowRef, as
// ScanRecords streams records: T is a struct whose parquet and json tags
// name the fields it needs (only those columns of a Parquet file are
// read); ofLabel makes a T of a verl export's label. An unreadable file or
// row goes to bad and the scan goes on; the error is the context's or fn's.
func ScanAt[T any](ctx context.Context, in *Input, ofLabel func(*schema.Label, string) T, fn func(*T, RowRef) error, bad func(Problem)) error {
	for i := range in.Files {
		if err := ScanFileAt(ctx, in, i, ofLabel, fn, bad); err != nil {
			return err
		}
	}
	return nil
}

// ScanFileAt is ScanAt over file i of in alone, so that a reader can read
// several files at once (each call's fn and bad are its own).
func ScanFileAt[T any](ctx context.Context, in *Input, i int, ofLabel func(*schema.Label, string) T, fn func(*T, RowRef) error, bad func(Problem)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f := in.Files[i]
	each := func(t *T, at int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(t, RowRef{File: int32(i), At: at}); err != nil {
			return &scanFnError{err}
		}
		return nil
	}
	var err error
	if f.JSONL {
		_, err = scanJSONLAt(f.Path, func(t *T, _, off int64) error { return each(t, off) }, bad)
	} else {
		_, err = scanFile(f, in.Format, ofLabel, func(t *T, rows int64) error { return each(t, rows-1) }, bad)
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		if fnErr, ok := errors.AsType[*scanFnError](err); ok {
			return fnErr.err
		}
		bad(Problem{File: f.Path, Error: err.Error()})
	}
	return nil
}

// scanFnError carries an error of ScanAt's fn through a file's scan.
type scanFnError struct{ err error }

func (e *scanFnError) Error() string { return e.err.Error() }

// Rows reads records of an Input again by their RowRef. It keeps the
// Parquet files it has read open until Close. Safe for concurrent use.
type Rows struct {
	in      *Input
	mu      sync.Mutex
	records map[int32]*corpus.RowReader[schema.Record]
	labels  map[int32]*corpus.RowReader[labelRow]
	used    []int32 // the files open, least recently used first
}

// OpenRows returns a reader of in's records by RowRef.
func (in *Input) OpenRows() *Rows {
	return &Rows{in: in, records: map[int32]*corpus.RowReader[schema.Record]{}, labels: map[int32]*corpus.RowReader[labelRow]{}}
}

// Record reads the record at ref whole. A verl export's row becomes what
// its label holds (for a grounded question: a record of its passage that
// holds that one question). Reads are serialized: a file is never closed
// under one.
func (r *Rows) Record(ref RowRef) (*schema.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref.File < 0 || int(ref.File) >= len(r.in.Files) {
		return nil, fmt.Errorf("the corpus has no file %d", ref.File)
	}
	f := r.in.Files[ref.File]
	switch {
	case f.JSONL:
		return readJSONLAt(f.Path, ref.At)
	case r.in.Format == FormatVerl:
		rr, err := cachedReader(r, r.labels, ref.File, f)
		if err != nil {
			return nil, err
		}
		lr, err := rr.Read(ref.At)
		if err != nil {
			return nil, err
		}
		l, err := schema.ParseLabel([]byte(lr.Label))
		if err != nil && l.ID == "" {
			return nil, fmt.Errorf("%s row %d: the label does not decode: %w", f.Path, ref.At+1, err)
		}
		rec := RecordOfLabel(&l, lr.ExtraInfo.Split)
		return &rec, nil
	default:
		rr, err := cachedReader(r, r.records, ref.File, f)
		if err != nil {
			return nil, err
		}
		rec, err := rr.Read(ref.At)
		if err != nil {
			return nil, err
		}
		return &rec, nil
	}
}

// openReaders bounds the files Rows keeps open (each reader holds a page
// of every column it read): the least recently used is closed first.
const openReaders = 8

// cachedReader is the open reader of file i, opened at the first need;
// the caller holds r.mu.
func cachedReader[T any](r *Rows, m map[int32]*corpus.RowReader[T], i int32, f File) (*corpus.RowReader[T], error) {
	if k := slices.Index(r.used, i); k >= 0 {
		r.used = append(slices.Delete(r.used, k, k+1), i)
	}
	if rr := m[i]; rr != nil {
		return rr, nil
	}
	if len(r.used) >= openReaders {
		old := r.used[0]
		r.used = r.used[1:]
		if rr := m[old]; rr != nil {
			_ = rr.Close() // only read: closing loses nothing
			delete(m, old)
		}
	}
	r.used = append(r.used, i)
	var rr *corpus.RowReader[T]
	var err error
	if f.snap != nil {
		rr, err = corpus.SnapshotRows[T](f.snap, f.index)
	} else {
		rr, err = corpus.OpenRows[T](f.Path)
	}
	if err != nil {
		return nil, err
	}
	m[i] = rr
	return rr, nil
}

// readJSONLAt decodes the JSONL line that starts at off.
func readJSONLAt(path string, off int64) (*schema.Record, error) {
	if off < 0 {
		return nil, fmt.Errorf("%s: the record's place is not known (it follows a line too long to read)", path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer func() { _ = fh.Close() }() // only read: closing loses nothing
	br := bufio.NewReaderSize(io.NewSectionReader(fh, off, 1<<62), 64<<10)
	data, err := readLine(br)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s at byte %d: %w", path, off, err)
	}
	var rec schema.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s at byte %d: not a JSON record (did the file change since it was read?): %w", path, off, err)
	}
	return &rec, nil
}

// Close closes the files Rows opened.
func (r *Rows) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, rr := range r.records {
		errs = append(errs, rr.Close())
	}
	for _, rr := range r.labels {
		errs = append(errs, rr.Close())
	}
	clear(r.records)
	clear(r.labels)
	return errors.Join(errs...)
}

// RecordOfLabel is the record a verl export's label holds: for a math
// rubric, recordOfLabel's; for a grounded question, a record of its
// passage (its record id) that holds that one question.
func RecordOfLabel(l *schema.Label, split string) schema.Record {
	if l.Grounded == nil {
		return recordOfLabel(l, split)
	}
	g := l.Grounded
	rec := schema.Record{ID: g.RecordID, Source: l.DataSource, Split: split, Style: l.Style, Rubric: []schema.Item{}, Rollouts: []schema.Rollout{},
		Grounded: &schema.Grounded{DocID: g.DocID, PassageID: g.PassageID, Title: g.Title, Passage: g.Passage, DocHash: g.DocHash,
			Questions: []schema.GroundedQuestion{{Index: g.Index, Question: l.Question, Criteria: slices.Clone(g.Criteria)}}}}
	rec.Provenance.SpecVersion = l.V
	return rec
}
