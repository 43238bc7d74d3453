package corpus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// exportDataDir is the directory of an export's data files.
const exportDataDir = "data"

var (
	// exportFileRE matches a committed data file: HF's shard naming.
	exportFileRE = regexp.MustCompile(`^(train|validation|test)-[0-9]{5}-of-[0-9]{5}\.(parquet|jsonl)$`)
	// exportTempRE matches a data file being written, or a temporary file
	// of the merge of many shards.
	exportTempRE = regexp.MustCompile(`^\.((train|validation|test)-[0-9]{5}\.(parquet|jsonl)|merge-[0-9]{5})\.tmp$`)
)

// maxExportFiles is the most files of one split that the 5-digit shard
// names can number.
const maxExportFiles = 99999

// sink encodes the rows of one data file.
type sink interface {
	add(row exportRow, index int64) error
	close() error // writes everything buffered (and the footer) to the file
}

// parquetSink writes rows of type T made by row.
type parquetSink[T any] struct {
	w   *parquet.GenericWriter[T]
	row func(exportRow, int64) (T, error)
	buf []T
}

const parquetSinkBatch = 64

func newParquetSink[T any](w io.Writer, row func(exportRow, int64) (T, error), opts []parquet.WriterOption) sink {
	return &parquetSink[T]{w: parquet.NewGenericWriter[T](w, opts...), row: row, buf: make([]T, 0, parquetSinkBatch)}
}

func (s *parquetSink[T]) add(row exportRow, index int64) error {
	r, err := s.row(row, index)
	if err != nil {
		return err
	}
	s.buf = append(s.buf, r)
	if len(s.buf) == cap(s.buf) {
		return s.flush()
	}
	return nil
}

func (s *parquetSink[T]) flush() error {
	_, err := s.w.Write(s.buf)
	clear(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *parquetSink[T]) close() error {
	if err := s.flush(); err != nil {
		return err
	}
	return s.w.Close()
}

// jsonlSink writes full records, one JSON object per line.
type jsonlSink struct{ w *bufio.Writer }

func (s *jsonlSink) add(row exportRow, _ int64) error {
	rec := row.rec
	line, err := marshalJSON(fullRecord(rec))
	if err != nil {
		return fmt.Errorf("record %s: encoding: %w", rec.ID, err)
	}
	if _, err := s.w.WriteString(line); err != nil {
		return err
	}
	return s.w.WriteByte('\n')
}

func (s *jsonlSink) close() error { return s.w.Flush() }

// checkParquet checks a finished parquet data file: a readable footer, the
// schema of T and the expected row count.
func checkParquet[T any](f io.ReaderAt, size, rows int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("parquet reader panicked: %v", p)
		}
	}()
	pf, err := parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return err
	}
	if !parquet.EqualNodes(pf.Schema(), parquet.SchemaOf(new(T))) {
		return errors.New("schema differs from the format's")
	}
	if pf.NumRows() != rows {
		return fmt.Errorf("footer says %d rows, %d were written", pf.NumRows(), rows)
	}
	return nil
}

// pendingFile is a finished, synced and checked data file under its
// temporary name.
type pendingFile struct {
	split string
	seq   int
	tmp   string
	rows  int64
	bytes int64
	hash  string
}

// splitWriter writes the rows of one split into files of at most perFile
// rows, each under a temporary name until the whole export is committed.
type splitWriter struct {
	fs      fsys.FS
	dir     string // the export's data directory
	format  *exportFormat
	opt     *ExportOptions
	split   string
	rows    int64 // rows written to the split so far
	file    fsys.File
	sink    sink
	inFile  int64
	tmp     string
	pending []pendingFile
}

func (w *splitWriter) add(row exportRow) error {
	if w.sink == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	if err := w.sink.add(row, w.rows); err != nil {
		return err
	}
	w.rows++
	w.inFile++
	if w.inFile == int64(w.opt.RowsPerFile) {
		return w.finishFile()
	}
	return nil
}

