package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// The twin rule (docs/rewardd.md): in one /v1/score_group, a response whose
// judgment failed gets, on no term and no step, an advantage above what
// the same text would get judged in that group with the least favourable
// verdicts, nor above the advantage of any judged group-mate whose work it
// could equal (a judged response with the same correctness: the judge's
// verdicts are all that could tell them apart). The tests below send the
// same flawed text once as it is (judged) and once padded past the judge's
// context (the simulated judge answers 400, as vLLM does over
// max_model_len: a failed judgment) in one group, over HTTP, for every
// scheme rewardd serves, on a SRaR and a factual_process rubric and a
// grounded question; every group size from 1 to 8; every verdict pattern
// of the twin, and with it every verdict pattern of a third group-mate;
// group-mates spread over the patterns in the larger groups, some with a
// second failed response. A verdict pattern is, per item, unmet or met at
// a step (steps enter only srar's formulas, so the other schemes see met or
// unmet), or per grounded criterion a score of 0, half or full.

// twinContextTokens is the simulated judge's context in the twin tests: a
// judge prompt of a response fits; a padded one does not.
const twinContextTokens = 1024

// twinPad makes a response too long for the judge (about 850 tokens of
// preamble before the first step, where it changes no step, answer or
// format).
var twinPad = strings.Repeat("Let me think this over once more. ", 100) + "\n"

// twinFamily is a rubric (a label), the schemes it is scored under, and
// the texts of responses to it by verdict pattern and class (correct or
// not): the simulated judge gives each text the pattern's verdicts.
type twinFamily struct {
	name    string
	lab     schema.Label
	schemes []string
	classes int // 2 (correct, wrong) for a math rubric; 1 for a grounded question
	// patterns is the number of verdict patterns of one class under scheme.
	patterns func(scheme string) int
	// text is the response of pattern and class under scheme.
	text func(scheme string, pattern, class int) string
	// verdicts are the verdicts of pattern under scheme (a math rubric;
	// nil for a grounded question).
	verdicts func(scheme string, pattern int) []schema.Satisfaction
}

// twinItems is the math rubric of the twin tests, by style: three items,
// two of which count against the response when met.
func twinItems(style string) []schema.Item {
	if style == schema.StyleFactualProcess {
		return []schema.Item{rewardtest.Item(1, schema.TypeFactual, 2), rewardtest.Item(2, schema.TypeProcess, 1), rewardtest.Item(3, schema.TypePitfall, 1)}
	}
	return []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypePitfall, 1), rewardtest.Item(3, schema.TypePitfall, 1)}
}

// mathChoices is pattern's choice for each of three items: 0 unmet (step
// -1), 1 met at step 1, 2 met at step 2. Under srar a pattern is one of
// the 27; under the other schemes, whose formulas have no steps, one of the
// 8 met-or-unmet patterns (item j met at step 1 + j%2).
func mathChoices(scheme string, pattern int) [3]int {
	if scheme == schema.SchemeSRaR {
		return [3]int{pattern % 3, pattern / 3 % 3, pattern / 9 % 3}
	}
	var c [3]int
	for j := range c {
		if pattern>>j&1 == 1 {
			c[j] = 1 + j%2
		}
	}
	return c
}

func mathFamily(style string, schemes ...string) twinFamily {
	lab := *rewardtest.Label(twinItems(style))
	lab.ID, lab.Style = "twin-"+style, style
	if style == schema.StyleFactualProcess {
		lab.Scheme = schema.SchemeRGR
	}
	return twinFamily{
		name: style, lab: lab, schemes: schemes, classes: 2,
		patterns: func(scheme string) int {
			if scheme == schema.SchemeSRaR {
				return 27
			}
			return 8
		},
		text: func(scheme string, pattern, class int) string {
			var at [3][]int32
			for j, c := range mathChoices(scheme, pattern) {
				at[c] = append(at[c], int32(j+1))
			}
			sum := "5"
			if class == 1 {
				sum = "6"
			}
			return "### Step 1: Add.\n2+3 = " + sum + ". " + sim.SatisfiedMarker(at[1]...) +
				"\n### Step 2: Check.\n" + sum + "-3 = 2. " + sim.SatisfiedMarker(at[2]...) + "\n<answer>" + sum + "</answer>"
		},
		verdicts: func(scheme string, pattern int) []schema.Satisfaction {
			v := make([]schema.Satisfaction, 3)
			for j, c := range mathChoices(scheme, pattern) {
				v[j] = rewardtest.Sat(int32(j+1), c > 0, int32(c))
				if c == 0 {
					v[j].Step = -1
				}
			}
			return v
		},
	}
}

