package pipeline

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/internal/testkit/simproc"
	"github.com/rubricforge/rubricforge/schema"
)

// checkGroundedAccounted is runtest.CheckGroundedAccounted of a run's report.
func checkGroundedAccounted(t testing.TB, j job.Job, rep *Report) map[string]*schema.Record {
	t.Helper()
	return runtest.CheckGroundedAccounted(t, j, groundedCounts(rep))
}

// groundedCounts are the report's counts runtest.CheckGroundedAccounted reads.
func groundedCounts(rep *Report) runtest.GroundedCounts {
	p := rep.Problems
	return runtest.GroundedCounts{Unique: p.Unique, Done: p.Done, Failed: p.Failed, LeftOut: p.LeftOut, Pending: p.Pending, FailuresByStage: rep.FailuresByStage}
}

// TestGroundedEndToEnd: documents in, records out against the simulated
// endpoint with malformed replies: every passage is a record or a failure
// line, malformed replies are repaired, tuples copying the passage are left
// out by the quality checks with their reason, the report shows the
// grounded stages, and a second run sends nothing.
func TestGroundedEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, docs, 12)
	// Faults are drawn by request, so every run meets the same malformed
	// replies: the analysis is one request per document, and with ~25 of them
	// drawn by arrival order about one run in eight met no malformed analysis.
	srv, url := runtest.StartSim(t, sim.Config{KeepLog: true, FaultsByRequest: true, Faults: sim.Faults{Malformed: 0.08, ServerError: 0.03}})
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("status %s (%s)", rep.Status, rep.StopReason)
	}
	recs := checkGroundedAccounted(t, j, rep)
	if len(recs) < 20 {
		t.Errorf("only %d records", len(recs))
	}
	if rep.Problems.Duplicates == 0 || rep.Problems.BadLines != 1 {
		t.Errorf("duplicates %d (want the copied document's passages), bad lines %d (want 1)", rep.Problems.Duplicates, rep.Problems.BadLines)
	}
	fails := runtest.ReadFailures(t, j.Out)
	quality := 0
	for _, f := range fails {
		if f.Stage == job.StageQuality {
			quality++
			if !strings.Contains(f.Reason, "copies") || !strings.Contains(f.Reason, "question 1:") {
				t.Errorf("quality failure without its reason: %s", f.Reason)
			}
		}
	}
	if quality == 0 || rep.Problems.LeftOut != int64(quality) {
		t.Errorf("%d passages left out by the quality checks, report says %d; the simulator copies the passage in one question in twenty", quality, rep.Problems.LeftOut)
	}
	repaired := map[sim.Kind]int{}
	for _, e := range srv.Log() {
		if e.Repair {
			repaired[e.Kind]++
		}
	}
	for _, k := range []sim.Kind{sim.KindGroundedAnalyze, sim.KindGroundedSynthesize, sim.KindGroundedJudgeBatch, sim.KindScoreGrounded} {
		if repaired[k] == 0 {
			t.Errorf("no %s reply was repaired (repairs %v)", k, repaired)
		}
	}
	if rep.Repairs[job.StageSynthesize] == 0 || rep.Repairs[job.StageAnalyze] == 0 {
		t.Errorf("the report counts no repairs of the grounded stages: %v", rep.Repairs)
	}
	for _, st := range []string{job.StageAnalyze, job.StageSynthesize, job.StageEnrich, job.StageJudge, job.StageEmpirical} {
		if rep.StageSeconds[st] == 0 || rep.LLM.Stages[st].Requests == 0 {
			t.Errorf("the report does not show stage %s: %v seconds, %+v", st, rep.StageSeconds[st], rep.LLM.Stages[st])
		}
	}
	g := rep.Grounded
	if g == nil || g.Passages != int64(len(recs)) || g.Questions != 2*g.Passages || g.Measured == 0 || g.NotVarying == 0 || g.ScoredAnswers == 0 {
		t.Errorf("report's grounded figures: %+v", g)
	}
	if v := rep.Validity[CriterionType]; v == nil || v.Valid == 0 || v.Items != g.Criteria {
		t.Errorf("criteria validity: %+v", v)
	}
	varying := 0
	for _, r := range recs {
		for _, q := range r.Grounded.Questions {
			for _, c := range q.Criteria {
				if c.Varies != nil && *c.Varies {
					varying++
					if *c.ScoreMean <= 0 || *c.ScoreMean >= 1 {
						t.Errorf("a varying criterion has mean score %g, not strictly between 0 and 1", *c.ScoreMean)
					}
				}
			}
		}
	}
	if varying == 0 {
		t.Error("no criterion varies across the closed-book answers")
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	if p := summaryDisagreements(sum.String()); len(p) > 0 {
		t.Errorf("the summary contradicts itself: %v\n%s", p, sum.String())
	}
	if !strings.Contains(sum.String(), "grounded: ") || !strings.Contains(sum.String(), "not varying") || !strings.Contains(sum.String(), "requests by stage: analyze") ||
		!strings.Contains(sum.String(), fmt.Sprintf("left out by the quality checks %d", quality)) {
		t.Errorf("summary without the grounded figures:\n%s", sum.String())
	}

	before := srv.Count()
	again := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	if srv.Count() != before {
		t.Errorf("a finished run sent %d requests when run again", srv.Count()-before)
	}
	if again.Problems.AlreadyDone != int64(len(recs)) || again.Problems.SkippedLeftOut != int64(quality) {
		t.Errorf("the second run: %+v", again.Problems)
	}
}

