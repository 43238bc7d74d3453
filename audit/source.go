package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// Kinds of corpus path.
const (
	KindRun    = "run"    // a run directory: manifest.json and shards/
	KindExport = "export" // a `distill export` directory: export.json and data/
	KindFiles  = "files"  // shard or data files named one by one
)

// Row formats: what the rows of a corpus hold.
const (
	FormatRecords = "records" // full records: run shards, jsonl exports and files
	FormatVerl    = "verl"    // a verl export: the rubric in the label column
)

// corpus.ExportManifestName is the manifest of an export directory, written last but one.

var (
	// ErrNotAuditable marks a path that is not a corpus validate can read:
	// a rar or srar-lines export, a directory that is neither a run nor an
	// export, a file of another kind. It is the user's choice of path.
	ErrNotAuditable = errors.New("not an auditable corpus")
	// ErrIncomplete marks an export directory without export.json: the
	// export did not finish.
	ErrIncomplete = errors.New("incomplete export")
)

// Input is a resolved corpus: its files and what is known about them.
type Input struct {
	Paths  []string // as given
	Kind   string   // KindRun, KindExport or KindFiles; the first path's when mixed
	Format string   // FormatRecords or FormatVerl
	Files  []File
	// From a run directory's manifest and its job history. Running: a
	// distill run held the directory when it was opened; the audit reads
	// the shards committed by then.
	Running             bool
	ManifestFingerprint string
	// RunTotals are the run's request totals from RUN/report.json; nil
	// when it has none or it does not read.
	RunTotals *RunTotals
	// RunInput is the run's account of its input, from RUN/report.json;
	// nil likewise.
	RunInput *RunInput
	MaxItems int // the largest distill.max_items of the jobs in the run; 0 when unknown
	// Refined is what refine.json says when the run is a refinement by
	// distill refine; nil otherwise.
	Refined *Refined
	// SatisfactionPanel is true when a job of the run judged satisfaction
	// with a panel of judges (SatisfactionJudgeError can measure its
	// error rate).
	SatisfactionPanel bool
	// From an export directory's export.json.
	Export *ExportInfo
}

// File is one data file of a corpus.
type File struct {
	Path  string
	JSONL bool  // JSONL records; otherwise Parquet
	Rows  int64 // rows the manifest or export.json lists; -1 when unknown
	Bytes int64 // size they list; -1 when unknown
	// snap holds a run's shards open (shard index), so that a running
	// run's compaction cannot take one away while it is audited.
	snap  *corpus.Snapshot
	index int
}

// size is the file's size now (as opened, for a run's shard).
func (f File) size() (int64, error) {
	if f.snap != nil {
		return f.snap.Size(f.index)
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ExportInfo is what the audit reads of export.json (see the export
// contract); unknown keys are ignored.
type ExportInfo struct {
	Format          string   `json:"format"`
	SpecVersion     string   `json:"spec_version"`
	Source          string   `json:"source"`
	JobFingerprints []string `json:"job_fingerprints"`
	ValidOnly       bool     `json:"valid_only"`
	RecordsOut      int64    `json:"records_out"`
	Files           []struct {
		File  string `json:"file"`
		Rows  int64  `json:"rows"`
		Bytes int64  `json:"bytes"`
	} `json:"files"`
}

// auditableExports are the export formats whose rows hold a rubric with
// item types and verdicts.
var auditableExports = []string{"jsonl", "verl"}

// Open resolves paths (run directories, export directories, shard and data
// files) into one Input. A path that does not exist wraps fs.ErrNotExist;
// one validate cannot read wraps ErrNotAuditable; an export without
// export.json wraps ErrIncomplete. Mixing verl exports with record corpora
// is refused (ErrNotAuditable): their figures do not add up.
func Open(paths ...string) (*Input, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no corpus path given: %w", ErrNotAuditable)
	}
	in := &Input{Paths: paths}
	for i, p := range paths {
		part, err := openOne(p)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			in.Kind, in.Format = part.Kind, part.Format
			in.ManifestFingerprint, in.MaxItems, in.Export, in.RunTotals, in.RunInput, in.Refined = part.ManifestFingerprint, part.MaxItems, part.Export, part.RunTotals, part.RunInput, part.Refined
		} else if part.Format != in.Format {
			return nil, fmt.Errorf("%s holds %s rows but %s holds %s rows; audit them separately: %w", p, part.Format, paths[0], in.Format, ErrNotAuditable)
		}
		in.Files = append(in.Files, part.Files...)
		in.Running = in.Running || part.Running
		in.SatisfactionPanel = in.SatisfactionPanel || part.SatisfactionPanel
	}
	if len(paths) > 1 {
		in.Refined = nil // a refinement's figures are its own corpus's, not a mix's
	}
	if len(paths) > 1 {
		in.RunTotals, in.RunInput = nil, nil // one run's totals are not those of what is audited
	}
	return in, nil
}

func openOne(path string) (*Input, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("corpus path: %w", err)
	}
	if !st.IsDir() {
		return openFile(path)
	}
	if _, err := os.Stat(filepath.Join(path, corpus.ManifestName)); err == nil {
		return openRun(path)
	}
	if _, err := os.Stat(filepath.Join(path, corpus.ExportManifestName)); err == nil {
		return openExport(path)
	}
	if st, err := os.Stat(filepath.Join(path, "data")); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s has data/ but no %s: the export did not finish (%s is written last); run distill export again: %w",
			path, corpus.ExportManifestName, corpus.ExportManifestName, ErrIncomplete)
	}
	return nil, fmt.Errorf("%s is neither a run directory (no %s) nor an export directory (no %s): %w",
		path, corpus.ManifestName, corpus.ExportManifestName, ErrNotAuditable)
}

