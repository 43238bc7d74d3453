package plan

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/schema"

	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/idmap"
)

// Options are the settings of distill plan that are not the job's.
type Options struct {
	Sample       int  // problems in the pilot
	AllowBadRows bool // plan although the input has bad rows (the real run skips them)
}

// Run runs job on a deterministic sample of its input (see Sample), in
// the run directory and cache the real run uses, so the real run pays
// nothing again for the sampled problems; the sample is not part of the
// job, so the job's fingerprint stays the same. From what the sampled
// problems took it projects the whole input's requests, tokens, cost,
// records and wall time, each with a range (see project), and writes them
// to RUN/plan.json. A plan of a job whose sampled problems an earlier plan
// already measured reuses their figures and sends nothing.
func Run(ctx context.Context, jb job.Job, opt pipeline.Options, po Options) (*corpus.PlanDoc, error) {
	opt.Fill()
	jb.Normalize()
	if err := jb.Validate(); err != nil {
		return nil, err
	}
	if po.Sample < 1 {
		return nil, &job.UsageError{Problems: []string{fmt.Sprintf("--sample: %d; want at least 1 %s", po.Sample, job.UnitWordsOf(jb.Style).Unit)}}
	}
	if err := source.CheckInputs(source.SpecOf(&jb)); err != nil {
		return nil, err
	}
	in, err := scanForPlan(ctx, &jb, po.Sample)
	if err != nil {
		return nil, err
	}
	if err := in.usable(po.AllowBadRows); err != nil {
		return nil, err
	}
	in.decompose = opt.Decompose != nil
	earlier, _ := corpus.ReadPlan(jb.Out)       // its figures count only if the job is the same (below)
	before, _, _ := pipeline.ReadReport(jb.Out) // what earlier sessions sent, to tell a pilot that sent nothing

	if err := resolveAutoModes(ctx, &jb, opt); err != nil {
		return nil, err
	}
	pl := newPilot(in.sample)
	opt.Pilot = pl
	opt.HTTPClient = timedClient(&jb, opt.HTTPClient)
	rep, err := pipeline.Run(ctx, onlinePilot(jb), opt)
	if err != nil {
		return nil, fmt.Errorf("the pilot failed; %s is as a run leaves it (distill run resumes it): %w", jb.Out, err)
	}
	measured := pl.problems()
	problems := mergePilots(measured, earlierPilot(earlier, rep.JobFingerprint, in.sample), in.sample)
	switch {
	case rep.StoppedBy == pipeline.StopBudget && len(problems) < in.sample.Len():
		return nil, pilotOverBudget(&jb, rep, in, measured, rep.LLM.Total.Requests == before.LLM.Total.Requests)
	case rep.Status == pipeline.StatusStopped && rep.StoppedBy != pipeline.StopBudget:
		return nil, fmt.Errorf("the pilot stopped before its %d %s were done (%s); run distill plan again to finish it", in.sample.Len(), in.words.Units, rep.StopReason)
	}
	if err := markPilot(opt, jb.Out, rep, in); err != nil {
		return nil, err
	}
	if len(problems) == 0 {
		return nil, fmt.Errorf("no sampled %s was measured: the %d sampled %s were done or failed in %s by an earlier run, and no plan.json of this job holds their figures; plan into a new --out", in.words.Unit, in.sample.Len(), in.words.Units, jb.Out)
	}
	if earlier != nil && earlier.JobFingerprint != rep.JobFingerprint {
		earlier = nil
	}
	rest, knownDone, err := pendingIn(opt, jb.Out, in.unique)
	if err != nil {
		return nil, err
	}
	in.knownPending = max(0, in.known-knownDone)
	plan := project(&jb, in, problems, rest, rep, earlier)
	plan.JobFingerprint = rep.JobFingerprint
	plan.Created = time.Now().UTC().Truncate(time.Second)
	plan.PilotSeconds = rep.ElapsedSeconds
	if len(measured) == 0 && earlier != nil {
		plan.PilotSeconds = earlier.PilotSeconds // nothing was sent: the figures are the earlier pilot's
	}
	if err := corpus.WritePlan(opt.RunFS(), jb.Out, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// planInput is what a plan reads of the input before the pilot.
type planInput struct {
	rows, bad, dups, unique int64
	// docs counts the documents of a grounded job's unique passages: its
	// analyses, one per document.
	docs int64
	// known counts the unique passages the passage stage is known to leave
	// out (knownLeftOut): not sampled, and left out in the projection.
	known, knownPending int64 // knownPending: those distill run has yet to leave out
	sources             map[string]int64
	badSample           []source.InputError
	sample              *Sample
	words               job.UnitWords // problems, or a grounded job's passages
	// decompose is a plan of refine --decompose's decomposition (its
	// stages are pipeline.DecomposeStageNames).
	decompose bool
}

// scanForPlan reads the input once, as distill run reads it (a grounded
// job's documents cut into passages): it counts the unique units of the
// job's partition, by source, notes bad rows, and picks the sample.
func scanForPlan(ctx context.Context, jb *job.Job, n int) (*planInput, error) {
	in := &planInput{sources: map[string]int64{}, words: job.UnitWordsOf(jb.Style)}
	part := jb.PartitionSpec()
	seen := idmap.New[struct{}]()         // as the feeder counts them
	seenPassages := idmap.New[struct{}]() // by content hash, as the feeder does
	seenDocs := idmap.New[struct{}]()
	low := lowestHashes{n: n}
	err := source.ReadUnits(ctx, source.SpecOf(jb), func(p source.Problem) error {
		in.rows++
		if !part.Holds(pipeline.PartitionKey(&p)) {
			return nil
		}
		if p.DuplicateOf != nil { // a duplicate document, as the feeder counts it
			in.dups++
			return nil
		}
		if _, dup := seen.Get(p.ID); dup {
			in.dups++
			return nil
		}
		seen.Set(p.ID, struct{}{})
		if p.DocHash != "" {
			if _, dup := seenPassages.Get(p.DocHash); dup {
				in.dups++
				return nil
			}
			seenPassages.Set(p.DocHash, struct{}{})
		}
		in.unique++
		in.sources[p.Source]++
		if knownLeftOut(jb, &p) { // never sampled, never analysed: left out before any request
			in.known++
			return nil
		}
		if _, seen := seenDocs.Get(p.DocID); p.DocID != "" && !seen {
			seenDocs.Set(p.DocID, struct{}{})
			in.docs++
		}
		low.offer(p.ID)
		return nil
	}, func(e *source.InputError) {
		in.bad++
		if len(in.badSample) < 5 {
			in.badSample = append(in.badSample, *e)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading input: %w", err)
	}
	in.sample = low.sample()
	return in, nil
}

// knownLeftOut: the passage stage leaves p out before any request, as
// the input shows (pipeline's checkPassage): a passage the cutter marked
// (no text, over the limit) or one shorter than the minimum.
func knownLeftOut(jb *job.Job, p *source.Problem) bool {
	if jb.Style != schema.StyleGrounded {
		return false
	}
	return p.LeaveOut != "" || utf8.RuneCountInString(p.Text) < source.MinPassage(jb.Grounded)
}

// usable refuses an input the plan cannot stand for: bad rows (unless
// allowed) or no problem at all.
func (in *planInput) usable(allowBad bool) error {
	if in.bad > 0 && !allowBad {
		problems := []string{fmt.Sprintf("input: %d bad rows; distill run skips them, so a plan would project a job that is not the one meant. Fix them, or pass --allow-bad-rows to plan without them. The first:", in.bad)}
		for _, e := range in.badSample {
			problems = append(problems, "  "+e.Error())
		}
		return &job.UsageError{Problems: problems}
	}
	if in.unique == 0 {
		return &job.UsageError{Problems: []string{"input: no usable " + in.words.Unit + " to plan for"}}
	}
	return nil
}

// markPilot rewrites the report of a finished pilot as stopped by the plan:
// the rest of the input is for distill run.
func markPilot(opt pipeline.Options, dir string, rep *pipeline.Report, in *planInput) error {
	if rep.Status != pipeline.StatusFinished {
		return nil // a budget stop stays one
	}
	rep.Status, rep.StoppedBy = pipeline.StatusStopped, pipeline.StopPlan
	rep.StopReason = fmt.Sprintf("pilot of distill plan: %d sampled %s of %d; distill run does the rest", in.sample.Len(), in.words.Units, in.unique)
	return pipeline.WriteReport(opt.RunFS(), dir, rep)
}

// pendingIn is how many of the input's unique problems the run directory
// has not resolved: those distill run has left to do (a failure it would
// retry counts as left); and how many passages the passage stage left out
// in it.
func pendingIn(opt pipeline.Options, dir string, unique int64) (int64, int64, error) {
	m, err := corpus.ReadManifestFS(opt.RunFS(), dir)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the run's manifest: %w", err)
	}
	failures, err := corpus.ReadFailures(dir)
	if err != nil {
		return 0, 0, err
	}
	resolved, atPassage := m.Rows, int64(0)
	for _, f := range failures {
		if !f.Transient && !opt.RetryFailed {
			resolved++
		}
		if f.Stage == job.StagePassage {
			atPassage++
		}
	}
	return max(0, unique-resolved), atPassage, nil
}

// pilotOverBudget explains a pilot that the job's budget stopped; sentNothing
// says the pilot sent no request (the earlier sessions had spent the budget).
func pilotOverBudget(j *job.Job, rep *pipeline.Report, in *planInput, measured []corpus.PilotProblem, sentNothing bool) error {
	t := rep.LLM.Total
	when := fmt.Sprintf("during the pilot itself, after %d of its %d sampled %s", len(measured), in.sample.Len(), in.words.Units)
	if sentNothing && rep.LLM.Total.Requests > 0 {
		when = "before the pilot started, by the earlier sessions of the run"
	}
	msg := fmt.Sprintf("the job's budget (max_cost_usd %g, max_tokens %d) was reached %s ($%.4f, %d tokens spent over every session of %s)",
		j.Budget.MaxCostUSD, j.Budget.MaxTokens, when, t.CostUSD, t.PromptTokens+t.CompletionTokens, j.Out)
	// No projection from the problems finished: the cheap ones (left out
	// after their rollouts) finish first, so they would understate it.
	return fmt.Errorf("%s; a budget that does not pay for the pilot pays for a small part of the input (%d %s). Raise --max-cost-usd or --max-total-tokens and plan again; the %s done so far are kept and not paid again",
		msg, in.unique, in.words.Units, in.words.Units)
}

// earlierPilot is what an earlier plan of the same job measured of the
// sampled problems; nil when there is none.
func earlierPilot(old *corpus.PlanDoc, fingerprint string, s *Sample) []corpus.PilotProblem {
	if old == nil || old.JobFingerprint != fingerprint {
		return nil
	}
	var out []corpus.PilotProblem
	for _, p := range old.Pilot {
		if s.Holds(p.ID) {
			out = append(out, p)
		}
	}
	return out
}

// mergePilots adds to what this pilot measured the earlier plan's figures
// of the sampled problems it did not process (done before).
func mergePilots(now, earlier []corpus.PilotProblem, s *Sample) []corpus.PilotProblem {
	have := map[string]bool{}
	for _, p := range now {
		have[p.ID] = true
	}
	out := slices.Clone(now)
	for _, p := range earlier {
		if !have[p.ID] && s.Holds(p.ID) {
			out = append(out, p)
			have[p.ID] = true
		}
	}
	slices.SortFunc(out, func(a, b corpus.PilotProblem) int { return compareStrings(a.ID, b.ID) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