func (w *splitWriter) open() error {
	seq := len(w.pending)
	if seq >= maxExportFiles {
		return fmt.Errorf("split %s needs more than %d files; raise --rows-per-file", w.split, maxExportFiles)
	}
	w.tmp = filepath.Join(w.dir, fmt.Sprintf(".%s-%05d.%s.tmp", w.split, seq, w.format.ext))
	f, err := w.fs.OpenFile(w.tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("creating data file: %w", err)
	}
	w.file, w.sink, w.inFile = f, w.format.newSink(f, w.opt), 0
	return nil
}

// finishFile closes the open file, syncs it, reads it back to check and hash
// it, and keeps it as pending.
func (w *splitWriter) finishFile() (err error) {
	f, tmp, s := w.file, w.tmp, w.sink
	w.file, w.sink = nil, nil
	defer func() {
		if err != nil { // the file is dropped: err says why
			_ = f.Close()
			_ = w.fs.Remove(tmp)
		}
	}()
	if err := s.close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	p := pendingFile{split: w.split, seq: len(w.pending), tmp: tmp, rows: w.inFile}
	if err := w.verify(&p); err != nil {
		return fmt.Errorf("checking written data file %s: %w", tmp, err)
	}
	w.pending = append(w.pending, p)
	return nil
}

// verify reads a finished file back: its hash, its size, and the format's
// own check of its structure and row count.
func (w *splitWriter) verify(p *pendingFile) error {
	f, err := w.fs.OpenFile(p.tmp, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	st, err := f.Stat()
	if err != nil {
		return err
	}
	p.bytes = st.Size()
	h := xxhash.New()
	lines, err := copyCountingLines(h, io.NewSectionReader(f, 0, p.bytes))
	if err != nil {
		return err
	}
	p.hash = fmt.Sprintf("%016x", h.Sum64())
	return w.format.check(f, p.bytes, p.rows, lines)
}

func copyCountingLines(dst io.Writer, src io.Reader) (lines int64, err error) {
	buf := make([]byte, 256<<10)
	for {
		n, rerr := src.Read(buf)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if _, err := dst.Write(buf[:n]); err != nil {
			return lines, err
		}
		if rerr == io.EOF {
			return lines, nil
		}
		if rerr != nil {
			return lines, rerr
		}
	}
}

// close finishes the split's last file.
func (w *splitWriter) close() error {
	if w.sink == nil {
		return nil
	}
	return w.finishFile()
}

// abort drops the split's open file and every pending one.
func (w *splitWriter) abort() {
	if w.file != nil { // dropped: a temporary file left behind is removed by the next export (exportTempRE)
		_ = w.file.Close()
		_ = w.fs.Remove(w.tmp)
		w.file, w.sink = nil, nil
	}
	for _, p := range w.pending {
		_ = w.fs.Remove(p.tmp)
	}
	w.pending = nil
}

// finalName is the HF shard name of file seq of n.
func (p pendingFile) finalName(n int, ext string) string {
	return fmt.Sprintf("%s-%05d-of-%05d.%s", p.split, p.seq, n, ext)
}

// outDir is an export directory being written.
type outDir struct {
	fs    fsys.FS
	dir   string
	force bool
	// createdDir and createdData: prepare made them, so an export that
	// fails or is stopped removes them again when they are empty.
	createdDir, createdData bool
}

func (o outDir) data() string { return filepath.Join(o.dir, exportDataDir) }

// prepare makes sure the directory exists and holds nothing but an earlier
// export (unless force), and removes data files left half-written by an
// export that crashed. An earlier export stays complete until commit.
func (o *outDir) prepare() error {
	st, err := o.fs.Stat(o.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o.createdDir, o.createdData = true, true
		return fsys.MkdirAllSynced(o.fs, o.data(), 0o755)
	case err != nil:
		return fmt.Errorf("export directory: %w", err)
	case !st.IsDir():
		return fmt.Errorf("export directory %s is a file", o.dir)
	}
	foreign, err := o.foreign()
	if err != nil {
		return err
	}
	if len(foreign) > 0 && !o.force {
		if len(foreign) > 5 {
			foreign = append(foreign[:5], "...")
		}
		return fmt.Errorf("export directory %s holds files that are not an earlier export (%s); choose a new directory, or --force to write among them "+
			"(export.json, README.md and data/{split}-NNNNN-of-NNNNN.* are then replaced, other files left as they are)",
			o.dir, strings.Join(foreign, ", "))
	}
	if _, err := o.fs.Stat(o.data()); errors.Is(err, fs.ErrNotExist) {
		o.createdData = true
	}
	if err := fsys.MkdirAllSynced(o.fs, o.data(), 0o755); err != nil {
		return err
	}
	return o.removeMatching(o.data(), exportTempRE, nil)
}

// removeCreated removes the directories prepare made, when they are still
// empty: an export that failed or was stopped leaves no empty DIR/data.
func (o *outDir) removeCreated() {
	if o.createdData {
		_ = o.fs.Remove(o.data()) // fails, as it should, when not empty
	}
	if o.createdDir {
		_ = o.fs.Remove(o.dir) // likewise
	}
}

// foreign lists what in the directory is not an earlier export's.
func (o outDir) foreign() ([]string, error) {
	entries, err := o.fs.ReadDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("listing export directory: %w", err)
	}
	hasManifest := slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == ExportManifestName })
	var out []string
	for _, e := range entries {
		switch name := e.Name(); {
		case name == ExportManifestName, fsys.IsTemp(name, ExportManifestName), fsys.IsTemp(name, DatasetCardName):
		case name == DatasetCardName && (hasManifest || o.isOurCard()):
		case name == exportDataDir && e.IsDir():
			sub, err := o.fs.ReadDir(o.data())
			if err != nil {
				return nil, fmt.Errorf("listing export directory: %w", err)
			}
			for _, s := range sub {
				if !exportFileRE.MatchString(s.Name()) && !exportTempRE.MatchString(s.Name()) {
					out = append(out, exportDataDir+"/"+s.Name())
				}
			}
		default:
			out = append(out, name)
		}
	}
	return out, nil
}

