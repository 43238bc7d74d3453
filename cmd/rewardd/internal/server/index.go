package server

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// Index finds a problem's rubric by its id or by its text. It holds one
// label per problem, nothing of the rollouts. It is read-only once built and
// safe for concurrent use.
type Index struct {
	byID   map[string]*schema.Label
	byText map[uint64][]*schema.Label
	// splits holds each split's problems in the corpus's order: the
	// tasks of the ORS environment (ors.go).
	splits map[string][]*schema.Label
}

// LoadStats say what loading a corpus found.
type LoadStats struct {
	Files      int // parquet or JSONL files read
	Records    int // rows seen
	Loaded     int // labels in the index
	Duplicates int // rows whose id was already loaded (the first one is kept)
	Skipped    int // rows without a rubric or with a bad label (each logged)
	Grounded   int // labels of grounded questions among Loaded
}

// NewIndex indexes labels. A label whose id is already indexed is a
// duplicate: the first one is kept.
func NewIndex(labels []schema.Label) (*Index, int) {
	x := newIndex(len(labels))
	dups := 0
	for i := range labels {
		if !x.add(&labels[i], defaultSplit) {
			dups++
		}
	}
	return x, dups
}

func newIndex(n int) *Index {
	return &Index{byID: make(map[string]*schema.Label, n), byText: make(map[uint64][]*schema.Label, n), splits: map[string][]*schema.Label{}}
}

// defaultSplit is the split of a problem whose corpus names none.
const defaultSplit = "train"

func (x *Index) add(l *schema.Label, split string) bool {
	if _, dup := x.byID[l.ID]; dup {
		return false
	}
	x.byID[l.ID] = l
	h := textHash(l.Question)
	x.byText[h] = append(x.byText[h], l)
	x.splits[split] = append(x.splits[split], l)
	return true
}

// Splits names the splits that hold problems: train, validation and test
// first (in that order), then any other the corpus names, sorted.
func (x *Index) Splits() []string {
	var out []string
	for _, s := range corpus.ExportSplits {
		if len(x.splits[s]) > 0 {
			out = append(out, s)
		}
	}
	var other []string
	for s := range x.splits {
		if !slices.Contains(corpus.ExportSplits, s) {
			other = append(other, s)
		}
	}
	slices.Sort(other)
	return append(out, other...)
}

// Split returns the problems of split in the corpus's order (a grounded
// record's questions one by one); nil for a split the corpus does not have.
func (x *Index) Split(split string) []*schema.Label { return x.splits[split] }

// Len is the number of problems indexed.
func (x *Index) Len() int { return len(x.byID) }

// ByID returns the label of the problem with that id.
func (x *Index) ByID(id string) (*schema.Label, bool) {
	l, ok := x.byID[id]
	return l, ok
}

// ErrAmbiguous is returned when a text matches problems with different ids.
var ErrAmbiguous = errors.New("the text matches more than one problem of the corpus (same text, different answers); send problem_id or the label")

// ByText returns the label of the problem whose text equals text after
// whitespace normalization (runs of white space are one space; leading and
// trailing space is dropped). ok is false when none does.
func (x *Index) ByText(text string) (l *schema.Label, ok bool, err error) {
	var found *schema.Label
	for _, cand := range x.byText[textHash(text)] {
		if !sameText(cand.Question, text) {
			continue
		}
		if found != nil && found.ID != cand.ID {
			return nil, false, ErrAmbiguous
		}
		found = cand
	}
	return found, found != nil, nil
}

// ByPrompt finds the problem in a prompt as a trainer sends it: the problem
// text itself, or a chat-templated prompt (ChatML, Llama 3, Gemma, Mistral,
// DeepSeek, Phi-3) whose user turn is the problem, or holds it as a run of
// whole lines (an instruction before, a format instruction or OpenRLHF's
// "Answer:" after, or both; a leading "Problem:" or "Question:" label on its
// first line is dropped), or between the <problem> tags of the toolkit's
// rollout template (the prompt of a verl export).
func (x *Index) ByPrompt(prompt string) (l *schema.Label, ok bool, err error) {
	for _, text := range promptTexts(prompt) {
		for _, cand := range append(taggedProblems(text), lineRuns(text)...) {
			if l, ok, err = x.ByText(cand); ok || err != nil {
				return l, ok, err
			}
		}
	}
	return nil, false, nil
}

// textHash hashes the whitespace-normalized text.
func textHash(s string) uint64 {
	var d xxhash.Digest
	d.Reset()
	first := true
	for w := range strings.FieldsSeq(s) {
		if !first {
			_, _ = d.WriteString(" ")
		}
		first = false
		_, _ = d.WriteString(w)
	}
	return d.Sum64()
}

