package corpus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// longTextColumns are the leaf column paths that hold long free text. Their
// pages carry no min/max statistics and their chunks no bounds: for text of
// kilobytes the values would be copied whole into page headers and footer.
func longTextColumns() [][]string {
	return [][]string{
		{"problem"},
		{"answer"},
		{"reference"},
		{"rubric", "list", "element", "text"},
		{"rubric", "list", "element", "valid_reason"},
		{"rollouts", "list", "element", "text"},
	}
}

// recordSchema is the parquet schema every shard must have.
func recordSchema() *parquet.Schema { return parquet.SchemaOf(new(schema.Record)) }

// writerOptions are the options of every shard writer of a run.
func writerOptions(opt Options) []parquet.WriterOption {
	opts := []parquet.WriterOption{
		parquet.Compression(&keptZstd{}),
		// parquet-go defaults strings to DELTA_LENGTH_BYTE_ARRAY, which some
		// readers (Spark's vectorized reader before 3.4, Velox, old pyarrow)
		// reject; PLAIN is the encoding every reader has.
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
		parquet.MaxRowsPerRowGroup(int64(opt.RowGroupRows)),
		parquet.KeyValueMetadata("spec_version", schema.SpecVersion),
		parquet.KeyValueMetadata("tool_version", opt.ToolVersion),
		parquet.CreatedBy("rubricforge", opt.ToolVersion, "parquet-go-"+parquetGoVersion()),
	}
	for _, col := range longTextColumns() {
		opts = append(opts, parquet.SkipPageStatistics(col...), parquet.SkipPageBounds(col...))
	}
	return opts
}

func parquetGoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/parquet-go/parquet-go" {
				return strings.TrimPrefix(m.Version, "v")
			}
		}
	}
	return "unknown"
}

// writeShard writes recs (sorted by id) as shards/part-idx.parquet by the
// commit protocol: temp file, sync, close, reopen and check, id list written
// atomically, rename, sync the directory. The caller then lists the returned
// shard in the manifest. renamed reports that the shard reached its final
// name, even if a later step failed: it must then be listed, as the resume
// scan would adopt it.
func writeShard(fsy fsys.FS, runDir string, idx int, recs []schema.Record, opts []parquet.WriterOption) (info ShardInfo, renamed bool, err error) {
	dir := filepath.Join(runDir, shardsDir)
	tmp := filepath.Join(dir, shardTmpName(idx))
	final := filepath.Join(dir, shardName(idx))
	if _, err := fsy.Stat(final); err == nil {
		return ShardInfo{}, false, fmt.Errorf("committing shard: %s already exists", final)
	}
	if err := writeParquetTemp(fsy, tmp, recs, opts); err != nil {
		_ = fsy.Remove(tmp) // a leftover temporary shard is never listed, and resume removes it
		return ShardInfo{}, false, err
	}
	info, ids, err := inspectShard(fsy, tmp)
	if err == nil {
		err = sameIDs(tmp, ids, recs)
	}
	if err == nil {
		info.IDsXXHash64, err = writeIDList(fsy, dir, idx, info.XXHash64, ids)
	}
	if err != nil {
		_ = fsy.Remove(tmp) // likewise
		return ShardInfo{}, false, fmt.Errorf("checking written shard: %w", err)
	}
	if err := fsys.SyncDir(fsy, dir); err != nil { // the temp shard durably there before it moves
		_ = fsy.Remove(tmp)
		_ = fsy.Remove(filepath.Join(dir, sidecarName(idx)))
		return ShardInfo{}, false, err
	}
	if err := fsy.Rename(tmp, final); err != nil {
		_ = fsy.Remove(tmp) // likewise
		_ = fsy.Remove(filepath.Join(dir, sidecarName(idx)))
		return ShardInfo{}, false, fmt.Errorf("renaming shard into place: %w", err)
	}
	info.File = shardRelPath(idx)
	return info, true, fsys.SyncDir(fsy, dir)
}