// isOurCard reports whether README.md is a dataset card an export wrote.
func (o outDir) isOurCard() bool {
	f, err := o.fs.OpenFile(filepath.Join(o.dir, DatasetCardName), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	return strings.Contains(string(head[:n]), cardMarker)
}

// removeMatching removes the files of dir whose names match re and are not
// in keep, then syncs dir if it removed any.
func (o outDir) removeMatching(dir string, re *regexp.Regexp, keep map[string]bool) error {
	entries, err := o.fs.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	removed := false
	for _, e := range entries {
		if !re.MatchString(e.Name()) || keep[e.Name()] {
			continue
		}
		if err := o.fs.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("removing %s: %w", e.Name(), err)
		}
		removed = true
	}
	if removed {
		return o.fs.SyncDir(dir)
	}
	return nil
}

// commit turns the pending files into the export's data files: it marks the
// directory incomplete (no export.json, no card), renames every pending file
// to its shard name, removes data files of an earlier export that this one
// does not have, and syncs. The caller then writes export.json and the card.
func (o outDir) commit(splits []*splitWriter, ext string) ([]ExportFile, error) {
	for _, name := range []string{ExportManifestName, DatasetCardName} {
		if err := o.fs.Remove(filepath.Join(o.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("removing the earlier %s: %w", name, err)
		}
	}
	if err := o.fs.SyncDir(o.dir); err != nil {
		return nil, err
	}
	var files []ExportFile
	keep := map[string]bool{}
	for _, sw := range splits {
		for _, p := range sw.pending {
			name := p.finalName(len(sw.pending), ext)
			if err := fsys.RenameSynced(o.fs, p.tmp, filepath.Join(o.data(), name)); err != nil {
				return nil, fmt.Errorf("renaming data file into place: %w", err)
			}
			keep[name] = true
			files = append(files, ExportFile{File: exportDataDir + "/" + name, Rows: p.rows, Bytes: p.bytes, XXHash64: p.hash})
		}
	}
	if err := o.removeMatching(o.data(), exportFileRE, keep); err != nil {
		return nil, err
	}
	return files, o.fs.SyncDir(o.data())
}
