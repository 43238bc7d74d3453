package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/cmd/rewardd/internal/server"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/verify"
)

const e2eProblems = 10

// demoProblems writes the first problems of examples/problems.jsonl to a
// file in dir and returns it with their answers.
func demoProblems(t *testing.T, dir string) (string, map[string]string) {
	t.Helper()
	answers := map[string]string{}
	input := filepath.Join(dir, "problems.jsonl")
	src, err := os.Open(filepath.Join("..", "..", "..", "..", "examples", "problems.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var in bytes.Buffer
	sc := bufio.NewScanner(src)
	for n := 0; n < e2eProblems && sc.Scan(); n++ {
		var p struct{ Problem, Answer string }
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		answers[strings.TrimSpace(p.Problem)] = p.Answer
		in.Write(sc.Bytes())
		in.WriteByte('\n')
	}
	if err := os.WriteFile(input, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return input, answers
}

// demoCorpus builds a small corpus the way `make demo` does: distill run
// over input against the simulated endpoint (in process), with empirical
// validity on.
func demoCorpus(t *testing.T, simulator *sim.Server, dir, input string) string {
	t.Helper()
	job := job.DefaultJob()
	job.Input.Paths = []string{input}
	job.Out = filepath.Join(dir, "run")
	job.Rollout.BaseURL, job.Rollout.Model, job.Rollout.N = "http://simulated.invalid/v1", "simulated", 6
	job.Empirical.Enabled = true
	job.Limits.Concurrency, job.Limits.AttemptTimeout = 32, 5*time.Second
	if _, err := pipeline.Run(context.Background(), job, pipeline.Options{HTTPClient: &http.Client{Transport: simulator.Transport()}}); err != nil {
		t.Fatalf("building the demo corpus: %v", err)
	}
	return job.Out
}

// TestEndToEnd builds the demo corpus, serves it with rewardd's handler
// judged by the simulated endpoint, scores one problem's group of rollouts
// through every endpoint and checks the values against the formulas.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input, answers := demoProblems(t, dir)
	simulator := sim.New(sim.Config{Answers: answers})
	run := demoCorpus(t, simulator, dir, input)

	var recs []schema.Record
	if err := corpus.ReadAll(run, func(r *schema.Record) error { recs = append(recs, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	index, stats, err := server.LoadIndex(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Loaded != len(recs) || len(recs) == 0 || stats.Skipped != 0 {
		t.Fatalf("loaded %+v from a corpus of %d records", stats, len(recs))
	}
	rec := pick(t, recs)
	lab, _ := index.ByID(rec.ID)
	if want := schema.LabelOf(&rec); mustJSON(t, *lab) != mustJSON(t, want) {
		t.Fatalf("the index's label differs from schema.LabelOf:\n%s\n%s", mustJSON(t, *lab), mustJSON(t, want))
	}

	client, err := llm.NewClient(llm.Endpoint{BaseURL: "http://simulated.invalid/v1"}, llm.Options{HTTPClient: &http.Client{Transport: simulator.Transport()}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	j, err := judge.New(client, ps, judge.Options{Model: "simulated"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Index: index, Judge: j})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	// The group: the corpus's own rollouts of the problem, and two written
	// here whose verdicts the simulated judge takes from their markers.
	var responses []string
	for _, ro := range rec.Rollouts {
		responses = append(responses, ro.Text)
	}
	marked := "### Step 1: Set up.\nWe start. " + sim.SatisfiedMarker(1) + "\n### Step 2: Finish.\nDone. " + sim.SatisfiedMarker(2) + "\n<answer>" + rec.Answer + "</answer>"
	wrong := "### Step 1: Guess.\n" + sim.SatisfiedMarker(2) + "\n<answer>not the answer</answer>"
	responses = append(responses, marked, wrong)
	markedAt := len(responses) - 2

	for _, scheme := range schema.Schemes {
		t.Run(scheme, func(t *testing.T) {
			native := scoreAll(t, ts.URL, rec, responses, scheme)
			for i, res := range native {
				checkAgainstFormulas(t, lab, responses[i], res)
			}
			checkMarked(t, native[markedAt], native[markedAt+1])
			for i, r := range openRLHF(t, ts.URL, rec, responses, scheme) {
				if !rewardtest.Near(r, native[i].Reward) {
					t.Errorf("/get_reward rollout %d: %v, /v1/score %v", i, r, native[i].Reward)
				}
			}
			for i, text := range responses {
				if r := slime(t, ts.URL, lab, text, scheme); !rewardtest.Near(r, native[i].Reward) {
					t.Errorf("/score rollout %d: %v, /v1/score %v", i, r, native[i].Reward)
				}
			}
			checkGroup(t, ts.URL, lab, responses, scheme, native)
		})
	}
	if st := j.Stats(); st.Calls != int64(len(responses)) || st.Failures != 0 {
		t.Errorf("judge stats %+v: want one call per distinct response, every other verdict from the cache", st)
	}
}

// pick is a record with both correct and wrong rollouts and at least two
// rubric items.
func pick(t *testing.T, recs []schema.Record) schema.Record {
	t.Helper()
	for _, r := range recs {
		if r.NCorrect > 0 && int(r.NCorrect) < len(r.Rollouts) && len(r.Rubric) >= 2 {
			return r
		}
	}
	t.Fatal("no record with correct and wrong rollouts")
	return schema.Record{}
}

func scoreAll(t *testing.T, url string, rec schema.Record, responses []string, scheme string) []reward.Result {
	t.Helper()
	items := make([]map[string]any, len(responses))
	for i, text := range responses {
		items[i] = map[string]any{"request_id": fmt.Sprint(i), "response": text}
		if i%2 == 0 {
			items[i]["problem_id"] = rec.ID
		} else {
			items[i]["question"] = rec.Problem
		}
	}
	var out struct{ Results []reward.Result }
	post(t, url+"/v1/score", map[string]any{"scheme": scheme, "items": items}, &out)
	for i, r := range out.Results {
		if r.Error != "" || !r.JudgeOK || r.RequestID != fmt.Sprint(i) || r.ProblemID != rec.ID || r.Scheme != scheme {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	return out.Results
}

func openRLHF(t *testing.T, url string, rec schema.Record, responses []string, scheme string) []float64 {
	t.Helper()
	prompt := "<|im_start|>user\n" + rec.Problem + "<|im_end|>\n<|im_start|>assistant\n"
	var query, prompts, labels []string
	for _, text := range responses {
		query = append(query, prompt+text+"<|im_end|>")
		prompts = append(prompts, prompt)
		labels = append(labels, "")
	}
	var out struct {
		Rewards, Scores []float64
		ExtraLogs       map[string][]float64 `json:"extra_logs"`
	}
	post(t, url+"/get_reward?scheme="+scheme, map[string]any{"query": query, "prompts": prompts, "labels": labels}, &out)
	if len(out.Rewards) != len(responses) || len(out.Scores) != len(responses) {
		t.Fatalf("/get_reward: %d rewards, %d scores for %d samples", len(out.Rewards), len(out.Scores), len(responses))
	}
	for i, s := range out.Scores {
		if s < 0 || s > 1 || out.ExtraLogs["rubric/error"][i] != 0 {
			t.Errorf("/get_reward sample %d: score %v, error flag %v", i, s, out.ExtraLogs["rubric/error"][i])
		}
	}
	return out.Rewards
}

func slime(t *testing.T, url string, lab *schema.Label, text, scheme string) float64 {
	t.Helper()
	var r float64
	post(t, url+"/score?bare=1&scheme="+scheme, map[string]any{"prompt": lab.Question, "response": text, "label": mustJSON(t, *lab)}, &r)
	return r
}

// checkAgainstFormulas recomputes a result from the paper formulas, the
// verdicts it reports and verify's answer check.
func checkAgainstFormulas(t *testing.T, lab *schema.Label, text string, res reward.Result) {
	t.Helper()
	p := reward.DefaultParams()
	ans, found := verify.Extract(text)
	correct := found && verify.Equal(lab.GroundTruth, ans)
	if res.Correct != correct {
		t.Fatalf("correct = %v, verify says %v", res.Correct, correct)
	}
	steps := reward.Steps(text)
	verdicts := make([]schema.Satisfaction, len(res.Items))
	for j, it := range res.Items {
		if it.ID != lab.Rubric[j].ID || it.Type != lab.Rubric[j].Type {
			t.Fatalf("item %d is %+v, the rubric's is %d %s", j, it, lab.Rubric[j].ID, lab.Rubric[j].Type)
		}
		verdicts[j] = schema.Satisfaction{ID: it.ID, Satisfied: it.Satisfied, Step: it.Step}
	}
	var want float64
	switch res.Scheme {
	case schema.SchemeSRaR:
		rub := reward.SRaRDeltas(p, lab.Rubric, verdicts, len(steps))
		want = reward.BaseReward(p, correct, reward.FormatOK(text, steps)) + rub.Total()
		for k, s := range res.Steps {
			d := 0.0
			for _, sd := range rub.Steps {
				if sd.Step == s.Step {
					d = sd.D
				}
			}
			if s.StepSpan != steps[k] || !rewardtest.Near(s.Delta, d) {
				t.Errorf("step %d: %+v, want span %+v delta %v", k+1, s, steps[k], d)
			}
		}
	case schema.SchemeRGR:
		want, _ = reward.RGRReward(lab.Rubric, verdicts)
	case schema.SchemeGrounded:
		want = reward.GroundedReward(lab.Rubric, verdicts)
	case schema.SchemeRLCER:
		valid := make([]bool, len(lab.Rubric))
		for j, it := range lab.Rubric {
			valid[j] = it.EmpiricalValid == nil || *it.EmpiricalValid
		}
		want = reward.RLCEROutcome(correct) + reward.RLCERCoT(lab.Rubric, verdicts, valid)
	case schema.SchemePAPO:
		want = 0
		if correct {
			want = 1
		}
	}
	if !rewardtest.Near(res.Reward, want) {
		t.Errorf("%s reward %v, the formula gives %v", res.Scheme, res.Reward, want)
	}
	sum := 0.0
	for _, c := range res.Components {
		sum += c
	}
	if !rewardtest.Near(sum, res.Reward) || res.Score < 0 || res.Score > 1 {
		t.Errorf("components %v sum to %v, reward %v, score %v", res.Components, sum, res.Reward, res.Score)
	}
}

// checkMarked checks the simulated judge's verdicts on the two rollouts
// written with markers reached the results as asked.
func checkMarked(t *testing.T, marked, wrong reward.Result) {
	t.Helper()
	for j, it := range marked.Items {
		want := reward.ItemVerdict{ID: it.ID, Type: it.Type, Step: -1}
		switch it.ID {
		case 1:
			want.Satisfied, want.Step = true, 1
		case 2:
			want.Satisfied, want.Step = true, 2
		}
		if it != want {
			t.Errorf("marked rollout, item %d: %+v, want %+v", j, it, want)
		}
	}
	if !marked.Correct || wrong.Correct || !wrong.Items[1].Satisfied || wrong.Items[1].Step != 1 {
		t.Errorf("marked %v, wrong %v %+v", marked.Correct, wrong.Correct, wrong.Items)
	}
}

// checkGroup scores the group through /v1/score_group and recomputes its
// advantages and validity from the formulas.
func checkGroup(t *testing.T, url string, lab *schema.Label, responses []string, scheme string, native []reward.Result) {
	t.Helper()
	p := reward.DefaultParams()
	var g reward.Group
	post(t, url+"/v1/score_group", map[string]any{"label": *lab, "scheme": scheme, "responses": responses}, &g)
	n := len(responses)
	if len(g.Results) != n || len(g.Advantages) != n || len(g.Validity) != len(lab.Rubric) {
		t.Fatalf("group: %d results, %d advantages, %d validity entries", len(g.Results), len(g.Advantages), len(g.Validity))
	}
	verdicts := make([][]schema.Satisfaction, n)
	correct := make([]float64, n)
	for i, r := range g.Results {
		if !slices.Equal(r.Items, native[i].Items) {
			t.Fatalf("rollout %d: group verdicts differ from /v1/score's", i)
		}
		if scheme != schema.SchemeRLCER && !rewardtest.Near(r.Reward, native[i].Reward) {
			t.Errorf("rollout %d: group reward %v, /v1/score %v", i, r.Reward, native[i].Reward)
		}
		for _, it := range r.Items {
			verdicts[i] = append(verdicts[i], schema.Satisfaction{ID: it.ID, Satisfied: it.Satisfied, Step: it.Step})
		}
		if r.Correct {
			correct[i] = 1
		}
	}
	for j, it := range lab.Rubric {
		sat := make([]float64, n)
		for i := range n {
			if verdicts[i][j].Satisfied {
				sat[i] = 1
			}
		}
		v := reward.ItemValidity(sat, correct, it.Polarity, p.Alpha)
		if mustJSON(t, v.Valid) != mustJSON(t, g.Validity[j].Valid) || mustJSON(t, v.Corr) != mustJSON(t, g.Validity[j].Corr) {
			t.Errorf("item %d validity %+v, the formula gives valid %s corr %s", it.ID, g.Validity[j], mustJSON(t, v.Valid), mustJSON(t, v.Corr))
		}
	}
	signal := make([]float64, n)
	var process []float64
	for i, r := range g.Results {
		switch scheme {
		case schema.SchemeSRaR:
			signal[i] = r.Components["accuracy"] + r.Components["format"]
		case schema.SchemePAPO:
			signal[i] = correct[i]
		default:
			signal[i] = r.Reward
		}
	}
	outcome := reward.GroupAdvantages(signal, p.Epsilon)
	if scheme == schema.SchemeGrounded {
		outcome = reward.LOOAdvantages(signal, p.Epsilon)
	}
	if scheme == schema.SchemePAPO {
		proc := make([]float64, n)
		inC := make([]bool, n)
		for i, r := range g.Results {
			proc[i], inC[i] = r.Metrics["process"], r.Correct
		}
		process = reward.PAPOProcessAdvantages(proc, inC, p.Epsilon)
	}
	var dbar [][]reward.StepDelta
	if scheme == schema.SchemeSRaR {
		d := make([][]reward.StepDelta, n)
		for i := range n {
			d[i] = reward.SRaRDeltas(p, lab.Rubric, verdicts[i], len(reward.Steps(responses[i]))).Steps
		}
		dbar = reward.NormalizeSteps(d, p.Epsilon)
	}
	for i, a := range g.Advantages {
		proc := 0.0
		if process != nil {
			proc = process[i]
		}
		if !rewardtest.Near(a.Outcome, outcome[i]) || !rewardtest.Near(a.Process, proc) || !rewardtest.Near(a.Total, outcome[i]+proc) {
			t.Errorf("rollout %d: %+v, the formulas give outcome %v process %v", i, a, outcome[i], proc)
		}
		if dbar == nil {
			continue
		}
		want := reward.SRaRStepAdvantages(outcome[i], reward.Steps(responses[i]), dbar[i])
		if len(a.Steps) != len(want) {
			t.Fatalf("rollout %d: %d step advantages, want %d", i, len(a.Steps), len(want))
		}
		for k := range want {
			if a.Steps[k].Step != want[k].Step || !rewardtest.Near(a.Steps[k].Advantage, want[k].Advantage) {
				t.Errorf("rollout %d step %d: %+v, want %+v", i, k+1, a.Steps[k], want[k])
			}
		}
	}
}

func post(t *testing.T, url string, body, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(mustJSON(t, body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v in %s", url, err, b)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
