package corpus

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// errStopScan ends a scan whose reader wants no more rows.
var errStopScan = errors.New("scan stopped")

// shardRows streams the rows of a parquet file as T, batch rows decoded at a
// time; a read error is the last pair.
func shardRows[T any](path string, open func(io.ReaderAt, string, int64) (*parquet.File, error), batch int) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		_, err := scanFileBatch(fsys.OS, path, open, batch, func(row *T) error {
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
// to fn in global id order: a k-way merge holding batch rows per file. Of a
// repeated id only the first is given, the one of the earliest file (the
// order the files are listed in, as rewardd's index keeps them); dup is
// told of each other one. A file whose ids are not sorted is an error.
func mergeByID[T any](files []string, open func(io.ReaderAt, string, int64) (*parquet.File, error), batch int,
	id func(*T) string, fn func(*T) error, dup func(id, file string)) (err error) {
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
			return false, fmt.Errorf("%s: ids are not sorted (%s after %s); export reads shards sorted by id", files[c.file], rid, c.id)
		}
		c.row, c.id = row, rid
		return true, nil
	}
	for i, f := range files {
		next, stop := iter.Pull2(shardRows[T](f, open, batch))
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
			dup(c.id, files[c.file])
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
