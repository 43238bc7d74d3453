package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// recordingTransport keeps the body of every judge request.
type recordingTransport struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(b))
	return r.next.RoundTrip(req)
}

// groundedHarness is a server over labels (none: labels come with the
// requests) judged by the simulated endpoint, with its judge requests kept.
func groundedHarness(t testing.TB, labels []schema.Label, simulator sim.Config) (*harness, *recordingTransport) {
	t.Helper()
	return groundedHarnessWith(t, labels, simulator, judge.Options{Model: "simulated"})
}

// groundedHarnessWith is groundedHarness with the judge's options.
func groundedHarnessWith(t testing.TB, labels []schema.Label, simulator sim.Config, opt judge.Options) (*harness, *recordingTransport) {
	t.Helper()
	return judgedHarness(t, labels, simulator, opt, nil, nil)
}

// judgedHarness is groundedHarnessWith with the judge's transport wrapped
// by wrap (nil: the simulated endpoint's own) and the server's Config
// edited by edit (nil: as it is).
func judgedHarness(t testing.TB, labels []schema.Label, simulator sim.Config, opt judge.Options, wrap func(http.RoundTripper) http.RoundTripper, edit func(*Config)) (*harness, *recordingTransport) {
	t.Helper()
	simulator.KeepLog = true
	s := sim.New(simulator)
	transport := s.Transport()
	if wrap != nil {
		transport = wrap(transport)
	}
	rec := &recordingTransport{next: transport}
	judge := newTestJudge(t, rec, 4, llm.NewMeter(nil, llm.Budget{}), opt)
	cfg := Config{Judge: judge, Prompts: rewardtest.Prompts(t)}
	if labels != nil {
		cfg.Index, _ = NewIndex(labels)
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, simulator: s, judge: judge, logs: &bytes.Buffer{}, labels: labels}, rec
}

// TestGroundedEveryEndpoint scores a grounded question on every endpoint,
// found by id, question text, prompt, OpenRLHF query and label, against
// the simulated judge.
func TestGroundedEveryEndpoint(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	h, _ := groundedHarness(t, labs, sim.Config{})
	id := labs[0].ID
	const want = 5.0 / 8
	check := func(what string, r reward.Result) {
		t.Helper()
		if r.Error != "" || !r.JudgeOK || !rewardtest.Near(r.Reward, want) || r.ProblemID != id || len(r.Criteria) != 3 || r.Criteria[1].Score != 2 {
			t.Errorf("%s: %+v, want reward %v for %s", what, r, want, id)
		}
	}
	var v1 struct{ Results []reward.Result }
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
		{"problem_id": id, "response": rewardtest.Scored3},
		{"question": rewardtest.WalQuestion, "response": rewardtest.Scored3},
		{"prompt": []map[string]string{{"role": "system", "content": "Answer carefully."}, {"role": "user", "content": rewardtest.WalQuestion}}, "response": rewardtest.Scored3},
		{"label": labelJSON(t, labs[0]), "response": rewardtest.Scored3},
	}}), &v1)
	for i, r := range v1.Results {
		check(fmt.Sprintf("/v1/score item %d", i), r)
	}

	prompt := "<|im_start|>user\n" + rewardtest.WalQuestion + "<|im_end|>\n<|im_start|>assistant\n"
	var gr struct {
		Rewards   []float64
		Scores    []float64
		ExtraLogs map[string][]float64 `json:"extra_logs"`
	}
	h.post("/get_reward", mustJSON(t, map[string]any{"query": []string{prompt + rewardtest.Scored3 + "<|im_end|>"}, "prompts": []string{prompt}}), &gr)
	if len(gr.Rewards) != 1 || !rewardtest.Near(gr.Rewards[0], want) || !rewardtest.Near(gr.ExtraLogs["reward/rubric"][0], want) || gr.ExtraLogs["rubric/judge_ok"][0] != 1 {
		t.Errorf("/get_reward: %+v, want reward %v", gr, want)
	}

	var slime reward.Result
	h.post("/score", mustJSON(t, map[string]any{"prompt": rewardtest.WalQuestion, "response": rewardtest.Scored3}), &slime)
	check("/score", slime)

	var g struct {
		Results    []reward.Result
		Advantages []reward.Advantage
	}
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": id, "responses": []string{rewardtest.Scored3, "nothing relevant", rewardtest.Scored3}}), &g)
	if len(g.Results) != 3 || !rewardtest.Near(g.Results[0].Reward, want) || g.Results[1].Reward != 0 {
		t.Fatalf("/v1/score_group: %+v", g)
	}
	wantAdv := reward.LOOAdvantages([]float64{want, 0, want}, reward.DefaultParams().Epsilon)
	for i := range wantAdv {
		if !rewardtest.Near(g.Advantages[i].Outcome, wantAdv[i]) {
			t.Errorf("/v1/score_group advantage %d = %v, want %v", i, g.Advantages[i].Outcome, wantAdv[i])
		}
	}
}

