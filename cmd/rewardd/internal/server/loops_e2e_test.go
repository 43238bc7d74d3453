package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// loopProblems are the toy training set: a problem with a five-item rubric,
// judged by the simulated judge's own rules (no markers). (More problems run
// concurrently, as a trainer's prompts do; one keeps the test's time down
// under the race detector.)
func loopProblems() ([]schema.Label, map[string]string) {
	mk := func(id, q, a string) schema.Label {
		items := []schema.Item{
			{ID: 1, Type: schema.TypeSuggest, Text: "Adds the two tens first", Weight: 1, Polarity: 1},
			{ID: 2, Type: schema.TypeSuggest, Text: "Keeps the carry in the ones place", Weight: 1, Polarity: 1},
			{ID: 3, Type: schema.TypePitfall, Text: "Subtracts instead of adding", Weight: 1, Polarity: -1},
			{ID: 4, Type: schema.TypeBonus, Text: "Checks the sum by subtraction", Weight: 1, Polarity: 1},
			{ID: 5, Type: schema.TypeAnswer, Text: "States the sum " + a, Weight: 1, Polarity: 1},
		}
		return schema.Label{V: schema.SpecVersion, ID: id, Scheme: schema.SchemeRGR, Style: schema.StyleSRaR, Question: q, GroundTruth: a, Rubric: items}
	}
	labs := []schema.Label{mk("loop-a", "What is 17 + 25?", "42")}
	answers := map[string]string{}
	for _, l := range labs {
		answers[l.Question] = l.GroundTruth
	}
	return labs, answers
}

// The policy's drift over the run: its answers get right from 30% to 99%
// of the time over the first half and fall back to 35% over the second;
// its rubrics carry a share of discriminative criteria that grows from
// 15% to 95%.
func policyAt(step, steps int) (correct, rubricator float64) {
	half := float64(steps) / 2
	x := float64(step)
	if x < half {
		correct = 0.30 + 0.69*x/half
	} else {
		correct = 0.99 - 0.64*(x-half)/half
	}
	return correct, 0.15 + 0.80*x/float64(steps-1)
}

type loopTrainer struct {
	t      *testing.T
	url    string
	policy *llm.Client
	ps     *prompts.Set
	// judged counts the judge's requests of each problem's final calls:
	// the groups of one problem run one after another.
	judged *problemCounter
}

func (tr *loopTrainer) post(path string, body any, v any) {
	tr.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(tr.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		tr.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tr.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		tr.t.Fatalf("POST %s: %v in %s", path, err, out)
	}
}

// sample asks the policy for n completions of msgs.
func (tr *loopTrainer) sample(model string, msgs []prompts.Message, n int, seed int64) []string {
	tr.t.Helper()
	one := 1.0
	resp, err := tr.policy.Chat(context.Background(), llm.Request{Stage: "policy", Model: model, Messages: msgs, N: n, Seed: &seed, Temperature: &one})
	if err != nil {
		tr.t.Fatal(err)
	}
	out := make([]string, len(resp.Choices))
	for i, c := range resp.Choices {
		out[i] = c.Content
	}
	return out
}

// bruteForceGuidance is RGR's assessment computed from the results alone:
// the best judged response by reward (a tie to the one meeting more
// criteria, then the first), and whether it fails a criterion.
func bruteForceGuidance(g loopGroupAnswer) (best int, needed bool) {
	best, bestMet := -1, -1
	for i, r := range g.Results {
		if !r.JudgeOK {
			continue
		}
		met, all := 0, true
		for _, v := range r.Items {
			ok := v.Satisfied != (v.Type == schema.TypePitfall)
			if ok {
				met++
			}
			all = all && ok
		}
		if best < 0 || r.Reward > g.Results[best].Reward || r.Reward == g.Results[best].Reward && met > bestMet {
			best, bestMet, needed = i, met, !all
		}
	}
	return best, needed
}

