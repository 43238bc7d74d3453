package corpus

import (
	"bufio"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// errStopScan ends a scan whose reader wants no more rows.
var errStopScan = errors.New("scan stopped")

// mergeSource is one id-sorted input of a merge: its name for errors, and
// its rows.
type mergeSource[T any] struct {
	name string
	rows iter.Seq2[*T, error]
}

// rowsOf turns a scan (scanning to fn) into a sequence of rows, a read
// error being the last pair.
func rowsOf[T any](scan func(fn func(*T) error) error) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		err := scan(func(row *T) error {
			if !yield(row, nil) {
				return errStopScan
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopScan) {
			yield(nil, err)
		}
	}
}

// fileSources are the parquet files at paths, read as T batch rows at a time.
func fileSources[T any](paths []string, open func(io.ReaderAt, string, int64) (*parquet.File, error), batch int) []mergeSource[T] {
	out := make([]mergeSource[T], len(paths))
	for i, p := range paths {
		out[i] = mergeSource[T]{name: p, rows: rowsOf(func(fn func(*T) error) error {
			_, err := scanFileBatch(fsys.OS, p, open, batch, fn)
			return err
		})}
	}
	return out
}

// snapshotSources are the shards of s, read as T batch rows at a time; a
// row count that differs from the manifest is an error.
func snapshotSources[T any](s *Snapshot, open func(io.ReaderAt, string, int64) (*parquet.File, error), batch int) []mergeSource[T] {
	out := make([]mergeSource[T], s.Len())
	for i := range out {
		out[i] = mergeSource[T]{name: s.Path(i), rows: rowsOf(func(fn func(*T) error) error {
			if s.files[i] == nil {
				return s.errs[i]
			}
			rows, err := scanOpen(s.files[i], s.paths[i], open, batch, fn)
			if err == nil && rows != s.Manifest.Shards[i].Rows {
				err = fmt.Errorf("shard %s has %d rows, the manifest says %d", s.paths[i], rows, s.Manifest.Shards[i].Rows)
			}
			return err
		})}
	}
	return out
}

// mergeCursor is the next row of one sorted file in a merge.
type mergeCursor[T any] struct {
	file  int // position of the file in the merge: lower wins a tie
	row   *T
	id    string
	next  func() (*T, error, bool)
	close func()
}

type mergeHeap[T any] []*mergeCursor[T]

func (h mergeHeap[T]) Len() int { return len(h) }
func (h mergeHeap[T]) Less(i, j int) bool {
	if h[i].id != h[j].id {
		return h[i].id < h[j].id
	}
	return h[i].file < h[j].file
}
func (h mergeHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap[T]) Push(x any)   { *h = append(*h, x.(*mergeCursor[T])) }
func (h *mergeHeap[T]) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// mergeByID streams the rows of files, each sorted by id (as shards are),
// to fn in global id order: a k-way merge holding one batch per file. Of a
// repeated id only the first is given, the one of the earliest file (the
// order the files are listed in, as rewardd's index keeps them); dup is
// told of each other one. A file whose ids are not sorted is an error.
func mergeByID[T any](files []mergeSource[T], id func(*T) string, fn func(*T) error, dup func(id, file string)) (err error) {
	h := make(mergeHeap[T], 0, len(files))
	defer func() {
		for _, c := range h {
			c.close()
		}
	}()
	advance := func(c *mergeCursor[T]) (bool, error) {
		row, rerr, ok := c.next()
		if !ok {
			c.close()
			return false, nil
		}
		if rerr != nil {
			c.close()
			return false, rerr
		}
		rid := id(row)
		if c.row != nil && rid <= c.id {
			c.close()
			return false, fmt.Errorf("%s: ids are not sorted (%s after %s); export reads shards sorted by id", files[c.file].name, rid, c.id)
		}
		c.row, c.id = row, rid
		return true, nil
	}
	for i, f := range files {
		next, stop := iter.Pull2(f.rows)
		c := &mergeCursor[T]{file: i, next: next, close: stop}
		ok, err := advance(c)
		if err != nil {
			return err
		}
		if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	last, started := "", false
	for h.Len() > 0 {
		c := h[0]
		if started && c.id == last {
			dup(c.id, files[c.file].name)
		} else if err := fn(c.row); err != nil {
			return err
		}
		last, started = c.id, true
		ok, err := advance(c)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// maxMergeFanIn bounds the inputs a merge reads at once: each open parquet
// reader holds its pages and decompressors (about 2 MB for a projection, 5.5
// MB for whole records, measured over 200 shards), so a run of hundreds of
// checkpoint shards is merged in rounds through temporary files.
const maxMergeFanIn = 16

// mergeTemp is where a merge round keeps its temporary files.
type mergeTemp struct {
	fs    fsys.FS
	dir   string
	files []string
}

// name is the path of temporary file i; exportTempRE matches it, so an
// export cut short leaves nothing the next one keeps.
func (m *mergeTemp) name(i int) string {
	return filepath.Join(m.dir, fmt.Sprintf(".merge-%05d.tmp", i))
}

func (m *mergeTemp) removeAll() {
	for _, p := range m.files {
		_ = m.fs.Remove(p) // one left behind is removed by the next export (exportTempRE)
	}
	m.files = nil
}

// mergeBounded is mergeByID with at most maxMergeFanIn inputs open at once:
// while there are more, just enough consecutive groups of them at the front
// are merged into temporary parquet files of T in tmp.dir (read back batch
// rows at a time) for the rest to fit.
// Groups keep the inputs' order, so the first of a repeated id is still the
// one of the earliest input; each repeat is told to dup once. The temporary
// files are removed before it returns.
func mergeBounded[T any](ctx context.Context, srcs []mergeSource[T], tmp *mergeTemp, batch int, id func(*T) string, fn func(*T) error, dup func(id, file string)) error {
	defer tmp.removeAll()
	for len(srcs) > maxMergeFanIn {
		// Merge just enough groups at the front for the next round to
		// fit: a group of k inputs takes k-1 away.
		var next []mergeSource[T]
		excess, start := len(srcs)-maxMergeFanIn, 0
		for excess > 0 {
			k := min(maxMergeFanIn, excess+1)
			group := srcs[start : start+k]
			start += k
			excess -= k - 1
			path := tmp.name(len(tmp.files))
			tmp.files = append(tmp.files, path)
			if err := mergeInto(ctx, tmp.fs, path, group, id, dup); err != nil {
				return err
			}
			next = append(next, mergeSource[T]{name: path, rows: rowsOf(func(fn func(*T) error) error {
				_, err := scanFileBatch(tmp.fs, path, openProjected[T], batch, fn)
				return err
			})})
		}
		srcs = append(next, srcs[start:]...)
	}
	return mergeByID(srcs, id, fn, dup)
}

// mergeInto merges group into a new parquet file of T at path.
func mergeInto[T any](ctx context.Context, fsy fsys.FS, path string, group []mergeSource[T], id func(*T) string, dup func(id, file string)) error {
	f, err := fsy.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("creating a temporary merge file: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	w := parquet.NewGenericWriter[T](bw, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(int64(2*scanBatch)))
	row := make([]T, 1)
	err = mergeByID(group, id, func(r *T) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		row[0] = *r
		_, err := w.Write(row)
		return err
	}, dup)
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the temporary merge file %s: %w", path, err)
	}
	return nil
}