// openRun opens a run directory's shards as its manifest lists them, all
// at once (a corpus.Snapshot), so that a run still going cannot merge one
// away half way through the audit. Sizes and row counts are checked when
// each shard is read, so one bad shard does not hide the others.
func openRun(dir string) (*Input, error) {
	snap, err := corpus.OpenSnapshot(dir)
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", dir, err)
	}
	m := snap.Manifest
	in := &Input{Kind: KindRun, Format: FormatRecords, ManifestFingerprint: m.JobFingerprint, Running: snap.InUse}
	for i, s := range m.Shards {
		in.Files = append(in.Files, File{Path: snap.Path(i), Rows: s.Rows, Bytes: s.Bytes, snap: snap, index: i})
	}
	in.MaxItems = maxItemsOf(m)
	in.RunTotals, in.RunInput = readRunReport(dir)
	in.Refined = readRefined(dir, m)
	in.SatisfactionPanel = satisfactionPanel(m)
	return in, nil
}

// RunTotals are a run's request totals over every session, as its
// report.json counts them: requests sent to the endpoint, and answers read
// from the response cache.
type RunTotals struct {
	Requests   int64
	CacheReads int64
}

// runReport is what validate reads of RUN/report.json (pipeline.Report's
// keys; audit does not import pipeline).
type runReport struct {
	Style    string `json:"style"`
	Problems *struct {
		InputRows  int64 `json:"input_rows"`
		BadLines   int64 `json:"bad_lines"`
		Duplicates int64 `json:"duplicates"`
		Unique     int64 `json:"unique"`
		Done       int64 `json:"done"`
		Failed     int64 `json:"failed"`
		LeftOut    int64 `json:"left_out"`
		Pending    int64 `json:"pending"`
	} `json:"problems"`
	LeftOutByStage     map[string]int64 `json:"left_out_by_stage"`
	DuplicateDocuments int64            `json:"duplicate_documents_total"`
	SkippedFiles       *SkippedFiles    `json:"skipped_files"`
	LLM                struct {
		Total *struct {
			Requests  int64 `json:"requests"`
			CacheHits int64 `json:"cache_hits"`
		} `json:"total"`
	} `json:"llm"`
}

// readRunReport reads RUN/report.json's totals and what of the input the
// run made no record of; nil when it is missing or does not decode (the
// audit goes on without them).
func readRunReport(dir string) (*RunTotals, *RunInput) {
	b, err := os.ReadFile(corpus.Layout{Dir: dir}.Report())
	if err != nil {
		return nil, nil
	}
	var rep runReport
	if json.Unmarshal(b, &rep) != nil {
		return nil, nil
	}
	var totals *RunTotals
	if t := rep.LLM.Total; t != nil {
		totals = &RunTotals{Requests: t.Requests, CacheReads: t.CacheHits}
	}
	return totals, rep.input()
}

