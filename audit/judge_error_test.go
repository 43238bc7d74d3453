package audit

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

// TestJudgeErrorFromThePanel: on a run whose satisfaction verdicts are a
// panel's, the discrimination definitions tolerate the error rate the
// panel measures (its judges' pairwise disagreements), the section says
// so, and Options.JudgeError, when given, wins.
func TestJudgeErrorFromThePanel(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	run, err := corpus.Open(dir, corpus.Options{ShardRows: 50, ToolVersion: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run.SetJob("panel-job", map[string]string{"empirical.panel": "a: m, b: m, c: m"})
	errs := []float64{0.05, 0.1, 0.1}
	var judges []synthcorpus.PanelJudge
	for i, e := range errs {
		judges = append(judges, synthcorpus.PanelJudge{Name: string(rune('a' + i)), Model: "m", FalseValid: e, FalseInvalid: e})
	}
	o := synthcorpus.Options{Records: 40, Rollouts: 16, JudgeNoise: -1, Seed: 9}
	for i := range o.Records {
		rec, _ := o.Record(i)
		synthcorpus.AddPanel(&rec, 5, judges...)
		if err := run.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	d := auditPath(t, Options{}, dir).Discrimination
	if want := judgestats.MajorityError(errs); d.JudgeErrorFrom != "panel" || math.Abs(d.JudgeError-want) > 0.01 {
		t.Errorf("judge error %v from %q; want about %.4f from the panel", d.JudgeError, d.JudgeErrorFrom, want)
	}
	if d := auditPath(t, Options{JudgeError: 0.2}, dir).Discrimination; d.JudgeError != 0.2 || d.JudgeErrorFrom != "given" {
		t.Errorf("given 0.2: %v from %q", d.JudgeError, d.JudgeErrorFrom)
	}
	if d := sharedSynthRun300(t).Discrimination; d.JudgeErrorFrom != "default" || d.JudgeError != 0.05 {
		t.Errorf("no panel: %v from %q; want the default 0.05", d.JudgeError, d.JudgeErrorFrom)
	}
}
