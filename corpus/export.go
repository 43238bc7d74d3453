package corpus

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// Export formats.
const (
	FormatVerl      = "verl"       // verl's columns plus label and solution
	FormatRaR       = "rar"        // question, reference_answer, rubric of {title, description, weight}
	FormatSRaRLines = "srar-lines" // problem, rubric as SRaR's tagged lines, ground_truth
	FormatJSONL     = "jsonl"      // the full records, one JSON object per line
)

// ExportFormats lists the export formats.
var ExportFormats = []string{FormatVerl, FormatRaR, FormatSRaRLines, FormatJSONL}

// ExportSplits lists the splits an export can hold, in the order it writes
// them.
var ExportSplits = []string{"train", "validation", "test"}

// Names inside an export directory.
const (
	ExportManifestName = "export.json"
	DatasetCardName    = "README.md"
)

// Defaults of ExportOptions.
const (
	DefaultRowsPerFile  = 10000
	DefaultRowGroupRows = 1000
)

// ExportOptions configure Export.
type ExportOptions struct {
	Format string // one of ExportFormats
	Out    string // the export directory
	// Splits selects the splits to export; empty: every split the corpus has.
	Splits []string
	// SystemPrompt, verl only, is sent as a system message before the
	// problem. SystemPromptFile names where it came from, for the card.
	SystemPrompt     string
	SystemPromptFile string
	// UserTemplateFile, verl only, is a rollout template file (the format of
	// prompts/templates/rollout.tmpl, e.g. the run's PROMPTS_DIR/rollout.tmpl)
	// whose messages are the prompt. Without it or SystemPrompt the prompt is
	// the rollout template the records' rollouts were sampled with.
	UserTemplateFile string
	// Role, verl only, is whose rows the export holds (export_roles.go):
	// RoleReasoner (the default: the problem), RoleRubricator (RLCER's
	// rubricator prompt over the problem and one of its stored rollouts),
	// or both, comma-separated: each record's reasoner row followed by its
	// rubricator row.
	Role string
	// Hints, verl only, appends the rubric's criteria to the reasoner's
	// prompt as in-prompt hints (RGR 5.2, RLCER 5.5), for evaluation; the
	// items that state a result (ANSWER, FACTUAL) are left out.
	Hints bool
	// ValidOnly drops the items the validity judge marked invalid, and the
	// records whose rubric then no longer holds (schema.CheckRubric).
	ValidOnly bool
	// Review, when set, applies people's review decisions to every record
	// before ValidOnly (see ExportReview).
	Review ExportReview
	// RowsPerFile bounds every data file; default DefaultRowsPerFile.
	RowsPerFile int
	// RowGroupRows bounds parquet row groups; default DefaultRowGroupRows.
	RowGroupRows int
	// Force writes into a directory that holds other files than an earlier
	// export.
	Force       bool
	ToolVersion string
	FS          fsys.FS // default fsys.OS
	Logger      *slog.Logger

	prompts *promptSource // set by Export
	codec   *keptZstd     // set by Export: one zstd encoder for all its data files
}

// ExportManifest is export.json: what an export holds and where it came
// from. A directory without it is an incomplete export.
type ExportManifest struct {
	Format          string   `json:"format"`
	SpecVersion     string   `json:"spec_version"`
	Source          string   `json:"source"` // the corpus path as given
	JobFingerprints []string `json:"job_fingerprints"`
	ValidOnly       bool     `json:"valid_only"`
	// Role and Hints are the verl rows' role and whether their prompts
	// carry the rubric as hints (export_roles.go); absent for the
	// reasoner's plain rows.
	Role   string                 `json:"role,omitempty"`
	Hints  bool                   `json:"hints,omitempty"`
	Splits map[string]SplitCounts `json:"splits"`
	// RecordsIn counts the records of the selected splits; RecordsOut those
	// written. RecordsDropped = RecordsIn - RecordsOut: records whose rubric
	// no longer holds after --valid-only (or people's review: see Review). ItemsDropped counts the invalid
	// items removed from the records written.
	RecordsIn      int64 `json:"records_in"`
	RecordsOut     int64 `json:"records_out"`
	RecordsDropped int64 `json:"records_dropped"`
	ItemsDropped   int64 `json:"items_dropped"`
	// RowsByRole counts the verl rows of each role (export_roles.go): a
	// record makes several rows (a grounded passage one per question, an
	// export of both roles a reasoner and a rubricator row), so rows are
	// counted apart from records. Absent for the reasoner's plain rows.
	RowsByRole map[string]int64 `json:"rows_by_role,omitempty"`
	// RecordsWithoutRubricatorRow counts the records written with no
	// rubricator row (no stored rollout to show, or a grounded passage) in
	// an export of both roles; absent otherwise.
	RecordsWithoutRubricatorRow int64 `json:"records_without_rubricator_row,omitempty"`
	// DuplicatesDropped counts the records whose id an earlier shard already
	// held: the first is exported, as rewardd's index keeps it.
	DuplicatesDropped int64        `json:"duplicates_dropped"`
	Files             []ExportFile `json:"files"`
	// Review says what people's review decisions did; absent without them.
	Review *ReviewSummary `json:"review,omitempty"`
	// CreatedAt is the newest provenance.created_at among the records in,
	// so that the same export of the same corpus is the same bytes.
	CreatedAt time.Time `json:"created_at"`
}

