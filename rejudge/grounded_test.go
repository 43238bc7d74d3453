package rejudge

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// groundedSim is the simulated endpoint the grounded tests' corpus is
// made with: its own validity verdicts are the truth its profiled judges
// err against.
func groundedSim(judges map[string]sim.JudgeProfile) sim.Config {
	return sim.Config{Seed: 7, InvalidRate: 0.3, Judges: judges}
}

// groundedRun is a run directory made by distill's grounded style over
// three documents against the simulated endpoint of groundedSim (the judge
// stage on, the empirical stage off), so that every criterion's stored
// verdict is the simulated judge's own, given as distill run shows the
// criteria to its judge. It is made once per test binary (the tests only
// read it) and removed by TestMain.
func groundedRun(t *testing.T) string {
	t.Helper()
	grounded.once.Do(func() {
		dir, err := os.MkdirTemp("", "rejudge-grounded-")
		if err != nil {
			grounded.err = err
			return
		}
		grounded.dir = dir
		docs := filepath.Join(dir, "docs")
		runtest.WriteDocs(t, docs, 3)
		_, url, stop, err := sim.Start(groundedSim(nil))
		if err != nil {
			grounded.err = err
			return
		}
		defer stop()
		j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
		j.Empirical.Enabled = false
		_, grounded.err = pipeline.Run(context.Background(), j, pipeline.Options{})
	})
	if grounded.err != nil {
		t.Fatal(grounded.err)
	}
	return filepath.Join(grounded.dir, "run")
}

// grounded holds groundedRun's corpus.
var grounded struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Remove()
	if grounded.dir != "" {
		_ = os.RemoveAll(grounded.dir) // a temporary directory; nothing else holds it
	}
	os.Exit(code)
}

// TestRejudgeGrounded: validate rejudge on a grounded corpus (seed 001)
// re-judges a sample of its judged criteria with the grounded validity
// template, in each layout, against the passage and the question, one
// request per question; a judge that gives the verdicts distill run's
// judge gave agrees on every criterion (so the criteria are shown and
// mapped back as distill run shows and maps them), and the figures are
// by type "criterion".
func TestRejudgeGrounded(t *testing.T) {
	t.Parallel()
	dir := groundedRun(t)
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range prompts.Layouts {
		cfgSim := groundedSim(nil)
		cfgSim.KeepLog = true
		srv := sim.New(cfgSim)
		cfg := rejudgeConfig(srv, "", 30, 2)
		cfg.Layout = layout
		rep := rejudge(t, dir, cfg)
		s, a := rep.Sample, rep.Agreement
		if s.Drawn != 30 || s.Judged != 30 || s.Failed != 0 {
			t.Fatalf("layout %s: sample %+v; want 30 criteria drawn and judged", layout, s)
		}
		if a.Items != 30 || a.Agree != 30 || a.BothInvalid == 0 || a.BothValid == 0 {
			t.Errorf("layout %s: agreement %+v; want all 30 alike, some valid and some invalid", layout, a)
		}
		if len(a.ByType) != 1 || a.ByType[0].Type != audit.CriterionType || a.ByType[0].Items != 30 {
			t.Errorf("layout %s: by type %+v; want one row, criterion", layout, a.ByType)
		}
		for _, e := range srv.Log() {
			if e.Kind != sim.KindGroundedJudgeBatch {
				t.Errorf("layout %s: a request of kind %s, want grounded_judge_batch", layout, e.Kind)
			}
		}
		if srv.Count() != int64(s.Records) {
			t.Errorf("layout %s: %d requests for %d questions", layout, srv.Count(), s.Records)
		}
		text := string(render(t, rep.WriteText))
		if want := "grounded_judge_batch template " + set.Hash(layout.Of(prompts.GroundedJudgeBatch)); !strings.Contains(text, want) {
			t.Errorf("layout %s: the report does not name %q:\n%s", layout, want, text)
		}
		if strings.Contains(text, ", judge_batch template") {
			t.Errorf("layout %s: the report names the math template, which asked nothing:\n%s", layout, text)
		}
		noSecret(t, rep)
	}
	// Answered requests are in the cache: a second run sends none, and a
	// budget stops a run before its next live request.
	cache := filepath.Join(t.TempDir(), "cache.db")
	srv := sim.New(groundedSim(nil))
	first := rejudge(t, dir, rejudgeConfig(srv, cache, 10, 2))
	again := rejudge(t, dir, rejudgeConfig(srv, cache, 10, 2))
	if u := again.LLM; u.Requests != 0 || u.CacheHits != int64(first.Sample.Records) || again.Agreement.Agree != first.Agreement.Agree {
		t.Errorf("the second run: usage %+v, %d agree; want every answer from the cache, %d agree", u, again.Agreement.Agree, first.Agreement.Agree)
	}
	cfg := rejudgeConfig(sim.New(groundedSim(nil)), "", 10, 2)
	cfg.Concurrency = 1
	cfg.Price = llm.Price{PromptPerMTok: 1000, CompletionPerMTok: 1000}
	cfg.MaxCostUSD = 0.001
	if s := rejudge(t, dir, cfg).Sample; s.Stopped == "" || s.Judged == 0 || s.Failed == 0 {
		t.Errorf("a budget of $0.001: sample %+v; want a stop after the first questions", s)
	}
}

