package synthcorpus

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// TestPlantedKindsShowWithoutNoise: with no judge noise every planted kind
// is what discrim measures (its exact definitions): saturated items
// saturated, dead ones dead, a redundant item equal to its source, ANSWER
// items exactly correctness.
func TestPlantedKindsShowWithoutNoise(t *testing.T) {
	o := Options{Records: 300, JudgeNoise: -1, Seed: 7}
	seen := map[Kind]int{}
	for i := range o.Records {
		rec, kinds := o.Record(i)
		if err := schema.CheckRubric(rec.Style, rec.Rubric, 12); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		m := discrim.FromRecord(nil, &rec)
		st := discrim.Measure(m, nil, discrim.Options{JudgeError: -1})
		for k, kind := range kinds {
			seen[kind]++
			s := st.Items[k]
			switch {
			case kind == Saturated && !s.Saturated, kind == Dead && !s.Dead:
				t.Errorf("record %d item %d planted %v: saturated %v dead %v", i, k+1, kind, s.Saturated, s.Dead)
			case kind == Redundant && !sameX(m, k, redundantSource(kinds, k)):
				t.Errorf("record %d item %d planted redundant differs from its source", i, k+1)
			case rec.Rubric[k].Type == schema.TypeAnswer && s.HasEdge && s.Edge != 1:
				t.Errorf("record %d: ANSWER edge %v; want 1 without noise", i, s.Edge)
			}
		}
	}
	for k := range nKinds {
		if seen[k] == 0 {
			t.Errorf("no item of kind %v in 300 records", k)
		}
	}
}

// TestAlignedBeatsMisaligned: over many records the mean edge of aligned
// items is positive and of misaligned ones negative, noise included.
func TestAlignedBeatsMisaligned(t *testing.T) {
	o := Options{Records: 400, Seed: 3}
	sum, n := map[Kind]float64{}, map[Kind]int{}
	for i := range o.Records {
		rec, kinds := o.Record(i)
		st := discrim.Measure(discrim.FromRecord(nil, &rec), nil, discrim.Options{})
		for k, s := range st.Items {
			if s.HasEdge {
				sum[kinds[k]] += s.Edge
				n[kinds[k]]++
			}
		}
	}
	if a, m := sum[Aligned]/float64(n[Aligned]), sum[Misaligned]/float64(n[Misaligned]); !(a > 0.4 && m < -0.4) {
		t.Errorf("mean edge aligned %.3f, misaligned %.3f; want > 0.4 and < −0.4", a, m)
	}
}

func TestDeterministicAndWritten(t *testing.T) {
	o := Options{Records: 50, Rollouts: 4, Items: 5, Seed: 11, ShardRows: 20}
	a, ka := o.Record(17)
	b, kb := o.Record(17)
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(ka, kb) {
		t.Fatal("the same record twice differs")
	}
	dir := filepath.Join(t.TempDir(), "run")
	var ids []string
	if err := Write(dir, o, func(id string, kinds []Kind) {
		ids = append(ids, id)
		if len(kinds) != 5 {
			t.Errorf("%s: %d kinds", id, len(kinds))
		}
	}); err != nil {
		t.Fatal(err)
	}
	man, err := corpus.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 50 || man.Rows != 50 || len(man.Shards) != 3 {
		t.Errorf("planted %d, manifest %d records in %d shards; want 50 in 3", len(ids), man.Rows, len(man.Shards))
	}
	if err := Write(dir, Options{Items: 2}, nil); err == nil {
		t.Error("Items 2 accepted")
	}
}

func TestNoVerdicts(t *testing.T) {
	rec, _ := Options{NoVerdicts: true}.Record(0)
	for _, ro := range rec.Rollouts {
		if len(ro.Satisfaction) != 0 {
			t.Fatal("a rollout has verdicts")
		}
	}
	if rec.Provenance.EmpiricalModel != nil || rec.Rubric[0].SatRate != nil {
		t.Error("a record without verdicts names an empirical model or has figures")
	}
}

