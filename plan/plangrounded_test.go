package plan

import (
	"math"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/pipeline"

	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/figures"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/schema"
)

// groundedPlanSetup is a grounded job over documents against an in-process
// simulated endpoint, its requests counted.
func groundedPlanSetup(t *testing.T, docs int) (job.Job, pipeline.Options, *problemCounter) {
	t.Helper()
	dir := t.TempDir()
	input := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, input, docs)
	srv := sim.New(sim.Config{Latency: 5e6, Seed: 7})
	t.Cleanup(srv.Close)
	counter := &problemCounter{next: srv.Transport(), watch: map[string]bool{}, hits: map[string]int{}}
	job := runtest.GroundedTestJob(input, filepath.Join(dir, "run"), "http://sim.invalid/v1")
	return job, pipeline.Options{HTTPClient: &http.Client{Transport: counter}}, counter
}

// passageMark is a line of a passage that names it alone (its document and
// paragraph), as it appears in a request's JSON body.
func passageMark(t *testing.T, text string) string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "of document ") {
			return line
		}
	}
	t.Fatalf("passage without a paragraph: %q", text)
	return ""
}

// TestPlanOfAGroundedJobThenRunSendsNothingForTheSample: distill plan of a
// grounded job samples passages (the unit of work: duplicates once, as
// distill run counts them), projects the grounded stages with their cost,
// counts the passages the quality checks leave out as left out (not
// failed), says so in its table; and distill run afterwards sends not one
// request that names a sampled passage.
func TestPlanOfAGroundedJobThenRunSendsNothingForTheSample(t *testing.T) {
	t.Parallel()
	jb, opt, counter := groundedPlanSetup(t, 8)
	units := runtest.DistinctUnits(t, jb)
	const sample = 20
	plan, err := Run(context.Background(), jb, opt, Options{Sample: sample, AllowBadRows: true})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if plan.Style != schema.StyleGrounded || plan.Input.Unique != int64(len(units)) || plan.Input.Duplicates == 0 {
		t.Fatalf("plan of style %q over %d unique units (%d duplicates); want grounded over the %d distinct passages, the copied document's passages counted as duplicates",
			plan.Style, plan.Input.Unique, plan.Input.Duplicates, len(units))
	}
	if plan.Sampled != sample || plan.Measured != sample || plan.Input.Rest != int64(len(units)-sample) {
		t.Fatalf("sampled %d, measured %d, %d left; want %d, %d, %d", plan.Sampled, plan.Measured, plan.Input.Rest, sample, sample, len(units)-sample)
	}
	pilotRep, _, err := pipeline.ReadReport(jb.Out)
	if err != nil {
		t.Fatal(err)
	}
	if pilotRep.StoppedBy != pipeline.StopPlan || !strings.Contains(pilotRep.StopReason, "20 sampled passages of") {
		t.Errorf("report after the plan: stopped by %q: %q", pilotRep.StoppedBy, pilotRep.StopReason)
	}
	var stages []string
	for _, s := range plan.Stages {
		stages = append(stages, s.Stage)
		if plan.CostCounted && s.CostUSD.Value <= 0 {
			t.Errorf("stage %s: projected cost %v; the job prices its model", s.Stage, s.CostUSD)
		}
	}
	if want := []string{job.StageAnalyze, job.StageSynthesize, job.StageEnrich, job.StageJudge, job.StageEmpirical}; !slices.Equal(stages, want) {
		t.Errorf("projected stages %v; want %v", stages, want)
	}
	if !plan.CostCounted || plan.Total.CostUSD.Value <= 0 {
		t.Errorf("total cost %v (counted %v); want it projected from the job's prices", plan.Total.CostUSD, plan.CostCounted)
	}
	var eps []string
	for _, e := range plan.Endpoints {
		eps = append(eps, e.Stages...)
	}
	for _, st := range stages {
		if !slices.Contains(eps, st) {
			t.Errorf("stage %s on no endpoint of the plan %+v: its requests would not count against a rate limit", st, plan.Endpoints)
		}
	}

	text := map[string]string{}
	for _, u := range units {
		text[u.ID] = u.Text
	}
	fails := runtest.ReadFailures(t, jb.Out)
	recs := runtest.ReadCorpus(t, jb.Out)
	leftOut, criteria := 0, int64(0)
	for _, p := range plan.Pilot {
		if text[p.ID] == "" {
			t.Fatalf("pilot unit %s is not a distinct passage of the input", p.ID)
		}
		counter.watch[passageMark(t, text[p.ID])] = true
		switch f, failed := fails[p.ID]; {
		case failed && f.Stage == job.StageQuality:
			leftOut++
			if p.Outcome != corpus.OutcomeLeftOut {
				t.Errorf("passage %s left out by the quality checks is %q in the pilot; want %q", p.ID, p.Outcome, corpus.OutcomeLeftOut)
			}
		case failed:
			if p.Outcome != corpus.OutcomeFailed {
				t.Errorf("passage %s failed at %s is %q in the pilot", p.ID, f.Stage, p.Outcome)
			}
		default:
			r := recs[p.ID]
			if r == nil || p.Outcome != corpus.OutcomeRecord {
				t.Fatalf("passage %s: outcome %q, record %v", p.ID, p.Outcome, r != nil)
			}
			var n int64
			for _, q := range r.Grounded.Questions {
				n += int64(len(q.Criteria))
			}
			if p.Items != n || p.Judged != n || p.Measured != n {
				t.Errorf("passage %s: pilot counts %d items, %d judged, %d measured; its record has %d criteria, every one judged and measured", p.ID, p.Items, p.Judged, p.Measured, n)
			}
			criteria += n
		}
	}
	if leftOut == 0 {
		t.Fatal("no sampled passage was left out by the quality checks; the simulator copies the passage in one question in twenty")
	}
	scale := float64(len(units)) / sample
	if got, want := plan.LeftOut.Value, float64(leftOut)*scale; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("projected left out %.2f; want %d of %d sampled scaled to %d passages = %.2f", got, leftOut, sample, len(units), want)
	}
	if plan.Validity == nil || plan.EmpiricalValidity == nil || plan.ItemsPerRecord.Value < float64(jb.Grounded.MinCriteria*jb.Grounded.QuestionsPerPassage) {
		t.Errorf("validity %v, empirical %v, criteria per record %v", plan.Validity, plan.EmpiricalValidity, plan.ItemsPerRecord)
	}
	var table strings.Builder
	WriteText(&table, plan, jb.Out)
	for _, want := range []string{"sampled passages of", "left out by the quality checks", "criteria per record", "for the " + figures.Count(float64(plan.Input.Rest)) + " passages left"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the plan's table lacks %q:\n%s", want, table.String())
		}
	}
	if !slices.ContainsFunc(strings.Split(table.String(), "\n"), func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), job.StageAnalyze+" ") }) {
		t.Errorf("the plan's table has no row for stage %s:\n%s", job.StageAnalyze, table.String())
	}
	if strings.Contains(table.String(), "problems left") || strings.Contains(table.String(), "problem's") || strings.Contains(table.String(), "selection") {
		t.Errorf("the plan's table of a grounded job speaks of problems or selection:\n%s", table.String())
	}

	rep := runJob(t, jb, opt)
	if rep.Status != pipeline.StatusFinished || rep.JobFingerprint != plan.JobFingerprint {
		t.Fatalf("the run after the plan: %s (%s), fingerprint %s vs the plan's %s", rep.Status, rep.StopReason, rep.JobFingerprint, plan.JobFingerprint)
	}
	if counter.watched != 0 {
		t.Errorf("the run after the plan sent %d requests for sampled passages: %v", counter.watched, counter.hits)
	}
	if got := rep.Problems.AlreadyDone + rep.Problems.SkippedLeftOut + rep.Problems.SkippedFailed; got != sample {
		t.Errorf("the run found %d passages resolved before it; want the %d sampled", got, sample)
	}
	checkGroundedAccounted(t, jb, rep)

	st, err := pipeline.ReadStatus(jb.Out)
	if err != nil {
		t.Fatal(err)
	}
	var status strings.Builder
	st.WriteText(&status)
	if !strings.Contains(status.String(), "passages left") || !strings.Contains(status.String(), "against the plan, for the 100.0% of the input handled") {
		t.Errorf("status of the finished run against its plan:\n%s", status.String())
	}
}

// TestPlanProjectsOneAnalysisPerDocument: distill plan projects the
// analyze stage at one request per document, as the run sends it, not one
// per passage.
func TestPlanProjectsOneAnalysisPerDocument(t *testing.T) {
	t.Parallel()
	jb, opt, _ := groundedPlanSetup(t, 12)
	docs := map[string]bool{}
	units := runtest.DistinctUnits(t, jb)
	for _, u := range units {
		docs[u.DocID] = true
	}
	if len(docs) == len(units) {
		t.Fatalf("every document is one passage (%d); the test needs longer ones", len(units))
	}
	plan, err := Run(context.Background(), jb, opt, Options{Sample: 10, AllowBadRows: true})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	for _, s := range plan.Stages {
		if s.Stage == job.StageAnalyze && math.Abs(s.Requests.Value-float64(len(docs))) > 0.5 {
			t.Errorf("plan projects %.1f analyze requests for %d documents of %d passages", s.Requests.Value, len(docs), len(units))
		}
	}
}