func sameText(a, b string) bool {
	next, stop := iter.Pull(strings.FieldsSeq(a))
	defer stop()
	for w := range strings.FieldsSeq(b) {
		v, ok := next()
		if !ok || v != w {
			return false
		}
	}
	_, more := next()
	return !more
}

// LoadIndex reads the rubrics of the corpus at path: a run directory (it
// holds manifest.json), an export directory of `distill export` (it holds
// export.json; its label column, or for --format jsonl its records), or one
// Parquet shard or export file, or a JSONL file of records. Only the columns
// a label needs are read. A row without a rubric or with a bad label is
// logged and skipped; an unreadable file is an error.
func LoadIndex(path string, log *slog.Logger) (*Index, LoadStats, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &loader{x: newIndex(0), log: log}
	if err := l.load(path); err != nil {
		return nil, l.stats, err
	}
	l.stats.Loaded = l.x.Len()
	if l.stats.Loaded == 0 {
		return nil, l.stats, fmt.Errorf("loading the corpus: no rubric loaded from %s (%d rows read, %d without a rubric or with a bad label): give a run directory of distill run, an export directory of distill export (%s), or one of their data files, not a problems file",
			path, l.stats.Records, l.stats.Skipped, strings.Join(corpus.ExportFormats, ", "))
	}
	return l.x, l.stats, nil
}

type loader struct {
	x     *Index
	log   *slog.Logger
	stats LoadStats
	// fileSplit is the split the name of the file being read gives (an
	// export's data/train-00000-of-00001.parquet), "" when it gives none;
	// a record's own split comes first.
	fileSplit string
}

// splitOfFile is the split an export's data file is named after, "" for
// another name.
func splitOfFile(path string) string {
	name, _, _ := strings.Cut(filepath.Base(path), "-")
	name = strings.TrimSuffix(name, filepath.Ext(name))
	if slices.Contains(corpus.ExportSplits, name) {
		return name
	}
	return ""
}

// split is the split of a row: its own, else its file's, else train.
func (l *loader) split(own string) string { return cmp.Or(own, l.fileSplit, defaultSplit) }

// rubricRow is the projection of a record that a label needs.
type rubricRow struct {
	ID      string        `parquet:"id" json:"id"`
	Source  string        `parquet:"source" json:"source"`
	Problem string        `parquet:"problem" json:"problem"`
	Answer  string        `parquet:"answer" json:"answer"`
	Style   string        `parquet:"style" json:"style"`
	Split   string        `parquet:"-" json:"split"` // read from Parquet by splitRubricRow (older shards have no such column)
	Rubric  []schema.Item `parquet:"rubric,list" json:"rubric"`
	// Grounded is read from JSONL here and from Parquet by
	// groundedRubricRow (older shards have no such column).
	Grounded *schema.Grounded `parquet:"-" json:"grounded"`
}

// labelRow is the projection of an export row that rewardd reads.
type labelRow struct {
	Label string `parquet:"label"`
}

func (l *loader) load(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("loading the corpus: %w", err)
	}
	if !st.IsDir() {
		return l.loadFile(path)
	}
	switch {
	case exists(filepath.Join(path, corpus.ManifestName)):
		files, err := corpus.Shards(path)
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := l.scanRecords(f); err != nil {
				return err
			}
		}
		return nil
	case exists(filepath.Join(path, corpus.ExportManifestName)):
		return l.loadExport(path)
	}
	return fmt.Errorf("loading the corpus: %s is neither a run directory (no %s) nor a finished export directory (no %s)", path, corpus.ManifestName, corpus.ExportManifestName)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (l *loader) loadExport(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, corpus.ExportManifestName))
	if err != nil {
		return fmt.Errorf("loading the export: %w", err)
	}
	var meta struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("loading the export: %s: %w", filepath.Join(dir, corpus.ExportManifestName), err)
	}
	scan := map[string]func(string) error{
		corpus.FormatVerl: l.scanLabels, corpus.FormatRaR: l.scanRaR, corpus.FormatSRaRLines: l.scanSRaRLines, corpus.FormatJSONL: l.scanJSONL,
	}[meta.Format]
	if scan == nil {
		return fmt.Errorf("loading the export %s: its format %q is not one rewardd reads (%s)", dir, meta.Format, strings.Join(corpus.ExportFormats, ", "))
	}
	var files []string
	if meta.Format == corpus.FormatJSONL {
		files, err = filepath.Glob(filepath.Join(dir, "data", "*.jsonl"))
		if err == nil && len(files) == 0 {
			err = errors.New("no data/*.jsonl files")
		}
		slices.Sort(files)
	} else {
		files, err = corpus.Shards(dir)
	}
	if err != nil {
		return fmt.Errorf("loading the export %s (format %q): %w", dir, meta.Format, err)
	}
	for _, f := range files {
		l.fileSplit = splitOfFile(f)
		if err := scan(f); err != nil {
			return fmt.Errorf("loading the export %s (format %q): %w", dir, meta.Format, err)
		}
	}
	return nil
}

