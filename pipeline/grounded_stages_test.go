package pipeline

import (
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/schema"
)

// longDocument is a document of one paragraph-rich passage of about n
// bytes.
func longDocument(n int) string {
	var b strings.Builder
	b.WriteString("# Regenerative braking\n\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "The inverter returns kinetic energy to the battery because the motor runs as a generator while the vehicle slows (case %d). "+
			"Therefore the controller limits regenerative torque whenever the battery temperature leaves its nominal envelope.\n\n", i)
	}
	return b.String()
}

// TestGroundedJudgeSeesPassageWithinBudget: a 20,000-character passage is
// judged (validity and empirical scores) by a judge whose context holds
// 4,096 tokens: the judge and empirical stages show it cut to
// grounded.judge_passage_tokens, every judge request is answered, the
// record is made, and the report counts the passage as cut.
func TestGroundedJudgeSeesPassageWithinBudget(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"batch", "item"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			runtest.WriteFile(t, filepath.Join(dir, "docs", "regen.md"), longDocument(20_000))
			_, url := runtest.StartSim(t, sim.Config{})
			judge, small := runtest.StartSim(t, sim.Config{ContextTokens: 4096, KeepLog: true})
			j := runtest.GroundedTestJob(filepath.Join(dir, "docs"), filepath.Join(dir, "run"), url)
			j.Grounded.PassageChars = 30_000
			j.Judge.Mode = mode
			j.Judge.BaseURL, j.Judge.Model = small, "simulated"
			j.Empirical.BaseURL, j.Empirical.Model = small, "simulated"
			j.Rollout.N = 2
			j.Grounded.JudgePassageTokens = 2048 // half the judge's context: the rubric and an answer fit beside it
			rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
			if rep.Problems.Failed != 0 || rep.CorpusRows != 1 {
				t.Fatalf("%d records, %d failed (%v): %+v", rep.CorpusRows, rep.Problems.Failed, runtest.ReadFailures(t, j.Out), rep.FailuresByStage)
			}
			if g := rep.Grounded; g == nil || g.JudgePassagesCut != 1 {
				t.Errorf("report's grounded figures %+v: want judge_passages_cut 1", g)
			}
			for _, e := range judge.Log() {
				if e.Status != 200 {
					t.Errorf("the judge endpoint answered %s with %d", e.Kind, e.Status)
				}
			}
		})
	}
}

// TestGroundedAnalysisOncePerDocument: the analysis is of the document
// (seed 001), asked once for all its passages, also when they are all in
// flight at once, and in batch mode; every record of the document carries
// it, and each passage's synthesis request says where the passage is.
func TestGroundedAnalysisOncePerDocument(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		latency time.Duration
		batch   bool
	}{
		{"one after another", 0, false},
		// The analysis answers after 150-450 ms: every passage starts
		// meanwhile, finds no cached answer and must wait for the one
		// request in flight (llm's single-flight), not send its own.
		{"all in flight at once", 300 * time.Millisecond, false},
		{"batch mode", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			doc := "# Regenerative braking\n\n" + longDocument(2200)[len("# Regenerative braking\n\n"):] +
				"## Battery limits\n\n" + longDocument(2200)[len("# Regenerative braking\n\n"):]
			runtest.WriteFile(t, filepath.Join(dir, "docs", "regen.md"), doc)
			srv, url := runtest.StartSim(t, sim.Config{KeepLog: true, Latency: tc.latency})
			j := runtest.GroundedTestJob(filepath.Join(dir, "docs"), filepath.Join(dir, "run"), url)
			j.Grounded.PassageChars = 700
			j.Limits.ProblemsInFlight = 64
			if tc.batch {
				j.Distill.Mode = job.ModeBatch
				j.Batch.PollInterval = 10 * time.Millisecond
			}
			rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
			units := runtest.DistinctUnits(t, j)
			if len(units) < 6 || rep.CorpusRows+rep.Problems.LeftOut != int64(len(units)) {
				t.Fatalf("%d passages, %d records, %d left out, failures %v", len(units), rep.CorpusRows, rep.Problems.LeftOut, rep.FailuresByStage)
			}
			analyses := 0
			for _, e := range srv.Log() {
				if e.Kind == sim.KindGroundedAnalyze && !e.Repair {
					analyses++
				}
			}
			if st := rep.LLM.Stages[job.StageAnalyze]; tc.batch {
				analyses = int(st.BatchAnswers)
			}
			if analyses != 1 {
				t.Errorf("%d analysis requests for the %d passages of one document, want 1", analyses, len(units))
			}
			var first *schema.Analysis
			for _, r := range runtest.ReadCorpus(t, j.Out) {
				if first == nil {
					first = &r.Grounded.Analysis
				} else if !reflect.DeepEqual(*first, r.Grounded.Analysis) {
					t.Errorf("passage %s has analysis %+v, another %+v", r.ID, r.Grounded.Analysis, *first)
				}
			}
		})
	}
}

// TestGroundedEnrichEveryCriterionWithAnalysis: the enrich stage sends
// every criterion of every question (not only thin ones), one request per
// question, with the document's analysis in the prompt; the records'
// criteria carry the enriched cues.
func TestGroundedEnrichEveryCriterionWithAnalysis(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, docs, 6)
	srv := sim.New(sim.Config{})
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var enrichPrompts []string
	tap := &tapTransport{next: srv.Transport(), handle: func(_ *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
		if kind == sim.KindGroundedEnrich {
			mu.Lock()
			enrichPrompts = append(enrichPrompts, msgs[len(msgs)-1].Content)
			mu.Unlock()
		}
		return nil, nil
	}}
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), "http://sim.invalid/v1")
	j.Judge.Enabled, j.Empirical.Enabled = false, false
	rep := runJob(t, j, Options{HTTPClient: &http.Client{Transport: tap}})
	recs := runtest.ReadCorpus(t, j.Out)
	if len(recs) == 0 {
		t.Fatalf("no records: %+v", rep.FailuresByStage)
	}
	questions := 0
	for _, r := range recs {
		g := r.Grounded
		for _, q := range g.Questions {
			questions++
			var sent string
			for _, p := range enrichPrompts {
				if strings.Contains(p, q.Question) && strings.Contains(p, g.Passage) {
					sent = p
				}
			}
			if sent == "" {
				t.Fatalf("%s: question %d was not sent to enrichment", r.ID, q.Index)
			}
			if !strings.Contains(sent, "concepts: "+strings.Join(g.Analysis.Concepts, "; ")) || !strings.Contains(sent, "genre: "+g.Analysis.Genre) {
				t.Errorf("%s: the enrichment request does not show the document's analysis %+v", r.ID, g.Analysis)
			}
			for _, c := range q.Criteria {
				if !strings.Contains(sent, `<criterion id="`+c.ID+`"`) {
					t.Errorf("%s question %d: criterion %s was not sent to enrichment", r.ID, q.Index, c.ID)
				}
				if len(c.ExpectedKeywords) < job.EnrichedKeywords || len(c.ExpectedConcepts) < job.EnrichedConcepts {
					t.Errorf("%s question %d: criterion %s keeps %d keywords, %d concepts", r.ID, q.Index, c.ID, len(c.ExpectedKeywords), len(c.ExpectedConcepts))
				}
			}
		}
	}
	if len(enrichPrompts) < questions {
		t.Errorf("%d enrichment requests for %d questions", len(enrichPrompts), questions)
	}
}