// SplitCounts is one split of an export.
type SplitCounts struct {
	Rows  int64 `json:"rows"`
	Files int   `json:"files"`
}

// ExportFile is one data file of an export.
type ExportFile struct {
	File     string `json:"file"` // relative to the export directory: data/train-00000-of-00001.parquet
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
	XXHash64 string `json:"xxhash64"` // 16 lower-case hex digits of the file bytes
}

// exportFormat is how one format writes and checks its data files.
type exportFormat struct {
	name    string
	ext     string
	columns []columnDoc
	// full: the rows need the whole record, rollouts included.
	full    bool
	newSink func(w io.Writer, opt *ExportOptions) sink
	check   func(f io.ReaderAt, size, rows, lines int64) error
}

func parquetFormat[T any](name string, cols []columnDoc, longText [][]string, row func(rowMaker) func(exportRow, int64) (T, error)) *exportFormat {
	return &exportFormat{
		name: name, ext: "parquet", columns: cols,
		newSink: func(w io.Writer, opt *ExportOptions) sink {
			return newParquetSink(w, row(rowMaker{prompts: opt.prompts}), exportWriterOptions(opt, longText))
		},
		check: func(f io.ReaderAt, size, rows, _ int64) error { return checkParquet[T](f, size, rows) },
	}
}

func formatOf(name string) *exportFormat {
	switch name {
	case FormatVerl:
		return parquetFormat(name, verlColumns, [][]string{
			{"prompt", "list", "element", "content"}, {"reward_model", "ground_truth"},
			{"extra_info", "question"}, {"extra_info", "answer"}, {"extra_info", "rubric"}, {"label"}, {"solution"},
		}, func(m rowMaker) func(exportRow, int64) (VerlRow, error) { return m.verl })
	case FormatRaR:
		return parquetFormat(name, rarColumns, [][]string{
			{"question"}, {"reference_answer"}, {"rubric", "list", "element", "description"},
		}, func(m rowMaker) func(exportRow, int64) (RaRRow, error) { return m.rar })
	case FormatSRaRLines:
		return parquetFormat(name, srarLinesColumns, [][]string{{"problem"}, {"rubric"}, {"ground_truth"}},
			func(m rowMaker) func(exportRow, int64) (SRaRLinesRow, error) { return m.srarLines })
	case FormatJSONL:
		return &exportFormat{
			name: name, ext: "jsonl", columns: jsonlColumns, full: true,
			newSink: func(w io.Writer, _ *ExportOptions) sink { return &jsonlSink{w: bufio.NewWriterSize(w, 256<<10)} },
			check: func(_ io.ReaderAt, _, rows, lines int64) error {
				if lines != rows {
					return fmt.Errorf("holds %d lines, %d records were written", lines, rows)
				}
				return nil
			},
		}
	}
	return nil
}

// exportWriterOptions are the parquet options of every data file: zstd,
// PLAIN strings (the encoding every reader has), bounded row groups, and no
// min/max statistics on long text.
func exportWriterOptions(opt *ExportOptions, longText [][]string) []parquet.WriterOption {
	opts := []parquet.WriterOption{
		parquet.Compression(opt.codec),
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
		parquet.MaxRowsPerRowGroup(int64(opt.RowGroupRows)),
		parquet.KeyValueMetadata("spec_version", schema.SpecVersion),
		parquet.KeyValueMetadata("export_format", opt.Format),
		parquet.CreatedBy("rubricforge", opt.ToolVersion, ""),
	}
	for _, col := range longText {
		opts = append(opts, parquet.SkipPageStatistics(col...), parquet.SkipPageBounds(col...))
	}
	return opts
}