func (l *loader) loadFile(path string) error {
	l.fileSplit = splitOfFile(path)
	if strings.HasSuffix(path, ".jsonl") {
		return l.scanJSONL(path)
	}
	// One data file: of a verl export (its label column), a rar or
	// srar-lines export, or a run's shard.
	for _, f := range []struct {
		column string
		scan   func(string) error
	}{{"label", l.scanLabels}, {"reference_answer", l.scanRaR}, {"ground_truth", l.scanSRaRLines}} {
		has, err := hasColumn(path, f.column)
		if err != nil {
			return err
		}
		if has {
			return f.scan(path)
		}
	}
	return l.scanRecords(path)
}

// hasColumn reports whether the parquet file has the leaf column at path
// column (a group such as a struct is found by one of its leaves).
func hasColumn(path string, column ...string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("loading the corpus: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("loading the corpus: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return false, fmt.Errorf("loading the corpus: %s is not a Parquet file: %w", path, err)
	}
	_, ok := pf.Schema().Lookup(column...)
	return ok, nil
}

func (l *loader) scanRecords(file string) error {
	if ok, err := hasColumn(file, groundedColumn...); err != nil || ok {
		if err != nil {
			return err
		}
		return l.scanGroundedRecords(file)
	}
	l.stats.Files++
	row := 0
	if ok, err := hasColumn(file, "split"); err != nil || ok {
		if err != nil {
			return err
		}
		return corpus.Scan(file, func(r *splitRubricRow) error {
			row++
			rr := r.rubricRow
			rr.Split = r.Split
			l.addRecord(&rr, file, row)
			return nil
		})
	}
	return corpus.Scan(file, func(r *rubricRow) error {
		row++
		l.addRecord(r, file, row)
		return nil
	})
}

// splitRubricRow is rubricRow with the record's split, for shards that
// have the column.
type splitRubricRow struct {
	rubricRow
	Split string `parquet:"split"`
}

func (l *loader) addRecord(r *rubricRow, file string, row int) {
	l.stats.Records++
	if r.Style == schema.StyleGrounded {
		l.addGrounded(r, file, row)
		return
	}
	if len(r.Rubric) == 0 {
		l.skip(file, row, errors.New("the record has no rubric"))
		return
	}
	rec := schema.Record{ID: r.ID, Source: r.Source, Problem: r.Problem, Answer: r.Answer, Style: r.Style, Rubric: r.Rubric}
	lab := schema.LabelOf(&rec)
	if !l.x.add(&lab, l.split(r.Split)) {
		l.stats.Duplicates++
	}
}

func (l *loader) scanLabels(file string) error {
	l.stats.Files++
	row := 0
	return corpus.Scan(file, func(r *labelRow) error {
		row++
		l.stats.Records++
		lab, err := schema.ParseLabel([]byte(r.Label))
		if err != nil {
			l.skip(file, row, err)
			return nil
		}
		if lab.Grounded != nil {
			l.stats.Grounded++
		}
		if !l.x.add(&lab, l.split("")) {
			l.stats.Duplicates++
		}
		return nil
	})
}

// maxJSONLLine bounds one record line of a JSONL export.
const maxJSONLLine = 256 << 20

func (l *loader) scanJSONL(file string) error {
	l.stats.Files++
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("loading the corpus: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), maxJSONLLine)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var r rubricRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			l.stats.Records++
			l.skip(file, line, err)
			continue
		}
		l.addRecord(&r, file, line)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("loading the corpus: %s line %d: %w", file, line+1, err)
	}
	return nil
}

// maxSkipLogs bounds the warnings about skipped rows; the count is in the stats.
const maxSkipLogs = 20

func (l *loader) skip(file string, row int, err error) {
	l.stats.Skipped++
	if l.stats.Skipped <= maxSkipLogs {
		l.log.Warn("corpus row skipped", "file", file, "row", row, "reason", err.Error())
	}
}