// writeParquetTemp writes recs into a new file at tmp, syncs and closes it.
func writeParquetTemp(fsy fsys.FS, tmp string, recs []schema.Record, opts []parquet.WriterOption) error {
	f, err := fsy.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("creating shard: %w", err)
	}
	defer func() {
		if f != nil { // only when writing failed; the success path closes it and checks
			_ = f.Close()
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	w := parquet.NewGenericWriter[schema.Record](bw, opts...)
	if _, err := w.Write(recs); err != nil {
		return fmt.Errorf("writing shard %s: %w", tmp, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("finishing shard %s: %w", tmp, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing shard %s: %w", tmp, err)
	}
	if err := fsys.SyncFile(f); err != nil {
		return err
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return fmt.Errorf("closing shard %s: %w", tmp, cerr)
	}
	return nil
}

// sameIDs checks that the shard at path holds exactly the ids of recs.
func sameIDs(path string, ids []string, recs []schema.Record) error {
	if len(ids) != len(recs) {
		return fmt.Errorf("shard %s: %d rows on disk, %d written", path, len(ids), len(recs))
	}
	for i := range recs {
		if ids[i] != recs[i].ID {
			return fmt.Errorf("shard %s: row %d has id %q, wrote %q", path, i, ids[i], recs[i].ID)
		}
	}
	return nil
}

// writeIDList writes the id list of shard idx atomically and returns its
// checksum.
func writeIDList(fsy fsys.FS, dir string, idx int, shardHash string, ids []string) (string, error) {
	data, sum, err := encodeIDs(shardHash, ids)
	if err != nil {
		return "", err
	}
	if err := fsys.WriteFileAtomic(fsy, filepath.Join(dir, sidecarName(idx)), data, 0o644); err != nil {
		return "", fmt.Errorf("writing id list: %w", err)
	}
	return sum, nil
}

// inspectShard opens a shard, checks its footer and schema, reads its id
// column and hashes its bytes. It never panics on a damaged file.
func inspectShard(fsy fsys.FS, path string) (info ShardInfo, ids []string, err error) {
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return ShardInfo{}, nil, fmt.Errorf("opening shard: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	st, err := f.Stat()
	if err != nil {
		return ShardInfo{}, nil, fmt.Errorf("opening shard: %w", err)
	}
	size := st.Size()

	h := xxhash.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, size), make([]byte, 64<<10)); err != nil {
		return ShardInfo{}, nil, fmt.Errorf("hashing shard %s: %w", path, err)
	}

	pf, err := openShard(f, path, size)
	if err != nil {
		return ShardInfo{}, nil, err
	}
	ids, err = readIDs(pf, path)
	if err != nil {
		return ShardInfo{}, nil, err
	}
	if int64(len(ids)) != pf.NumRows() {
		return ShardInfo{}, nil, fmt.Errorf("shard %s: footer says %d rows, id column holds %d", path, pf.NumRows(), len(ids))
	}
	if len(ids) == 0 {
		return ShardInfo{}, nil, fmt.Errorf("shard %s holds no rows", path)
	}
	if !slices.IsSorted(ids) {
		return ShardInfo{}, nil, fmt.Errorf("shard %s: ids are not sorted", path)
	}
	return ShardInfo{
		Rows:      int64(len(ids)),
		Bytes:     size,
		XXHash64:  hashString(h.Sum64()),
		FirstID:   ids[0],
		LastID:    ids[len(ids)-1],
		ModTimeNS: st.ModTime().UnixNano(),
	}, ids, nil
}

// openShard opens the parquet footer of f and checks that the file has the
// record schema, or an older one (see readableSchemas), whose rows decode
// with the missing columns empty; parquet-go would otherwise convert a foreign schema
// silently.
func openShard(f io.ReaderAt, path string, size int64) (*parquet.File, error) {
	pf, err := openParquet(f, path, size)
	if err != nil {
		return nil, err
	}
	for _, s := range readableSchemas() {
		if parquet.EqualNodes(pf.Schema(), s) {
			return pf, nil
		}
	}
	return nil, fmt.Errorf("shard %s does not have the record schema (spec %s, or spec 2 without the grounded column)", path, schema.SpecVersion)
}

// openParquet opens the footer of any parquet file, checking it first so a
// damaged file is an error, never a panic or an unbounded allocation.
func openParquet(f io.ReaderAt, path string, size int64) (pf *parquet.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shard %s is damaged: parquet reader panicked: %v", path, p)
		}
	}()
	if err := checkFooter(f, path, size); err != nil {
		return nil, err
	}
	pf, err = parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("shard %s is not a readable parquet file: %w", path, err)
	}
	var rows int64
	for _, rg := range pf.RowGroups() {
		rows += rg.NumRows()
	}
	if rows != pf.NumRows() {
		return nil, fmt.Errorf("shard %s: row groups hold %d rows, footer says %d", path, rows, pf.NumRows())
	}
	return pf, nil
}

// checkFooter rejects a file whose footer would make parquet-go v0.32.0
// allocate without bound: it trusts the footer length and every length
// inside the footer, so a damaged shard could cost gigabytes or kill the
// process with an out-of-memory error that no recover catches.
func checkFooter(f io.ReaderAt, path string, size int64) error {
	var head, tail [8]byte
	if size < 12 {
		return fmt.Errorf("shard %s is not a readable parquet file: only %d bytes", path, size)
	}
	if _, err := f.ReadAt(head[:4], 0); err != nil {
		return fmt.Errorf("reading shard %s: %w", path, err)
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("reading shard %s: %w", path, err)
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return fmt.Errorf("shard %s is not a readable parquet file: bad magic bytes", path)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return fmt.Errorf("shard %s is not a readable parquet file: footer length %d exceeds the file", path, n)
	}
	footer := make([]byte, n)
	if _, err := f.ReadAt(footer, size-8-n); err != nil {
		return fmt.Errorf("reading footer of shard %s: %w", path, err)
	}
	if err := checkCompactStruct(footer); err != nil {
		return fmt.Errorf("shard %s is not a readable parquet file: damaged footer: %w", path, err)
	}
	return nil
}