// groundedFamily is the grounded question of rewardtest.GroundedLabels
// (criteria order 4, replay 2, undo 2), each criterion scored 0, half or
// full.
func groundedFamily(t testing.TB) twinFamily {
	lab := rewardtest.GroundedLabels(t)[0]
	return twinFamily{
		name: "grounded question", lab: lab, schemes: []string{schema.SchemeGrounded}, classes: 1,
		patterns: func(string) int { return 27 },
		text: func(_ string, pattern, _ int) string {
			choice := [3]int{pattern % 3, pattern / 3 % 3, pattern / 9 % 3}
			scores := map[string]float64{}
			for k, c := range lab.Grounded.Criteria {
				scores[c.ID] = c.Weight * float64(choice[k]) / 2
			}
			return "Log first, then pages; replay from the checkpoint. " + sim.ScoresMarker(scores, "order", "replay", "undo")
		},
	}
}

// twinMember is one response of a twin group: its pattern and class, and
// whether it is sent padded (its judgment fails).
type twinMember struct {
	pattern, class int
	failed         bool
}

// twinGroups are the groups the twin tests send for a family under
// scheme: the failed twin alone; the twin judged and failed; with a third
// member; and in groups of 4 to 8, group-mates spread over the patterns,
// some groups with a second failed response. The long form (longtest)
// gives each twin every response as a third member (n² groups: 2,916 of
// srar's 3,834; 43 s of CPU in all under the race detector) and three
// spreads of group-mates at each size; the default gives it 2 third
// members, spread so that every response is the third member of 2
// groups, and one larger group whose size (4 to 8) and spread (the third
// of them with a second failed response) go by turns, so that each size
// meets each spread (n is at least 15) and each twin one larger group
// (about a fifth of the responses of the cover before, 15 s of CPU under
// the race detector for TestTwinRuleOverHTTP).
func twinGroups(t testing.TB, f twinFamily, scheme string) [][]twinMember {
	return twinGroupsOf(f, scheme, longtest.Pick(t, false, true))
}

// twinGroupsOf is twinGroups, every group when all is set.
func twinGroupsOf(f twinFamily, scheme string, all bool) [][]twinMember {
	p := f.patterns(scheme)
	n := p * f.classes
	thirds := n
	if !all {
		thirds = min(n, 2)
	}
	member := func(k int, failed bool) twinMember { return twinMember{k % p, k / p % f.classes, failed} }
	var groups [][]twinMember
	for v := range n {
		twin := member(v, false)
		failed := member(v, true)
		groups = append(groups, []twinMember{failed}, []twinMember{twin, failed})
		// v -> 5v is one-to-one mod n (n is 16, 27 or 54), so each u
		// comes thirds times in all.
		for j := range thirds {
			u := j
			if !all {
				u = (5*v + j*n/thirds) % n
			}
			groups = append(groups, []twinMember{twin, failed, member(u, false)})
		}
		for size := 4; size <= 8; size++ {
			for c := range 3 {
				if !all && (size != 4+v%5 || c != v/5%3) {
					continue // the default: one size and spread by turns
				}
				g := []twinMember{twin, failed}
				for k := 2; k < size; k++ {
					g = append(g, member(v*7+k*(11+c*5)+size*3+c, c == 2 && k == size-1))
				}
				groups = append(groups, g)
			}
		}
	}
	return groups
}

// twinHarness is a rewardd over the simulated judge with a context that
// the padded responses overflow, its Config edited by edit (nil: none).
func twinHarness(t testing.TB, labels []schema.Label, edit func(*Config)) *harness {
	return newHarness(t, labels, func(c *Config, sc *sim.Config) {
		sc.ContextTokens = twinContextTokens
		sc.KeepLog = false
		if edit != nil {
			edit(c)
		}
	})
}