// Check reports the first problem with the options, as a user would fix it.
func (o *ExportOptions) Check() error {
	switch {
	case !slices.Contains(ExportFormats, o.Format):
		return fmt.Errorf("--format %q is not one of %s", o.Format, strings.Join(ExportFormats, ", "))
	case o.Out == "":
		return errors.New("--out is required: the export directory")
	case o.SystemPrompt != "" && o.Format != FormatVerl:
		return fmt.Errorf("--system-prompt is for --format verl only; %s has no chat prompt", o.Format)
	case o.UserTemplateFile != "" && o.Format != FormatVerl:
		return fmt.Errorf("--user-template is for --format verl only; %s has no chat prompt", o.Format)
	case !utf8.ValidString(o.SystemPrompt):
		return errors.New("--system-prompt: the file is not valid UTF-8")
	case o.RowsPerFile < 0 || o.RowGroupRows < 0:
		return errors.New("--rows-per-file must be positive")
	}
	if err := o.checkRole(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range o.Splits {
		if !slices.Contains(ExportSplits, s) {
			return fmt.Errorf("--split %q is not one of %s", s, strings.Join(ExportSplits, ", "))
		}
		if seen[s] {
			return fmt.Errorf("--split names %s twice", s)
		}
		seen[s] = true
	}
	return nil
}

func (o ExportOptions) withDefaults() ExportOptions {
	if o.RowsPerFile == 0 {
		o.RowsPerFile = DefaultRowsPerFile
	}
	if o.RowGroupRows == 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	o.RowGroupRows = min(o.RowGroupRows, o.RowsPerFile)
	if o.FS == nil {
		o.FS = fsys.OS
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Export writes the corpus at src (a run directory or one shard file) as
// opt.Format into opt.Out, and returns what it wrote (also in export.json).
//
// The data files are written under temporary names, synced and read back;
// only when all are done does the export remove the earlier export.json and
// card, rename the files to data/{split}-{i:05d}-of-{n:05d}.{ext}, remove
// the earlier export's data files it does not replace, sync, and write
// export.json and then the card (README.md), each atomically. An export that
// fails before that leaves an earlier export in opt.Out as it was; a crash
// after it leaves opt.Out without export.json, which readers treat as
// incomplete. The same export of the same corpus writes the same bytes.
func Export(ctx context.Context, src string, opt ExportOptions) (*ExportManifest, error) {
	if err := opt.Check(); err != nil {
		return nil, err
	}
	opt = opt.withDefaults()
	var err error
	if opt.prompts, err = newPromptSource(&opt); err != nil {
		return nil, err
	}
	opt.codec = &keptZstd{}
	in, err := openExportSource(src)
	if err != nil {
		return nil, err
	}
	defer in.close()
	if in.snap != nil && in.snap.InUse {
		opt.Logger.Warn("the run is still being written (a distill run holds it): exporting the records committed so far; export again when it has finished",
			"run", src, "records", in.snap.Manifest.Rows)
	}
	out := outDir{fs: opt.FS, dir: opt.Out, force: opt.Force}
	if err := out.prepare(); err != nil {
		return nil, err
	}
	x := newExporter(&opt, &out)
	if err := x.read(ctx, in); err != nil {
		x.abort()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrExportStopped, ctx.Err())
		}
		return nil, err
	}
	return x.commit(src)
}

// ErrExportStopped is wrapped when the context ended an export before it
// put anything in place: an earlier export in the directory is unchanged.
var ErrExportStopped = errors.New("export stopped before anything was put in place")

// ErrFormatRefused is the error of an export format that cannot hold the
// corpus's records (srar-lines of a grounded or factual_process record):
// a usage error, nothing is written.
var ErrFormatRefused = errors.New("the format cannot hold this corpus")

// exportSource is what an export reads: the shards of a run directory,
// opened together (a Snapshot, so that a running run's compaction cannot
// take a shard away half way), or one shard file.
type exportSource struct {
	snap  *Snapshot
	files []string
}

func (e exportSource) close() {
	if e.snap != nil {
		_ = e.snap.Close() // a snapshot only reads
	}
}

// openExportSource opens the corpus at src.
func openExportSource(src string) (exportSource, error) {
	if _, err := os.Stat(filepath.Join(src, ExportManifestName)); err == nil {
		return exportSource{}, fmt.Errorf("%s is an export directory; export reads a run directory (or a shard file)", src)
	}
	if _, err := os.Stat(filepath.Join(src, ManifestName)); err == nil {
		snap, err := OpenSnapshot(src)
		if err == nil {
			err = snap.checkDamage()
		}
		if err == nil {
			err = snap.Check()
		}
		if err != nil {
			if snap != nil {
				_ = snap.Close() // a snapshot only reads
			}
			return exportSource{}, err
		}
		if snap.Len() == 0 {
			_ = snap.Close() // a snapshot only reads
			return exportSource{}, fmt.Errorf("corpus %s holds no records yet", src)
		}
		return exportSource{snap: snap}, nil
	}
	files, err := Shards(src)
	if err != nil {
		return exportSource{}, err
	}
	if len(files) == 0 {
		return exportSource{}, fmt.Errorf("corpus %s holds no records yet", src)
	}
	return exportSource{files: files}, nil
}

// sources are the merge inputs of e, read as T.
func sources[T any](e exportSource, open func(io.ReaderAt, string, int64) (*parquet.File, error), batch int) []mergeSource[T] {
	if e.snap != nil {
		return snapshotSources[T](e.snap, open, batch)
	}
	return fileSources[T](e.files, open, batch)
}

// exporter streams records into the split writers and gathers the figures
// of export.json and the card.
type exporter struct {
	opt    *ExportOptions
	format *exportFormat
	out    *outDir
	splits map[string]*splitWriter
	stats  exportStats
}

func newExporter(opt *ExportOptions, out *outDir) *exporter {
	x := &exporter{opt: opt, format: formatOf(opt.Format), out: out, splits: map[string]*splitWriter{}, stats: newExportStats()}
	x.format.full = x.format.full || slices.Contains(opt.roles(), RoleRubricator) // its prompt holds a stored rollout
	selected := opt.Splits
	if len(selected) == 0 {
		selected = ExportSplits
	}
	for _, s := range selected {
		x.splits[s] = &splitWriter{fs: opt.FS, dir: out.data(), format: x.format, opt: opt, split: s}
	}
	return x
}

// fullMergeBatch is how many whole records (rollouts included) the merge of
// an export decodes at a time from each shard.
const fullMergeBatch = 8

// recordHead is the projection of a shard that every format but jsonl
// needs: the record without its rollouts and usage.
type recordHead struct {
	ID         string            `parquet:"id"`
	Source     string            `parquet:"source"`
	Split      string            `parquet:"split"`
	Problem    string            `parquet:"problem"`
	Answer     string            `parquet:"answer"`
	Reference  *string           `parquet:"reference,optional"`
	Style      string            `parquet:"style"`
	Rubric     []schema.Item     `parquet:"rubric,list"`
	Provenance schema.Provenance `parquet:"provenance"`
	Grounded   *schema.Grounded  `parquet:"grounded,optional"` // nil in shards written before the grounded style
}

func (h *recordHead) record() schema.Record {
	return schema.Record{ID: h.ID, Source: h.Source, Split: h.Split, Problem: h.Problem, Answer: h.Answer,
		Reference: h.Reference, Style: h.Style, Rubric: h.Rubric, Provenance: h.Provenance, Grounded: h.Grounded}
}

// read exports the records of files (shards sorted by id) in global id
// order, a k-way merge, so that the export does not depend on how the run's
// checkpoints cut its shards; of a repeated id the first is exported.
func (x *exporter) read(ctx context.Context, in exportSource) error {
	dup := func(id, file string) {
		x.stats.duplicates++
		x.opt.Logger.Warn("record id repeated in a later shard; the first is exported", "id", id, "file", file)
	}
	var err error
	tmp := &mergeTemp{fs: x.opt.FS, dir: x.out.data()}
	if x.format.full {
		// Whole records hold their rollouts: few at a time per shard.
		err = mergeBounded(ctx, sources[schema.Record](in, openShard, fullMergeBatch), tmp, fullMergeBatch, func(rec *schema.Record) string { return rec.ID },
			func(rec *schema.Record) error { return x.add(ctx, rec) }, dup)
	} else {
		err = mergeBounded(ctx, sources[recordHead](in, openProjected[recordHead], scanBatch), tmp, scanBatch, func(h *recordHead) string { return h.ID },
			func(h *recordHead) error {
				rec := h.record()
				return x.add(ctx, &rec)
			}, dup)
	}
	if err != nil {
		return err
	}
	for _, s := range ExportSplits {
		if sw := x.splits[s]; sw != nil {
			if err := sw.close(); err != nil {
				return err
			}
		}
	}
	return nil
}

// add exports one record if its split is selected.
func (x *exporter) add(ctx context.Context, rec *schema.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sw, ok := x.splits[rec.Split]
	if !ok {
		if !slices.Contains(ExportSplits, rec.Split) {
			return fmt.Errorf("record %s has split %q; an export knows %s", rec.ID, rec.Split, strings.Join(ExportSplits, ", "))
		}
		return nil
	}
	x.stats.in(rec)
	if x.opt.Review != nil && !x.opt.Review.Apply(rec) {
		x.stats.recordsDropped++
		return nil
	}
	if x.opt.ValidOnly {
		dropped, holds := dropInvalid(rec)
		if !holds {
			x.stats.recordsDropped++
			x.opt.Logger.Debug("dropped a record whose rubric no longer holds", "id", rec.ID, "items_dropped", dropped)
			return nil
		}
		x.stats.itemsDropped += int64(dropped)
	}
	rows := exportRows(x.format, x.opt.roles(), rec)
	if len(rows) == 0 {
		x.stats.recordsDropped++
		x.opt.Logger.Debug("dropped a record without a stored rollout: a rubricator row shows one", "id", rec.ID)
		return nil
	}
	x.stats.out(rec)
	x.stats.rows(x.opt.roles(), rows)
	for _, row := range rows {
		if err := sw.add(row); err != nil {
			return err
		}
	}
	return nil
}

// abort drops every file the export was writing, and the directories it
// made for them.
func (x *exporter) abort() {
	for _, sw := range x.splits {
		sw.abort()
	}
	x.out.removeCreated()
}

// commit puts the data files in place and writes export.json and the card.
func (x *exporter) commit(src string) (*ExportManifest, error) {
	if x.stats.recordsOut == 0 {
		x.abort()
		if x.stats.recordsIn == 0 {
			return nil, fmt.Errorf("nothing to export: corpus %s has no records in the selected splits", src)
		}
		return nil, fmt.Errorf("nothing to export: all %d records of the selected splits were dropped by --valid-only or --review", x.stats.recordsIn)
	}
	var ordered []*splitWriter
	for _, s := range ExportSplits {
		if sw := x.splits[s]; sw != nil {
			ordered = append(ordered, sw)
		}
	}
	files, err := x.out.commit(ordered, x.format.ext)
	if err != nil {
		return nil, err
	}
	m := x.manifest(src, ordered, files)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", ExportManifestName, err)
	}
	if err := fsys.WriteFileAtomic(x.opt.FS, filepath.Join(x.opt.Out, ExportManifestName), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	card := renderCard(cardInput{opt: x.opt, format: x.format, manifest: m, stats: &x.stats})
	if err := fsys.WriteFileAtomic(x.opt.FS, filepath.Join(x.opt.Out, DatasetCardName), card, 0o644); err != nil {
		return nil, err
	}
	return m, nil
}

func (x *exporter) manifest(src string, splits []*splitWriter, files []ExportFile) *ExportManifest {
	m := &ExportManifest{
		Format: x.opt.Format, SpecVersion: schema.SpecVersion, Source: src,
		JobFingerprints: x.stats.fingerprints(), ValidOnly: x.opt.ValidOnly, Splits: map[string]SplitCounts{}, Hints: x.opt.Hints, Role: roleOf(x.opt.roles()),
		RecordsIn: x.stats.recordsIn, RecordsOut: x.stats.recordsOut, RecordsDropped: x.stats.recordsDropped,
		ItemsDropped: x.stats.itemsDropped, DuplicatesDropped: x.stats.duplicates, Files: files, CreatedAt: x.stats.newest,
	}
	if m.Role != "" {
		m.RowsByRole, m.RecordsWithoutRubricatorRow = x.stats.rowsByRole, x.stats.noRubricatorRow
	}
	if x.opt.Review != nil {
		r := x.opt.Review.Summary()
		m.Review = &r
	}
	for _, sw := range splits {
		// A split is listed when the corpus has records in it or it was asked for.
		if sw.rows == 0 && x.stats.splitIn[sw.split] == 0 && !slices.Contains(x.opt.Splits, sw.split) {
			continue
		}
		m.Splits[sw.split] = SplitCounts{Rows: sw.rows, Files: len(sw.pending)}
		if sw.rows == 0 {
			x.opt.Logger.Warn("split has no rows to export; it has no files and is left out of the card's configs",
				"split", sw.split, "records_in", x.stats.splitIn[sw.split])
		}
	}
	return m
}

// ReadExportManifest reads dir/export.json. A missing one (an incomplete
// export, or no export at all) is an error wrapping fs.ErrNotExist.
func ReadExportManifest(dir string) (ExportManifest, error) {
	path := filepath.Join(dir, ExportManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ExportManifest{}, fmt.Errorf("%s is not a complete export (no %s): %w", dir, ExportManifestName, err)
		}
		return ExportManifest{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var m ExportManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return ExportManifest{}, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return m, nil
}
