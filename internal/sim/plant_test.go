package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

func testPlant() *Plant {
	return &Plant{Misaligned: 0.15, Saturated: 0.1, Dead: 0.1, Noise: 0.1, Redundant: 0.3, JudgeNoise: 0.02}
}

// TestPlantedKindsComeInTheirShares: over many distilled rubrics, the kinds
// PlantedKind reports come in the shares the Plant asks for, every
// paraphrase follows its aligned original, and the rubric's text carries no
// kind name.
func TestPlantedKindsComeInTheirShares(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	plant := testPlant()
	s := New(Config{Plant: plant, Seed: 3})
	counts := map[ItemKind]int{}
	base := 0
	for i := range 400 {
		problem := fmt.Sprintf("Problem %d: find the value of x + %d when x = %d.", i, i, 2*i)
		msgs, err := ps.DistillSRaRMessages(problem, "7", nil, 14)
		if err != nil {
			t.Fatal(err)
		}
		content := complete(t, s, seeded(msgs, int64(i), 1)).Choices[0].Message.Content
		res, err := schema.ParseSRaR(content, schema.SRaROptions{MaxItems: 14})
		items := res.Items
		if err != nil {
			t.Fatalf("problem %d: %v\n%s", i, err, content)
		}
		for k, it := range items {
			kind, ok := s.PlantedKind(problem, it.Type, it.Text)
			if !ok {
				t.Fatal("PlantedKind: false with a Plant set")
			}
			counts[kind]++
			if kind != PlantedRedundant && kind != PlantedAnswer {
				base++
			}
			if kind == PlantedRedundant {
				orig, _ := paraphrased(it.Text)
				if k == 0 || items[k-1].Text != orig || items[k-1].Type != it.Type {
					t.Errorf("problem %d item %d: paraphrase %q does not follow its original", i, k+1, it.Text)
				}
				if prev, _ := s.PlantedKind(problem, it.Type, orig); prev != PlantedAligned {
					t.Errorf("problem %d item %d: paraphrase of a %s item", i, k+1, prev)
				}
			}
			for _, name := range []ItemKind{PlantedMisaligned, PlantedSaturated, PlantedDead, PlantedNoise} {
				if strings.Contains(strings.ToLower(it.Text), string(name)) {
					t.Errorf("item text %q names the kind %s", it.Text, name)
				}
			}
		}
	}
	for _, tc := range []struct {
		kind  ItemKind
		share float64
	}{{PlantedMisaligned, plant.Misaligned}, {PlantedSaturated, plant.Saturated}, {PlantedDead, plant.Dead}, {PlantedNoise, plant.Noise}} {
		got := float64(counts[tc.kind]) / float64(base)
		if math.Abs(got-tc.share) > 0.04 {
			t.Errorf("%s: share %.3f of %d items, want %.2f ± 0.04", tc.kind, got, base, tc.share)
		}
	}
	aligned := float64(counts[PlantedAligned])
	if got := float64(counts[PlantedRedundant]) / aligned; got < 0.2 || got > 0.32 {
		t.Errorf("paraphrases per aligned item %.3f, want about %.2f (fewer where the budget is full)", got, plant.Redundant)
	}
	if s2 := New(Config{}); func() bool { _, ok := s2.PlantedKind("p", "SUGGEST", "x"); return ok }() {
		t.Error("PlantedKind: true without a Plant")
	}
}

