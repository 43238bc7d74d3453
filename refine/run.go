package refine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/outpath"
	"github.com/rubricforge/rubricforge/schema"
)

// Files a refinement writes into the refined run directory, beside the
// corpus.
const (
	SummaryName = audit.RefineSummaryName // the Summary
	RecordsName = "refine-records.jsonl"  // one Decision per record, in input order
	// Version is the refinement's own version, part of its fingerprint:
	// bump it when the rules or the weights change.
	Version = "2"
)

var (
	// ErrNoVerdicts is wrapped when no record of the source has
	// satisfaction verdicts on its rollouts: there is nothing to measure.
	ErrNoVerdicts = errors.New("no satisfaction verdicts")
	// ErrUsage is wrapped when the paths given cannot be used as asked.
	ErrUsage = errors.New("usage")
)

// Config is one refinement: from Src into Out.
type Config struct {
	Src, Out string
	// DryRun measures and decides but writes nothing; DryRunTo receives a
	// line per record that would change.
	DryRun   bool
	DryRunTo io.Writer
	Options  Options
	// ShardRows and ToolVersion are the refined corpus's (corpus.Options).
	// A shard's records are held in memory until it is written, so
	// ShardRows 0 takes the source run's largest shard (sized by the job
	// that made it for its records), or 1000 for other sources.
	ShardRows   int
	ToolVersion string
	Logger      *slog.Logger
	// Decompose, when set, splits saturated items into finer ones
	// (--decompose; see Decompose). A dry run does not decompose.
	Decompose *Decompose
	// MinGain, when set, is the gate of --min-gain: a refinement whose
	// held-out change of the rubric's own signal has a 95% interval
	// reaching below it is not written (GateError).
	MinGain *float64
	// FS is the file system the refined corpus is written to; default
	// fsys.OS. The source is read from the real one, as is a
	// decomposition's work directory (a Decompose needs fsys.OS).
	FS fsys.FS
}

// fs is the file system of the refined corpus.
func (c *Config) fs() fsys.FS {
	if c.FS == nil {
		return fsys.OS
	}
	return c.FS
}

// GateError is a refinement that fails the --min-gain gate: Out is not
// written (or, when it already held this refinement, left as it was).
type GateError struct{ Err error }

func (e *GateError) Error() string { return e.Err.Error() }

// IsUsage reports whether err is the user's to fix (exit 2): a missing or
// unreadable source, an --out refused, a source without verdicts.
func IsUsage(err error) bool {
	return errors.Is(err, ErrUsage) || errors.Is(err, ErrNoVerdicts) || errors.Is(err, outpath.ErrRefused) || audit.IsUsage(err)
}