// TestValidateFindsNoViolation: validate reads a written corpus as a
// well-formed one (no structural violation, stored empirical figures equal
// to the verdicts'), so a benchmark over it measures the usual path; over
// 16 rollouts (8 are too few to tell a copy or a negative edge from chance
// under multiple-comparison control) the planted kinds show.
func TestValidateFindsNoViolation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := Write(dir, Options{Records: 300, Rollouts: 16, Seed: 5, ShardRows: 100}, nil); err != nil {
		t.Fatal(err)
	}
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Audit(context.Background(), in, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corpus.Records != 300 || rep.Structure.Violations != 0 || len(rep.InputProblems) != 0 {
		t.Errorf("%d records, %d violations (%+v), problems %v", rep.Corpus.Records, rep.Structure.Violations, rep.Structure.ByRule, rep.InputProblems)
	}
	if d := rep.Discrimination; d == nil || d.Measured == 0 || d.Total.Anti == 0 || d.Total.Saturated == 0 || d.RedundantPairs == 0 {
		t.Errorf("the planted kinds do not show: %+v", d)
	}
}

// sameX reports whether items a and b have the same good-side values on
// every rollout of m.
func sameX(m *discrim.Matrix, a, b int) bool {
	for r := range m.Rollouts() {
		if m.X(r, a) != m.X(r, b) {
			return false
		}
	}
	return true
}

// TestSweepKnobs: FewCorrect gives that share of records one or two
// correct rollouts; ParaphraseNoise flips a redundant item's verdicts
// beyond its source's; Aligned sets the aligned kind's good-side rates
// (misaligned ones swapped).
func TestSweepKnobs(t *testing.T) {
	o := Options{Records: 400, Rollouts: 16, FewCorrect: 0.5, ParaphraseNoise: 0.2, JudgeNoise: -1, Aligned: [2]float64{1, 0}, Seed: 3,
		Mix: Mix{Aligned: 0.5, Redundant: 0.3, Misaligned: 0.2}}
	few, differ, copies := 0, 0, 0
	for i := range o.Records {
		rec, kinds := o.Record(i)
		if rec.NCorrect == 1 || rec.NCorrect == 2 {
			few++
		}
		m := discrim.FromRecord(nil, &rec)
		for k, kind := range kinds {
			switch kind {
			case Redundant:
				for r := range m.Rollouts() {
					copies++
					if m.X(r, k) != m.X(r, redundantSource(kinds, k)) {
						differ++
					}
				}
			case Aligned, Misaligned:
				if rec.Rubric[k].Type == schema.TypeAnswer {
					continue
				}
				for r := range m.Rollouts() {
					if m.X(r, k) != (m.Correct[r] == (kind == Aligned)) {
						t.Fatalf("record %d item %d (%v) is off its rates 1/0 on rollout %d", i, k+1, kind, r)
					}
				}
			}
		}
	}
	if share := float64(few) / float64(o.Records); share < 0.45 {
		t.Errorf("%.2f of the records have 1 or 2 correct rollouts; want at least the 0.5 asked", share)
	}
	if copies == 0 || abs(float64(differ)/float64(copies)-0.2) > 0.03 {
		t.Errorf("redundant items differ from their source on %d of %d verdicts; want 20%%", differ, copies)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestRedundantSharesTheJudgesErrors: as the simulated endpoint grades a
// paraphrase, a redundant item's verdicts are its source's, the judge's
// errors included, unless ParaphraseNoise flips them.
func TestRedundantSharesTheJudgesErrors(t *testing.T) {
	o := Options{Records: 50, Rollouts: 16, JudgeNoise: 0.2, Seed: 4, Mix: Mix{Aligned: 0.5, Redundant: 0.5}}
	for i := range o.Records {
		rec, kinds := o.Record(i)
		m := discrim.FromRecord(nil, &rec)
		for k, kind := range kinds {
			if kind == Redundant && !sameX(m, k, RedundantSource(kinds, k)) {
				t.Fatalf("record %d: redundant item %d differs from its source under judge noise alone", i, k+1)
			}
		}
	}
}
