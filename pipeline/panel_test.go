package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/schema"
)

// panelOf is a panel of judges named by their models, each priced as the
// fixture's model is.
func panelOf(jb *job.Job, models ...string) []job.PanelJudge {
	var out []job.PanelJudge
	for _, m := range models {
		out = append(out, job.PanelJudge{Endpoint: job.Endpoint{Model: m}})
		jb.Prices[m] = job.Price{Prompt: 1, Completion: 2}
	}
	return out
}

// panelFixture is a fixture of n problems whose simulated endpoint has the
// judges of profiles and the invalid rate invalid.
func panelFixture(t *testing.T, n int, invalid float64, profiles map[string]sim.JudgeProfile) *fixture {
	t.Helper()
	f := newFixture(t, n, sim.Config{Judges: profiles, InvalidRate: invalid})
	f.job.Prices = map[string]job.Price{"simulated": {Prompt: 1, Completion: 2}}
	return f
}

// itemVote is one item of a record with each judge's verdict on it, by
// judge name, and the panel's.
type itemVote struct {
	record  *schema.Record
	item    schema.Item
	judges  map[string]*bool
	panel   bool
	problem string
}

// itemVotes are the itemVotes of every item of recs, records in id order.
func itemVotes(t *testing.T, recs map[string]*schema.Record) []itemVote {
	t.Helper()
	var out []itemVote
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		r := recs[id]
		if r.Panel == nil || len(r.Panel.Validity) != len(r.Rubric) {
			t.Fatalf("record %s: panel %+v for %d items", id, r.Panel, len(r.Rubric))
		}
		for i, it := range r.Rubric {
			iv := r.Panel.Validity[i]
			if iv.ItemID != it.ID || it.Valid == nil {
				t.Fatalf("record %s item %d: panel verdicts of item %d, valid %v", id, it.ID, iv.ItemID, it.Valid)
			}
			v := itemVote{record: r, item: it, judges: map[string]*bool{}, panel: *it.Valid, problem: r.Problem}
			for _, jv := range iv.Verdicts {
				v.judges[jv.Judge] = jv.Valid
			}
			out = append(out, v)
		}
	}
	return out
}

// TestPanelWhoseJudgesAllFailFailsTheProblem: when no judge of the panel
// gives a verdict, the problem fails at the judge stage as it does when a
// single judge fails; the panel does not read it as a unanimous no.
func TestPanelWhoseJudgesAllFailFailsTheProblem(t *testing.T) {
	t.Parallel()
	f := panelFixture(t, 6, 0.1, map[string]sim.JudgeProfile{"j-a": {Fail: 1}, "j-b": {Fail: 1}})
	jb := f.job
	jb.Judge.Panel = panelOf(&jb, "j-a", "j-b")
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	checkAccounted(t, jb.Out, f.rows, rep)
	if rep.Problems.Done != 0 || rep.FailuresByStage[job.StageJudge] != rep.Problems.Failed || rep.Problems.Failed == 0 {
		t.Errorf("done %d, failures by stage %v; want every selected problem failed at the judge stage", rep.Problems.Done, rep.FailuresByStage)
	}
}

