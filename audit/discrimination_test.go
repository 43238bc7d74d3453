package audit

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// handRecord is a record of the given items whose rollouts are rows such
// as "C 101" (correct, then the satisfaction verdict on each item; "C -"
// is a rollout without verdicts), with the empirical figures the verdicts
// give, so the record breaks no structural rule.
func handRecord(id, style string, items []schema.Item, rows ...string) schema.Record {
	rec := corpusfix.Record(0, style, func([]schema.Item) []schema.Item { return items }, nil)
	rec.ID, rec.Rollouts, rec.NCorrect = id, nil, 0
	correct := make([]float64, len(rows))
	for j, row := range rows {
		side, sat, _ := strings.Cut(row, " ")
		ro := schema.Rollout{Index: int32(j), Text: "### Step 1: ...", Correct: side == "C", FormatOK: true, FinishReason: "stop", CompletionTokens: ptr(int32(100))}
		if ro.Correct {
			rec.NCorrect++
			correct[j] = 1
		}
		if sat != "-" {
			for k, it := range items {
				ro.Satisfaction = append(ro.Satisfaction, schema.Satisfaction{ID: it.ID, Satisfied: sat[k] == '1', Step: 0})
			}
		}
		rec.Rollouts = append(rec.Rollouts, ro)
	}
	rec.PassRate = float64(rec.NCorrect) / float64(len(rows))
	for k := range rec.Rubric {
		it := &rec.Rubric[k]
		it.SatRate, it.Corr, it.EmpiricalValid = nil, nil, nil
		if len(rec.Rollouts[0].Satisfaction) == 0 {
			continue
		}
		sat := make([]float64, len(rows))
		for j := range rows {
			if rec.Rollouts[j].Satisfaction[k].Satisfied {
				sat[j] = 1
			}
		}
		v := reward.ItemValidity(sat, correct, it.Polarity, 0.2)
		it.SatRate, it.Corr, it.EmpiricalValid = v.SatRate, v.Corr, v.Valid
	}
	return rec
}

func handItem(id int32, typ, text string, weight float64) schema.Item {
	return schema.Item{ID: id, Type: typ, Text: text, Weight: weight, Polarity: schema.PolarityOf(typ), Valid: ptr(true)}
}

// handCorpus holds five records whose discrimination was computed by hand:
//
//	a (srar): SUGGEST, PITFALL, ANSWER over C 101, C 111, F 010, F 110.
//	  x = s, 1−s, s: edges .5, .5, 1. Scores /3: 1, 2/3 | 0, 1/3: AUROC 1.
//	  Without ANSWER (/2): 1, .5 | 0, .5: (3 wins + 1 tie/2)/4 = 0.875.
//	b (srar): SUGGEST, ANSWER over 4 correct (s 01) and 4 flawed (s 10).
//	  SUGGEST edge 0 − 1 = −1, Fisher p = 1/C(8,4) = 1/70: anti. ANSWER
//	  edge 1. Scores /2: every rollout .5: all ties, AUROC 0.5; without
//	  ANSWER 0 against 1: AUROC 0. phi(S, A) = −1: not redundant.
//	c (factual_process): FACTUAL w3, PROCESS w1, PROCESS w1 (near-duplicate
//	  texts: 9 of 10 bigrams shared, 0.9) over C 100, C 011, F 011, F 000.
//	  Edges .5, 0, 0; the PROCESS items' vectors are equal and vary within
//	  both labels (within-label phi 1): worded alike, they are redundant
//	  (their verdicts alone, over two rollouts a label, would not show it:
//	  the stratified p is (1/2)·(1/2) = 0.25).
//	  Scores /5: .6, .4 | .4, 0: (W W T W) 3.5/4 = 0.875, the same without
//	  ANSWER (there is none).
//	d (srar): only correct rollouts: unmeasured, only_correct.
//	e (srar): no verdicts: unmeasured, no_verdicts.
//
// Totals: 3 of 5 measured; mean AUROC (1 + .5 + .875)/3 = 0.7917, without
// ANSWER (.875 + 0 + .875)/3 = 0.5833; 8 measured items, 1 anti: 12.5%.
func handCorpus() []schema.Record {
	srar := schema.StyleSRaR
	return []schema.Record{
		handRecord("a", srar, []schema.Item{
			handItem(1, schema.TypeSuggest, "Completes the square before solving.", 1),
			handItem(2, schema.TypePitfall, "Drops the negative root.", 1),
			handItem(3, schema.TypeAnswer, "The final answer is 4.", 1),
		}, "C 101", "C 111", "F 010", "F 110"),
		handRecord("b", srar, []schema.Item{
			handItem(1, schema.TypeSuggest, "Uses the triangle inequality on both sides.", 1),
			handItem(2, schema.TypeAnswer, "The final answer is 7.", 1),
		}, "C 01", "C 01", "C 01", "C 01", "F 10", "F 10", "F 10", "F 10"),
		handRecord("c", schema.StyleFactualProcess, []schema.Item{
			handItem(1, schema.TypeFactual, "States that the answer is 12.", 3),
			handItem(2, schema.TypeProcess, "Sets up the equation from both conditions and solves it", 1),
			handItem(3, schema.TypeProcess, "Sets up the equation from both conditions and solves it fully", 1),
		}, "C 100", "C 011", "F 011", "F 000"),
		handRecord("d", srar, []schema.Item{
			handItem(1, schema.TypeSuggest, "Factors the polynomial.", 1),
			handItem(2, schema.TypeAnswer, "The final answer is 3.", 1),
		}, "C 11", "C 10"),
		handRecord("e", srar, []schema.Item{
			handItem(1, schema.TypeSuggest, "Draws the diagram.", 1),
			handItem(2, schema.TypeAnswer, "The final answer is 9.", 1),
		}, "C -", "F -"),
	}
}

