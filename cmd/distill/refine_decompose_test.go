package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/refine"
	"github.com/rubricforge/rubricforge/schema"
)

// decomposeArgs are the arguments of a refine --decompose against url.
func decomposeArgs(src, out, url string, extra ...string) []string {
	return append([]string{"refine", src, "--out", out, "--decompose", "--base-url", url, "--model", "simulated", "--json"}, extra...)
}

func readSummary(t *testing.T, stdout []byte) refine.Summary {
	t.Helper()
	var sum refine.Summary
	if err := json.Unmarshal(stdout, &sum); err != nil {
		t.Fatalf("refine --json: %v\n%s", err, stdout)
	}
	return sum
}

// TestRefineDecomposeReplacesSaturatedItems: on a planted corpus, refine
// --decompose sends the saturated items to the simulated distiller,
// keeps finer items only with a positive fit edge (and valid), puts them
// into the refined records with their verdicts, and the held-out AUROC
// does not fall below that of the same refinement without --decompose.
func TestRefineDecomposeReplacesSaturatedItems(t *testing.T) {
	for _, style := range []string{schema.StyleSRaR, schema.StyleFactualProcess} {
		t.Run(style, func(t *testing.T) {
			src, sim, url := plantedCorpus(t, style, 40)
			dir := t.TempDir()
			plain, dec := filepath.Join(dir, "plain"), filepath.Join(dir, "dec")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"refine", src, "--out", plain, "--json"}, &stdout, &stderr); code != exitOK {
				t.Fatalf("refine: exit %d\n%s", code, stderr.String())
			}
			before := readSummary(t, stdout.Bytes())
			stdout.Reset()
			stderr.Reset()
			if code := run(decomposeArgs(src, dec, url), &stdout, &stderr); code != exitOK {
				t.Fatalf("refine --decompose: exit %d\n%s", code, stderr.String())
			}
			sum := readSummary(t, stdout.Bytes())
			dc := sum.Decomposed
			t.Logf("%s: %+v; held-out AUROC %.3f -> %.3f (plain refine %.3f)", style, dc, sum.HeldOut.WithAnswer.MeanBefore, sum.HeldOut.WithAnswer.MeanAfter, before.HeldOut.WithAnswer.MeanAfter)
			if dc.Units == 0 || dc.Proposed < 2*dc.Units || dc.Kept == 0 {
				t.Fatalf("decomposed %+v: want saturated items sent and finer items kept", dc)
			}
			if sum.HeldOut.WithAnswer.MeanAfter < sum.HeldOut.WithAnswer.MeanBefore {
				t.Errorf("held-out AUROC fell: %.3f -> %.3f", sum.HeldOut.WithAnswer.MeanBefore, sum.HeldOut.WithAnswer.MeanAfter)
			}
			if sum.HeldOut.NoAnswer.MeanAfter < before.HeldOut.NoAnswer.MeanAfter-0.01 {
				t.Errorf("held-out AUROC without ANSWER items %.3f with --decompose, %.3f without", sum.HeldOut.NoAnswer.MeanAfter, before.HeldOut.NoAnswer.MeanAfter)
			}
			checkFinerItems(t, dec, sim)
			if _, err := os.Stat(filepath.Join(dec, refine.DecomposeDir, "cache.db")); err != nil {
				t.Errorf("the decomposition's cache is not in DST: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, ".dec.refine-decompose")); err == nil {
				t.Error("the work directory is left after a finished refine")
			}
		})
	}
}

// checkFinerItems: every kept finer item has a positive fit edge, is in
// the refined record with verdicts on every judged rollout, and most kept
// ones are of the aligned kind the simulator planted.
func checkFinerItems(t *testing.T, dst string, sim *llmtest.Server) {
	t.Helper()
	decisions := readDecisions(t, dst)
	in, err := audit.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	kept, aligned := 0, 0
	err = audit.Records(t.Context(), in, func(rec *schema.Record) error {
		d := decisions[rec.ID]
		for _, it := range d.Items {
			if !it.Finer {
				continue
			}
			if it.Drop == "" && it.Edge <= 0 {
				t.Errorf("%s: finer item %d kept with fit edge %g", rec.ID, it.ID, it.Edge)
			}
			if it.Drop != "" {
				continue
			}
			kept++
			item := rec.Rubric[it.NewID-1]
			if item.Text != it.Text {
				t.Errorf("%s: new item %d is %q, want the finer %q", rec.ID, it.NewID, item.Text, it.Text)
			}
			if kind, _ := sim.PlantedKind(rec.Problem, item.Type, item.Text); kind == llmtest.PlantedAligned {
				aligned++
			}
			for _, r := range rec.Rollouts {
				if len(r.Satisfaction) > 0 && len(r.Satisfaction) != len(rec.Rubric) {
					t.Errorf("%s rollout %d: %d verdicts for %d items", rec.ID, r.Index, len(r.Satisfaction), len(rec.Rubric))
				}
			}
		}
		return nil
	}, func(p audit.Problem) { t.Errorf("reading %s: %+v", dst, p) })
	if err != nil {
		t.Fatal(err)
	}
	if kept == 0 || float64(aligned) < 0.8*float64(kept) {
		t.Errorf("%d of %d kept finer items are planted aligned, want >= 80%%", aligned, kept)
	}
}