// scoreTwinGroup sends one group to /v1/score_group through the handler.
func scoreTwinGroup(t testing.TB, h *harness, f twinFamily, scheme string, g []twinMember) reward.Group {
	t.Helper()
	responses := make([]string, len(g))
	for i, m := range g {
		responses[i] = f.text(scheme, m.pattern, m.class)
		if m.failed {
			responses[i] = twinPad + responses[i]
		}
	}
	body, _ := json.Marshal(map[string]any{"problem_id": f.lab.ID, "scheme": scheme, "responses": responses})
	req := httptest.NewRequest(http.MethodPost, "/v1/score_group", strings.NewReader(string(body)))
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	var out reward.Group
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil || len(out.Results) != len(g) {
		t.Fatalf("%s %v: %d %s", scheme, g, rec.Code, rec.Body)
	}
	for i, m := range g {
		if out.Results[i].JudgeOK == m.failed || out.Results[i].Error != "" {
			t.Fatalf("%s %v: response %d judge_ok %v (%s) error %q; the harness wants it judged=%v", scheme, g, i,
				out.Results[i].JudgeOK, out.Results[i].JudgeError, out.Results[i].Error, !m.failed)
		}
	}
	return out
}

// above names each term and step on which failed response i of g is paid
// more than judged response j.
func above(g reward.Group, i, j int) []string {
	var out []string
	check := func(name string, got, ceiling float64) {
		if got > ceiling && !rewardtest.Near(got, ceiling) {
			out = append(out, fmt.Sprintf("%s %.4g > %.4g", name, got, ceiling))
		}
	}
	a, b := g.Advantages[i], g.Advantages[j]
	check("reward", g.Results[i].Reward, g.Results[j].Reward)
	check("outcome", a.Outcome, b.Outcome)
	check("process", a.Process, b.Process)
	check("total", a.Total, b.Total)
	for k := range min(len(a.Steps), len(b.Steps)) {
		check(fmt.Sprintf("step %d advantage", a.Steps[k].Step), a.Steps[k].Advantage, b.Steps[k].Advantage)
		check(fmt.Sprintf("step %d offset", a.Steps[k].Step), a.Steps[k].Offset, b.Steps[k].Offset)
	}
	return out
}

// leastFavourable is, term by term and step by step, the lowest advantage
// failed response i of group g (sent as out) would get judged with any
// verdict pattern of its class in that group, the others as they were
// judged (or failed): reward's formulas over the verdicts the HTTP answer
// shows, a math rubric's only.
func leastFavourable(f twinFamily, scheme string, g []twinMember, out reward.Group, i int) (reward.Result, reward.Advantage) {
	rs := make([]reward.Rollout, len(g))
	for k, m := range g {
		text := f.text(scheme, m.pattern, m.class)
		if m.failed {
			text = twinPad + text
		}
		rs[k] = reward.Analyze(text, f.lab.GroundTruth)
		if m.failed {
			rs[k].JudgeErr = "failed"
			continue
		}
		for _, it := range out.Results[k].Items {
			rs[k].Verdicts = append(rs[k].Verdicts, schema.Satisfaction{ID: it.ID, Satisfied: it.Satisfied, Step: it.Step})
		}
	}
	var low reward.Group
	for w := range f.patterns(scheme) {
		rs[i].JudgeErr, rs[i].Verdicts = "", f.verdicts(scheme, w)
		got := reward.ScoreGroup(reward.DefaultParams(), scheme, &f.lab, rs)
		if low.Results == nil {
			low = got
			continue
		}
		r, a, b := &low.Results[i], &low.Advantages[i], got.Advantages[i]
		r.Reward = min(r.Reward, got.Results[i].Reward)
		a.Outcome, a.Process, a.Total = min(a.Outcome, b.Outcome), min(a.Process, b.Process), min(a.Total, b.Total)
		for k := range a.Steps {
			a.Steps[k].Offset, a.Steps[k].Advantage = min(a.Steps[k].Offset, b.Steps[k].Offset), min(a.Steps[k].Advantage, b.Steps[k].Advantage)
		}
	}
	return low.Results[i], low.Advantages[i]
}

// TestTwinRuleOverHTTP checks the twin rule over HTTP for every scheme on
// a SRaR-style rubric, rgr and srar on a factual_process rubric, and a
// grounded question: in /v1/score the failed twin is paid no more than the
// judged one, and in every group of twinGroups, each failed response is
// paid, term by term and step by step, no more than each judged response
// of its class (its judged twin among them), and, in the groups of up to
// two and one in seven of three (a math rubric), no more than it would be
// judged with the least favourable verdict pattern.
func TestTwinRuleOverHTTP(t *testing.T) {
	t.Parallel()
	all := []string{schema.SchemeSRaR, schema.SchemeRGR, schema.SchemeRLCER, schema.SchemePAPO, schema.SchemeGrounded}
	families := []twinFamily{mathFamily(schema.StyleSRaR, all...), mathFamily(schema.StyleFactualProcess, schema.SchemeRGR, schema.SchemeSRaR), groundedFamily(t)}
	for _, f := range families {
		for _, scheme := range f.schemes {
			t.Run(f.name+"/"+scheme, func(t *testing.T) {
				t.Parallel()
				checkTwinRule(t, f, scheme, nil, 1)
			})
		}
	}
}