// TestPanelTieIsNotDecidedByJudgeOrder: a panel of two judges that often
// disagree, run with the judges in both orders: the panel's verdicts are
// the same item for item, and every tie is invalid.
func TestPanelTieIsNotDecidedByJudgeOrder(t *testing.T) {
	t.Parallel()
	profiles := map[string]sim.JudgeProfile{"j-lenient": {FalseValid: 0.6}, "j-strict": {FalseInvalid: 0.4}}
	f := panelFixture(t, 12, 0.4, profiles)
	verdicts := map[string]bool{}
	ties := 0
	for n, order := range [][]string{{"j-lenient", "j-strict"}, {"j-strict", "j-lenient"}} {
		jb := f.job
		jb.Out = filepath.Join(f.dir, fmt.Sprintf("run-%d", n))
		jb.Judge.Panel = panelOf(&jb, order...)
		runJob(t, jb, Options{HTTPClient: runtest.InProcess})
		recs := runtest.ReadCorpus(t, jb.Out)
		for _, r := range recs {
			if want := "panel: " + strings.Join(order, ", "); r.Provenance.JudgeModel == nil || *r.Provenance.JudgeModel != want {
				t.Fatalf("%s: provenance judge_model %v, want %q", r.ID, r.Provenance.JudgeModel, want)
			}
		}
		for _, v := range itemVotes(t, recs) {
			key := fmt.Sprintf("%s/%d", v.record.ID, v.item.ID)
			if *v.judges["j-lenient"] != *v.judges["j-strict"] {
				if v.panel {
					t.Errorf("%s: a 1-1 tie was decided valid", key)
				}
				ties++
			}
			if n == 0 {
				verdicts[key] = v.panel
			} else if was, ok := verdicts[key]; !ok || was != v.panel {
				t.Errorf("%s: panel verdict %v with the judges swapped, %v before (known %v)", key, v.panel, was, ok)
			}
		}
	}
	if ties == 0 {
		t.Fatal("the two judges never disagreed: the test shows nothing")
	}
}

// TestPanelMajorityBeatsEachJudge: three judges with independent errors
// (false valid 25%, false invalid 15%): against the simulator's truth the
// panel's error rate is below every judge's. Its power is in the items
// judged: every problem is kept (no selection) with two rollouts, so 24
// problems give as many items as 40 with four rollouts and the default
// selection did (~150), in one shard.
func TestPanelMajorityBeatsEachJudge(t *testing.T) {
	t.Parallel()
	p := sim.JudgeProfile{FalseValid: 0.25, FalseInvalid: 0.15}
	f := panelFixture(t, 24, 0.4, map[string]sim.JudgeProfile{"j-1": p, "j-2": p, "j-3": p})
	jb := f.job
	jb.Rollout.N = 2
	jb.Selection = job.Selection{}
	jb.Output.ShardRows = 1000
	jb.Judge.Panel = panelOf(&jb, "j-1", "j-2", "j-3")
	runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	votes := itemVotes(t, runtest.ReadCorpus(t, jb.Out))
	wrong := map[string]int{}
	for _, v := range votes {
		truth := f.srv.TrueValidity(v.problem, v.item.Type, v.item.Text)
		for name, said := range v.judges {
			if *said != truth {
				wrong[name]++
			}
		}
		if v.panel != truth {
			wrong["panel"]++
		}
	}
	rate := func(name string) float64 { return float64(wrong[name]) / float64(len(votes)) }
	t.Logf("%d items; error rates: panel %.3f, j-1 %.3f, j-2 %.3f, j-3 %.3f", len(votes), rate("panel"), rate("j-1"), rate("j-2"), rate("j-3"))
	for _, name := range []string{"j-1", "j-2", "j-3"} {
		if rate(name) < 0.1 {
			t.Fatalf("judge %s errs on %.3f of the items, far below its planted rate: is the truth the simulator's?", name, rate(name))
		}
		if rate("panel") >= rate(name) {
			t.Errorf("the panel errs on %.3f of the items, judge %s on %.3f", rate("panel"), name, rate(name))
		}
	}
}

