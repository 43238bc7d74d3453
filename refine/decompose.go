package refine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/schema"
)

// Decompose is --decompose: the saturated items of the refined records are
// split into finer ones by the distiller, validity-judged and measured by
// the satisfaction judge, all through the pipeline's engine (cache,
// budget, batch mode, resume). Job holds the endpoints, limits, budget
// and batch settings; refine sets its input, output, style and stages.
type Decompose struct {
	Job      job.Job
	Pipeline pipeline.Options
}

// DecomposeDir is the name, inside the refined corpus, of the run
// directory that decomposed its saturated items (its cache among them).
const DecomposeDir = "decompose"

// ErrStopped is wrapped when the decomposition stopped before its end
// (budget, Ctrl-C, batch files to run): nothing is written, and the same
// command resumes it.
var ErrStopped = errors.New("stopped")

// StopError is a decomposition that stopped; StoppedBy is the pipeline's
// cause (pipeline.StopBudget, ...).
type StopError struct {
	Reason, StoppedBy, WorkDir string
}

func (e *StopError) Error() string {
	return fmt.Sprintf("decomposing saturated items stopped: %s (its work is kept in %s; the same command resumes it)", e.Reason, e.WorkDir)
}

func (e *StopError) Unwrap() error { return ErrStopped }

// workDir is where the decomposition of a refinement into out runs until
// the refined corpus is whole; unlike tempDir it survives a kill, so the
// next refine resumes it.
func workDir(out string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(out)), "."+filepath.Base(filepath.Clean(out))+".refine-decompose")
}

// seeds are the records to decompose, by id.
type seeds map[string]pipeline.Seed

func (s seeds) Seed(id string) (pipeline.Seed, bool) { v, ok := s[id]; return v, ok }

// unitRow is one line of the decomposition's input: a record to
// decompose.
type unitRow struct {
	ID      string `json:"id"`
	Problem string `json:"problem"`
	Answer  string `json:"answer"`
	Source  string `json:"source,omitempty"`
}

// decomposition is a decomposition ready to run: its job over the units
// written in its work directory, and the seeds of those units.
type decomposition struct {
	job   job.Job
	seeds seeds
	work  string
}

// prepareDecomposition decides every record of in and writes a unit for
// each refined record with saturated items into the work directory, as
// the real run and its plan both start. The job is checked even when
// nothing is saturated, so that a command that cannot decompose is refused
// whatever the source holds; a refused start leaves no work directory.
func prepareDecomposition(ctx context.Context, in *audit.Input, cfg Config) (*decomposition, error) {
	work := workDir(cfg.Out)
	_, statErr := os.Stat(work)
	fresh := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("creating the decomposition's work directory: %w", err)
	}
	units := filepath.Join(work, "units.jsonl")
	sd, style, err := writeUnits(ctx, in, cfg, units)
	if err != nil {
		return nil, err
	}
	jb := decomposeJob(cfg.Decompose.Job, style, units, filepath.Join(work, DecomposeDir))
	if err := checkJob(jb); err != nil {
		if fresh { // nothing was asked yet: leave no work directory behind
			_ = os.RemoveAll(work) // an empty work directory left behind is harmless
		}
		return nil, fmt.Errorf("--decompose: %w: %w", err, ErrUsage)
	}
	return &decomposition{job: jb, seeds: sd, work: work}, nil
}

// options are the pipeline's options for the decomposition: the user's,
// with its seeds.
func (d *decomposition) options(cfg Config) pipeline.Options {
	opt := cfg.Decompose.Pipeline
	opt.Decompose = d.seeds
	return opt
}