// Run refines cfg.Src into the run directory cfg.Out (see the package
// comment): it writes everything into a hidden sibling directory and
// renames it to Out at the end, so Out exists only whole. A source without
// satisfaction verdicts wraps ErrNoVerdicts and leaves nothing behind.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Decompose != nil && cfg.fs() != fsys.OS {
		return nil, fmt.Errorf("refine: a decomposition runs on the real file system, not on Config.FS: %w", ErrUsage)
	}
	in, err := openSource(cfg.Src)
	if err != nil {
		return nil, err
	}
	src, _ := filepath.Abs(cfg.Src)
	judgeError, err := measureJudgeError(ctx, in, &cfg.Options)
	if err != nil {
		return nil, err
	}
	settings := settingsOf(src, in, cfg.Options)
	if cfg.Decompose != nil && !cfg.DryRun {
		settings["decompose"] = decomposeSetting(&cfg.Decompose.Job)
	}
	fp := fingerprint(in, settings)
	sum := &Summary{Source: src, SourceFingerprints: sourceFingerprints(in), Fingerprint: fp, Settings: settings, DryRun: cfg.DryRun,
		JudgeError: judgeError}
	if !cfg.DryRun {
		done, err := checkOut(cfg.fs(), cfg.Out, cfg.Src, fp)
		if err != nil || done {
			if done {
				return alreadyDone(cfg, sum)
			}
			return nil, err
		}
	}
	if cfg.ShardRows <= 0 {
		cfg.ShardRows = shardRowsOf(in)
	}
	var finer map[string]*schema.Record
	if cfg.Decompose != nil && !cfg.DryRun {
		if finer, err = decomposeSaturated(ctx, in, cfg, sum); err != nil {
			return nil, err
		}
	}
	w, err := newWriter(cfg, fp, settings)
	if err != nil {
		return nil, err
	}
	defer w.abandon()
	if err := stream(ctx, in, cfg, finer, w, sum); err != nil {
		return nil, err
	}
	if sum.Records.Measured+sum.Records.UnmeasuredFit == 0 {
		return nil, fmt.Errorf("%s: none of its %d records has satisfaction verdicts on its rollouts: "+
			"run the empirical stage first (empirical.enabled: true in the job file, or --empirical on distill run; "+
			"run the same distill run again with it on: answered requests come from the cache), then refine: %w",
			cfg.Src, sum.Records.Read, ErrNoVerdicts)
	}
	sum.Finish()
	if cfg.MinGain != nil {
		if err := sum.CheckGain(*cfg.MinGain); err != nil {
			return sum, &GateError{err}
		}
	}
	if err := w.adoptDecomposition(finer != nil); err != nil {
		return nil, err
	}
	if err := w.commit(sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// measureJudgeError sets opt.JudgeError, when not given, to the error
// rate the corpus's satisfaction panels measure (audit's; it reads the
// corpus once more), and says the rate the rules tolerate and where it
// comes from: "flag", "panel" or "default".
func measureJudgeError(ctx context.Context, in *audit.Input, opt *Options) (JudgeErrorUsed, error) {
	from := "flag"
	if opt.JudgeError == 0 {
		from = "default"
		if in.SatisfactionPanel {
			rate, ok, err := audit.SatisfactionJudgeError(ctx, in)
			if err != nil {
				return JudgeErrorUsed{}, err
			}
			if ok {
				opt.JudgeError, from = max(rate, 1e-9), "panel"
			}
		}
	}
	return JudgeErrorUsed{Rate: opt.discrim(false).JudgeErrorOf(), From: from}, nil
}

// alreadyDone is the summary of a refinement Out already holds: its
// refine.json, against which the --min-gain gate is checked.
func alreadyDone(cfg Config, sum *Summary) (*Summary, error) {
	sum.AlreadyDone = true
	if cfg.MinGain == nil {
		return sum, nil
	}
	raw, err := fsys.ReadFile(cfg.fs(), filepath.Join(cfg.Out, SummaryName))
	if err != nil {
		return nil, fmt.Errorf("reading the refinement %s holds, for --min-gain: %w", cfg.Out, err)
	}
	var done Summary
	if err := json.Unmarshal(raw, &done); err != nil {
		return nil, fmt.Errorf("reading %s for --min-gain: %w", filepath.Join(cfg.Out, SummaryName), err)
	}
	if err := done.CheckGain(*cfg.MinGain); err != nil {
		return sum, &GateError{fmt.Errorf("%s holds this refinement: %w", cfg.Out, err)}
	}
	return sum, nil
}

// openSource opens the corpus to refine; a verl export, which holds no
// rollouts, is refused.
func openSource(path string) (*audit.Input, error) {
	in, err := audit.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the corpus to refine: %w", err)
	}
	if in.Format == audit.FormatVerl {
		return nil, fmt.Errorf("%s is a verl export: its rows hold the rubric only, no rollouts and no satisfaction verdicts; "+
			"refine the run directory (or jsonl export) it was exported from, made with the empirical stage on: %w", path, ErrNoVerdicts)
	}
	return in, nil
}