// TestPanelSatisfactionFailsClosed: with a panel of two satisfaction judges
// of which one never answers, a response never gains from the failure:
// no positive item counts as met and every PITFALL counts as present (the
// failed judge's vote is against the response), and each judge's verdicts
// are kept with the failed one marked.
func TestPanelSatisfactionFailsClosed(t *testing.T) {
	t.Parallel()
	f := panelFixture(t, 8, 0.05, map[string]sim.JudgeProfile{"s-broken": {Fail: 1}})
	jb := f.job
	jb.Empirical.Enabled = true
	jb.Empirical.Panel = panelOf(&jb, "s-good", "s-broken")
	runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	recs := runtest.ReadCorpus(t, jb.Out)
	pitfalls, positives := 0, 0
	for id, r := range recs {
		if r.Panel == nil || len(r.Panel.Satisfaction) != len(r.Rollouts) {
			t.Fatalf("record %s: %d rollouts, panel %+v", id, len(r.Rollouts), r.Panel)
		}
		for i, ro := range r.Rollouts {
			rv := r.Panel.Satisfaction[i]
			if rv.Rollout != ro.Index || len(rv.Judges) != 2 || rv.Judges[0].Failed || !rv.Judges[1].Failed || len(rv.Judges[0].Satisfaction) != len(r.Rubric) {
				t.Fatalf("record %s rollout %d: judges' verdicts %+v", id, ro.Index, rv)
			}
			if len(ro.Satisfaction) != len(r.Rubric) {
				t.Fatalf("record %s rollout %d: %d verdicts for %d items", id, ro.Index, len(ro.Satisfaction), len(r.Rubric))
			}
			for k, it := range r.Rubric {
				s := ro.Satisfaction[k]
				if it.Polarity < 0 {
					pitfalls++
					if !s.Satisfied {
						t.Errorf("record %s rollout %d: PITFALL %d counted absent though a judge failed", id, ro.Index, it.ID)
					}
				} else {
					positives++
					if s.Satisfied {
						t.Errorf("record %s rollout %d: item %d counted met by half the panel", id, ro.Index, it.ID)
					}
				}
			}
		}
	}
	if pitfalls == 0 || positives == 0 {
		t.Fatalf("%d pitfall and %d positive verdicts: the test shows nothing", pitfalls, positives)
	}
}

func TestPanelSatisfactionRule(t *testing.T) {
	t.Parallel()
	items := []schema.Item{{ID: 1, Type: "SUGGEST", Weight: 1, Polarity: 1}, {ID: 2, Type: "PITFALL", Weight: 1, Polarity: -1}}
	sat := func(s1 bool, st1 int32, s2 bool, st2 int32) []schema.Satisfaction {
		return []schema.Satisfaction{{ID: 1, Satisfied: s1, Step: st1}, {ID: 2, Satisfied: s2, Step: st2}}
	}
	for _, tc := range []struct {
		name    string
		byJudge [][]schema.Satisfaction
		want    []schema.Satisfaction
	}{
		{"unanimous", [][]schema.Satisfaction{sat(true, 3, false, -1), sat(true, 2, false, 0)}, sat(true, 2, false, 0)},
		{"tie: item unmet, pitfall present", [][]schema.Satisfaction{sat(true, 3, true, 4), sat(false, -1, false, -1)}, sat(false, -1, true, 4)},
		{"failed judge of three", [][]schema.Satisfaction{sat(true, 1, false, -1), nil, sat(true, 0, false, -1)}, sat(true, 1, false, -1)},
		{"failed judge breaks a pair", [][]schema.Satisfaction{sat(true, 2, false, -1), nil}, sat(false, -1, true, -1)},
		{"majority of three", [][]schema.Satisfaction{sat(false, -1, true, 5), sat(true, 4, false, -1), sat(true, 0, true, 2)}, sat(true, 4, true, 2)},
	} {
		got := panelSatisfaction(items, tc.byJudge)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		rev := slices.Clone(tc.byJudge)
		slices.Reverse(rev)
		if back := panelSatisfaction(items, rev); !slices.Equal(back, got) {
			t.Errorf("%s: %+v with the judges reversed, %+v before", tc.name, back, got)
		}
	}
}

