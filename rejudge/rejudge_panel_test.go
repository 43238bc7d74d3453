package rejudge

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// truthRun writes n records whose stored verdicts are the simulated
// endpoint's own (the truth its profiled judges err against), and returns
// the directory and each record's items' truth.
func truthRun(t *testing.T, srv *sim.Server, n int) (string, map[string]map[int32]bool) {
	t.Helper()
	var recs []schema.Record
	for i := range n {
		recs = append(recs, corpusfix.Record(i, schema.StyleSRaR, nil, func(r *schema.Record) {
			for k := range r.Rubric {
				r.Rubric[k].Valid = ptr(true) // every item judged; the truth replaces it below
			}
		}))
	}
	raw := filepath.Join(t.TempDir(), "raw")
	corpusfix.WriteRun(t, raw, recs, 64)
	in, err := audit.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rejudgeConfig(srv, "", 1, 1)
	groups, _, _, err := audit.SampleRecords(context.Background(), in, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	specs := cfg.judges()
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	j, closeAll, err := newRejudger(cfg, specs, []*prompts.Set{set}, llm.NewMeter(nil, llm.Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	answers, err := j.run(context.Background(), j.units(len(groups)), groups, &audit.SampleInfo{})
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string]map[int32]bool{}
	for _, a := range answers {
		if a.pairs == nil {
			t.Fatalf("the unprofiled judge failed: %v", a.err)
		}
		for _, p := range a.pairs {
			if truth[p.RecordID] == nil {
				truth[p.RecordID] = map[int32]bool{}
			}
			truth[p.RecordID][p.ItemID] = p.Other
		}
	}
	for i := range recs {
		for k := range recs[i].Rubric {
			it := &recs[i].Rubric[k]
			it.Valid = ptr(truth[recs[i].ID][it.ID])
		}
	}
	dir := filepath.Join(t.TempDir(), "truth")
	corpusfix.WriteRun(t, dir, recs, 64)
	return dir, truth
}

// judgesServer is the simulated endpoint with three judges of different
// error rates and one that always fails.
func judgesServer() *sim.Server {
	return sim.New(sim.Config{Seed: 11, InvalidRate: 0.3, Judges: map[string]sim.JudgeProfile{
		"sharp": {FalseValid: 0.15, FalseInvalid: 0.15},
		"fair":  {FalseValid: 0.2, FalseInvalid: 0.2},
		"rough": {FalseValid: 0.25, FalseInvalid: 0.25},
		"mute":  {Fail: 1},
	}})
}

func panelOf(names ...string) []PanelJudge {
	out := make([]PanelJudge, len(names))
	for i, n := range names {
		out[i] = PanelJudge{Model: n}
	}
	return out
}

// TestRejudgePanel re-judges a corpus whose stored verdicts are the
// truth, so agreement with them is accuracy: the panel of three beats each
// of its judges; each judge's figures in the panel are those it gets
// alone; every judge is priced; and a judge that always fails changes
// neither the verdicts of a panel of two (its vote is against, so a 1-1
// split stays invalid) nor the judges' Fleiss kappa (a failure is no
// rating), while its failures are counted.
func TestRejudgePanel(t *testing.T) {
	t.Parallel()
	srv := judgesServer()
	dir, _ := truthRun(t, srv, 80)
	cache := filepath.Join(t.TempDir(), "cache.db")
	cfg := rejudgeConfig(srv, cache, 400, 2)
	cfg.Panel = panelOf("sharp", "fair", "rough")
	cfg.Prices = map[string]llm.Price{"sharp": {PromptPerMTok: 3, CompletionPerMTok: 9}, "fair": {PromptPerMTok: 1, CompletionPerMTok: 2}}
	cfg.Price = llm.Price{PromptPerMTok: 0.5, CompletionPerMTok: 1}
	rep := rejudge(t, dir, cfg)
	p := rep.Panel
	if rep.Sample.Judged != 400 || p == nil || len(p.Judges) != 3 {
		t.Fatalf("sample %+v, panel %+v", rep.Sample, p)
	}
	panelAcc := *rep.Agreement.Rate
	var cost float64
	for _, j := range p.Judges {
		if *j.Stored.Rate >= panelAcc {
			t.Errorf("judge %s is right on %.3f of the items, the panel on %.3f; the majority should beat each judge", j.Name, *j.Stored.Rate, panelAcc)
		}
		alone := cfg
		alone.Panel, alone.Model = nil, j.Model
		solo := rejudge(t, dir, alone)
		if a := solo.Agreement; a.Items != j.Stored.Items || a.Agree != j.Stored.Agree || a.BothValid != j.Stored.BothValid {
			t.Errorf("judge %s in the panel: %+v; alone: %+v", j.Name, j.Stored, a)
		}
		if j.LLM.CostUSD <= 0 || j.LLM.Requests == 0 {
			t.Errorf("judge %s: usage %+v; every judge is priced", j.Name, j.LLM)
		}
		cost += j.LLM.CostUSD
	}
	if math.Abs(cost-rep.LLM.CostUSD) > 1e-9 {
		t.Errorf("the judges cost $%g together, the report says $%g", cost, rep.LLM.CostUSD)
	}
	if k := p.InterJudge[0]; k.Type != "all" || k.Kappa == nil || *k.Kappa <= 0 || k.Items != 400 {
		t.Errorf("inter-judge agreement %+v", k)
	}
	if r := p.ValidRates[0]; r.Panel.Of != 400 || r.Panel.Interval == nil || r.Panel.Interval.Low > *r.Panel.Rate || r.Panel.Interval.High < *r.Panel.Rate {
		t.Errorf("panel validity rate %+v", r.Panel)
	}
	noSecret(t, rep)
	checkGolden(t, "rejudge-panel.txt", dir, render(t, rep.WriteText))

	pair := cfg
	pair.Panel = panelOf("sharp", "fair")
	two := rejudge(t, dir, pair)
	withMute := cfg
	withMute.Panel = panelOf("sharp", "fair", "mute")
	three := rejudge(t, dir, withMute)
	if a, b := two.Agreement, three.Agreement; a.BothValid != b.BothValid || a.OnlyBValid != b.OnlyBValid || a.Items != b.Items {
		t.Errorf("a judge that always fails changed the panel's verdicts: %+v against %+v", b, a)
	}
	mute := three.Panel.Judges[2]
	if mute.Answered != 0 || mute.Failed != int64(three.Sample.Judged) {
		t.Errorf("the failing judge: %+v", mute)
	}
	if k2, k3 := two.Panel.InterJudge[0].Kappa, three.Panel.InterJudge[0].Kappa; k2 == nil || k3 == nil || math.Abs(*k2-*k3) > 1e-12 {
		t.Errorf("Fleiss kappa with a judge that always fails %v, without %v", k3, k2)
	}
	if f := three.Panel.ValidRates[0].Panel.Failed; f != int64(three.Sample.Judged) {
		t.Errorf("the panel counts %d items with a failed judge, want all %d", f, three.Sample.Judged)
	}
}

// TestOrderCheckRecoversBias: a judge that calls invalid items valid more
// often when they come first (FirstBias b) flips an invalid item at
// position i of n with probability b·|firstness(i) - firstness(n-1-i)|
// (the same draw decides both orders); the measured flip rate's interval
// covers the rate this gives on the drawn records, every flip calls the
// item valid where it came earlier, and a judge without bias never flips.
func TestOrderCheckRecoversBias(t *testing.T) {
	t.Parallel()
	const bias = 0.6
	srv := sim.New(sim.Config{Seed: 11, InvalidRate: 0.3, Judges: map[string]sim.JudgeProfile{
		"biased": {FalseValid: 0.05, FirstBias: bias},
		"steady": {FalseValid: 0.1, FalseInvalid: 0.1},
	}})
	dir, truth := truthRun(t, srv, 120)
	cfg := rejudgeConfig(srv, "", 1, 3)
	cfg.OrderCheck = 100
	cfg.Panel = panelOf("biased", "steady")
	rep := rejudge(t, dir, cfg)
	oc := rep.OrderCheck
	if oc == nil || oc.Records != 100 || len(oc.Judges) != 3 {
		t.Fatalf("order check %+v", oc)
	}
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	groups, _, _, err := audit.SampleRecords(context.Background(), in, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	var expected float64
	items := 0
	for _, g := range groups {
		n := len(g)
		for i, it := range g {
			items++
			if !truth[it.RecordID][it.ItemID] {
				expected += bias * math.Abs(float64(n-1-2*i)) / float64(n-1)
			}
		}
	}
	expected /= float64(items)
	biased, steady := oc.Judges[0].ByType[0], oc.Judges[1].ByType[0]
	t.Logf("expected flip rate %.4f; measured %d of %d, interval %+v", expected, biased.Flips, biased.Items, biased.Interval)
	if biased.Items != int64(items) || biased.Interval == nil || biased.Interval.Low > expected || biased.Interval.High < expected {
		t.Errorf("the biased judge's flips %+v do not cover the expected rate %.4f over %d items", biased, expected, items)
	}
	if biased.ValidEarlier != biased.Flips || biased.Flips == 0 {
		t.Errorf("the biased judge's flips %+v: each should call the item valid where it came earlier", biased)
	}
	if steady.Flips != 0 || steady.Items != int64(items) {
		t.Errorf("a judge without position bias flipped: %+v", steady)
	}
	if oc.Judges[2].Judge != "panel" || oc.Judges[2].ByType[0].Items != int64(items) {
		t.Errorf("the panel's order check %+v", oc.Judges[2])
	}
	var sum int64
	for _, f := range oc.Judges[0].ByType[1:] {
		sum += f.Flips
	}
	if sum != biased.Flips {
		t.Errorf("flips by type add to %d, overall %d", sum, biased.Flips)
	}
	noSecret(t, rep)
	checkGolden(t, "rejudge-order.txt", dir, render(t, rep.WriteText))
}

// TestRejudgePanelBudgetStop: a budget stop in a panel rejudge leaves
// whole records judged by every judge: an item is either judged by the
// whole panel or counted as not judged, never decided by the judges that
// happened to be asked.
func TestRejudgePanelBudgetStop(t *testing.T) {
	t.Parallel()
	srv := judgesServer()
	dir := sharedRecords30Run(t)
	cfg := rejudgeConfig(srv, "", 60, 1)
	cfg.Panel = panelOf("sharp", "fair", "rough")
	cfg.Concurrency = 2
	cfg.Price = llm.Price{PromptPerMTok: 1000, CompletionPerMTok: 1000}
	cfg.MaxCostUSD = 4 // a request costs about $0.5 at these prices: a few records' panels
	rep := rejudge(t, dir, cfg)
	s := rep.Sample
	if s.Stopped == "" || s.Judged == 0 || s.Failed == 0 || s.Judged+s.Failed != s.Drawn {
		t.Fatalf("sample %+v; want a budget stop after some records", s)
	}
	for _, j := range rep.Panel.Judges {
		if j.Answered+j.Failed != int64(s.Judged) || j.Failed != 0 {
			t.Errorf("judge %s answered %d and failed %d of the %d judged items", j.Name, j.Answered, j.Failed, s.Judged)
		}
	}
	if !strings.Contains(string(s.Stopped), "budget") || rep.LLM.CostUSD <= 0 {
		t.Errorf("stopped %q after spending $%g; want the budget named", s.Stopped, rep.LLM.CostUSD)
	}
}