// input is the run's account of its input; nil without one.
func (rep *runReport) input() *RunInput {
	p := rep.Problems
	if p == nil {
		return nil
	}
	in := &RunInput{
		Units: "problems", InputRows: p.InputRows, Unique: p.Unique, Duplicates: p.Duplicates, BadLines: p.BadLines,
		Done: p.Done, Failed: p.Failed, LeftOut: p.LeftOut, Pending: p.Pending, LeftOutShare: ratio(p.LeftOut, p.Unique),
		LeftOutByStage: []StageCount{}, DuplicateDocuments: rep.DuplicateDocuments, SkippedFiles: rep.SkippedFiles,
	}
	for _, stage := range slices.Sorted(maps.Keys(rep.LeftOutByStage)) {
		in.LeftOutByStage = append(in.LeftOutByStage, StageCount{stage, rep.LeftOutByStage[stage]})
	}
	if rep.Style == schema.StyleGrounded {
		in.Units = "passages"
	}
	return in
}

// maxItemsSetting names distill.max_items in the manifest's job history
// (the settings distill run records for every job, as its job file spells
// them).
const maxItemsSetting = "distill.max_items"

// maxItemsOf is the largest SRaR item limit of the jobs whose records the
// run holds (the current job's when none has records yet), from the
// manifest's job history; 0 when the history does not say. With several
// jobs, the largest limit is the one no record of theirs was made to break.
func maxItemsOf(m corpus.Manifest) int {
	most := 0
	for _, j := range m.Jobs {
		if j.Records == 0 && j.Fingerprint != m.JobFingerprint {
			continue
		}
		if n, err := strconv.Atoi(j.Settings[maxItemsSetting]); err == nil && n > 0 {
			most = max(most, n)
		}
	}
	return most
}

func openExport(dir string) (*Input, error) {
	path := filepath.Join(dir, corpus.ExportManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading export: %w", err)
	}
	var ex ExportInfo
	if err := json.Unmarshal(data, &ex); err != nil {
		return nil, fmt.Errorf("export manifest %s is corrupt: %w", path, err)
	}
	in := &Input{Kind: KindExport, Export: &ex}
	switch ex.Format {
	case "jsonl":
		in.Format = FormatRecords
	case "verl":
		in.Format = FormatVerl
	case "rar", "srar-lines":
		return nil, fmt.Errorf("%s is a %q export: its rows hold no item types or validity verdicts, so it cannot be audited; "+
			"validate reads run directories, shard files and %s exports (audit the run it came from: %s): %w",
			dir, ex.Format, orList(auditableExports), ex.Source, ErrNotAuditable)
	default:
		return nil, fmt.Errorf("%s names export format %q; validate reads %s exports: %w", path, ex.Format, orList(auditableExports), ErrNotAuditable)
	}
	for _, f := range ex.Files {
		if f.File == "" || filepath.IsAbs(f.File) || slices.Contains(strings.Split(filepath.ToSlash(f.File), "/"), "..") {
			return nil, fmt.Errorf("export manifest %s is corrupt: file %q is not a path inside the export", path, f.File)
		}
		in.Files = append(in.Files, File{Path: filepath.Join(dir, filepath.FromSlash(f.File)), JSONL: ex.Format == "jsonl", Rows: f.Rows, Bytes: f.Bytes})
	}
	if len(ex.Files) == 0 {
		ext := ".parquet"
		if ex.Format == "jsonl" {
			ext = ".jsonl"
		}
		files, _ := filepath.Glob(filepath.Join(dir, "data", "*"+ext))
		slices.Sort(files)
		for _, f := range files {
			in.Files = append(in.Files, File{Path: f, JSONL: ex.Format == "jsonl", Rows: -1, Bytes: -1})
		}
	}
	return in, nil
}