// TestPlantedVerdictsFollowTheKind: through the satisfy prompt, each kind's
// good-side rate among correct and flawed solutions is the one it was
// planted with (judge noise included), PITFALL items are read on their good
// side, and a paraphrase is graded exactly as its original.
func TestPlantedVerdictsFollowTheKind(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	plant := &Plant{Misaligned: 0.25, Saturated: 0.2, Dead: 0.2, Noise: 0.15, Redundant: 1, JudgeNoise: 0.05}
	s := New(Config{Plant: plant, Seed: 5, Answers: map[string]string{"Compute 6 times 7.": "42"}})
	problem := "Compute 6 times 7."
	// perKind items of each kind (SUGGEST and PITFALL), found by drawing
	// texts until each kind has them; each request asks about all of them,
	// so n/perKind requests draw n verdicts of each kind and class.
	const n, perKind = 1500, 10
	byKind := map[ItemKind][]schema.Item{}
	kinds := []ItemKind{PlantedAligned, PlantedMisaligned, PlantedSaturated, PlantedDead, PlantedNoise}
	for i := 0; i < 5000; i++ {
		typ := schema.TypeSuggest
		if i%2 == 1 {
			typ = schema.TypePitfall
		}
		text := fmt.Sprintf("Checks condition number %d.", i)
		if k := s.baseKind(problem, typ, text); len(byKind[k]) < perKind {
			byKind[k] = append(byKind[k], schema.Item{Type: typ, Text: text, Polarity: schema.PolarityOf(typ)})
		}
	}
	var items []schema.Item
	kindOf := []ItemKind{}
	for _, k := range kinds {
		if len(byKind[k]) < perKind {
			t.Fatalf("%d items of kind %s in 5,000 texts, want %d", len(byKind[k]), k, perKind)
		}
		items = append(items, byKind[k]...)
		for range perKind {
			kindOf = append(kindOf, k)
		}
	}
	// The last item is a paraphrase of the first (aligned) one.
	items = append(items, schema.Item{Type: items[0].Type, Text: paraphrase(items[0].Text)})
	for i := range items {
		items[i].ID = int32(i + 1)
	}
	want := map[ItemKind][2]float64{ // good-side rate if flawed, if correct, before judge noise
		PlantedAligned: {plantGoodIfFlawed, plantGoodIfCorrect}, PlantedMisaligned: {plantGoodIfCorrect, plantGoodIfFlawed},
		PlantedSaturated: {1, 1}, PlantedDead: {0, 0}, PlantedNoise: {0.5, 0.5},
	}
	for ci, final := range []string{"41", "42"} {
		good := map[ItemKind]int{}
		for r := range n / perKind {
			sol := fmt.Sprintf("### Step 1: Multiply\nAttempt %d gives %s.\n<answer>%s</answer>", r, final, final)
			msgs, err := ps.SatisfyMessages(problem, sol, final, items)
			if err != nil {
				t.Fatal(err)
			}
			got, err := schema.ParseSatisfaction(complete(t, s, seeded(msgs, 1, 1)).Choices[0].Message.Content, itemIDs(items), 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range kindOf {
				if got[i].Satisfied != (items[i].Type == schema.TypePitfall) {
					good[k]++
				}
			}
			if got[0].Satisfied != got[len(got)-1].Satisfied {
				t.Fatalf("rollout %d: the paraphrase is graded %v, its original %v", r, got[len(got)-1].Satisfied, got[0].Satisfied)
			}
		}
		for _, k := range kinds {
			p := want[k][ci]
			p = p*(1-plant.JudgeNoise) + (1-p)*plant.JudgeNoise
			if rate := float64(good[k]) / n; math.Abs(rate-p) > 0.04 {
				t.Errorf("%s items, correct=%v: good-side rate %.3f, want %.3f", k, ci == 1, rate, p)
			}
		}
	}
}

func TestParsePlant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec string
		want *Plant
		err  string
	}{
		{"misaligned=0.12,saturated=0.1,dead=0.1,noise=0.08,redundant=0.25,judge-noise=0.001",
			&Plant{Misaligned: 0.12, Saturated: 0.1, Dead: 0.1, Noise: 0.08, Redundant: 0.25, JudgeNoise: 0.001}, ""},
		{"dead=1", &Plant{Dead: 1}, ""},
		{"redundant=0.5,paraphrase-noise=0.1,few-correct=0.3", &Plant{Redundant: 0.5, ParaphraseNoise: 0.1, FewCorrect: 0.3}, ""},
		{"dead=0.5, noise=0.5", &Plant{Dead: 0.5, Noise: 0.5}, ""},
		{"dead=0.6,noise=0.5", nil, "add up to 1.1"},
		{"dead=1.5", nil, "from 0 to 1"},
		{"dead=NaN", nil, "from 0 to 1"},
		{"dead", nil, "not name=rate"},
		{"deadly=0.1", nil, "not name=rate"},
		{"dead=0.1,dead=0.2", nil, "twice"},
		{"", nil, "not name=rate"},
	} {
		got, err := ParsePlant(tc.spec)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.spec, err, tc.err)
		case tc.err == "" && (err != nil || *got != *tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
}