// readIDs decodes only the id column of every row group.
func readIDs(pf *parquet.File, path string) (ids []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shard %s is damaged: parquet reader panicked: %v", path, p)
		}
	}()
	leaf, ok := pf.Schema().Lookup("id")
	if !ok {
		return nil, fmt.Errorf("shard %s has no id column", path)
	}
	ids = make([]string, 0, pf.NumRows())
	vals := make([]parquet.Value, 256)
	for gi, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			page, err := pages.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = pages.Close() // read only
				return nil, fmt.Errorf("shard %s: reading ids of row group %d: %w", path, gi, err)
			}
			vr := page.Values()
			for {
				n, err := vr.ReadValues(vals)
				for _, v := range vals[:n] {
					ids = append(ids, string(v.ByteArray()))
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					parquet.Release(page)
					_ = pages.Close() // read only
					return nil, fmt.Errorf("shard %s: decoding ids of row group %d: %w", path, gi, err)
				}
			}
			parquet.Release(page)
		}
		if err := pages.Close(); err != nil {
			return nil, fmt.Errorf("shard %s: reading ids of row group %d: %w", path, gi, err)
		}
	}
	return ids, nil
}

// scanBatch is how many rows a scan decodes at a time.
const scanBatch = 64

// ScanShard streams the records of one shard file to fn, in file order. A
// damaged file or one with another schema is an error, never a panic. fn may
// keep the record it is given. An error from fn stops the scan and is
// returned as is.
func ScanShard(path string, fn func(*schema.Record) error) error {
	_, err := scanShard(path, fn)
	return err
}

func scanShard(path string, fn func(*schema.Record) error) (rows int64, err error) {
	return scanFileFS(fsys.OS, path, openShard, fn)
}

// Scan streams the rows of the parquet file at path to fn, decoded as T: a
// struct whose parquet tags name the columns it needs (a subset of
// schema.Record for a shard, or of an export's columns). Only those columns
// are read, so a reader of rubrics does not pay for the rollouts. A column of
// T that the file lacks, a damaged file or a row count that disagrees with
// the footer is an error, never a panic. fn may keep the row it is given.
func Scan[T any](path string, fn func(*T) error) error {
	_, err := scanFile(path, openProjected[T], fn)
	return err
}

// openProjected opens a parquet file to be read as T, checking that it has
// every column of T but those under an optional top-level field (the
// grounded payload, which shards written before the grounded style lack:
// parquet-go reads it as nil) and those added later (addedInSpec3).
func openProjected[T any](f io.ReaderAt, path string, size int64) (*parquet.File, error) {
	pf, err := openParquet(f, path, size)
	if err != nil {
		return nil, err
	}
	return projectable[T](pf, path)
}

// projectable returns pf if it can be read as T (see openProjected).
func projectable[T any](pf *parquet.File, path string) (*parquet.File, error) {
	want := parquet.SchemaOf(new(T))
	for _, col := range want.Columns() {
		if optionalField(want, col[0]) && !hasField(pf.Schema(), col[0]) || addedInSpec3(col) {
			continue
		}
		if _, ok := pf.Schema().Lookup(col...); !ok {
			return nil, fmt.Errorf("%s has no column %s", path, strings.Join(col, "."))
		}
	}
	return pf, nil
}

// addedInSpec3 reports whether col lies under a column added to spec 3
// after its first shards were written (the grounded questions' open-book
// answers, see recordV3Closed; provenance's judge seeds, see
// recordV3Single): a file may lack it, and it reads as empty.
func addedInSpec3(col []string) bool {
	openBook := len(col) > 4 && col[0] == "grounded" && col[1] == "questions" && col[4] == "open_book_answers"
	seeds := len(col) == 2 && col[0] == "provenance" && (col[1] == "judge_seed" || col[1] == "empirical_seed")
	return openBook || seeds
}

// optionalField reports whether s has an optional top-level field name.
func optionalField(s *parquet.Schema, name string) bool {
	for _, f := range s.Fields() {
		if f.Name() == name {
			return f.Optional()
		}
	}
	return false
}

// hasField reports whether s has a top-level field name.
func hasField(s *parquet.Schema, name string) bool {
	for _, f := range s.Fields() {
		if f.Name() == name {
			return true
		}
	}
	return false
}

