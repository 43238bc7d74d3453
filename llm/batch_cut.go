package llm

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// A wave the budget cannot pay for whole is cut to what the budget has
// left, not held back whole (which stopped runs on part of a job's budget
// with no record at all): the file keeps its first rows that fit, and the
// others wait for a later run (the run stops by the budget once the rows
// it kept are done). Each row is priced as the batch is (estimateLocked),
// plus, with a plan (BatchOptions.Plan), its share of what the later
// stages of its unit are projected to cost, so that the budget goes to
// units it can carry through every stage.

// PlannedStage is distill plan's projection of one stage, per unit of
// work (a problem, a passage): its cost (at its stage's mode) and its
// requests.
type PlannedStage struct {
	Stage                        string
	CostPerUnit, RequestsPerUnit float64
}

// lookaheadPerRow is what a row of stage costs its unit in the stages
// after it, by the plan: their cost per unit, shared among the stage's
// requests of a unit.
func (b *Batcher) lookaheadPerRow(stage string) float64 {
	var later float64
	perUnit := 0.0
	seen := false
	for _, p := range b.opt.Plan {
		switch {
		case p.Stage == stage:
			seen, perUnit = true, p.RequestsPerUnit
		case seen:
			later += p.CostPerUnit
		}
	}
	if !seen || perUnit <= 0 {
		return 0
	}
	return later / perUnit
}

// lookaheadLocked is what the units of s's rows are projected to cost in
// their later stages. Call with mu held.
func (b *Batcher) lookaheadLocked(s *BatchState) float64 {
	var c float64
	for stage, n := range s.Stages {
		c += float64(n) * b.lookaheadPerRow(stage)
	}
	return c
}

// rowsThatFitLocked is how many of s's first rows, each priced with its
// lookahead, cost at most left; priced is false when a row has no price
// of its own (a file of an earlier version). Call with mu held.
func (b *Batcher) rowsThatFitLocked(s *BatchState, left float64) (keep int, priced bool, err error) {
	rows, err := readRowList(b.fs, b.path(s.Local, "rows"))
	if err != nil {
		return 0, false, err
	}
	var spent float64
	for i, r := range rows {
		if r.prompt == 0 && r.maxCompleted == 0 {
			return 0, false, nil
		}
		spent += b.rowCostLocked(s.Model, r) + b.lookaheadPerRow(r.stage)
		if spent > left {
			return i, true, nil
		}
	}
	return len(rows), true, nil
}

// rowCostLocked prices one row at the batch rate. A cut fills the budget
// to its edge, where an estimate of the mean would let the bill pass it:
// the row's completion is priced at the longest answer its stage has had,
// or the best estimate there is if that is longer, at most the row's
// limit. Call with mu held.
func (b *Batcher) rowCostLocked(model string, r rowInfo) float64 {
	completion := r.maxCompleted
	if per, _, known := b.completionPriceLocked(r.stage); known {
		most := b.meter.completionEstimate(r.stage).Most
		completion = min(completion, int64(math.Ceil(max(per, most))))
	}
	return b.meter.BatchCost(model, r.prompt, completion)
}

// cutFile keeps the first keep rows of the written file s, rewriting its
// input and rows files (each through a temporary file, renamed between
// directory syncs), frees the other rows for a later run, and journals the
// cut. It is called by the submitter, which alone touches s's files.
func (b *Batcher) cutFile(s *BatchState, keep int, left, limit float64) error {
	rows, err := readRowList(b.fs, b.path(s.Local, "rows"))
	if err != nil {
		return err
	}
	if keep >= len(rows) {
		return nil
	}
	bytes, err := b.keepLines(b.path(s.Local, "input.jsonl"), keep)
	if err != nil {
		return err
	}
	if _, err := b.keepLines(b.path(s.Local, "rows"), keep); err != nil {
		return err
	}
	was := s.Rows
	b.mu.Lock()
	for _, r := range rows[keep:] {
		if b.open[r.id.Key] == s.Local {
			delete(b.open, r.id.Key)
		}
	}
	s.Rows, s.Bytes = keep, bytes
	s.Stages, s.PromptTokens, s.MaxCompletion = map[string]int{}, map[string]int64{}, map[string]int64{}
	for _, r := range rows[:keep] {
		s.Stages[r.stage]++
		s.PromptTokens[r.stage] += r.prompt
		s.MaxCompletion[r.stage] += r.maxCompleted
	}
	s.EstCostUSD = b.estimateLocked(s)
	s.Note = fmt.Sprintf("cut by the budget to %d of %d requests", keep, was)
	b.cut = fmt.Sprintf("budget: a wave was cut to the %d of %d requests that max_cost_usd %g had left room for ($%.4f)%s; "+
		"the rest wait for a run with a larger budget", keep, was, limit, left, b.planWord())
	err = b.journalLocked(s)
	b.mu.Unlock()
	b.log.Info("batch cut to what the budget has left", "batch", s.Local, "rows", keep, "of", was, "budget_left", fmt.Sprintf("$%.4f", left),
		"priced_with", strings.TrimPrefix(b.planWord(), ", "))
	return err
}

// planWord says what the cut priced the units' later stages from.
func (b *Batcher) planWord() string {
	if len(b.opt.Plan) > 0 {
		return ", each with its unit's later stages as plan.json projects them"
	}
	return ", without a plan.json to price the units' later stages (distill plan first spends the budget on whole problems)"
}

// keepLines rewrites the file at path with its first n lines and returns
// their size.
func (b *Batcher) keepLines(path string, n int) (int64, error) {
	in, err := b.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer func() { _ = in.Close() }()
	tmp := fsys.TempPath(path)
	out, err := b.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	r, w := bufio.NewReaderSize(in, 1<<20), bufio.NewWriterSize(out, 1<<20)
	var size int64
	for range n {
		line, err := r.ReadBytes('\n')
		if err != nil {
			_ = out.Close()
			_ = b.fs.Remove(tmp)
			return 0, fmt.Errorf("reading %s: %w", path, errors.Join(err, errors.New("fewer lines than rows")))
		}
		_, _ = w.Write(line)
		size += int64(len(line))
	}
	err = errors.Join(w.Flush(), fsys.SyncFile(out), out.Close())
	if err == nil {
		err = fsys.RenameSynced(b.fs, tmp, path)
	}
	if err != nil {
		_ = b.fs.Remove(tmp)
	}
	return size, err
}