// TestShuffledOrderFlattensPositionBias: a judge that calls invalid items
// shown first valid far more often (FirstBias) has a validity rate by
// rubric position that falls from first to last in rubric order, and is
// flat when each record shows the items in its own shuffled order.
//
// Its power is in the invalid items judged (~300 per run; a gap's standard
// error is ~0.056, so the expected rubric-order gap of ~0.47 is ~4 errors
// above its bar of 0.25, and the flat order's bar of 0.15 is ~2.7 errors
// from 0): every problem is kept (no selection) with two rollouts, so 90
// problems give more judged items than 150 with four rollouts and the
// default selection did, and one shard a run holds them (the shards are
// not what this test is about).
func TestShuffledOrderFlattensPositionBias(t *testing.T) {
	t.Parallel()
	f := panelFixture(t, 90, 0.5, map[string]sim.JudgeProfile{"biased": {FirstBias: 0.8}})
	gap := map[string]float64{}
	for _, order := range []string{job.OrderRubric, job.OrderShuffled} {
		jb := f.job
		jb.Rollout.N = 2
		jb.Selection = job.Selection{}
		jb.Output.ShardRows = 1000
		jb.Out = filepath.Join(f.dir, "run-"+order)
		jb.Judge.Model = "biased"
		jb.Prices["biased"] = job.Price{Prompt: 1, Completion: 2}
		jb.Judge.Order = order
		runJob(t, jb, Options{HTTPClient: runtest.InProcess})
		var called, invalid [2]float64 // first half of the rubric, second half
		for _, r := range runtest.ReadCorpus(t, jb.Out) {
			if (r.Panel != nil) != (order == job.OrderShuffled) {
				t.Fatalf("record %s in %s order: panel %+v", r.ID, order, r.Panel)
			}
			for i, it := range r.Rubric {
				if f.srv.TrueValidity(r.Problem, it.Type, it.Text) {
					continue
				}
				half := 0
				if 2*i >= len(r.Rubric) {
					half = 1
				}
				invalid[half]++
				if *it.Valid {
					called[half]++
				}
			}
		}
		first, second := called[0]/invalid[0], called[1]/invalid[1]
		gap[order] = first - second
		t.Logf("%s order: invalid items called valid: %.2f of %v in the rubric's first half, %.2f of %v in its second", order, first, invalid[0], second, invalid[1])
	}
	if gap[job.OrderRubric] < 0.25 {
		t.Errorf("rubric order: the bias shows a gap of only %.2f between the halves; the test shows nothing", gap[job.OrderRubric])
	}
	if math.Abs(gap[job.OrderShuffled]) > 0.15 {
		t.Errorf("shuffled order: a gap of %.2f between the halves of the rubric; want it flat", gap[job.OrderShuffled])
	}
}

// TestRubricOrderWithoutPanelAddsNothing: a job in rubric order without a
// panel writes records without a panel; in shuffled order (the default) a
// record names its judges and the order seed.
func TestRubricOrderWithoutPanelAddsNothing(t *testing.T) {
	t.Parallel()
	f := panelFixture(t, 4, 0.1, nil)
	for _, order := range []string{job.OrderRubric, ""} {
		jb := f.job
		jb.Out = filepath.Join(f.dir, "run-"+order)
		jb.Empirical.Enabled = true
		jb.Judge.Order, jb.Judge.OrderSeed = order, 7
		runJob(t, jb, Options{HTTPClient: runtest.InProcess})
		for id, r := range runtest.ReadCorpus(t, jb.Out) {
			switch {
			case order == job.OrderRubric && r.Panel != nil:
				t.Errorf("record %s in rubric order has a panel %+v", id, r.Panel)
			case order == "" && (r.Panel == nil || r.Panel.OrderSeed == nil || *r.Panel.OrderSeed != 7 || len(r.Panel.Judges) != 2 || len(r.Panel.Validity) != 0 || len(r.Panel.Satisfaction) != 0):
				t.Errorf("record %s in shuffled order: panel %+v", id, r.Panel)
			}
		}
	}
}