// stream reads the records of in in one goroutine and decides and writes
// them in this one, so that decoding the source and encoding the refined
// corpus overlap on two cores; the channel bounds the records in flight.
// It returns once the reader has stopped.
func stream(ctx context.Context, in *audit.Input, cfg Config, finer map[string]*schema.Record, w *writer, sum *Summary) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recs := make(chan *schema.Record, 256)
	readDone := make(chan error, 1)
	var bad []audit.Problem
	go func() {
		defer close(recs)
		readDone <- audit.Records(ctx, in, func(rec *schema.Record) error {
			select {
			case recs <- rec:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, func(p audit.Problem) { bad = append(bad, p) })
	}()
	werr := refineAll(recs, cfg, finer, w, sum)
	if werr != nil {
		cancel()
		for range recs { // until the reader has seen the cancel
		}
	}
	rerr := <-readDone
	switch {
	case werr != nil:
		return fmt.Errorf("refining %s: %w", cfg.Src, werr)
	case rerr != nil:
		return fmt.Errorf("refining %s: %w", cfg.Src, rerr)
	case len(bad) > 0:
		return fmt.Errorf("refining %s: %s line %d: %s (%d rows did not read; the source must read whole)", cfg.Src, bad[0].File, bad[0].Line, bad[0].Error, len(bad))
	}
	return nil
}

// refineAll decides and writes every record recs brings; a record with
// finer items (finer, by id) is decided with them.
func refineAll(recs <-chan *schema.Record, cfg Config, finer map[string]*schema.Record, w *writer, sum *Summary) error {
	var m discrim.Matrix
	for rec := range recs {
		d := decideRecord(rec, &m, cfg.Options)
		if fine, ok := finer[rec.ID]; ok && d.Unmeasured == "" {
			if ext, ok := withFiner(rec, fine); ok {
				d = decideWithFiner(ext, len(rec.Rubric), &m, cfg.Options)
				rec = ext
			} else {
				sum.Decomposed.Unjudged++
			}
		}
		sum.Add(&d)
		out := rec
		if d.Unmeasured == "" {
			out = Apply(rec, &d)
			if cfg.DryRun && cfg.DryRunTo != nil {
				writeDryRunLine(cfg.DryRunTo, &d)
			}
		}
		if err := w.add(out, &d); err != nil {
			return err
		}
	}
	return nil
}

// decideRecord is a record's Decision; records of the grounded style and
// records without verdicts are unmeasured.
func decideRecord(rec *schema.Record, m *discrim.Matrix, opt Options) Decision {
	if rec.Style != schema.StyleSRaR && rec.Style != schema.StyleFactualProcess {
		return Decision{ID: rec.ID, Unmeasured: "style_" + rec.Style}
	}
	discrim.FromRecord(m, rec)
	return Decide(rec.ID, m, opt)
}

// shardRowsOf is the rows of the source run's largest shard, 1000 when
// the source is not a run.
func shardRowsOf(in *audit.Input) int {
	rows := int64(0)
	if in.Kind == audit.KindRun {
		for _, f := range in.Files {
			rows = max(rows, f.Rows)
		}
	}
	if rows <= 0 {
		return 1000
	}
	return int(rows)
}

// checkOut refuses an --out that is the source, inside it, inside another
// run or export, or that exists; done is true when out already is this
// very refinement (same fingerprint), so running the command again is a
// no-op.
func checkOut(fsy fsys.FS, out, src, fp string) (done bool, err error) {
	if out == "" {
		return false, fmt.Errorf("--out is required: the refined corpus is a new run directory: %w", ErrUsage)
	}
	if m, err := corpus.ReadManifestFS(fsy, out); err == nil && m.JobFingerprint == fp {
		return true, nil
	}
	if inside(out, src) {
		return false, fmt.Errorf("--out %s is inside the source %s; write the refined corpus elsewhere: %w", out, src, outpath.ErrRefused)
	}
	if err := outpath.Dir("--out", out, src); err != nil {
		return false, err
	}
	if _, err := fsy.Stat(out); err == nil {
		return false, fmt.Errorf("--out %s exists; refine writes a new run directory: remove it or give another: %w", out, outpath.ErrRefused)
	}
	return false, nil
}

// inside reports whether path is dir or under it (symbolic links resolved
// where they exist).
func inside(path, dir string) bool {
	p, d := resolved(path), resolved(dir)
	rel, err := filepath.Rel(d, p)
	return err == nil && (rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))))
}