func FuzzParsePlant(f *testing.F) {
	f.Add("misaligned=0.12,saturated=0.1,dead=0.1,noise=0.08,redundant=0.25,judge-noise=0.001")
	f.Add("dead=1,noise=x")
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := ParsePlant(spec)
		if err != nil {
			return
		}
		for _, v := range []float64{p.Misaligned, p.Saturated, p.Dead, p.Noise, p.Redundant, p.JudgeNoise, p.ParaphraseNoise, p.FewCorrect} {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("%q: rate %v out of [0, 1]", spec, v)
			}
		}
		if p.Misaligned+p.Saturated+p.Dead+p.Noise > 1 {
			t.Fatalf("%q: shares add up to more than 1", spec)
		}
	})
}

// TestParaphraseNoise: with ParaphraseNoise a paraphrase's verdict is its
// original's flipped on a draw of its own at that rate (beside the judge
// noise they share), so their verdict vectors differ in about that share
// of the rollouts; without it they never differ.
func TestParaphraseNoise(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	problem := "Compute 6 times 7."
	for _, rate := range []float64{0, 0.1} {
		s := New(Config{Plant: &Plant{Redundant: 1, ParaphraseNoise: rate, JudgeNoise: 0.02}, Seed: 5, Answers: map[string]string{problem: "42"}})
		// pairs items and their paraphrases in each request: n/pairs
		// requests draw n pairs of verdicts.
		const n, pairs = 2000, 20
		var items []schema.Item
		for k := range pairs {
			text := fmt.Sprintf("Checks condition number %d.", k+1)
			items = append(items, schema.Item{ID: int32(2*k + 1), Type: schema.TypeSuggest, Text: text, Polarity: 1},
				schema.Item{ID: int32(2*k + 2), Type: schema.TypeSuggest, Text: paraphrase(text), Polarity: 1})
		}
		differ := 0
		for r := range n / pairs {
			sol := fmt.Sprintf("### Step 1: Multiply\nAttempt %d gives 42.\n<answer>42</answer>", r)
			msgs, err := ps.SatisfyMessages(problem, sol, "42", items)
			if err != nil {
				t.Fatal(err)
			}
			got, err := schema.ParseSatisfaction(complete(t, s, seeded(msgs, 1, 1)).Choices[0].Message.Content, itemIDs(items), 0)
			if err != nil {
				t.Fatal(err)
			}
			for k := range pairs {
				if got[2*k].Satisfied != got[2*k+1].Satisfied {
					differ++
				}
			}
		}
		t.Logf("paraphrase noise %v: verdicts differ on %d of %d", rate, differ, n)
		if share := float64(differ) / n; math.Abs(share-rate) > 0.02 {
			t.Errorf("paraphrase noise %v: verdicts differ on %.3f of the rollouts", rate, share)
		}
	}
}

// TestFewCorrectProblems: with FewCorrect a share of the problems is solved
// rarely (a correct rate from 0.03 to 0.15), the others as without it.
func TestFewCorrectProblems(t *testing.T) {
	t.Parallel()
	s := New(Config{Plant: &Plant{FewCorrect: 0.4}, CorrectRate: 0.6, Seed: 9})
	plain := New(Config{Plant: &Plant{}, CorrectRate: 0.6, Seed: 9})
	few := 0
	const n = 2000
	for i := range n {
		p := fmt.Sprintf("Problem %d", i)
		rate := s.problemCorrectRate(p)
		switch {
		case rate >= 0.03 && rate <= 0.15 && plain.problemCorrectRate(p) != rate:
			few++
		case rate != plain.problemCorrectRate(p):
			t.Fatalf("%s: rate %v, %v without few-correct problems", p, rate, plain.problemCorrectRate(p))
		}
	}
	if share := float64(few) / n; math.Abs(share-0.4) > 0.04 {
		t.Errorf("few-correct problems: %.3f of %d; want 0.4", share, n)
	}
}