// openFile takes one shard or data file; a Parquet file's rows are told
// apart by its columns.
func openFile(path string) (*Input, error) {
	in := &Input{Kind: KindFiles}
	f := File{Path: path, Rows: -1, Bytes: -1}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl":
		if err := probeJSONL(path); err != nil {
			return nil, err
		}
		f.JSONL = true
		in.Format = FormatRecords
	case ".parquet":
		if st, err := os.Stat(path); err == nil && st.Size() == 0 {
			return nil, fmt.Errorf("%s is empty (0 bytes), not a corpus shard: %w", path, ErrNotAuditable)
		}
		format, err := probeParquet(path)
		if err != nil {
			return nil, err
		}
		in.Format = format
	default:
		return nil, fmt.Errorf("%s: validate reads .parquet shards and .jsonl records: %w", path, ErrNotAuditable)
	}
	in.Files = []File{f}
	return in, nil
}

var errStop = errors.New("stop")

// probeLines is how many non-blank lines of a JSONL file probeJSONL reads.
const probeLines = 16

// probeJSONL tells a file of corpus records from one that is not a corpus:
// an empty file, a problems file (the input of distill run), other JSON,
// text. It reads the first non-blank lines: one record (an object with
// "id" and "rubric") makes it a corpus, and lines further on that do not
// decode are then damage, reported by the audit. None makes it something
// else, said in words and wrapped in ErrNotAuditable.
func probeJSONL(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("corpus path: %w", err)
	}
	defer func() { _ = fh.Close() }() // only read: closing loses nothing
	br := bufio.NewReaderSize(fh, 1<<16)
	var keys []string // of the first JSON object that is not a record
	seen, parsed := 0, 0
	for seen < probeLines {
		line, rerr := readLine(br)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			if errors.Is(rerr, errLineTooLong) {
				seen++
				continue
			}
			return fmt.Errorf("reading %s: %w", path, rerr)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			seen++
			var obj map[string]json.RawMessage
			if json.Unmarshal(line, &obj) == nil {
				parsed++
				_, id := obj["id"]
				_, rubric := obj["rubric"]
				if id && rubric {
					return nil
				}
				if keys == nil {
					keys = slices.Sorted(maps.Keys(obj))
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
	}
	switch {
	case seen == 0:
		return fmt.Errorf("%s is empty: it holds no records, so it is not a corpus: %w", path, ErrNotAuditable)
	case parsed == 0:
		return fmt.Errorf("%s is not a corpus: none of its first %d lines is JSON (validate reads corpus records, one JSON object a line): %w",
			path, seen, ErrNotAuditable)
	case slices.Contains(keys, "problem") || slices.Contains(keys, "question"):
		return fmt.Errorf("%s is not a corpus: it looks like a problems file (keys %s), the input of distill run; "+
			"its records have no rubric. Audit the run directory distill run made from it: %w", path, strings.Join(keys, ", "), ErrNotAuditable)
	}
	return fmt.Errorf("%s is not a corpus: its first %d lines hold no record (an object with \"id\" and \"rubric\"; the first has keys %s): %w",
		path, seen, strings.Join(keys, ", "), ErrNotAuditable)
}

// probeParquet reads the first rows of a Parquet file as a record shard,
// then as a verl file, and says which it is. A damaged file is reported as
// such, with both readers' errors.
func probeParquet(path string) (string, error) {
	recErr := corpus.Scan(path, func(*row) error { return errStop })
	if recErr == nil || errors.Is(recErr, errStop) {
		return FormatRecords, nil
	}
	verlErr := corpus.Scan(path, func(*labelRow) error { return errStop })
	if verlErr == nil || errors.Is(verlErr, errStop) {
		return FormatVerl, nil
	}
	if !missingColumn(recErr) || !missingColumn(verlErr) {
		return "", recErr // damaged, not foreign
	}
	return "", fmt.Errorf("%s is neither a corpus shard (%v) nor a verl export file (%v); rar and srar-lines exports cannot be audited: %w",
		path, recErr, verlErr, ErrNotAuditable)
}

// missingColumn reports whether err is corpus.Scan's "has no column" error:
// the file is readable but holds other columns.
func missingColumn(err error) bool { return strings.Contains(err.Error(), " has no column ") }

func orList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// IsUsage reports whether err is about the paths the user gave (missing, or
// not something validate reads) rather than damage to a corpus.
func IsUsage(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotAuditable)
}
