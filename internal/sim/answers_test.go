package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

func TestCorrectForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gold string
		want []string // must be among the forms
		not  []string // must not be
	}{
		{"12", []string{"12", "12.0", "x = 12", "$12$"}, nil},
		{"-5", []string{"-5", "-5.0", "x = -5"}, nil},
		{"1/2", []string{"1/2", `\frac{1}{2}`, `\dfrac{1}{2}`, "0.5"}, nil},
		{"1/3", []string{`\frac{1}{3}`}, []string{"0.333333", "0.33"}},
		{`\frac{5}{14}`, []string{"5/14", `\dfrac{5}{14}`}, nil},
		{`-\frac{3}{4}`, []string{"-3/4", "-0.75", `-\dfrac{3}{4}`}, nil},
		{"3.5", []string{"3.5", "3.50"}, []string{"7/2"}},
		{`\{1,2\}`, []string{`\{2, 1\}`, `\{1, 2\}`}, nil},
		{"(1,3]", []string{"(1, 3]"}, []string{"(3, 1]", "[1, 3]"}},
		{`\frac{\sqrt{2}}{2}`, []string{`$\frac{\sqrt{2}}{2}$`}, nil},
		{"Tuesday", []string{"Tuesday"}, []string{"$Tuesday$", "tuesday"}},
		{"D", []string{"D"}, nil},
		{"0, 2", []string{"0, 2"}, []string{"2, 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.gold, func(t *testing.T) {
			forms := correctForms(tt.gold)
			if forms[0] != tt.gold {
				t.Errorf("first form %q, want the gold itself", forms[0])
			}
			for _, w := range tt.want {
				if !slices.Contains(forms, w) {
					t.Errorf("forms %q lack %q", forms, w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(forms, n) {
					t.Errorf("forms %q contain %q", forms, n)
				}
			}
			for _, f := range forms {
				if !isCorrectFor(f, tt.gold) {
					t.Errorf("form %q not recognized as correct", f)
				}
			}
		})
	}
}

func TestWrongForms(t *testing.T) {
	t.Parallel()
	golds := []string{"12", "0", "-5", "1/2", `\frac{5}{14}`, `-\frac{3}{4}`, "3.5", "0.0", `\{1,2\}`, `\{2, 4, 6\}`,
		"(1,3]", "(2, 3)", `(-\infty, 2]`, `(-\infty, 2] \cup [3, \infty)`, `\frac{\sqrt{2}}{2}`, "Tuesday", "yes",
		"D", "(C)", "80^\\circ", `32\%`, "2x+3", "y = 6x - 9", `\pi`, `\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}`,
		"0, 2", "99999999999999999999999"}
	for _, gold := range golds {
		t.Run(gold, func(t *testing.T) {
			seen := map[string]bool{}
			for i := range 50 {
				w := wrongForm(gold, newRNG(uint64(i)))
				seen[w] = true
				if isCorrectFor(w, gold) || w == gold || strings.TrimSpace(w) == "" {
					t.Fatalf("wrong form %q counts as correct for %q", w, gold)
				}
			}
			if len(seen) < 1 {
				t.Fatal("no wrong forms")
			}
		})
	}
}

func FuzzAnswerForms(f *testing.F) {
	for _, g := range []string{"12", "1/2", `\frac{1}{2}`, `\{1,2\}`, "(1,3]", "Tuesday", "D", "3.5", `\sqrt{2}`, "0/0", "1/0"} {
		f.Add(g, uint64(1))
	}
	f.Fuzz(func(t *testing.T, gold string, seed uint64) {
		gold = strings.TrimSpace(gold)
		if gold == "" {
			return
		}
		for _, form := range correctForms(gold) {
			if !isCorrectFor(form, gold) {
				t.Fatalf("form %q of %q not recognized", form, gold)
			}
		}
		if w := wrongForm(gold, newRNG(seed)); isCorrectFor(w, gold) && normalizeAnswer(gold) != "" {
			t.Fatalf("wrong form %q of %q counts as correct", w, gold)
		}
	})
}

// sampleRollouts draws n samples of every problem (straight from the
// generator; the HTTP path is covered elsewhere) and reports, per problem,
// the number correct.
func sampleRollouts(s *Server, answers map[string]string, n int) map[string]int {
	out := map[string]int{}
	for problem, gold := range answers {
		for i := range n {
			sol := s.rolloutSolution(problem, s.cfg.Answers[problem], fmt.Sprintf("seed:7/%d", i), false)
			if a, ok := finalAnswer(sol.content); ok && sol.finish == "stop" && isCorrectFor(a, gold) {
				out[problem]++
			}
		}
	}
	return out
}

func TestCorrectRate(t *testing.T) {
	t.Parallel()
	answers := map[string]string{}
	for i := range 250 {
		answers[fmt.Sprintf("Problem %d: compute %d + %d.", i, i, 3*i)] = fmt.Sprint(4 * i)
	}
	for _, rate := range []float64{0.6, 0.25} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			const n = 8
			s := New(Config{Answers: answers, CorrectRate: rate, LengthRate: -1})
			correct := sampleRollouts(s, answers, n)
			sum, allRight, allWrong := 0, 0, 0
			for p := range answers {
				sum += correct[p]
				switch correct[p] {
				case n:
					allRight++
				case 0:
					allWrong++
				}
			}
			got := float64(sum) / float64(n*len(answers))
			if math.Abs(got-rate) > 0.04 {
				t.Errorf("correct rate %.3f, want %.2f ± 0.04", got, rate)
			} else {
				t.Logf("correct rate %.3f (want %.2f)", got, rate)
			}
			mixed := len(answers) - allRight - allWrong
			if allRight == 0 || allWrong == 0 || mixed < len(answers)/3 {
				t.Errorf("problems: %d all right, %d all wrong, %d mixed; want some of each and mostly mixed", allRight, allWrong, mixed)
			}
		})
	}
	t.Run("unknown problems", func(t *testing.T) {
		s := New(Config{CorrectRate: 1})
		got := sampleRollouts(s, map[string]string{"Not in the answers: what is 2 + 2?": "4"}, 32)
		if got["Not in the answers: what is 2 + 2?"] > 1 {
			t.Errorf("%d of 32 correct for a problem without a known answer", got["Not in the answers: what is 2 + 2?"])
		}
	})
}