// TestTwinRuleGroupJudged is TestTwinRuleOverHTTP with group judging
// (Config.Group), for each family under its first scheme, on one group (one
// /v1/score pattern) in 13 to stay cheap: a group holding the failed twin
// fails its group request (over the judge's context), and its responses,
// judged alone, keep the twin rule.
func TestTwinRuleGroupJudged(t *testing.T) {
	t.Parallel()
	families := []twinFamily{mathFamily(schema.StyleSRaR, schema.SchemeSRaR), mathFamily(schema.StyleFactualProcess, schema.SchemeRGR), groundedFamily(t)}
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			checkTwinRule(t, f, f.schemes[0], groupOn, 13)
		})
	}
}

// checkTwinRule checks the twin rule of TestTwinRuleOverHTTP for family f
// under scheme, on a rewardd whose Config edit edits (nil: none), on every
// stride-th group and /v1/score pattern.
func checkTwinRule(t *testing.T, f twinFamily, scheme string, edit func(*Config), stride int) {
	h := twinHarness(t, []schema.Label{f.lab}, edit)
	broken := 0
	fail := func(format string, args ...any) {
		if broken++; broken <= 5 {
			t.Errorf(format, args...)
		}
	}
	// A stride samples the whole sweep (every group, one in stride);
	// without one the sweep is twinGroups' (a cover by default).
	groups := twinGroupsOf(f, scheme, true)
	if stride == 1 {
		groups = twinGroups(t, f, scheme)
	}
	for n, g := range groups {
		if n%stride != 0 {
			continue
		}
		out := scoreTwinGroup(t, h, f, scheme, g)
		for i, fm := range g {
			if !fm.failed {
				continue
			}
			for j, jm := range g {
				if jm.failed || fm.class != jm.class {
					continue
				}
				if bad := above(out, i, j); len(bad) > 0 {
					fail("group %v: failed response %d is paid more than judged response %d of its class: %s", g, i, j, strings.Join(bad, ", "))
				}
			}
			if f.verdicts != nil && (len(g) <= 2 || len(g) == 3 && n%7 == 0) {
				r, a := leastFavourable(f, scheme, g, out, i)
				low := reward.Group{Results: []reward.Result{r}, Advantages: []reward.Advantage{a}}
				one := reward.Group{Results: []reward.Result{out.Results[i]}, Advantages: []reward.Advantage{out.Advantages[i]}}
				if bad := above(reward.Group{Results: append(one.Results, low.Results...), Advantages: append(one.Advantages, low.Advantages...)}, 0, 1); len(bad) > 0 {
					fail("group %v: failed response %d is paid more than its least favourable judgment: %s", g, i, strings.Join(bad, ", "))
				}
			}
		}
	}
	// /v1/score: the failed twin's reward is no more than the judged
	// twin's, for every pattern.
	for v := range f.patterns(scheme) * f.classes {
		if v%stride != 0 {
			continue
		}
		m := twinMember{v % f.patterns(scheme), v / f.patterns(scheme), false}
		text := f.text(scheme, m.pattern, m.class)
		var got scoreAnswer
		h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
			{"problem_id": f.lab.ID, "scheme": scheme, "response": text}, {"problem_id": f.lab.ID, "scheme": scheme, "response": twinPad + text}}}), &got)
		judged, failed := got.Results[0], got.Results[1]
		if !judged.JudgeOK || failed.JudgeOK || failed.Reward > judged.Reward && !rewardtest.Near(failed.Reward, judged.Reward) {
			fail("/v1/score %v: the failed twin is paid %v (judge_ok %v), the judged one %v (judge_ok %v)", m, failed.Reward, failed.JudgeOK, judged.Reward, judged.JudgeOK)
		}
	}
	if broken > 5 {
		t.Errorf("... %d such comparisons in all", broken)
	}
}