// runError says what a failed pipeline.Run of the decomposition means for
// refine: a work directory of another decomposition, or a usage error, is
// the user's to fix; doing says what failed otherwise.
func (d *decomposition) runError(err error, doing string) error {
	var ue *job.UsageError
	if errors.Is(err, pipeline.ErrJobChanged) || errors.Is(err, pipeline.ErrInputChanged) {
		return fmt.Errorf("%s holds a decomposition started with other settings or from another source; "+
			"run refine as it was run then, or remove %s to start the decomposition over (its answered requests are lost): %w", d.work, d.work, ErrUsage)
	}
	if errors.As(err, &ue) {
		return fmt.Errorf("--decompose: %w: %w", err, ErrUsage)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// decomposeSaturated decides every record of in, sends the saturated
// items of those refined to the pipeline, and returns what it made of
// them: a record per decomposed source record, by id, whose rubric is the
// finer items and whose rollouts carry their verdicts.
func decomposeSaturated(ctx context.Context, in *audit.Input, cfg Config, sum *Summary) (map[string]*schema.Record, error) {
	d, err := prepareDecomposition(ctx, in, cfg)
	if err != nil || len(d.seeds) == 0 {
		return nil, err
	}
	rep, err := pipeline.Run(ctx, d.job, d.options(cfg))
	if err != nil {
		return nil, d.runError(err, "decomposing saturated items")
	}
	sum.Decomposed.Units = int64(len(d.seeds))
	sum.Decomposed.Failed = rep.Problems.Failed
	sum.Decomposed.Requests = rep.LLM.Total.Requests
	if rep.Status == pipeline.StatusStopped {
		return nil, &StopError{Reason: rep.StopReason, StoppedBy: rep.StoppedBy, WorkDir: d.work}
	}
	return readDecomposed(ctx, d.job.Out)
}

// writeUnits decides every record and writes a unit line for each refined
// one with saturated items; it returns their seeds and the style they
// share.
func writeUnits(ctx context.Context, in *audit.Input, cfg Config, path string) (seeds, string, error) {
	sd := seeds{}
	style := ""
	var buf []byte
	var m discrim.Matrix
	err := audit.Records(ctx, in, func(rec *schema.Record) error {
		d := decideRecord(rec, &m, cfg.Options)
		sat := saturatedItems(rec, &d)
		if len(sat) == 0 {
			return nil
		}
		if style != "" && rec.Style != style {
			return fmt.Errorf("--decompose refines one style at a time; %s holds %s and %s records: %w", cfg.Src, style, rec.Style, ErrUsage)
		}
		style = rec.Style
		sd[rec.ID] = pipeline.Seed{Saturated: sat, Rollouts: shownOnly(rec, &m)}
		line, err := json.Marshal(unitRow{ID: rec.ID, Problem: rec.Problem, Answer: rec.Answer, Source: rec.Source})
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
		return nil
	}, func(audit.Problem) {})
	if err != nil {
		return nil, "", fmt.Errorf("reading %s for its saturated items: %w", cfg.Src, err)
	}
	// The same content every time, so that a resumed decomposition finds
	// the input it started from.
	if err := fsys.WriteFileAtomic(fsys.OS, path, buf, 0o644); err != nil {
		return nil, "", fmt.Errorf("writing the decomposition's input: %w", err)
	}
	return sd, style, nil
}

// shownOnly is rec's rollouts for the decomposition, those of the half the
// model may be shown (the fit half of discrim.Split) with their verdicts
// and the others without: the pipeline shows the distiller only rollouts
// whose verdicts say they meet the item, and judges every rollout on the
// finer items afresh. The held-out figures of a decomposed record are
// measured on the other half only (decideWithFiner), so nothing the model
// saw is in them. m is rec's matrix.
func shownOnly(rec *schema.Record, m *discrim.Matrix) []schema.Rollout {
	shown := shownIndexes(m)
	out := slices.Clone(rec.Rollouts)
	for i := range out {
		if !shown[out[i].Index] {
			out[i].Satisfaction = nil
		}
	}
	return out
}

// shownIndexes are the indexes of the rollouts of m's fit half
// (discrim.Split), the ones --decompose may show the distiller.
func shownIndexes(m *discrim.Matrix) map[int32]bool {
	fit, _ := discrim.Split(m)
	out := make(map[int32]bool, len(fit))
	for _, r := range fit {
		out[m.Index[r]] = true
	}
	return out
}

// saturatedItems are the items of a refined record dropped as saturated.
func saturatedItems(rec *schema.Record, d *Decision) []schema.Item {
	var out []schema.Item
	for i, it := range d.Items {
		if it.Drop == DropSaturated {
			out = append(out, rec.Rubric[i])
		}
	}
	return out
}

// readDecomposed reads the decomposition's records by id.
func readDecomposed(ctx context.Context, dir string) (map[string]*schema.Record, error) {
	out := map[string]*schema.Record{}
	in, err := audit.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the decomposition %s: %w", dir, err)
	}
	err = audit.Records(ctx, in, func(rec *schema.Record) error {
		out[rec.ID] = rec
		return nil
	}, func(audit.Problem) {})
	if err != nil {
		return nil, fmt.Errorf("reading the decomposition %s: %w", dir, err)
	}
	return out, nil
}

// withFiner is rec with the finer items of fine appended to its rubric
// (ids after rec's) and their verdicts to its rollouts' (matched by
// rollout index). ok is false when a rollout judged on rec's items was
// not judged on the finer ones: the record is then refined without them.
func withFiner(rec, fine *schema.Record) (*schema.Record, bool) {
	n := int32(len(rec.Rubric))
	byIndex := make(map[int32][]schema.Satisfaction, len(fine.Rollouts))
	for _, r := range fine.Rollouts {
		if len(r.Satisfaction) == len(fine.Rubric) {
			byIndex[r.Index] = r.Satisfaction
		}
	}
	out := *rec
	out.Rubric = slices.Clone(rec.Rubric)
	for _, it := range fine.Rubric {
		it.ID += n
		out.Rubric = append(out.Rubric, it)
	}
	out.Rollouts = slices.Clone(rec.Rollouts)
	for i, r := range out.Rollouts {
		if len(r.Satisfaction) == 0 {
			continue
		}
		vs, ok := byIndex[r.Index]
		if !ok {
			return rec, false
		}
		sat := slices.Clone(r.Satisfaction)
		for _, v := range vs {
			v.ID += n
			sat = append(sat, v)
		}
		out.Rollouts[i].Satisfaction = sat
	}
	return &out, true
}

// decideWithFiner decides a record extended by its finer items: the source
// items as Decide would (the source rubric is the one before), and the
// finer items kept only when valid (as far as the judge said) and with a
// positive edge. Its held-out figures are measured on the rollouts the
// distiller was never shown (the held-out half of discrim.Split), each
// scored by its fold's rubric as Decide does.
func decideWithFiner(ext *schema.Record, nSource int, m *discrim.Matrix, opt Options) Decision {
	discrim.FromRecord(m, ext)
	_, unseen := discrim.Split(m)
	d := decide(ext.ID, m, nSource, opt, func(i int, edge float64) string {
		if i < nSource {
			return ""
		}
		if v := ext.Rubric[i].Valid; v != nil && !*v {
			return DropInvalid
		}
		if edge <= 0 {
			return DropNoEdge
		}
		return ""
	}, unseen)
	for i := nSource; i < len(d.Items); i++ {
		d.Items[i].Finer, d.Items[i].Text = true, ext.Rubric[i].Text
	}
	return d
}

// decomposeSetting is --decompose as the manifest's job history keeps it:
// the models and the fingerprint of the decomposition's job.
func decomposeSetting(jb *job.Job) string {
	j := *jb
	j.Normalize()
	return fmt.Sprintf("on: distill %s, judge %s, empirical %s", j.Distill.Model, j.Judge.Model, j.Empirical.Model)
}

// adoptDecomposition moves the decomposition's run directory (its cache
// among them) into the refined corpus, and removes its work directory.
func (w *writer) adoptDecomposition(ran bool) error {
	if w.run == nil {
		return nil
	}
	work := workDir(w.out)
	if ran {
		if err := fsys.RenameSynced(fsys.OS, filepath.Join(work, DecomposeDir), filepath.Join(w.tmp, DecomposeDir)); err != nil {
			return fmt.Errorf("moving the decomposition into the refined corpus: %w", err)
		}
	}
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("removing the decomposition's work directory: %w", err)
	}
	return nil
}

// decomposeJob is the decomposition's job: the user's endpoints, limits,
// budget and batch settings, with refine's input, output, style and
// stages.
func decomposeJob(jb job.Job, style, units, out string) job.Job {
	if style == "" {
		style = schema.StyleSRaR
	}
	jb.Style = style
	jb.Input.Paths = []string{units}
	jb.Input.Format = "jsonl"
	jb.Input.Fields = job.Fields{Problem: "problem", Answer: "answer", ID: "id", Source: "source"}
	jb.Out = out
	jb.Judge.Enabled, jb.Judge.DropInvalid = true, false
	jb.Empirical.Enabled = true
	return jb
}

// checkJob is the job's own check (pipeline.Run makes it again).
func checkJob(jb job.Job) error {
	jb.Normalize()
	return jb.Validate()
}