func TestVariedNotation(t *testing.T) {
	t.Parallel()
	answers := testProblems()
	s := New(Config{Answers: answers, CorrectRate: 1, LengthRate: -1})
	ps := loadPrompts(t)
	for problem, gold := range answers {
		msgs, err := ps.RolloutMessages(problem)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, c := range complete(t, s, seeded(msgs, 1, 40)).Choices {
			a, ok := finalAnswer(c.Message.Content)
			if !ok || !isCorrectFor(a, gold) {
				t.Fatalf("gold %q: answer %q (ok %v) not correct at CorrectRate 1", gold, a, ok)
			}
			seen[a] = true
		}
		if want := min(len(correctForms(gold)), 2); len(seen) < want {
			t.Errorf("gold %q: %d notations seen, want at least %d", gold, len(seen), want)
		}
	}
}

func TestSatisfyCorrelatesWithCorrectness(t *testing.T) {
	t.Parallel()
	answers := map[string]string{}
	for i := range 40 {
		answers[fmt.Sprintf("Problem %d: compute %d times 3.", i, i+2)] = fmt.Sprint(3 * (i + 2))
	}
	s := New(Config{Answers: answers, LengthRate: -1})
	ps := loadPrompts(t)
	type tally struct{ sat, n [2]int }
	byType := map[string]*tally{}
	for problem, gold := range answers {
		msgs, _ := ps.RolloutMessages(problem)
		rollouts := byIndex(complete(t, s, seeded(msgs, 3, 8)))
		dmsgs, err := ps.DistillSRaRMessages(problem, gold, nil, 12)
		if err != nil {
			t.Fatal(err)
		}
		res, err := schema.ParseSRaR(complete(t, s, seeded(dmsgs, 0, 1)).Choices[0].Message.Content, schema.SRaROptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rollouts {
			final, _ := finalAnswer(r.Message.Content)
			correct := 0
			if isCorrectFor(final, gold) {
				correct = 1
			}
			smsgs, err := ps.SatisfyMessages(problem, r.Message.Content, final, res.Items)
			if err != nil {
				t.Fatal(err)
			}
			sats, err := schema.ParseSatisfaction(complete(t, s, seeded(smsgs, 0, 1)).Choices[0].Message.Content,
				itemIDs(res.Items), countSteps(r.Message.Content))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range sats {
				typ := res.Items[i].Type
				if byType[typ] == nil {
					byType[typ] = &tally{}
				}
				byType[typ].n[correct]++
				if v.Satisfied {
					byType[typ].sat[correct]++
				}
			}
		}
	}
	rate := func(typ string, correct int) float64 {
		tl := byType[typ]
		return float64(tl.sat[correct]) / float64(max(tl.n[correct], 1))
	}
	for _, typ := range []string{schema.TypeSuggest, schema.TypeAnswer, schema.TypePitfall} {
		if byType[typ] == nil || byType[typ].n[0] == 0 || byType[typ].n[1] == 0 {
			t.Fatalf("%s: no data for both outcomes", typ)
		}
		right, wrong := rate(typ, 1), rate(typ, 0)
		t.Logf("%s satisfied: %.2f when correct, %.2f when wrong", typ, right, wrong)
		if typ == schema.TypePitfall {
			right, wrong = wrong, right
		}
		if right-wrong < 0.3 {
			t.Errorf("%s: satisfaction does not follow correctness", typ)
		}
	}
}

// TestRolloutChars: with Config.RolloutChars every finished rollout is at
// least that long, and padding changes neither its answer nor whether it is
// correct (a measurement at real lengths measures the same run).
func TestRolloutChars(t *testing.T) {
	t.Parallel()
	answers := map[string]string{}
	for i := range 40 {
		answers[fmt.Sprintf("Problem %d: compute %d + %d.", i, i, 5*i)] = fmt.Sprint(6 * i)
	}
	short := New(Config{Answers: answers, LengthRate: -1})
	long := New(Config{Answers: answers, LengthRate: -1, RolloutChars: 20000})
	for problem, gold := range answers {
		for i := range 4 {
			key := fmt.Sprintf("seed:7/%d", i)
			a, b := short.rolloutSolution(problem, gold, key, false), long.rolloutSolution(problem, gold, key, false)
			if len(b.content) < 20000 || len(b.content) > 23000 {
				t.Fatalf("a padded rollout holds %d bytes, want about 20,000", len(b.content))
			}
			ansA, okA := finalAnswer(a.content)
			ansB, okB := finalAnswer(b.content)
			if okA != okB || ansA != ansB || isCorrectFor(ansA, gold) != isCorrectFor(ansB, gold) {
				t.Fatalf("padding changed the answer: %q (%v) -> %q (%v)", ansA, okA, ansB, okB)
			}
		}
	}
}