// TestGroundedPanels: a grounded job with a panel in both stages: every
// criterion carries the panel's validity verdict from each judge's, and
// every answer's scores are the lower median of the judges' (a failed
// judge's score counted as 0), each judge's kept per answer.
func TestGroundedPanels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, docs, 2)
	_, url := runtest.StartSim(t, sim.Config{Judges: map[string]sim.JudgeProfile{"g-broken": {Fail: 0.5}, "g-lenient": {FalseValid: 0.5, Flip: 0.3}}})
	jb := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	jb.Prices = nil
	jb.Empirical.Enabled, jb.Empirical.OpenBook = true, true
	jb.Judge.Panel = []job.PanelJudge{{Endpoint: job.Endpoint{Model: "g-good"}}, {Endpoint: job.Endpoint{Model: "g-lenient"}}, {Endpoint: job.Endpoint{Model: "g-broken"}}}
	jb.Empirical.Panel = slices.Clone(jb.Judge.Panel)
	if _, err := Run(ctx, jb, Options{HTTPClient: runtest.InProcess}); err != nil {
		t.Fatal(err)
	}
	recs := runtest.ReadCorpus(t, jb.Out)
	scored, failed := 0, 0
	for id, r := range recs {
		g := r.Grounded
		criteria := 0
		answers := 0
		for _, q := range g.Questions {
			criteria += len(q.Criteria)
			answers += len(q.Answers) + len(q.OpenBookAnswers)
		}
		if r.Panel == nil || len(r.Panel.Criteria) != criteria || len(r.Panel.Scores) != answers {
			t.Fatalf("record %s: %d criteria, %d answers, panel %+v", id, criteria, answers, r.Panel)
		}
		n := 0
		for _, q := range g.Questions {
			for _, c := range q.Criteria {
				cv := r.Panel.Criteria[n]
				n++
				yes := 0
				for _, v := range cv.Verdicts {
					if v.Valid != nil && *v.Valid {
						yes++
					}
				}
				if cv.Question != q.Index || cv.CriterionID != c.ID || *c.Valid != (2*yes > 3) {
					t.Errorf("record %s criterion %s: valid %v from %+v", id, c.ID, *c.Valid, cv)
				}
			}
		}
		for _, as := range r.Panel.Scores {
			q := g.Questions[slices.IndexFunc(g.Questions, func(q schema.GroundedQuestion) bool { return q.Index == as.Question })]
			list := q.Answers
			if as.OpenBook {
				list = q.OpenBookAnswers
			}
			got := list[as.Answer].Scores
			for i := range q.Criteria {
				var vals []float64
				for _, js := range as.Judges {
					if js.Failed {
						failed++
						vals = append(vals, 0)
					} else {
						vals = append(vals, js.Scores[i])
					}
				}
				slices.Sort(vals)
				if want := vals[(len(vals)-1)/2]; len(got) != len(q.Criteria) || got[i] != want {
					t.Errorf("record %s question %d answer %d (open %v): score %v of criterion %d, judges %+v", id, q.Index, as.Answer, as.OpenBook, got, i, as.Judges)
				}
				scored++
			}
		}
	}
	if scored == 0 || failed == 0 {
		t.Fatalf("%d scores checked, %d failed judges among them: the test shows nothing", scored, failed)
	}
}

// TestResumeNamesTheJudgeSettingThatChanged: a run directory made before
// judge orders existed (its job.yaml has no judge.order) resumes in rubric
// order without sending anything, and the default shuffled order is
// refused with the setting named; a panel judge's own edited template is
// named as the change too.
func TestResumeNamesTheJudgeSettingThatChanged(t *testing.T) {
	t.Parallel()
	f := panelFixture(t, 6, 0.1, nil)
	older := f.job
	older.Judge.Order = job.OrderRubric
	runJob(t, older, Options{HTTPClient: runtest.InProcess})
	jobYAML := filepath.Join(older.Out, "job.yaml")
	b, err := os.ReadFile(jobYAML)
	if err != nil {
		t.Fatal(err)
	}
	stripped := strings.Replace(string(b), "    order: rubric\n", "", 1)
	if stripped == string(b) {
		t.Fatalf("job.yaml does not say the order as this test expects:\n%s", b)
	}
	os.WriteFile(jobYAML, []byte(stripped), 0o644)
	sent := f.srv.Count()
	runJob(t, older, Options{HTTPClient: runtest.InProcess})
	if n := f.srv.Count() - sent; n != 0 {
		t.Errorf("resuming in rubric order sent %d requests", n)
	}
	_, err = Run(context.Background(), f.job, Options{HTTPClient: runtest.InProcess})
	if !errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), "judge.order: rubric → shuffled") {
		t.Errorf("resuming in the default order: %v, want a refusal naming judge.order", err)
	}

	own := filepath.Join(f.dir, "own-prompts")
	os.Mkdir(own, 0o755)
	tmpl, err := os.ReadFile("../prompts/templates/judge_batch.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(own, "judge_batch.tmpl"), tmpl, 0o644)
	withPanel := f.job
	withPanel.Out = filepath.Join(f.dir, "run-panel")
	withPanel.Judge.Panel = panelOf(&withPanel, "j-a", "j-b")
	withPanel.Judge.Panel[1].PromptsDir = own
	runJob(t, withPanel, Options{HTTPClient: runtest.InProcess})
	os.WriteFile(filepath.Join(own, "judge_batch.tmpl"), []byte(strings.Replace(string(tmpl), "Decide, for each rubric item below,", "For each rubric item below, decide", 1)), 0o644)
	_, err = Run(context.Background(), withPanel, Options{HTTPClient: runtest.InProcess})
	if !errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), "template.judge.panel[j-b].judge_batch: ") {
		t.Errorf("resuming after one judge's template changed: %v, want a refusal naming it", err)
	}
}