func near(a *float64, b float64) bool { return a != nil && math.Abs(*a-b) < 1e-9 }

// TestDiscriminationByHand: the report's figures are the hand computation
// of handCorpus, and the text section is its golden file. The definitions
// are the exact ones (no judge error): over four rollouts a 5% judge's
// errors would explain one verdict of every item.
func TestDiscriminationByHand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, handCorpus(), 2)
	rep := auditPath(t, Options{JudgeError: -1}, dir)
	if rep.Structure.Violations != 0 {
		t.Fatalf("the hand corpus breaks rules: %+v", rep.Structure.Listed)
	}
	d := rep.Discrimination
	if d.Records != 5 || d.Measured != 3 || d.Unmeasured != (UnmeasuredCounts{OnlyCorrect: 1, NoVerdicts: 1}) {
		t.Errorf("records %d measured %d unmeasured %+v; want 5, 3, one only correct and one without verdicts", d.Records, d.Measured, d.Unmeasured)
	}
	if !near(d.MeanAUROC, 2.375/3) || !near(d.MeanAUROCWithoutAnswer, 1.75/3) || !near(d.AntiShare, 0.125) {
		t.Errorf("mean AUROC %s, without ANSWER %s, anti share %s; want 0.7917, 0.5833, 0.125",
			fix(d.MeanAUROC, 4), fix(d.MeanAUROCWithoutAnswer, 4), fix(d.AntiShare, 4))
	}
	want := map[string]DiscrimCount{
		"SUGGEST": {Type: "SUGGEST", Items: 2, NegativeEdge: 1, Anti: 1},
		"PITFALL": {Type: "PITFALL", Items: 1},
		"ANSWER":  {Type: "ANSWER", Items: 2},
		"FACTUAL": {Type: "FACTUAL", Items: 1},
		"PROCESS": {Type: "PROCESS", Items: 2, Redundant: 2, NearDuplicate: 2},
	}
	for _, c := range d.ByType {
		if c != want[c.Type] {
			t.Errorf("%s: %+v; want %+v", c.Type, c, want[c.Type])
		}
	}
	if w := (DiscrimCount{Type: "records", Items: 3, NegativeEdge: 1, Anti: 1, Redundant: 1, NearDuplicate: 1}); d.RecordsWith != w {
		t.Errorf("records with %+v; want %+v", d.RecordsWith, w)
	}
	if d.RedundantPairs != 1 || d.NearDuplicatePairs != 1 || d.NearDuplicatePairsAll != 1 || d.NearDuplicateRecordsAll != 1 {
		t.Errorf("pairs: redundant %d, near-duplicate %d (all %d in %d records); want 1 each", d.RedundantPairs, d.NearDuplicatePairs, d.NearDuplicatePairsAll, d.NearDuplicateRecordsAll)
	}
	// edges −1 (bin 0), 0 0 (bin 10), .5 .5 .5 (bin 15), 1 1 (bin 19);
	// AUROCs .5 (bin 10), .875 (bin 17), 1 (bin 19).
	edges := map[int]int64{0: 1, 10: 2, 15: 3, 19: 2}
	aurocs := map[int]int64{10: 1, 17: 1, 19: 1}
	for k := range 20 {
		if d.EdgeHistogram[k].Count != edges[k] || d.AUROCHistogram[k].Count != aurocs[k] {
			t.Errorf("bin %d: edges %d AUROCs %d; want %d %d", k, d.EdgeHistogram[k].Count, d.AUROCHistogram[k].Count, edges[k], aurocs[k])
		}
	}
	if got := []string{d.LowestAUROC[0].RecordID, d.LowestAUROC[1].RecordID, d.LowestAUROC[2].RecordID}; strings.Join(got, " ") != "b c a" || len(d.LowestAUROC) != 3 {
		t.Errorf("lowest AUROC %+v; want b, c, a", d.LowestAUROC)
	}
	checkGolden(t, "discrimination.txt", dir, textSection(t, rep, "Discrimination"))
}