// resolved is path absolute with the symbolic links of its longest
// existing prefix resolved.
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(p) == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// settingsOf are the refinement's settings as the manifest's job history
// keeps them.
func settingsOf(src string, in *audit.Input, opt Options) map[string]string {
	sat := "within the judge's errors"
	if opt.Saturated95 {
		sat = "within the judge's errors, or >= 95% of the rollouts"
	}
	alpha := opt.AntiAlpha
	if alpha <= 0 {
		alpha = discrim.DefaultAntiAlpha
	}
	return map[string]string{
		"command":            "distill refine",
		"refine_version":     Version,
		"refined_from":       src,
		"source_kind":        in.Kind + "/" + in.Format,
		"source_fingerprint": strings.Join(sourceFingerprints(in), ","),
		"min_edge":           strconv.FormatFloat(opt.MinEdge, 'g', -1, 64),
		"anti_alpha":         strconv.FormatFloat(alpha, 'g', -1, 64),
		"saturated":          sat,
		"min_side":           strconv.Itoa(opt.MinSide),
		"decided_on":         "every judged rollout",
		"held_out":           "cross-fitted: discrim.Folds, " + strconv.Itoa(opt.folds()) + " folds by side and index; pairs within a fold",
		"folds":              strconv.Itoa(opt.folds()),
		"judge_error":        strconv.FormatFloat(opt.discrim(false).JudgeErrorOf(), 'g', -1, 64),
		"weights":            "max(edge, 0.05) / (1 + sum of positive within-label phi with the other kept items)",
		"decompose":          "off",
	}
}

// sourceFingerprints are the job fingerprints the source names: its
// manifest's, or its export's.
func sourceFingerprints(in *audit.Input) []string {
	switch {
	case in.ManifestFingerprint != "":
		return []string{in.ManifestFingerprint}
	case in.Export != nil:
		return slices.Clone(in.Export.JobFingerprints)
	}
	return nil
}

// fingerprint identifies a refinement: its settings but the source's path,
// and the source's files by name, rows and size.
func fingerprint(in *audit.Input, settings map[string]string) string {
	var d xxhash.Digest
	d.Reset()
	keys := make([]string, 0, len(settings))
	for k := range settings {
		if k != "refined_from" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&d, "%q=%q\n", k, settings[k])
	}
	for _, f := range in.Files {
		size := f.Bytes
		if st, err := os.Stat(f.Path); err == nil {
			size = st.Size()
		}
		fmt.Fprintf(&d, "file %q rows %d bytes %d\n", filepath.Base(f.Path), f.Rows, size)
	}
	return fmt.Sprintf("%016x", d.Sum64())
}

// writeDryRunLine prints what would change in one record.
func writeDryRunLine(w io.Writer, d *Decision) {
	var drops []string
	for _, it := range d.Items {
		switch {
		case it.Drop == DropRedundant:
			drops = append(drops, fmt.Sprintf("%d %s (redundant with %d)", it.ID, it.Type, it.RedundantWith))
		case it.Drop != "":
			drops = append(drops, fmt.Sprintf("%d %s (%s)", it.ID, it.Type, it.Drop))
		}
	}
	line := d.ID + ": "
	if len(drops) == 0 {
		line += "keep every item"
	} else {
		line += "drop " + strings.Join(drops, ", ")
	}
	var ws []string
	for _, it := range d.Items {
		if it.Drop == "" {
			ws = append(ws, fmt.Sprintf("%d→%d:%g", it.ID, it.NewID, it.Weight))
		}
	}
	fmt.Fprintf(w, "%s; weights %s\n", line, strings.Join(ws, " "))
}

// writer writes the refined corpus into a hidden temporary directory next
// to Out and renames it at the end; in a dry run it writes nothing. Both
// refinements use it: by discrimination (Run: refine-records.jsonl and
// refine.json) and by live statistics (FromStats: from-stats-records.jsonl
// and from-stats.json).
type writer struct {
	fs       fsys.FS
	out, tmp string
	run      *corpus.Run
	recFile  fsys.File
	recs     *bufio.Writer
	fp       string
	// recordsName and summaryName are the files beside the corpus: one
	// line per record, then the summary.
	recordsName, summaryName string
}