// TestPanelRunKilledAndResumedPaysNothingTwice: a run with a panel in both
// stages, one of whose judges often gives no usable verdict, killed with
// SIGKILL three times and resumed, sends again no more than the requests
// in flight at each kill (a failed judge's exchange is replayed, not asked
// again), accounts for every problem, and spends what an uninterrupted
// run spends.
func TestPanelRunKilledAndResumedPaysNothingTwice(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0xba5e1))
	flaky := sim.Config{Judges: map[string]sim.JudgeProfile{"j-b": {Fail: 0.3}, "s-b": {Fail: 0.3}}}
	srv, jb, jobFile, rows := killableJobWith(t, 4, flaky, func(j *job.Job) {
		j.Empirical.Enabled = true
		j.Judge.Panel = panelOf(j, "j-a", "j-b", "j-c")
		j.Empirical.Panel = panelOf(j, "s-a", "s-b")
	})
	plan := killPlan{
		killAfter: func(int) int { return 50 + rng.IntN(100) }, // each killed session settles some judges' votes
		check:     func(rep *Report) { checkAccounted(t, jb.Out, rows, rep) },
		spend:     true,
	}
	if killAndResume(t, srv, jb, jobFile, "panel run", plan) == 0 {
		t.Fatal("the run was never killed; it finished before its kill points")
	}
	for id, r := range runtest.ReadCorpus(t, jb.Out) {
		if r.Panel == nil || len(r.Panel.Judges) != 5 || len(r.Panel.Validity) != len(r.Rubric) || len(r.Panel.Satisfaction) != len(r.Rollouts) {
			t.Fatalf("record %s: panel %+v", id, r.Panel)
		}
	}
}

// TestBatchPanelRunEqualsOnline: a job with panels in both stages run
// through the provider's Batch API makes the records the online run makes,
// every judge's verdicts included, without asking any request twice.
func TestBatchPanelRunEqualsOnline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(12)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	cfg := sim.Config{Seed: 3, Answers: runtest.AnswersOf(rows), Judges: map[string]sim.JudgeProfile{"j-b": {FalseValid: 0.3, Fail: 0.2}}}
	mk := func(out, url string) job.Job {
		j := runtest.BatchJob(input, filepath.Join(dir, out), url)
		j.Empirical.Enabled = true
		j.Judge.Panel = panelOf(&j, "j-a", "j-b", "j-c")
		j.Empirical.Panel = panelOf(&j, "j-a", "j-b")
		return j
	}
	_, bRep := compareOnlineBatch(t, cfg, mk, 19)
	checkAccounted(t, filepath.Join(dir, "batch"), rows, bRep)
	for id, r := range runtest.ReadCorpus(t, filepath.Join(dir, "batch")) {
		if r.Panel == nil || len(r.Panel.Validity) != len(r.Rubric) || len(r.Panel.Satisfaction) != len(r.Rollouts) {
			t.Fatalf("record %s: panel %+v", id, r.Panel)
		}
	}
}