// textSection is the text report's section whose heading starts with name.
func textSection(t *testing.T, rep *Report, name string) []byte {
	t.Helper()
	text := render(t, rep.WriteText)
	at := bytes.Index(text, []byte("\n"+name))
	if at < 0 {
		t.Fatalf("no %s section in:\n%s", name, text)
	}
	rest := text[at+1:]
	lines := bytes.SplitAfter(rest, []byte("\n"))
	var out []byte
	for k, l := range lines {
		if k > 0 && len(l) > 1 && l[0] != ' ' {
			break
		}
		out = append(out, l...)
	}
	return append(bytes.TrimRight(out, "\n"), '\n')
}

// TestDiscriminationNeedsTheEmpiricalStage: a corpus without verdicts is
// audited, and the section says how to get them; the gates cannot be
// checked and say so.
func TestDiscriminationNeedsTheEmpiricalStage(t *testing.T) {
	t.Parallel()
	var recs []schema.Record
	for _, r := range handCorpus()[:3] {
		for k := range r.Rollouts {
			r.Rollouts[k].Satisfaction = nil
		}
		for k := range r.Rubric {
			r.Rubric[k].SatRate, r.Rubric[k].Corr, r.Rubric[k].EmpiricalValid = nil, nil, nil
		}
		r.Provenance.EmpiricalModel, r.Provenance.SatisfyTemplate = nil, nil
		recs = append(recs, r)
	}
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 10)
	rep := auditPath(t, Options{}, dir)
	d := rep.Discrimination
	if d.Needs == nil || d.Measured != 0 || d.Unmeasured.NoVerdicts != 3 || d.MeanAUROC != nil || d.AntiShare != nil {
		t.Fatalf("needs %v, measured %d, no verdicts %d, AUROC %v, anti %v; want the message, 0, 3, null, null",
			d.Needs, d.Measured, d.Unmeasured.NoVerdicts, d.MeanAUROC, d.AntiShare)
	}
	checkGolden(t, "discrimination-needs.txt", dir, textSection(t, rep, "Discrimination"))
	fails := rep.Failures(Gate{MinValidity: -1, MaxViolations: -1, MinAUROC: ptr(0.8), MaxAntiShare: ptr(0.0)})
	if len(fails) != 2 || !strings.Contains(fails[0], "run the empirical stage") || !strings.Contains(fails[1], "--max-anti-share 0") {
		t.Errorf("gate failures %q", fails)
	}
}

// TestDiscriminationGates: the hand corpus's mean AUROC is 0.7917 and its
// anti share 0.125.
func TestDiscriminationGates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, handCorpus(), 10)
	rep := auditPath(t, Options{}, dir)
	for _, tc := range []struct {
		name        string
		auroc, anti *float64
		want        []string
	}{
		{"off", nil, nil, nil},
		{"pass", ptr(0.79), ptr(0.125), nil},
		{"auroc", ptr(0.8), nil, []string{"mean rubric AUROC 0.7917 over 3 measured records is below --min-auroc 0.8"}},
		{"anti", nil, ptr(0.1), []string{"anti-discriminative items 0.125 (1 of 8 measured items) is above --max-anti-share 0.1"}},
	} {
		got := rep.Failures(Gate{MinValidity: -1, MaxViolations: -1, MinAUROC: tc.auroc, MaxAntiShare: tc.anti})
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: failures %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestDiscriminationMergesInFileOrder: the corpus in one shard and in
// shards of one record give the same section.
func TestDiscriminationMergesInFileOrder(t *testing.T) {
	t.Parallel()
	one, many := filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "many")
	corpusfix.WriteRun(t, one, handCorpus(), 10)
	corpusfix.WriteRun(t, many, handCorpus(), 1)
	a := textSection(t, auditPath(t, Options{}, one), "Discrimination")
	b := textSection(t, auditPath(t, Options{}, many), "Discrimination")
	if !bytes.Equal(a, b) {
		t.Errorf("one shard:\n%s\nfive shards:\n%s", a, b)
	}
}
