package audit

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/schema"
)

// synthRun writes a synthetic corpus of n records (8 rollouts, planted
// items under 5% judge noise) and audits it.
func synthRun(t *testing.T, n int) *Report {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := synthcorpus.Write(dir, synthcorpus.Options{Records: n, Seed: 41}, nil); err != nil {
		t.Fatal(err)
	}
	return auditPath(t, Options{}, dir)
}

// synth300 is synthRun(t, 300), made once per test binary for the tests
// that only read its report.
var synth300 struct {
	mu  sync.Mutex
	rep *Report
}

func sharedSynthRun300(t *testing.T) *Report {
	t.Helper()
	synth300.mu.Lock()
	defer synth300.mu.Unlock()
	if synth300.rep == nil {
		synth300.rep = synthRun(t, 300)
	}
	return synth300.rep
}

// TestDiscriminationIntervalsAndPaidAUROC: the mean AUROCs carry 95%
// intervals around them, and every scheme's paid-reward AUROC is reported
// with one, over the measured records; srar's paid reward ignores the
// ANSWER items, so its figure is the same with and without them.
func TestDiscriminationIntervalsAndPaidAUROC(t *testing.T) {
	t.Parallel()
	d := sharedSynthRun300(t).Discrimination
	for name, c := range map[string]struct {
		mean *float64
		ci   *[2]float64
	}{"with ANSWER": {d.MeanAUROC, d.MeanAUROCCI95}, "without": {d.MeanAUROCWithoutAnswer, d.MeanAUROCWithoutAnswerCI95}} {
		if c.mean == nil || c.ci == nil || !(c.ci[0] <= *c.mean && *c.mean <= c.ci[1]) || c.ci[1]-c.ci[0] > 0.1 || c.ci[1] == c.ci[0] {
			t.Errorf("%s: mean %v interval %v; want an interval around the mean, narrower than 0.1", name, c.mean, c.ci)
		}
	}
	want := append([]string{"default"}, schema.Schemes...)
	if len(d.Paid) != len(want) {
		t.Fatalf("paid AUROCs for %d schemes, want %v: %+v", len(d.Paid), want, d.Paid)
	}
	for i, p := range d.Paid {
		if p.Scheme != want[i] {
			t.Errorf("paid[%d] is %s, want %s", i, p.Scheme, want[i])
		}
		for _, e := range []struct {
			name string
			rec  int64
			mean float64
			ci   [2]float64
		}{{"without", p.WithoutAnswer.Records, p.WithoutAnswer.Mean, p.WithoutAnswer.CI95}, {"with", p.WithAnswer.Records, p.WithAnswer.Mean, p.WithAnswer.CI95}} {
			if e.rec != d.Measured || !(e.ci[0] <= e.mean && e.mean <= e.ci[1]) {
				t.Errorf("%s %s ANSWER: %d records, %v in %v; want %d records and the mean in its interval", p.Scheme, e.name, e.rec, e.mean, e.ci, d.Measured)
			}
		}
		if p.Scheme == schema.SchemeSRaR && p.WithAnswer.Mean != p.WithoutAnswer.Mean {
			t.Errorf("srar pays no ANSWER item, yet its AUROC is %v with them and %v without", p.WithAnswer.Mean, p.WithoutAnswer.Mean)
		}
	}
}

// TestMeasuredRecordsWithoutAUROCAreNamed: a measured record whose weights
// sum to 0 has no rubric AUROC; it is counted and named, not dropped from
// the means silently.
func TestMeasuredRecordsWithoutAUROCAreNamed(t *testing.T) {
	t.Parallel()
	recs := handCorpus()
	zero := handRecord("z", schema.StyleFactualProcess, []schema.Item{
		handItem(1, schema.TypeFactual, "States that the answer is 5.", 0),
		handItem(2, schema.TypeProcess, "Writes the recurrence for the sequence.", 0),
		handItem(3, schema.TypeProcess, "Checks the base case of the recurrence.", 0),
	}, "C 110", "C 101", "F 010", "F 000")
	recs = append(recs, zero)
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 10)
	rep := auditPath(t, Options{JudgeError: -1}, dir)
	d := rep.Discrimination
	if d.NoAUROC.WithAnswer != 1 || d.NoAUROC.WithoutAnswer != 1 || len(d.NoAUROC.IDs) != 1 || d.NoAUROC.IDs[0] != "z" {
		t.Errorf("no AUROC: %+v; want record z counted with and without ANSWER items", d.NoAUROC)
	}
	if text := string(textSection(t, rep, "Discrimination")); !strings.Contains(text, "no rubric AUROC") || !strings.Contains(text, "z") {
		t.Errorf("the text does not name the record without an AUROC:\n%s", text)
	}
}

// TestMinAUROCOnTheLowerBound: with OnLower, --min-auroc checks the lower
// bound of the mean's interval: a bound between it and the mean passes the
// plain gate and fails the lower one, saying so.
func TestMinAUROCOnTheLowerBound(t *testing.T) {
	t.Parallel()
	rep := sharedSynthRun300(t)
	d := rep.Discrimination
	between := (d.MeanAUROCCI95[0] + *d.MeanAUROC) / 2
	if got := rep.Failures(Gate{MinValidity: -1, MaxViolations: -1, MinAUROC: &between}); len(got) != 0 {
		t.Errorf("plain gate at %v below the mean %v: %q", between, *d.MeanAUROC, got)
	}
	got := rep.Failures(Gate{MinValidity: -1, MaxViolations: -1, MinAUROC: &between, OnLower: true})
	if len(got) != 1 || !strings.Contains(got[0], "lower bound") || !strings.Contains(got[0], "95% interval") || strings.Contains(got[0], "%!") {
		t.Errorf("lower-bound gate at %v above the bound %v: %q; want one failure naming the lower bound", between, d.MeanAUROCCI95[0], got)
	}
}
