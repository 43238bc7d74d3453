package judge

import (
	"context"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// Simulated judge models: "truth" judges without errors, "contrary" says
// the opposite of every satisfaction verdict and grounded score, "broken"
// never gives a usable answer.
var panelJudges = map[string]sim.JudgeProfile{
	"contrary": {Flip: 1},
	"broken":   {Fail: 1},
}

// panelOf is a panel of the named simulated judges on one simulated
// endpoint, each member named as its model (with a position suffix, so a
// model may sit twice).
func panelOf(t *testing.T, simulator *sim.Server, models ...string) *Judge {
	t.Helper()
	members := make([]*Judge, len(models))
	for i, m := range models {
		members[i] = newTestJudge(t, simulator.Transport(), 1, nil, Options{Model: m, Name: m + "-" + string(rune('a'+i)), Repairs: -1})
	}
	p, err := NewPanel(members)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// against is the verdict on it that goes against the response: a positive
// item not met, a PITFALL present.
func against(it schema.Item) bool { return reward.Polarity(it) < 0 }

// TestPanelFailedJudgeNeverBreaksASplit: a panel of three where one judge
// fails and the other two split 1-1 on every item gives no verdict for
// the response on any item: every positive item unmet, every PITFALL
// present, in every order of the judges.
func TestPanelFailedJudgeNeverBreaksASplit(t *testing.T) {
	simulator := sim.New(sim.Config{Judges: panelJudges})
	lab := rewardtest.DemoLabel()
	r := reward.Analyze(rewardtest.MarkedResponse, lab.GroundTruth)
	for _, order := range [][]string{{"truth", "contrary", "broken"}, {"broken", "truth", "contrary"}, {"contrary", "broken", "truth"}} {
		v, err := panelOf(t, simulator, order...).Verdicts(context.Background(), lab.Question, lab.Rubric, &r)
		if err != nil {
			t.Fatalf("%v: %v", order, err)
		}
		for i, it := range lab.Rubric {
			if v[i].Satisfied != against(it) {
				t.Errorf("%v: item %d (%s) satisfied=%v: a 1-1 split with a failed judge decided it for the response", order, it.ID, it.Type, v[i].Satisfied)
			}
		}
	}
}

// TestPanelTieIsAgainstTheResponseInAnyOrder: two judges that disagree on
// every item tie on every item; the tie goes against the response in both
// orders, and a panel's verdicts never depend on the judges' order.
func TestPanelTieIsAgainstTheResponseInAnyOrder(t *testing.T) {
	simulator := sim.New(sim.Config{Judges: panelJudges})
	lab := rewardtest.DemoLabel()
	r := reward.Analyze(rewardtest.MarkedResponse, lab.GroundTruth)
	ask := func(models ...string) []schema.Satisfaction {
		v, err := panelOf(t, simulator, models...).Verdicts(context.Background(), lab.Question, lab.Rubric, &r)
		if err != nil {
			t.Fatalf("%v: %v", models, err)
		}
		return v
	}
	for _, order := range [][]string{{"truth", "contrary"}, {"contrary", "truth"}} {
		for i, it := range lab.Rubric {
			if v := ask(order...); v[i].Satisfied != against(it) {
				t.Errorf("%v: item %d (%s) tie decided for the response", order, it.ID, it.Type)
			}
		}
	}
	base := ask("truth", "truth", "contrary")
	for _, order := range [][]string{{"truth", "contrary", "truth"}, {"contrary", "truth", "truth"}} {
		if got := ask(order...); !sameVerdicts(got, base) {
			t.Errorf("order %v gave %v, order truth,truth,contrary %v", order, got, base)
		}
	}
	if truth := ask("truth", "truth"); !sameVerdicts(base, truth) {
		t.Errorf("two true judges of three: %v, the truth %v", base, truth)
	}
}

func sameVerdicts(a, b []schema.Satisfaction) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPanelFailureNeverPaysMore: for every combination of three members'
// verdicts on an item of either polarity, a member that failed gives the
// panel the verdict it gives with that member answering against the
// response, so a broken judge never pays more than one that says the
// response fails; the reward of a whole response follows.
func TestPanelFailureNeverPaysMore(t *testing.T) {
	lab := rewardtest.DemoLabel()
	items := lab.Rubric
	r := reward.Analyze(rewardtest.TwoSteps, lab.GroundTruth)
	p := reward.DefaultParams()
	// Every assignment of satisfied/unsatisfied to the 5 items by 3 judges
	// is too many; each judge says one of four patterns per rubric.
	patterns := [][]bool{{true, true, true, true, true}, {false, false, false, false, false}, {true, false, true, false, true}, {false, true, false, true, false}}
	verdictsOf := func(sat []bool) []schema.Satisfaction {
		v := make([]schema.Satisfaction, len(items))
		for i, it := range items {
			v[i] = schema.Satisfaction{ID: it.ID, Satisfied: sat[i], Step: -1}
			if sat[i] {
				v[i].Step = 1
			}
		}
		return v
	}
	againstAll := make([]bool, len(items))
	for i, it := range items {
		againstAll[i] = against(it)
	}
	pay := func(answers []memberVerdicts) float64 {
		rr := r
		rr.Verdicts = panelSatisfaction(items, answers)
		return reward.ScoreWith(p, reward.OnJudgeFailureFloor, schema.SchemeSRaR, &lab, &rr, nil).Reward
	}
	for _, a := range patterns {
		for _, b := range patterns {
			failed := []memberVerdicts{{v: verdictsOf(a)}, {v: verdictsOf(b)}, {err: llm.ErrInvalidRequest}}
			saysAgainst := []memberVerdicts{{v: verdictsOf(a)}, {v: verdictsOf(b)}, {v: verdictsOf(againstAll)}}
			if got, want := panelSatisfaction(items, failed), panelSatisfaction(items, saysAgainst); !sameVerdicts(got, want) {
				t.Errorf("%v %v: with a failed judge %v, with it answering against %v", a, b, got, want)
			}
			if f, s := pay(failed), pay(saysAgainst); f > s {
				t.Errorf("%v %v: a failed judge pays %v, one answering against %v", a, b, f, s)
			}
		}
	}
}

// TestPanelFailsOnlyWhenEveryJudgeFails: one answering judge gives a
// verdict (every item it and the failed one split goes against the
// response); with every judge failed the panel fails, naming each judge,
// and its counters say so.
func TestPanelFailsOnlyWhenEveryJudgeFails(t *testing.T) {
	simulator := sim.New(sim.Config{Judges: panelJudges})
	lab := rewardtest.DemoLabel()
	r := reward.Analyze(rewardtest.MarkedResponse, lab.GroundTruth)
	p := panelOf(t, simulator, "broken", "broken")
	_, err := p.Verdicts(context.Background(), lab.Question, lab.Rubric, &r)
	if err == nil || !strings.Contains(err.Error(), "every judge of the panel failed") || !strings.Contains(err.Error(), "broken-a") || !strings.Contains(err.Error(), "broken-b") {
		t.Fatalf("every judge broken: %v", err)
	}
	if st := p.Stats(); st.Calls != 1 || st.Failures != 1 {
		t.Errorf("stats %+v; want one call, failed", st)
	}
	for _, m := range p.Members() {
		if st := m.Stats(); st.Calls != 1 || st.Failures != 1 {
			t.Errorf("member %s: stats %+v; want one call, failed", m.Name(), st)
		}
	}
	one := panelOf(t, simulator, "broken", "truth")
	if _, err := one.Verdicts(context.Background(), lab.Question, lab.Rubric, &r); err != nil {
		t.Errorf("one judge answering: %v", err)
	}
	if _, err := NewPanel([]*Judge{one.Members()[1]}); err == nil {
		t.Error("a panel of one judge was made")
	}
	if _, err := NewPanel([]*Judge{one.Members()[1], one.Members()[1]}); err == nil || !strings.Contains(err.Error(), "named") {
		t.Errorf("two judges of one name: %v", err)
	}
}

// TestPanelGroundedScores: a grounded criterion's panel score is the lower
// median of the judges' scores with a failed judge's as 0: the truth and
// a failed judge give 0 everywhere; two true judges and a contrary one
// give the truth; the order of the judges does not matter.
func TestPanelGroundedScores(t *testing.T) {
	simulator := sim.New(sim.Config{Judges: panelJudges})
	lab := rewardtest.GroundedLabels(t)[0]
	ask := func(models ...string) schema.GroundedScores {
		g, err := panelOf(t, simulator, models...).GroundedScores(context.Background(), &lab, rewardtest.Scored3)
		if err != nil {
			t.Fatalf("%v: %v", models, err)
		}
		return g
	}
	truth := ask("truth", "truth")
	if truth.Total != 5 {
		t.Fatalf("two true judges: total %v, want 5 (%v)", truth.Total, truth.Scores)
	}
	if g := ask("truth", "broken"); g.Total != 0 {
		t.Errorf("the truth and a broken judge: %v, want every criterion 0", g.Scores)
	}
	for _, order := range [][]string{{"truth", "truth", "contrary"}, {"contrary", "truth", "truth"}} {
		if g := ask(order...); g.Total != truth.Total || len(g.Scores) != len(truth.Scores) {
			t.Errorf("%v: %v, want the truth %v", order, g.Scores, truth.Scores)
		}
	}
}

// TestPanelStep: a satisfied verdict carries the step the pipeline's
// panels give it (judgestats.AgreedStep: the earliest step a member that
// found the item named, a named step before the whole solution or none),
// and an unsatisfied one no step, so it never joins a step's
// normalization.
func TestPanelStep(t *testing.T) {
	item := schema.Item{ID: 1, Type: schema.TypeSuggest, Weight: 1, Polarity: 1}
	member := func(satisfied bool, step int32) memberVerdicts {
		return memberVerdicts{v: []schema.Satisfaction{{ID: 1, Satisfied: satisfied, Step: step}}}
	}
	failed := memberVerdicts{err: llm.ErrInvalidRequest}
	cases := []struct {
		name    string
		members []memberVerdicts
		want    schema.Satisfaction
	}{
		{"earliest named step", []memberVerdicts{member(true, 4), member(true, 2), member(false, 1)}, schema.Satisfaction{ID: 1, Satisfied: true, Step: 2}},
		{"a named step before the whole solution", []memberVerdicts{member(true, 0), member(true, 3), failed}, schema.Satisfaction{ID: 1, Satisfied: true, Step: 3}},
		{"a named step before none", []memberVerdicts{member(true, -1), member(true, 2)}, schema.Satisfaction{ID: 1, Satisfied: true, Step: 2}},
		{"the whole solution", []memberVerdicts{member(true, 0), member(true, -1), member(false, 2)}, schema.Satisfaction{ID: 1, Satisfied: true, Step: 0}},
		{"unsatisfied: no step", []memberVerdicts{member(false, 2), member(false, 3), member(true, 1)}, schema.Satisfaction{ID: 1, Satisfied: false, Step: -1}},
		{"a failed member's step is not the panel's", []memberVerdicts{{v: []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 1}}, err: llm.ErrInvalidRequest}, member(true, 5), member(true, 6)}, schema.Satisfaction{ID: 1, Satisfied: true, Step: 5}},
	}
	for _, c := range cases {
		if got := panelSatisfaction([]schema.Item{item}, c.members); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: panel verdict %+v, want %+v", c.name, got, c.want)
		}
	}
}