func scanFile[T any](path string, open func(io.ReaderAt, string, int64) (*parquet.File, error), fn func(*T) error) (rows int64, err error) {
	return scanFileFS(fsys.OS, path, open, fn)
}

// scanFileFS is scanFile on any file system.
func scanFileFS[T any](fsy fsys.FS, path string, open func(io.ReaderAt, string, int64) (*parquet.File, error), fn func(*T) error) (rows int64, err error) {
	return scanFileBatch(fsy, path, open, scanBatch, fn)
}

// scanFileBatch is scanFileFS decoding batch rows at a time.
func scanFileBatch[T any](fsy fsys.FS, path string, open func(io.ReaderAt, string, int64) (*parquet.File, error), batch int, fn func(*T) error) (rows int64, err error) {
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("opening shard: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	return scanOpen(f, path, open, batch, fn)
}

// scanOpen streams the rows of the open parquet file f (named path).
func scanOpen[T any](f interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
}, path string, open func(io.ReaderAt, string, int64) (*parquet.File, error), batch int, fn func(*T) error) (rows int64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("opening shard: %w", err)
	}
	pf, err := open(f, path, st.Size())
	if err != nil {
		return 0, err
	}
	r, err := newReader[T](pf, path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.Close() }() // only read: closing loses nothing
	buf := make([]T, max(batch, 1))
	for {
		clear(buf) // decoded slices must not alias the previous batch's
		n, rerr := readBatch(r, buf, path)
		for i := range buf[:n] {
			row := buf[i]
			if err := fn(&row); err != nil {
				return rows, err
			}
			rows++
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return rows, fmt.Errorf("reading shard %s after %d rows: %w", path, rows, rerr)
		}
		if n == 0 {
			return rows, fmt.Errorf("reading shard %s after %d rows: reader made no progress", path, rows)
		}
	}
	if rows != pf.NumRows() {
		return rows, fmt.Errorf("reading shard %s: got %d rows, footer says %d", path, rows, pf.NumRows())
	}
	return rows, nil
}

func newReader[T any](pf *parquet.File, path string) (r *parquet.GenericReader[T], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shard %s is damaged: parquet reader panicked: %v", path, p)
		}
	}()
	return parquet.NewGenericReader[T](pf), nil
}

func readBatch[T any](r *parquet.GenericReader[T], batch []T, path string) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, fmt.Errorf("shard %s is damaged: parquet reader panicked: %v", path, p)
		}
	}()
	return r.Read(batch)
}

// Shards lists the parquet files of the corpus at path, in order: for a run
// directory (it holds manifest.json) its listed shards in manifest order,
// each checked against the size the manifest gives; for an export directory
// (it holds data/) the data/*.parquet files by name; for a parquet file,
// itself. It takes no lock and hashes nothing.
func Shards(path string) ([]string, error) { return shardFiles(fsys.OS, path) }

func shardFiles(fsy fsys.FS, path string) ([]string, error) {
	st, err := fsy.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading corpus: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	m, err := readManifest(fsy, path)
	if errors.Is(err, fs.ErrNotExist) {
		files, gerr := filepath.Glob(filepath.Join(path, "data", "*.parquet"))
		if gerr == nil && len(files) > 0 {
			slices.Sort(files)
			return files, nil
		}
		return nil, fmt.Errorf("reading corpus %s: neither a run directory (no %s) nor an export directory (no data/*.parquet)", path, ManifestName)
	}
	if err != nil {
		return nil, err
	}
	files := make([]string, len(m.Shards))
	for i, s := range m.Shards {
		files[i] = filepath.Join(path, filepath.FromSlash(s.File))
		st, err := fsy.Stat(files[i])
		if err != nil {
			return nil, fmt.Errorf("reading run %s: %w", path, err)
		}
		if st.Size() != s.Bytes {
			return nil, fmt.Errorf("reading run %s: shard %s has %d bytes, manifest says %d", path, s.File, st.Size(), s.Bytes)
		}
	}
	return files, nil
}

// ReadAll streams every record of every listed shard of the run directory
// dir to fn, in manifest order. It takes no lock and does not hash the
// shards; a shard whose size or row count differs from the manifest is an
// error.
func ReadAll(dir string, fn func(*schema.Record) error) error { return readAllFS(fsys.OS, dir, fn) }

func readAllFS(fsy fsys.FS, dir string, fn func(*schema.Record) error) error {
	m, err := readManifest(fsy, dir)
	if err != nil {
		return err
	}
	files, err := shardFiles(fsy, dir)
	if err != nil {
		return err
	}
	for i, s := range m.Shards {
		rows, err := scanFileFS(fsy, files[i], openShard, fn)
		if err != nil {
			return err
		}
		if rows != s.Rows {
			return fmt.Errorf("reading run %s: shard %s has %d rows, manifest says %d", dir, s.File, rows, s.Rows)
		}
	}
	return nil
}
