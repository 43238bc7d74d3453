package plan

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/schema"
)

// allRecords is a pilot of n passages that all made a record at the same
// cost: a pilot that saw nothing left out.
func allRecords(n int) []corpus.PilotProblem {
	var out []corpus.PilotProblem
	for i := range n {
		out = append(out, corpus.PilotProblem{ID: fmt.Sprintf("d%d.md#0", i), Outcome: corpus.OutcomeRecord, Seconds: 1,
			RequestSeconds: map[string]float64{}, Items: 7, Judged: 7, Valid: 7,
			Stages: map[string]schema.Usage{"synthesize": {Requests: 1, PromptTokens: 800, CompletionTokens: 2000}, "judge": {Requests: 1, PromptTokens: 1400, CompletionTokens: 360}}})
	}
	return out
}

// TestPlanRangesAreNotZeroWidth: a pilot of 12 passages that all made a
// record does not make the projection certain: the records, left out and
// cost ranges allow for what 12 passages cannot rule out, as a 95%
// interval on the share left out does (issue 43, item 6: "709 (709-709)"
// records, 675 in the real run, and a cost range that missed it).
func TestPlanRangesAreNotZeroWidth(t *testing.T) {
	t.Parallel()
	jb := runtest.GroundedTestJob("docs", "run", "http://sim.invalid/v1")
	jb.Normalize()
	jb.Prices = map[string]job.Price{jb.Distill.Model: {Prompt: 1, Completion: 2}, jb.Judge.Model: {Prompt: 1, Completion: 2}}
	in := &planInput{unique: 709, docs: 300, sample: &Sample{}}
	plan := project(&jb, in, allRecords(12), 697, &pipeline.Report{}, nil)
	for name, r := range map[string]corpus.PlanRange{"records": plan.Records, "cost": plan.Total.CostUSD, "requests": plan.Total.Requests} {
		if !(r.Low < r.Value) {
			t.Errorf("%s: %v (%v-%v): no room below the figure after a pilot of 12", name, r.Value, r.Low, r.High)
		}
	}
	if r := plan.LeftOut; !(r.High > 0) {
		t.Errorf("left out: %v (%v-%v): a pilot of 12 cannot rule out passages left out", r.Value, r.Low, r.High)
	}
	if lo := plan.Records.Low; lo > 709*0.85 {
		t.Errorf("records low end %v: 12 passages without a left-out one allow about 20%% left out", lo)
	}
}

// TestPlanCountsKnownShortPassages: passages the plan knows the passage
// stage leaves out (shorter than grounded.min_passage_chars) are left out
// in the projection, exactly, at no cost, and never sampled (issue 43,
// item 6: they were projected as records).
func TestPlanCountsKnownShortPassages(t *testing.T) {
	t.Parallel()
	jb, opt, _ := groundedPlanSetup(t, 4)
	// The passage stage leaves the stubs out before any request: the judge
	// and the closed-book answers only make the pilot dearer.
	jb.Judge.Enabled, jb.Empirical.Enabled = false, false
	docs := jb.Input.Paths[0]
	for i := range 5 {
		runtest.WriteFile(t, filepath.Join(docs, fmt.Sprintf("stub%d.md", i)), fmt.Sprintf("Edit this page %d.", i))
	}
	plan, err := Run(context.Background(), jb, opt, Options{Sample: 100, AllowBadRows: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Input.KnownLeftOut != 5 {
		t.Errorf("known left out %d, want the 5 stubs", plan.Input.KnownLeftOut)
	}
	for _, p := range plan.Pilot {
		if strings.HasPrefix(p.ID, "stub") {
			t.Errorf("the pilot sampled %s, which the passage stage leaves out", p.ID)
		}
	}
	if plan.LeftOut.Low < 5 || plan.Records.High > float64(plan.Input.Unique-5) {
		t.Errorf("left out %+v, records %+v of %d: the 5 stubs are not counted as left out", plan.LeftOut, plan.Records, plan.Input.Unique)
	}
	var b bytes.Buffer
	WriteText(&b, plan, jb.Out)
	if !strings.Contains(b.String(), "5 known before the pilot") {
		t.Errorf("the table does not say the stubs are left out:\n%s", b.String())
	}
}

// TestPlanRangesAllowForRepairs: a pilot of 12 passages that all made a
// record at the first try cannot rule out passages the quality checks send
// back (a repair round costs about as much again), so the requests, tokens
// and cost ranges reach above the figure too (measured on the Rust book's
// 298 passages: the pilot of 12 projected 1,002 requests and 2.39 M tokens
// at most; the run took 1,020 and 2.66 M, with 36 repairs).
func TestPlanRangesAllowForRepairs(t *testing.T) {
	t.Parallel()
	jb := runtest.GroundedTestJob("docs", "run", "http://sim.invalid/v1")
	jb.Normalize()
	jb.Prices = map[string]job.Price{jb.Distill.Model: {Prompt: 1, Completion: 2}, jb.Judge.Model: {Prompt: 1, Completion: 2}}
	in := &planInput{unique: 298, docs: 111, sample: &Sample{}}
	plan := project(&jb, in, allRecords(12), 286, &pipeline.Report{}, nil)
	for name, r := range map[string]corpus.PlanRange{"cost": plan.Total.CostUSD, "requests": plan.Total.Requests, "tokens": plan.Tokens} {
		if !(r.High >= r.Value*1.1) {
			t.Errorf("%s: %v (%v-%v): no room above the figure for repairs a pilot of 12 did not meet", name, r.Value, r.Low, r.High)
		}
	}
}
