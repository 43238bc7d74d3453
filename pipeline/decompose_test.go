package pipeline

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

type seedMap map[string]Seed

func (s seedMap) Seed(id string) (Seed, bool) { v, ok := s[id]; return v, ok }

// TestDecomposeStages: with Options.Decompose the engine runs decompose,
// judge and empirical over the units its input lists: each record holds
// the finer items of its saturated ones (their type, validity verdicts),
// its seed's rollouts with verdicts on every finer item and none on the
// old ones, and the decompose template's hash as its distill template; a
// unit without a seed fails at the decompose stage.
func TestDecomposeStages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, sim.Config{Seed: 5})
	seeds := seedMap{}
	for i, row := range f.rows[:5] {
		sat := schema.Item{ID: 2, Type: schema.TypeSuggest, Text: "Sets up the equation from the statement.", Weight: 1.5, Polarity: 1}
		if i%2 == 1 {
			sat = schema.Item{ID: 3, Type: schema.TypePitfall, Text: "Divides by a quantity that can be zero.", Weight: 1, Polarity: -1}
		}
		var rollouts []schema.Rollout
		for r := range 4 {
			rollouts = append(rollouts, schema.Rollout{Index: int32(r), Correct: r < 2, Text: "### Step 1\nwork\n<answer>" + row.Answer + "</answer>",
				ExtractedAnswer: row.Answer, Satisfaction: []schema.Satisfaction{{ID: sat.ID, Satisfied: sat.Polarity > 0}}})
		}
		seeds[job.ProblemID(row.Problem, row.Answer)] = Seed{Saturated: []schema.Item{sat}, Rollouts: rollouts}
	}
	jb := f.job
	jb.Judge.Enabled, jb.Judge.DropInvalid, jb.Empirical.Enabled = true, false, true
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess, Decompose: seeds})
	if rep.Problems.Failed != 1 || rep.FailuresByStage[StageDecompose] != 1 {
		t.Errorf("failed %d, by stage %v: want the unit without a seed failed at %s", rep.Problems.Failed, rep.FailuresByStage, StageDecompose)
	}
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = corpus.ReadAll(jb.Out, func(rec *schema.Record) error {
		n++
		seed := seeds[rec.ID]
		sat := seed.Saturated[0]
		if len(rec.Rubric) < 2 || len(rec.Rubric) > 3 {
			t.Errorf("%s: %d finer items, want 2-3", rec.ID, len(rec.Rubric))
		}
		for _, it := range rec.Rubric {
			if it.Type != sat.Type || it.Weight != sat.Weight || it.Polarity != sat.Polarity || it.Valid == nil || !strings.HasPrefix(it.Text, strings.TrimSuffix(sat.Text, ".")) {
				t.Errorf("%s: finer item %+v of saturated %+v", rec.ID, it, sat)
			}
		}
		if len(rec.Rollouts) != len(seed.Rollouts) {
			t.Errorf("%s: %d rollouts, want the seed's %d", rec.ID, len(rec.Rollouts), len(seed.Rollouts))
		}
		for _, r := range rec.Rollouts {
			if len(r.Satisfaction) != len(rec.Rubric) {
				t.Errorf("%s rollout %d: %d verdicts for %d items", rec.ID, r.Index, len(r.Satisfaction), len(rec.Rubric))
			}
		}
		if rec.Provenance.DistillTemplate != ps.Hash(prompts.Decompose) {
			t.Errorf("%s: distill template %s, want the decompose template's", rec.ID, rec.Provenance.DistillTemplate)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("%d records, want 5", n)
	}
	if seeds[job.ProblemID(f.rows[0].Problem, f.rows[0].Answer)].Rollouts[0].Satisfaction == nil {
		t.Error("the run changed its seeds' rollouts")
	}
	// The decompose template decides the finer items, so it is part of the
	// job's identity: a changed template is a changed job on resume.
	m, err := corpus.ReadManifest(jb.Out)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mj := range m.Jobs {
		found = found || mj.Settings["template."+prompts.Decompose] == ps.Hash(prompts.Decompose)
	}
	if !found {
		t.Errorf("the manifest's jobs do not name the decompose template's hash: %+v", m.Jobs)
	}
}