// TestRejudgeMixedCorpus: in a corpus of math and grounded records, each
// record is re-judged by its own kind: a math record's items with
// judge_batch in one request, each grounded question's criteria with
// grounded_judge_batch in one request; the figures hold both kinds.
func TestRejudgeMixedCorpus(t *testing.T) {
	t.Parallel()
	mathRecs := corpusfix.Records()[:4]
	grounded := reviewtest.GroundedRecords(3) // 2 questions of 3 judged criteria each
	var items int
	for _, r := range mathRecs {
		items += len(r.Rubric)
	}
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, append(append([]schema.Record{}, mathRecs...), grounded...), 8)
	srv := sim.New(sim.Config{Seed: 5, KeepLog: true})
	rep := rejudge(t, dir, rejudgeConfig(srv, "", 1000, 1))
	if s := rep.Sample; s.Drawn != items+18 || s.Judged != s.Drawn || s.Records != 4+6 {
		t.Fatalf("sample %+v; want %d items and 18 criteria, of 4 records and 6 questions", s, items)
	}
	kinds := map[sim.Kind]int{}
	for _, e := range srv.Log() {
		kinds[e.Kind]++
	}
	if kinds[sim.KindJudgeBatch] != 4 || kinds[sim.KindGroundedJudgeBatch] != 6 || len(kinds) != 2 {
		t.Errorf("requests by kind %v; want 4 judge_batch and 6 grounded_judge_batch", kinds)
	}
	types := map[string]int64{}
	for _, bt := range rep.Agreement.ByType {
		types[bt.Type] = bt.Items
	}
	if types[audit.CriterionType] != 18 || len(types) < 2 {
		t.Errorf("by type %v; want 18 criteria and the math types", types)
	}
	text := string(render(t, rep.WriteText))
	if !strings.Contains(text, " judge_batch template ") || !strings.Contains(text, ", grounded_judge_batch template ") {
		t.Errorf("the report does not name both templates:\n%s", text)
	}
}

// TestOrderCheckGrounded: --order-check on a grounded corpus asks each
// drawn question's criteria in order and reversed; a judge with a planted
// position bias flips as the simulator's bias predicts (the measured
// rate's interval covers it), every flip toward the criterion shown
// earlier, and a judge without one never flips.
func TestOrderCheckGrounded(t *testing.T) {
	t.Parallel()
	const bias = 0.6
	dir := groundedRun(t)
	srv := sim.New(groundedSim(map[string]sim.JudgeProfile{
		"biased": {FalseValid: 0.05, FirstBias: bias},
		"steady": {FalseValid: 0.1, FalseInvalid: 0.1},
	}))
	cfg := rejudgeConfig(srv, "", 1, 3)
	cfg.OrderCheck = 1000
	cfg.Panel = panelOf("biased", "steady")
	rep := rejudge(t, dir, cfg)
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	groups, _, _, err := audit.SampleRecords(context.Background(), in, 1000, 3)
	if err != nil {
		t.Fatal(err)
	}
	oc := rep.OrderCheck
	if len(groups) < 10 || oc == nil || oc.Records != len(groups) || len(oc.Judges) != 3 {
		t.Fatalf("order check %+v over %d questions drawn", oc, len(groups))
	}
	var expected float64
	items := 0
	for _, g := range groups {
		n := len(g)
		for i, it := range g {
			items++
			if !*it.Stored {
				expected += bias * math.Abs(float64(n-1-2*i)) / float64(n-1)
			}
		}
	}
	expected /= float64(items)
	biased, steady := oc.Judges[0].ByType[0], oc.Judges[1].ByType[0]
	t.Logf("expected flip rate %.4f; measured %d of %d, interval %+v", expected, biased.Flips, biased.Items, biased.Interval)
	if biased.Items != int64(items) || biased.Interval == nil || biased.Interval.Low > expected || biased.Interval.High < expected {
		t.Errorf("the biased judge's flips %+v do not cover the expected rate %.4f over %d criteria", biased, expected, items)
	}
	if biased.Flips == 0 || biased.ValidEarlier != biased.Flips {
		t.Errorf("the biased judge's flips %+v: want some, each calling the criterion valid where it came earlier", biased)
	}
	if steady.Flips != 0 || steady.Items != int64(items) {
		t.Errorf("a judge without position bias flipped: %+v", steady)
	}
	if b, s := biased.BiasInterval, steady.BiasInterval; b == nil || b.Low <= 0 || s == nil || s.Low > 0 || s.High < 0 {
		t.Errorf("position bias intervals: biased %+v, steady %+v; want the first above 0, the second around it", b, s)
	}
	noSecret(t, rep)
}