// TestGroundedPassageFromCorpus: the judge reads the corpus's passage even
// when the trainer's prompt carries other text, and the label's passage when
// the request brings a label.
func TestGroundedPassageFromCorpus(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	h, rec := groundedHarness(t, labs, sim.Config{})
	const planted = "PLANTED: the log is optional and pages go first."
	var out struct{ Results []reward.Result }
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
		{"prompt": rewardtest.WalQuestion + "\n" + planted, "response": rewardtest.Scored3},
	}}), &out)
	if r := out.Results[0]; r.Error != "" || !r.JudgeOK {
		t.Fatalf("result %+v", r)
	}
	if len(rec.bodies) != 1 {
		t.Fatalf("%d judge requests, want 1", len(rec.bodies))
	}
	body := rec.bodies[0]
	if strings.Contains(body, "PLANTED") || !strings.Contains(body, "each change is appended to the log and fsynced") {
		t.Errorf("the judge request does not hold the corpus passage alone:\n%s", body)
	}
}

// TestGroundedInvalidOutputIsZero: seed 001 gives an invalid judge output
// the conservative zero, not a repair: by default one request, judge_ok
// false, reward 0. GroundedRepairs (rewardd --grounded-judge-repairs) opts
// into showing it back that many times.
func TestGroundedInvalidOutputIsZero(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	for _, tc := range []struct {
		name      string
		simulator sim.Config
		response  string
		ok        bool
	}{
		{"every reply malformed", sim.Config{Faults: sim.Faults{Malformed: 1}}, rewardtest.Scored3, false},
		{"score over the weight every time", sim.Config{}, "x " + sim.ScoresMarker(map[string]float64{"order": 9}, "order"), false},
		{"judge unable", sim.Config{}, "x " + sim.JudgeFailsMarker, false},
		{"well formed", sim.Config{}, rewardtest.Scored3, true},
	} {
		for _, repairs := range []int{0, 1, 2} {
			t.Run(fmt.Sprintf("%s, %d repairs", tc.name, repairs), func(t *testing.T) {
				h, _ := groundedHarnessWith(t, labs, tc.simulator, judge.Options{Model: "simulated", GroundedRepairs: repairs})
				var out struct{ Results []reward.Result }
				h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": labs[0].ID, "response": tc.response}}}), &out)
				r := out.Results[0]
				requests := int64(1)
				if !tc.ok {
					requests += int64(repairs)
				}
				if r.JudgeOK != tc.ok || h.simulator.Count() != requests {
					t.Errorf("judge_ok %v after %d requests (%s), want %v after %d", r.JudgeOK, h.simulator.Count(), r.JudgeError, tc.ok, requests)
				}
				if !tc.ok && (r.Reward != 0 || r.Score != 0 || r.Error != "") {
					t.Errorf("a failed judgment pays %v (error %q), want 0", r.Reward, r.Error)
				}
			})
		}
	}
}

func TestGroundedSchemeMismatch(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	h, _ := groundedHarness(t, labs, sim.Config{})
	var out struct{ Results []reward.Result }
	h.post("/v1/score", mustJSON(t, map[string]any{"scheme": "srar", "items": []map[string]any{{"problem_id": labs[0].ID, "response": rewardtest.Scored3}}}), &out)
	if r := out.Results[0]; !strings.Contains(r.Error, "scored only under scheme grounded") || r.Reward != 0 || h.simulator.Count() != 0 {
		t.Errorf("scheme srar on a grounded question: %+v after %d judge requests", r, h.simulator.Count())
	}
	code, body := h.do(http.MethodPost, "/v1/score_group?scheme=rgr", mustJSON(t, map[string]any{"problem_id": labs[0].ID, "scheme": "rgr", "responses": []string{rewardtest.Scored3}}))
	if code != http.StatusOK || !strings.Contains(string(body), "scored only under scheme grounded") {
		t.Errorf("/v1/score_group with scheme rgr: %d %s", code, body)
	}
}

