package corpus

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// ColumnFile reads chosen leaf columns of a parquet file value by value,
// without reconstructing rows: for a reader that needs a few small
// columns of every record of a large corpus (the review page's index),
// where decoding rows through reflection costs most of the time. Each
// Column is read on its own; a caller walks them side by side, a row at a
// time, and assembles what it needs from the values' repetition and
// definition levels. Not safe for concurrent use.
type ColumnFile struct {
	path  string
	pf    *parquet.File
	close func() error
}

// OpenColumns opens the parquet file at path for reading its columns.
func OpenColumns(path string) (*ColumnFile, error) {
	f, err := fsys.OS.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening shard: %w", err)
	}
	cf, err := openColumns(f, path)
	if err != nil {
		_ = f.Close() // only read: err is the failure
		return nil, err
	}
	cf.close = f.Close
	return cf, nil
}

// SnapshotColumns reads the columns of shard i of s, through the file the
// snapshot holds open; closing the ColumnFile leaves that file open.
func SnapshotColumns(s *Snapshot, i int) (*ColumnFile, error) {
	if s.files[i] == nil {
		return nil, s.errs[i]
	}
	size, err := s.Size(i)
	if err != nil {
		return nil, fmt.Errorf("opening shard: %w", err)
	}
	pf, err := s.footer(i, size)
	if err != nil {
		return nil, err
	}
	return &ColumnFile{path: s.paths[i], pf: pf, close: func() error { return nil }}, nil
}

func openColumns(f interface {
	io.ReaderAt
	Stat() (os.FileInfo, error)
}, path string) (*ColumnFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening shard: %w", err)
	}
	pf, err := openParquet(f, path, st.Size())
	if err != nil {
		return nil, err
	}
	return &ColumnFile{path: path, pf: pf, close: func() error { return nil }}, nil
}

// Rows is the number of rows of the file.
func (cf *ColumnFile) Rows() int64 { return cf.pf.NumRows() }

// HasField reports whether the file has a top-level field name (an
// optional payload older files lack).
func (cf *ColumnFile) HasField(name string) bool { return hasField(cf.pf.Schema(), name) }

// Column is the leaf column at path (its names from the root: for a list,
// "rubric", "list", "element", "id"); an error when the file has none.
func (cf *ColumnFile) Column(path ...string) (*Column, error) {
	leaf, ok := cf.pf.Schema().Lookup(path...)
	if !ok || leaf.Node == nil || !leaf.Node.Leaf() {
		return nil, fmt.Errorf("%s has no column %s", cf.path, strings.Join(path, "."))
	}
	defs := make([]int, len(path)+1)
	var node parquet.Node = cf.pf.Schema()
	for k, name := range path {
		node = fieldOf(node, name)
		if node == nil {
			return nil, fmt.Errorf("%s has no column %s", cf.path, strings.Join(path, "."))
		}
		defs[k+1] = defs[k]
		if node.Optional() || node.Repeated() {
			defs[k+1]++
		}
	}
	return &Column{path: cf.path, name: strings.Join(path, "."), rgs: cf.pf.RowGroups(), index: leaf.ColumnIndex, defs: defs,
		buf: make([]parquet.Value, columnBuffer)}, nil
}

// fieldOf is n's field name; nil when it has none.
func fieldOf(n parquet.Node, name string) parquet.Node {
	for _, f := range n.Fields() {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// Close closes the file OpenColumns opened.
func (cf *ColumnFile) Close() error { return cf.close() }

// columnBuffer is how many values a Column decodes at a time.
const columnBuffer = 1024

// Column streams the values of one leaf column, row group after row
// group, a row at a time. The byte arrays of the values a Row returns are
// valid until the next Row: their pages then go back to parquet-go's
// buffer pool.
type Column struct {
	path, name string
	rgs        []parquet.RowGroup
	index      int
	defs       []int // defs[k]: the definition level once the path's first k nodes are present
	rg         int   // the row group being read
	pages      parquet.Pages
	values     parquet.ValueReader
	page       parquet.Page   // the page values reads
	read       []parquet.Page // pages read to the end, released at the next Row
	buf        []parquet.Value
	at, n      int // buf[at:n] are decoded and not yet taken
	done       bool
}

// Defined is the definition level a value of the column has at least
// when the first k names of its path are present: Defined(1) for the
// top-level field, Defined(k) for a list's element when path[k-1] is
// its "list".
func (c *Column) Defined(k int) int { return c.defs[k] }

// Row appends the values of the column's next row to dst (a row of a
// repeated column has one value per element, and one null value when the
// list is empty or absent) and returns it; io.EOF after the last row.
// A damaged page is an error, never a panic.
func (c *Column) Row(dst []parquet.Value) (_ []parquet.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shard %s is damaged: parquet reader panicked in column %s: %v", c.path, c.name, p)
		}
	}()
	for _, p := range c.read {
		parquet.Release(p)
	}
	clear(c.read)
	c.read = c.read[:0]
	first := true
	for {
		if c.at == c.n {
			if err := c.fill(); err != nil {
				if errors.Is(err, io.EOF) && !first {
					return dst, nil
				}
				return dst, err
			}
		}
		v := c.buf[c.at]
		if v.RepetitionLevel() == 0 && !first {
			return dst, nil
		}
		first = false
		dst = append(dst, v)
		c.at++
	}
}

// fill decodes the next values into buf; io.EOF after the last row group.
func (c *Column) fill() error {
	for {
		if c.done {
			return io.EOF
		}
		if c.values != nil {
			n, err := c.values.ReadValues(c.buf)
			if n > 0 {
				c.at, c.n = 0, n
				return nil
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("reading shard %s: column %s of row group %d: %w", c.path, c.name, c.rg, err)
			}
			c.values = nil
			c.read = append(c.read, c.page)
			c.page = nil
		}
		if c.pages == nil {
			if c.rg == len(c.rgs) {
				c.done = true
				return io.EOF
			}
			c.pages = c.rgs[c.rg].ColumnChunks()[c.index].Pages()
		}
		page, err := c.pages.ReadPage()
		if errors.Is(err, io.EOF) {
			cerr := c.pages.Close()
			c.pages = nil
			c.rg++
			if cerr != nil {
				return fmt.Errorf("reading shard %s: column %s of row group %d: %w", c.path, c.name, c.rg-1, cerr)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading shard %s: column %s of row group %d: %w", c.path, c.name, c.rg, err)
		}
		c.page, c.values = page, page.Values()
	}
}

// Close releases the column's pages.
func (c *Column) Close() error {
	for _, p := range append(c.read, c.page) {
		if p != nil {
			parquet.Release(p)
		}
	}
	c.read, c.page, c.values = nil, nil, nil
	if c.pages == nil {
		return nil
	}
	err := c.pages.Close()
	c.pages = nil
	return err
}