// TestTrainingLoopEndToEnd drives rewardd through its HTTP API as a trainer
// would for 40 steps, with a toy policy sampling from the
// simulated endpoint whose quality drifts: per group, seven rollouts sent
// for RGR's assessment (guide), the refined response sampled from the
// assessment's prompt when it says refinement is needed (else an eighth
// rollout), three rubricator prompts rendered by rewardd and sampled (sent
// with both calls), and the final group sent with the off-policy mark. It
// checks that the assessment is right on every group, that one judge
// request per response covers the proposals, that rubricator rewards rise
// as the proposals get more valid, that saturated items retire and come
// back in the stats, and that the state log replays to the versions the
// results named.
func TestTrainingLoopEndToEnd(t *testing.T) {
	t.Parallel()
	labs, answers := loopProblems()
	sim := sim.New(sim.Config{Answers: answers})
	t.Cleanup(sim.Close)
	dir := t.TempDir()
	set := livestate.DefaultSettings()
	set.Window, set.MinRollouts, set.Saturation, set.Reinstate, set.RetireSaturated = 8, 32, 0.9, 0.75, true
	st, err := livestate.Open(dir, livestate.Options{Settings: set, Replica: "trainer"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	index, _ := NewIndex(labs)
	var questions []string
	for _, l := range labs {
		questions = append(questions, l.Question)
	}
	judged := &problemCounter{next: sim.Transport(), counts: map[string]int{}, questions: questions}
	j := newTestJudge(t, judged, 2, nil, judge.Options{Model: "simulated"})
	srv, err := New(Config{Index: index, Judge: j, Live: st})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	tr := &loopTrainer{t: t, url: ts.URL, policy: rewardtest.Client(t, sim.Transport(), 2, nil), ps: rewardtest.Prompts(t), judged: judged}

	const steps, tail = 40, 8 // tail: the steps the rubricator's rewards are averaged over, first and last
	runs := make([]loopRun, len(labs))
	var wg sync.WaitGroup
	for p := range labs {
		wg.Go(func() { runs[p] = tr.train(labs[p], p, steps) }) // a trainer scores its prompts' groups concurrently
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	seen := map[string][]int64{}
	rubricator := make([][]float64, steps)
	refined := 0
	for p, r := range runs {
		seen[labs[p].ID] = r.versions
		refined += r.refined
		for step := range steps {
			rubricator[step] = append(rubricator[step], r.rubricator[step]...)
		}
	}

	early, late := meanOf(rubricator[:tail]), meanOf(rubricator[steps-tail:])
	t.Logf("rubricator K_valid/K: %.3f over the first %d steps, %.3f over the last %d; %d of %d groups refined", early, tail, late, tail, refined, steps*len(labs))
	if late < early+0.2 {
		t.Errorf("rubricator K_valid/K went from %.3f to %.3f as its proposals got more valid (15%% to 95%% discriminative)", early, late)
	}
	if refined == 0 || refined == steps*len(labs) {
		t.Errorf("%d of %d groups refined: the assessment never varied", refined, steps*len(labs))
	}

	retiredBack := false
	for _, lab := range labs {
		ps, ok := st.Stats(lab.ID)
		if !ok {
			t.Fatalf("no stats of %s", lab.ID)
		}
		retired := map[int32]bool{}
		for _, e := range ps.Events {
			switch e.Kind {
			case "retire":
				retired[e.Item] = true
			case "reinstate":
				retiredBack = retiredBack || retired[e.Item]
			}
		}
		if want := seen[lab.ID][len(seen[lab.ID])-1]; ps.Version < want {
			t.Errorf("%s: stats at version %d, the last group scored at %d", lab.ID, ps.Version, want)
		}
		if int(ps.Groups) != steps {
			t.Errorf("%s: %d groups recorded, want %d (the assessments are not recorded)", lab.ID, ps.Groups, steps)
		}
	}
	if !retiredBack {
		t.Error("no item retired and came back as the policy's quality rose and fell")
	}

	// The log replays: Read recomputes every decision from the groups and
	// finds the ones logged; each group record names the version its
	// results named.
	d, err := livestate.Read(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	logged := groupVersions(t, filepath.Join(dir, "trainer.log"))
	for _, lab := range labs {
		live, _ := st.Stats(lab.ID)
		if d.Problems[lab.ID].Version != live.Version {
			t.Errorf("%s: replayed version %d, live %d", lab.ID, d.Problems[lab.ID].Version, live.Version)
		}
		if !slices.Equal(logged[lab.ID], seen[lab.ID]) {
			t.Errorf("%s: the log's group versions differ from the results' (%d and %d groups)", lab.ID, len(logged[lab.ID]), len(seen[lab.ID]))
		}
	}
}

func meanOf(xs [][]float64) float64 {
	sum, n := 0.0, 0
	for _, row := range xs {
		for _, x := range row {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// groupVersions reads the version of every group record of a state log,
// per problem, in order.
func groupVersions(t *testing.T, path string) map[string][]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			T, P string
			V    int64
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.T == "group" {
			out[r.P] = append(out[r.P], r.V)
		}
	}
	return out
}

// loopRun is what one problem's training run saw.
type loopRun struct {
	versions   []int64     // the version each final call was scored with
	rubricator [][]float64 // per step, the rubricator rewards without the format's
	refined    int
}

// train runs the steps of one problem; a failure is reported and ends it.
func (tr *loopTrainer) train(lab schema.Label, p, steps int) (run loopRun) {
	const g = 8
	t := tr.t
	for step := range steps {
		correct, rubQ := policyAt(step, steps)
		model := sim.PolicyModel(correct, rubQ)
		seed := int64(step*10 + p)
		msgs, _ := tr.ps.RolloutMessages(lab.Question)
		rollouts := tr.sample(model, msgs, g, seed)

		var rp struct {
			Prompts [][]prompts.Message `json:"prompts"`
		}
		tr.post("/v1/rubricator_prompt", map[string]any{"problem_id": lab.ID, "responses": rollouts[:3]}, &rp)
		proposals := make([]string, len(rp.Prompts))
		for k, m := range rp.Prompts {
			proposals[k] = tr.sample(model, m, 1, seed*7+int64(k))[0]
		}

		// The assessment carries the proposals too, so that its verdicts
		// (the rubric's and the proposals' criteria, in one request per
		// response) serve the final call: each response is judged once.
		before := tr.judged.count(lab.Question)
		var first loopGroupAnswer
		tr.post("/v1/score_group", map[string]any{"problem_id": lab.ID, "responses": rollouts[:g-1], "guide": true, "proposals": proposals}, &first)
		best, needed := bruteForceGuidance(first)
		if first.Guidance == nil || first.Guidance.Best != best || first.Guidance.Needed != needed {
			t.Errorf("step %d, %s: guidance %+v; the results say best %d, needed %v", step, lab.ID, first.Guidance, best, needed)
			return run
		}
		final, off := rollouts[g-1], false
		if needed {
			msgs := make([]prompts.Message, len(first.Guidance.Prompt))
			for i, m := range first.Guidance.Prompt {
				msgs[i] = prompts.Message{Role: m.Role, Content: m.Content}
			}
			final, off = tr.sample(model, msgs, 1, seed)[0], true
			run.refined++
		}

		responses := append(slices.Clone(rollouts[:g-1]), final)
		offPolicy := make([]bool, g)
		offPolicy[g-1] = off
		var group loopGroupAnswer
		tr.post("/v1/score_group", map[string]any{"problem_id": lab.ID, "responses": responses, "off_policy": offPolicy, "proposals": proposals}, &group)
		if n := tr.judged.count(lab.Question) - before; n != g {
			t.Errorf("step %d, %s: %d judge requests for %d responses and %d proposals over the assessment and the final call; want one per response", step, lab.ID, n, g, len(proposals))
			return run
		}
		v := group.Results[0].RubricVersion
		for i, r := range group.Results {
			if r.RubricVersion == nil || *r.RubricVersion != *v || r.OffPolicy != offPolicy[i] {
				t.Errorf("step %d, %s: result %d version %v (result 0: %v), off_policy %v", step, lab.ID, i, r.RubricVersion, *v, r.OffPolicy)
				return run
			}
		}
		run.versions = append(run.versions, *v)
		var rewards []float64
		for _, rr := range group.Rubricator {
			rewards = append(rewards, rr.Reward-b2f(rr.FormatOK))
		}
		run.rubricator = append(run.rubricator, rewards)
	}
	return run
}

// problemCounter passes requests on, counting the satisfaction judge's
// requests about each question.
type problemCounter struct {
	next      http.RoundTripper
	questions []string
	mu        sync.Mutex
	counts    map[string]int
}

func (c *problemCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte("<rubric>")) || bytes.Contains(body, []byte(`\u003crubric\u003e`)) {
		for _, q := range c.questions {
			if bytes.Contains(body, []byte(q)) {
				c.mu.Lock()
				c.counts[q]++
				c.mu.Unlock()
			}
		}
	}
	return c.next.RoundTrip(r)
}

func (c *problemCounter) count(q string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[q]
}