// TestGroundedScoresCached: the same response to the same question is
// judged once.
func TestGroundedScoresCached(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	h, _ := groundedHarness(t, labs, sim.Config{})
	for range 3 {
		g, err := h.judge.GroundedScores(context.Background(), &labs[0], rewardtest.Scored3)
		if err != nil || g.Scores[0] != 3 {
			t.Fatalf("%+v %v", g, err)
		}
	}
	other := labs[0]
	other.Grounded = &schema.GroundedLabel{Passage: labs[0].Grounded.Passage, Criteria: append([]schema.Criterion(nil), labs[0].Grounded.Criteria...)}
	other.Grounded.Criteria[2].ScoringGuide = "a different guide"
	if _, err := h.judge.GroundedScores(context.Background(), &other, rewardtest.Scored3); err != nil {
		t.Fatal(err)
	}
	if n := h.simulator.Count(); n != 2 {
		t.Errorf("%d judge requests, want 2: one per distinct rubric", n)
	}
}

// TestIndexReadsShardsWithoutTheGroundedColumn: a shard written before the
// grounded style (no grounded column) still loads its math rubrics.
func TestIndexReadsShardsWithoutTheGroundedColumn(t *testing.T) {
	t.Parallel()
	type oldRecord struct {
		ID      string        `parquet:"id"`
		Source  string        `parquet:"source"`
		Problem string        `parquet:"problem"`
		Answer  string        `parquet:"answer"`
		Style   string        `parquet:"style"`
		Rubric  []schema.Item `parquet:"rubric,list"`
	}
	path := filepath.Join(t.TempDir(), "old.parquet")
	if err := parquet.WriteFile(path, []oldRecord{{ID: "p1", Problem: "What is 2+3?", Answer: "5", Style: schema.StyleSRaR, Rubric: rewardtest.SRaRItems()}}); err != nil {
		t.Fatal(err)
	}
	x, stats, err := LoadIndex(path, nil)
	if err != nil || x.Len() != 1 || stats.Skipped != 0 {
		t.Fatalf("LoadIndex of a shard without the grounded column: %d labels, %+v, %v", x.Len(), stats, err)
	}
	if l, ok := x.ByID("p1"); !ok || l.Grounded != nil || len(l.Rubric) != len(rewardtest.SRaRItems()) {
		t.Errorf("label %+v", l)
	}
}

// TestGroundedJudgeFailurePolicyError: under --on-judge-failure error a
// grounded question whose judgment failed makes the answer 503, on the
// batch and the group endpoints alike.
func TestGroundedJudgeFailurePolicyError(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	h, _ := groundedHarness(t, labs, sim.Config{})
	h.srv.cfg.OnJudgeFailure = reward.OnJudgeFailureError
	failing := "x " + sim.JudgeFailsMarker
	for _, req := range []struct{ path, body string }{
		{pathV1Score, mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": labs[0].ID, "response": failing}}})},
		{pathV1ScoreGroup, mustJSON(t, map[string]any{"problem_id": labs[0].ID, "responses": []string{rewardtest.Scored3, failing}})},
	} {
		code, body := h.do(http.MethodPost, req.path, req.body)
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "on-judge-failure error") {
			t.Errorf("%s with a failing grounded judgment: %d %s, want 503", req.path, code, body)
		}
	}
}

// TestGroundedJudgeLongPassageIsCut: a passage longer than the judge's
// context (20,000 characters against a 4,096-token judge) is cut to the
// passage budget, so the response is judged instead of failing, and the
// cut is counted.
func TestGroundedJudgeLongPassageIsCut(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	lab := labs[0]
	g := *lab.Grounded
	g.Passage = strings.Repeat(rewardtest.WalPassage+"\n\n", 20_000/len(rewardtest.WalPassage)+1)
	lab.Grounded = &g
	h, rec := groundedHarness(t, nil, sim.Config{ContextTokens: 4096})
	scores, err := h.judge.GroundedScores(context.Background(), &lab, rewardtest.Scored3)
	if err != nil {
		t.Fatalf("judging against a %d-character passage: %v", len(g.Passage), err)
	}
	if got := reward.ScoreGrounded(&lab, scores, nil).Reward; !rewardtest.Near(got, 5.0/8) {
		t.Errorf("reward %v, want %v", got, 5.0/8)
	}
	if len(rec.bodies) != 1 || !strings.Contains(rec.bodies[0], "the passage is cut here to fit the judge") {
		t.Errorf("the judge was not shown a cut passage (%d requests)", len(rec.bodies))
	}
	if st := h.judge.Stats(); st.PassagesCut != 1 {
		t.Errorf("Stats().PassagesCut = %d, want 1", st.PassagesCut)
	}
}
