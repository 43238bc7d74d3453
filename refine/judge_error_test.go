package refine

import (
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/judgestats"
)

// panelRun writes a run of n synthetic records whose satisfaction verdicts
// are a panel's of three judges wrong at the given rates, its job history
// naming the panel as distill run's does.
func panelRun(t *testing.T, n int, errs ...float64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	run, err := corpus.Open(dir, corpus.Options{ShardRows: 100, ToolVersion: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run.SetJob("panel-job", map[string]string{"empirical.panel": "a: m1, b: m2, c: m3"})
	var judges []synthcorpus.PanelJudge
	for i, e := range errs {
		judges = append(judges, synthcorpus.PanelJudge{Name: string(rune('a' + i)), Model: "m", FalseValid: e, FalseInvalid: e})
	}
	o := synthcorpus.Options{Records: n, Rollouts: 16, JudgeNoise: -1, Seed: 8}
	for i := range n {
		rec, _ := o.Record(i)
		synthcorpus.AddPanel(&rec, 3, judges...)
		if err := run.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestJudgeErrorFromThePanel: without --judge-error, refine tolerates the
// error rate the corpus's satisfaction panel measures (its judges'
// pairwise disagreements give each one's rate; the panel's strict majority
// errs when two of three do), and says it came from the panel; a rate
// given by flag wins.
func TestJudgeErrorFromThePanel(t *testing.T) {
	t.Parallel()
	src := panelRun(t, 60, 0.04, 0.08, 0.12)
	want := judgestats.MajorityError([]float64{0.04, 0.08, 0.12})
	sum, err := Run(t.Context(), Config{Src: src, DryRun: true, Options: DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if j := sum.JudgeError; j.From != "panel" || math.Abs(j.Rate-want) > 0.01 {
		t.Errorf("judge error %+v; want about %.4f from the panel", j, want)
	}
	opt := DefaultOptions()
	opt.JudgeError = 0.07
	small := panelRun(t, 20, 0.04, 0.08, 0.12) // the flag wins whatever the corpus
	sum, err = Run(t.Context(), Config{Src: small, DryRun: true, Options: opt})
	if err != nil {
		t.Fatal(err)
	}
	if j := sum.JudgeError; j.From != "flag" || j.Rate != 0.07 {
		t.Errorf("judge error with the flag %+v; want 0.07 from the flag", j)
	}
}