// tempDir is where a refinement into out is written until it is whole.
func tempDir(out string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(out)), "."+filepath.Base(filepath.Clean(out))+".refine-partial")
}

func newWriter(cfg Config, fp string, settings map[string]string) (*writer, error) {
	if cfg.DryRun {
		return &writer{}, nil
	}
	w := &writer{fs: cfg.fs(), out: cfg.Out, tmp: tempDir(cfg.Out), fp: fp, recordsName: RecordsName, summaryName: SummaryName}
	return w, w.open(corpus.Options{ShardRows: cfg.ShardRows, ToolVersion: cfg.ToolVersion, Logger: cfg.Logger}, settings)
}

// open starts the temporary directory: what a killed refinement left
// there is thrown away (it starts over).
func (w *writer) open(opt corpus.Options, settings map[string]string) error {
	if busy, err := corpus.InUseFS(w.fs, w.tmp); err == nil && busy {
		return fmt.Errorf("another distill refine is writing %s (its work directory %s is locked): %w", w.out, w.tmp, ErrUsage)
	}
	if err := fsys.RemoveAll(w.fs, w.tmp); err != nil {
		return fmt.Errorf("removing what an interrupted refine left in %s: %w", w.tmp, err)
	}
	opt.FS = w.fs
	run, err := corpus.Open(w.tmp, opt)
	if err != nil {
		return fmt.Errorf("creating the refined corpus: %w", err)
	}
	run.SetJob(w.fp, settings)
	w.run = run
	f, err := w.fs.OpenFile(filepath.Join(w.tmp, w.recordsName), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		w.run = nil
		return errors.Join(fmt.Errorf("creating %s: %w", w.recordsName, err), run.Abandon())
	}
	w.recFile, w.recs = f, bufio.NewWriterSize(f, 1<<20)
	return nil
}

// add writes one refined record (a copy, under the refinement's
// fingerprint) and, when line is not nil, its line of the records file.
func (w *writer) add(rec *schema.Record, line any) error {
	if w.run == nil {
		return nil
	}
	out := *rec
	out.Provenance.JobFingerprint = w.fp
	if err := w.run.Append(&out); err != nil {
		return fmt.Errorf("writing refined record %s: %w", rec.ID, err)
	}
	if line == nil {
		return nil
	}
	raw, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encoding the line of %s in %s: %w", rec.ID, w.recordsName, err)
	}
	_, _ = w.recs.Write(raw) // a bufio.Writer keeps its first error: WriteByte or Flush returns it
	return w.recs.WriteByte('\n')
}

// commit closes the corpus, writes the summary, and renames the directory
// to Out.
func (w *writer) commit(sum any) error {
	if w.run == nil {
		return nil
	}
	if err := w.recs.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", w.recordsName, err)
	}
	if err := w.recFile.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", w.recordsName, err)
	}
	if err := w.recFile.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", w.recordsName, err)
	}
	w.recFile = nil
	if err := w.run.Close(); err != nil {
		return fmt.Errorf("closing the refined corpus: %w", err)
	}
	w.run = nil
	raw, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", w.summaryName, err)
	}
	if err := fsys.WriteFileAtomic(w.fs, filepath.Join(w.tmp, w.summaryName), append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", w.summaryName, err)
	}
	if err := fsys.RenameSynced(w.fs, w.tmp, w.out); err != nil {
		return fmt.Errorf("moving the refined corpus into place: %w", err)
	}
	return nil
}

// abandon removes the temporary directory of a refinement that did not
// finish (nothing after commit).
func (w *writer) abandon() {
	if w.recFile != nil { // everything written here is removed below
		_ = w.recFile.Close()
	}
	if w.run != nil {
		_ = w.run.Close()
	}
	if w.tmp != "" {
		if _, err := w.fs.Stat(w.tmp); err == nil {
			_ = fsys.RemoveAll(w.fs, w.tmp)
		}
	}
}