// TestGroundedCrashSafety kills grounded runs with SIGKILL at moments drawn
// from a logged seed and resumes them, as TestCrashSafety does for the
// math styles: nothing lost or doubled, and no more requests sent again
// than were in flight at the kill.
func TestGroundedCrashSafety(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	// 10 documents: some 450 requests a run, so that each of the three kills
	// lands mid-run and the in-process resume after them still has work.
	runtest.WriteDocs(t, docs, 10)
	// No injected faults: they are drawn per attempt, so the uninterrupted
	// run below would meet other ones and spend differently.
	// The endpoint runs in its own process (simproc), not under the race detector.
	srv := simproc.Start(t, sim.Config{Latency: 10 * time.Millisecond})
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), srv.URL)
	j.Limits.Concurrency = 16
	j.Output.ShardRows = 4
	jobFile := filepath.Join(dir, "job.yaml")
	j = writeJobFile(t, jobFile, j)
	kills := killAndResume(t, srv, j, jobFile, "grounded run", killPlan{
		killAfter: func(cycle int) int { return 30 + int((seed>>(8*cycle))%130) },
		check:     func(rep *Report) { checkGroundedAccounted(t, j, rep) },
		spend:     true,
	})
	if kills == 0 {
		t.Fatal("no run was killed; every run finished before its kill point")
	}
}

// TestGroundedOnGoDistributionDocs runs the grounded style end to end over
// documents nobody here wrote: the Markdown files of the Go distribution
// this test runs with ($GOROOT/doc/*.md and its README.md).
func TestGroundedOnGoDistributionDocs(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	root := strings.TrimSpace(string(out))
	docs, err := filepath.Glob(filepath.Join(root, "doc", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, d := range docs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the Go distribution's documents are missing: %v", err)
		}
	}
	if len(docs) < 2 {
		t.Fatalf("found only %v under %s", docs, root)
	}
	dir := t.TempDir()
	_, url := runtest.StartSim(t, sim.Config{Faults: sim.Faults{Malformed: 0.05}})
	j := runtest.GroundedTestJob(docs[0], filepath.Join(dir, "run"), url)
	j.Input.Paths = docs
	j.Grounded.PassageChars = 3000
	j.Grounded.QuestionsPerPassage = 1
	j.Empirical.Enabled = false
	j.Judge.Mode, j.Judge.DropInvalid = "item", true // one verdict request per criterion; invalid ones dropped
	j.Limits.Concurrency = 64
	j.Output.ShardRows = 500
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("status %s (%s)", rep.Status, rep.StopReason)
	}
	recs := checkGroundedAccounted(t, j, rep)
	units := runtest.DistinctUnits(t, j)
	if len(units) < 10 || len(recs) < len(units)/2 {
		t.Errorf("%d passages from %d documents, %d records", len(units), len(docs), len(recs))
	}
	// Two of the files are named README.md: a file named on its own is
	// identified by its path as given, so they do not collide. (Whether a
	// passage becomes a record varies with the injected faults; that every
	// passage is a record or a failure line is checked above.)
	byDoc := map[string]int{}
	for _, u := range units {
		byDoc[u.DocID]++
	}
	readme := filepath.ToSlash(filepath.Join(root, "README.md"))
	if byDoc[readme] == 0 || len(byDoc) != len(docs) || rep.Problems.BadLines != 0 {
		t.Errorf("passages by document %v (want every one of the %d files, %s among them); bad lines %v", byDoc, len(docs), readme, rep.BadLines)
	}
	for _, r := range recs {
		for _, q := range r.Grounded.Questions {
			for _, c := range q.Criteria {
				if c.Valid == nil || !*c.Valid {
					t.Errorf("record %s keeps criterion %s judged %v though drop_invalid is on", r.ID, c.ID, c.Valid)
				}
			}
		}
	}
	t.Logf("%d documents, %d passages, %d records, %d left out, %d failed", len(docs), len(units), len(recs), rep.Problems.LeftOut, rep.Problems.Failed)
}