// TestPanelDropInvalid: drop_invalid drops what the panel found invalid,
// and the panel's verdicts follow the kept items to their new ids.
func TestPanelDropInvalid(t *testing.T) {
	t.Parallel()
	f := panelFixture(t, 12, 0.2, map[string]sim.JudgeProfile{"j-harsh": {FalseInvalid: 0.3}})
	jb := f.job
	jb.Judge.DropInvalid = true
	jb.Judge.Panel = panelOf(&jb, "j-fair", "j-harsh", "j-fair2")
	runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	recs := runtest.ReadCorpus(t, jb.Out)
	kept, dissent := 0, 0
	for _, v := range itemVotes(t, recs) {
		kept++
		if !v.panel {
			t.Errorf("record %s item %d: kept though the panel found it invalid", v.record.ID, v.item.ID)
		}
		if truth := f.srv.TrueValidity(v.problem, v.item.Type, v.item.Text); !truth || !*v.judges["j-fair"] {
			t.Errorf("record %s item %d: the verdicts %v are not the item's (true validity %v)", v.record.ID, v.item.ID, v.judges, truth)
		}
		if !*v.judges["j-harsh"] {
			dissent++
		}
	}
	if kept == 0 || dissent == 0 {
		t.Fatalf("%d items kept, %d of them over the harsh judge's no: the test shows nothing", kept, dissent)
	}
}

// TestShuffledOrderKeepsEveryVerdict: the judges' replies are mapped back
// to the items they judge, whatever order the items were shown in: with
// judges whose verdicts do not depend on position, a job in shuffled order
// stores the same verdict on every item (math validity; grounded validity
// and every answer's scores) as the job in rubric order.
func TestShuffledOrderKeepsEveryVerdict(t *testing.T) {
	t.Parallel()
	t.Run("srar", func(t *testing.T) {
		f := panelFixture(t, 8, 0.4, nil)
		valid := map[string][]bool{}
		for _, order := range []string{job.OrderRubric, job.OrderShuffled} {
			jb := f.job
			jb.Out = filepath.Join(f.dir, "run-"+order)
			jb.Judge.Order = order
			runJob(t, jb, Options{HTTPClient: runtest.InProcess})
			for id, r := range runtest.ReadCorpus(t, jb.Out) {
				var got []bool
				for _, it := range r.Rubric {
					got = append(got, *it.Valid)
				}
				if was, ok := valid[id]; ok && !slices.Equal(was, got) {
					t.Errorf("record %s: verdicts %v in shuffled order, %v in rubric order", id, got, was)
				}
				valid[id] = got
			}
		}
	})
	t.Run("grounded", func(t *testing.T) {
		dir := t.TempDir()
		docs := filepath.Join(dir, "docs")
		runtest.WriteDocs(t, docs, 2)
		_, url := runtest.StartSim(t, sim.Config{InvalidRate: 0.4})
		seen := map[string]string{}
		for _, order := range []string{job.OrderRubric, job.OrderShuffled} {
			jb := runtest.GroundedTestJob(docs, filepath.Join(dir, "run-"+order), url)
			jb.Judge.Order = order
			runJob(t, jb, Options{HTTPClient: runtest.InProcess})
			recs := runtest.ReadCorpus(t, jb.Out)
			for id, r := range recs {
				var b strings.Builder
				for _, q := range r.Grounded.Questions {
					for _, c := range q.Criteria {
						fmt.Fprintf(&b, "%s=%v ", c.ID, *c.Valid)
					}
					for _, a := range q.Answers {
						fmt.Fprintf(&b, "%v ", a.Scores)
					}
				}
				if was, ok := seen[id]; ok && was != b.String() {
					t.Errorf("record %s: shuffled order stores\n%s\nrubric order\n%s", id, b.String(), was)
				}
				seen[id] = b.String()
			}
			if len(recs) == 0 {
				t.Fatal("no records")
			}
		}
	})
}
