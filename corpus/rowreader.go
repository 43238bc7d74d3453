package corpus

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// RowReader reads single rows of one parquet file by their index, as T
// (only T's columns, as Scan reads them): for a reader that shows one
// record at a time out of a corpus too large to hold in memory (the review
// page). It is safe for concurrent use; reads are serialized.
type RowReader[T any] struct {
	mu    sync.Mutex
	path  string
	pf    *parquet.File
	r     *parquet.GenericReader[T]
	close func() error
}

// OpenRows opens the parquet file at path for reading rows by index.
func OpenRows[T any](path string) (*RowReader[T], error) {
	f, err := fsys.OS.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening shard: %w", err)
	}
	rr, err := openRows[T](f, path)
	if err != nil {
		_ = f.Close() // only read: err is the failure
		return nil, err
	}
	rr.close = f.Close
	return rr, nil
}

// SnapshotRows reads rows of shard i of s, through the file the snapshot
// holds open (a running run's compaction cannot take it away); closing the
// RowReader leaves the snapshot's file open.
func SnapshotRows[T any](s *Snapshot, i int) (*RowReader[T], error) {
	if s.files[i] == nil {
		return nil, s.errs[i]
	}
	size, err := s.Size(i)
	if err != nil {
		return nil, fmt.Errorf("opening shard: %w", err)
	}
	pf, err := s.footer(i, size)
	if err == nil {
		pf, err = projectable[T](pf, s.paths[i])
	}
	if err != nil {
		return nil, err
	}
	return rowReaderOf[T](pf, s.paths[i])
}

func openRows[T any](f interface {
	io.ReaderAt
	Stat() (os.FileInfo, error)
}, path string) (*RowReader[T], error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening shard: %w", err)
	}
	pf, err := openProjected[T](f, path, st.Size())
	if err != nil {
		return nil, err
	}
	return rowReaderOf[T](pf, path)
}

// rowReaderOf is a RowReader of the opened file pf.
func rowReaderOf[T any](pf *parquet.File, path string) (*RowReader[T], error) {
	r, err := newReader[T](pf, path)
	if err != nil {
		return nil, err
	}
	return &RowReader[T]{path: path, pf: pf, r: r, close: func() error { return nil }}, nil
}

// Rows is the number of rows of the file.
func (rr *RowReader[T]) Rows() int64 { return rr.pf.NumRows() }

// Read returns row i (from 0). A damaged file is an error, never a panic.
func (rr *RowReader[T]) Read(i int64) (row T, err error) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if i < 0 || i >= rr.pf.NumRows() {
		return row, fmt.Errorf("shard %s has %d rows; there is no row %d", rr.path, rr.pf.NumRows(), i)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shard %s is damaged: parquet reader panicked at row %d: %v", rr.path, i, p)
		}
	}()
	if err := rr.r.SeekToRow(i); err != nil {
		return row, fmt.Errorf("reading shard %s at row %d: %w", rr.path, i, err)
	}
	buf := make([]T, 1)
	n, err := rr.r.Read(buf)
	if n == 1 {
		return buf[0], nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return row, fmt.Errorf("reading shard %s at row %d: %w", rr.path, i, err)
}

// Close closes the reader (and the file OpenRows opened).
func (rr *RowReader[T]) Close() error {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	err := rr.r.Close()
	if cerr := rr.close(); err == nil {
		err = cerr
	}
	return err
}
